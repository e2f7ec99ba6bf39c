"""rules/cumulative.py: cumsum and cumprod against finite differences, flattened and
along each axis."""
import numpy as np
import pytest

from .checks import check_rule, values


@pytest.mark.parametrize("fn", [np.cumsum, np.cumprod], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape, axis", [((5,), None), ((5,), 0), ((3, 4), None), ((3, 4), 0),
                                         ((3, 4), 1), ((2, 3, 2), -1)])
def test_cumulative(fn, shape, axis):
    check_rule(fn, [values(1, shape, 0.5, 1.5)], kwargs={"axis": axis})


def test_cumprod_through_a_zero():
    """A zero entry: the product's derivative there is the product of the others."""
    check_rule(np.cumprod, [np.array([1.5, 0.0, 2.0, -0.7])])
    check_rule(np.cumprod, [np.array([[0.0, 2.0], [1.5, 0.0]])], kwargs={"axis": 0})
