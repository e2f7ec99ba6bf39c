"""rules/weighted.py: nansum, nanmean and average against finite differences, with NaN
entries (which get no cotangent), axes, keepdims, ``where`` and weights."""
import numpy as np
import pytest

from .checks import check_rule, rule_vjp, values


def _with_nans(shape, seed):
    a = values(seed, shape)
    a[values(seed + 1, shape) > 0.8] = np.nan
    return a


@pytest.mark.parametrize("fn", [np.nansum, np.nanmean], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape, kw", [((5,), {}), ((3, 4), {"axis": 0}),
                                       ((3, 4), {"axis": 1, "keepdims": True}),
                                       ((2, 3, 2), {"axis": (0, 2)})])
def test_nan_reductions(fn, shape, kw):
    check_rule(fn, [values(1, shape)], kwargs=kw)


@pytest.mark.parametrize("fn", [np.nansum, np.nanmean], ids=lambda f: f.__name__)
def test_nan_entries_get_no_cotangent(fn):
    a = _with_nans((3, 4), 2)
    assert np.isnan(a).any()
    ct = rule_vjp(fn, "a")(np.ones(4), fn(a, axis=0), a, axis=0)
    assert np.all(ct[np.isnan(a)] == 0.0)
    rows = ~np.isnan(a).any(axis=1)       # complete rows behave as plain sum / mean
    check_rule(fn, [a[rows]], kwargs={"axis": 1})


@pytest.mark.parametrize("fn", [np.nansum, np.nanmean], ids=lambda f: f.__name__)
def test_nan_reductions_where(fn):
    where = values(3, (3, 4)) > -0.5
    check_rule(fn, [values(4, (3, 4))], kwargs={"axis": 1, "where": where})


@pytest.mark.parametrize("shape, kw, wshape", [((5,), {}, None), ((5,), {}, (5,)),
                                               ((3, 4), {"axis": 1}, (4,)),
                                               ((3, 4), {"axis": 0, "keepdims": True}, (3, 4)),
                                               ((2, 3, 2), {"axis": (0, 2)}, (2, 3, 2))])
def test_average(shape, kw, wshape):
    a = values(1, shape)
    if wshape is None:
        check_rule(np.average, [a], kwargs=kw)
        return
    w = values(2, wshape, 0.5, 2.0)
    check_rule(np.average, [a], kwargs={**kw, "weights": w})
    check_rule(np.average, [a, kw.get("axis"), w], kwargs={k: v for k, v in kw.items() if k != "axis"})
