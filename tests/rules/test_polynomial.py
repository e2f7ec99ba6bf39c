"""rules/polynomial.py: polyval's cotangents of the coefficients and of x against finite
differences, for scalar and array x and several degrees."""
import numpy as np
import pytest

from .checks import check_rule, values


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("xshape", [(), (4,), (2, 3)])
def test_polyval(n, xshape):
    check_rule(np.polyval, [values(1, (n,)), values(2, xshape)])
