"""rules/polynomial.py: polyval's cotangents of the coefficients and of x against finite
differences, for scalar and array x and several degrees."""
import numpy as np
import pytest

from pullback.rules.polynomial import polyval_vjp_x

from .checks import check_rule, values


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("xshape", [(), (4,), (2, 3)])
def test_polyval(n, xshape):
    check_rule(np.polyval, [values(1, (n,)), values(2, xshape)])


# polyval_vjp_x, differentiated again (Hessians through polyval's tangent)

def test_polyval_vjp_x_rule():
    p, x, c = values(61, (4,)), values(62, (3, 2)), values(63, (3, 2))
    check_rule(polyval_vjp_x, (c, p, x))
    check_rule(polyval_vjp_x, (0.7, values(64, (2,)), 0.4))
