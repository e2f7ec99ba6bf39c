"""rules/extrema.py: max, amax, min, amin against finite differences: whole arrays, axes,
keepdims, ``initial`` and ``where`` (no ties: random distinct values)."""
import numpy as np
import pytest

from .checks import check_rule, rule_vjp, values

FNS = [np.max, np.amax, np.min, np.amin]


@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape, kw", [((5,), {}), ((3, 4), {}), ((3, 4), {"axis": 0}),
                                       ((3, 4), {"axis": 1, "keepdims": True}),
                                       ((2, 3, 2), {"axis": (0, 2)})])
def test_extrema(fn, shape, kw):
    check_rule(fn, [values(1, shape)], kwargs=kw)


@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
def test_extrema_where_and_initial(fn):
    a = values(2, (3, 4))
    where = values(3, (3, 4)) > -0.5
    start = -10.0 if fn in (np.max, np.amax) else 10.0
    check_rule(fn, [a], kwargs={"axis": 1, "where": where, "initial": start})
    check_rule(fn, [a], kwargs={"axis": 0, "initial": 0.0})     # initial wins in some columns


def test_ties_share_the_cotangent():
    a = np.array([1.0, 3.0, 3.0, 2.0])
    np.testing.assert_allclose(rule_vjp(np.max, "a")(1.0, 3.0, a), [0.0, 0.5, 0.5, 0.0])
