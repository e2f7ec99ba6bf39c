import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pullback.rules.cumulative import cumsum_vjp
from pullback.rules.extrema import max_vjp
from pullback.rules.norm import norm_vjp
from pullback.rules.reductions import mean_vjp, std_vjp, sum_vjp, var_vjp
from pullback.rules.registry import method

from .checks import SETTINGS, axes_for, check_vjp, rule_vjp, seeds, shapes, values


def _kw_rule(fn, param, **kw):
    """The registered rule of ``fn`` for ``param``, called with fixed keyword arguments."""
    r = rule_vjp(fn, param)
    return lambda g, ans, *args: r(g, ans, *args, **kw)


def _reduced_size(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([shape[a] for a in axes]))


# ---------------------------------------------------------------------------
# sum, mean, max, min, var, std through the registered templates

@pytest.mark.parametrize("fn", [np.sum, np.mean, np.max, np.min, np.amax, np.amin],
                         ids=lambda f: f.__name__)
@SETTINGS
@given(data=st.data(), shape=shapes, keepdims=st.booleans(), seed=seeds)
def test_reductions(fn, data, shape, keepdims, seed):
    axis = data.draw(axes_for(len(shape)))
    a = values(seed, shape)
    check_vjp(lambda a: fn(a, axis=axis, keepdims=keepdims),
              _kw_rule(fn, "a", axis=axis, keepdims=keepdims), [a], 0)


@pytest.mark.parametrize("fn", [np.var, np.std], ids=lambda f: f.__name__)
@SETTINGS
@given(data=st.data(), shape=shapes, keepdims=st.booleans(), ddof=st.integers(0, 1), seed=seeds)
def test_var_std(fn, data, shape, keepdims, ddof, seed):
    axis = data.draw(axes_for(len(shape)))
    if _reduced_size(shape, axis) - ddof <= 0 or _reduced_size(shape, axis) < 2:
        return   # NaN/inf results or a constant (0-std) slice: nothing smooth to check
    a = values(seed, shape)
    check_vjp(lambda a: fn(a, axis=axis, ddof=ddof, keepdims=keepdims),
              _kw_rule(fn, "a", axis=axis, ddof=ddof, keepdims=keepdims), [a], 0)


@pytest.mark.parametrize("fn", [np.var, np.std], ids=lambda f: f.__name__)
def test_var_std_correction_and_mean_keyword(fn):
    a = values(3, (3, 4))
    check_vjp(lambda a: fn(a, axis=1, correction=1), _kw_rule(fn, "a", axis=1, correction=1),
              [a], 0)
    m = np.mean(a, axis=0, keepdims=True) + 0.1        # any given mean is an argument
    f = lambda a, m: fn(a, axis=0, mean=m)             # noqa: E731
    r_a, r_m = rule_vjp(fn, "a"), rule_vjp(fn, "mean")
    check_vjp(f, lambda g, ans, a, m: r_a(g, ans, a, axis=0, mean=m), [a, m], 0)
    check_vjp(f, lambda g, ans, a, m: r_m(g, ans, a, axis=0, mean=m), [a, m], 1)


def test_std_of_constant_slice_is_zero_not_nan():
    a = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    ct = std_vjp(np.ones(2), np.std(a, axis=1), a, axis=1)
    assert np.all(np.isfinite(ct)) and np.all(ct[0] == 0)


def test_var_std_where_not_implemented():
    a = np.ones((2, 2))
    with pytest.raises(NotImplementedError):
        var_vjp(np.ones(2), a, axis=0, where=np.array([[True, False]] * 2))


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.max], ids=lambda f: f.__name__)
def test_where_mask(fn):
    a = values(5, (3, 4))
    mask = values(6, (3, 4)) > -0.5
    mask[:, 0] = True     # no empty slice
    kw = {"axis": 1, "where": mask}
    if fn is np.max:
        kw["initial"] = -np.inf
    check_vjp(lambda a: fn(a, **kw), _kw_rule(fn, "a", **kw), [a], 0)


def test_max_ties_split_evenly_and_initial():
    a = np.array([[3.0, 1.0, 3.0], [0.0, 5.0, 2.0]])
    ct = max_vjp(np.array([1.0, 1.0]), np.max(a, axis=1), a, axis=1)
    np.testing.assert_array_equal(ct, [[0.5, 0, 0.5], [0, 1, 0]])
    ans = np.max(a, axis=1, initial=4.0)     # first row's max comes from initial
    ct = max_vjp(np.array([1.0, 1.0]), ans, a, axis=1)
    np.testing.assert_array_equal(ct, [[0, 0, 0], [0, 1, 0]])
    ct = max_vjp(1.0, np.min(a), a)          # min: the same rule
    np.testing.assert_array_equal(ct, [[0, 0, 0], [1, 0, 0]])


def test_python_scalar_argument():
    for fn in (np.sum, np.mean, np.max):
        check_vjp(fn, rule_vjp(fn, "a"), [1.5], 0)
    assert isinstance(sum_vjp(1.0, 2.0), np.float64)


# ---------------------------------------------------------------------------
# cumsum

@SETTINGS
@given(data=st.data(), shape=shapes, seed=seeds)
def test_cumsum(data, shape, seed):
    nd = len(shape)
    axis = None if not nd else data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    a = values(seed, shape)
    check_vjp(lambda a: np.cumsum(a, axis=axis), _kw_rule(np.cumsum, "a", axis=axis), [a], 0)


# ---------------------------------------------------------------------------
# linalg.norm

VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 3, 0.5]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, np.inf, -np.inf, 2, -2]


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       keepdims=st.booleans(), seed=seeds)
def test_vector_norm(ord, data, shape, keepdims, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = values(seed, shape)
    # Entries kept 0.2 away from the kink at 0: for ord < 1 the derivative |x|**(ord-1)
    # grows without bound there, beyond what a finite difference can resolve.
    x = np.sign(x) * (0.2 + np.abs(x))
    check_vjp(lambda x: np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims),
              _kw_rule(np.linalg.norm, "x", ord=ord, axis=axis, keepdims=keepdims), [x], 0)


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(2, 4), min_size=2, max_size=3).map(tuple),
       keepdims=st.booleans(), seed=seeds)
def test_matrix_norm(ord, data, shape, keepdims, seed):
    nd = len(shape)
    axis = tuple(data.draw(st.lists(st.integers(0, nd - 1), min_size=2, max_size=2, unique=True)))
    axis = tuple(a - nd if data.draw(st.booleans()) else a for a in axis)
    x = values(seed, shape)
    check_vjp(lambda x: np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims),
              _kw_rule(np.linalg.norm, "x", ord=ord, axis=axis, keepdims=keepdims), [x], 0,
              rtol=1e-4)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2)])
def test_norm_axis_none(shape):
    x = values(1, shape)
    check_vjp(np.linalg.norm, rule_vjp(np.linalg.norm, "x"), [x], 0)
    check_vjp(lambda x: np.linalg.norm(x, keepdims=True),
              _kw_rule(np.linalg.norm, "x", keepdims=True), [x], 0)
    if len(shape) <= 2:
        for ord in (1, np.inf):
            check_vjp(lambda x: np.linalg.norm(x, ord),
                      _kw_rule(np.linalg.norm, "x", ord=ord), [x], 0)


def test_norm_of_zero_vector_is_zero_not_nan():
    with np.errstate(all="raise"):
        ct = norm_vjp(1.0, 0.0, np.zeros(3))
    np.testing.assert_array_equal(ct, np.zeros(3))
    ct = norm_vjp(np.ones(2), np.zeros(2), np.zeros((2, 3)), axis=1)
    np.testing.assert_array_equal(ct, np.zeros((2, 3)))
    np.testing.assert_array_equal(norm_vjp(1.0, 0.0, np.zeros((2, 2)), "fro"), np.zeros((2, 2)))


# ---------------------------------------------------------------------------
# Methods: each registered method name calls a primitive that behaves like the method

def test_methods_call_like_the_ndarray_methods():
    x = values(2, (2, 3, 4))
    for name, kwargs in [("sum", {"axis": 1}), ("mean", {}), ("max", {"axis": -1}),
                         ("var", {"ddof": 1}), ("std", {"axis": (0, 2)}), ("cumsum", {"axis": 0}),
                         ("prod", {"axis": 2}), ("cumprod", {"axis": 1})]:
        np.testing.assert_array_equal(method(name)(x, **kwargs), getattr(x, name)(**kwargs))
    np.testing.assert_array_equal(method("reshape")(x, 4, 6), x.reshape(4, 6))
    np.testing.assert_array_equal(method("reshape")(x, (4, 6)), x.reshape((4, 6)))
    np.testing.assert_array_equal(method("transpose")(x, 2, 0, 1), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(method("transpose")(x), x.transpose())
    np.testing.assert_array_equal(method("flatten")(x, "F"), x.flatten("F"))
    m = values(3, (3, 3))
    np.testing.assert_array_equal(method("dot")(m, m), m.dot(m))


# ---------------------------------------------------------------------------
# The same helpers on torch tensors, against torch autograd (float64)

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    cases = [
        (lambda t: t.sum(dim=(0, 2)), lambda g, ans, a: sum_vjp(g, a, axis=(0, 2))),
        (lambda t: t.mean(dim=-1, keepdim=True), lambda g, ans, a: mean_vjp(g, a, -1, True)),
        (lambda t: t.amax(dim=1), lambda g, ans, a: max_vjp(g, ans, a, 1)),
        (lambda t: t.cumsum(dim=1), lambda g, ans, a: cumsum_vjp(g, a, 1)),
        (lambda t: t.var(dim=0, correction=1), lambda g, ans, a: var_vjp(g, a, 0, 1)),
        (lambda t: t.std(dim=(1, 2), correction=0),
         lambda g, ans, a: std_vjp(g, ans, a, (1, 2), 0)),
        (lambda t: torch.linalg.vector_norm(t, dim=-1),
         lambda g, ans, a: norm_vjp(g, ans, a, axis=-1)),
        (lambda t: torch.linalg.vector_norm(t, ord=float("inf"), dim=0),
         lambda g, ans, a: norm_vjp(g, ans, a, np.inf, 0)),
        (lambda t: torch.linalg.matrix_norm(t, ord="nuc", dim=(1, 2)),
         lambda g, ans, a: norm_vjp(g, ans, a, "nuc", (1, 2))),
        (lambda t: torch.linalg.matrix_norm(t, ord=1, dim=(0, 2)),
         lambda g, ans, a: norm_vjp(g, ans, a, 1, (0, 2))),
    ]
    for fwd, vjp in cases:
        a = torch.tensor(rng.standard_normal((3, 4, 5)), requires_grad=True)
        out = fwd(a)
        g = torch.tensor(rng.standard_normal(tuple(out.shape)))
        out.backward(g)
        ct = vjp(g, out.detach(), a.detach())
        assert isinstance(ct, torch.Tensor)
        torch.testing.assert_close(ct, a.grad, rtol=1e-10, atol=1e-10)


def test_torch_python_float_cotangent_keeps_precision_and_dtype(torch_device):
    torch = pytest.importorskip("torch")
    a = torch.zeros(2, 3, dtype=torch.float64)
    g = 0.1234567890123456
    ct = sum_vjp(g, a)
    assert ct.dtype == torch.float64 and float(ct[0, 0]) == g
    ct = mean_vjp(g, a.to(torch.float32), axis=1, keepdims=True)
    assert ct.dtype == torch.float32


# ---------------------------------------------------------------------------
# nansum, nanmean, average

@pytest.mark.parametrize("fn", [np.nansum, np.nanmean], ids=lambda f: f.__name__)
@SETTINGS
@given(data=st.data(), shape=shapes, keepdims=st.booleans(), seed=seeds)
def test_nan_reductions(fn, data, shape, keepdims, seed):
    axis = data.draw(axes_for(len(shape)))
    a = np.asarray(values(seed, shape))
    a = np.where(a > 1.0, np.nan, a)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if np.any(np.isnan(np.nanmean(a, axis=axis))):
            a = np.nan_to_num(a)            # a slice of NaNs only: its mean is NaN
    check_vjp(lambda a: fn(a, axis=axis, keepdims=keepdims),
              _kw_rule(fn, "a", axis=axis, keepdims=keepdims), [a], 0)


def test_nan_reductions_give_nothing_to_nans():
    a = np.array([[1.0, np.nan], [np.nan, np.nan]])
    np.testing.assert_array_equal(rule_vjp(np.nansum, "a")(2.0, None, a), [[2, 0], [0, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ans = np.nanmean(a, axis=1)
    np.testing.assert_array_equal(rule_vjp(np.nanmean, "a")(np.ones(2), ans, a, 1),
                                  [[1, 0], [0, 0]])


@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       how=st.sampled_from(["none", "full", "along"]), keepdims=st.booleans(), seed=seeds)
def test_average(data, shape, how, keepdims, seed):
    nd = len(shape)
    if how == "along":
        axis = data.draw(st.one_of(st.integers(-nd, nd - 1),
                                   st.lists(st.integers(0, nd - 1), min_size=1, unique=True)
                                   .map(tuple)))
        w_shape = tuple(shape[a] for a in (axis if isinstance(axis, tuple) else (axis,)))
    else:
        axis = data.draw(axes_for(nd))
        w_shape = shape
    a = values(seed, shape)
    kw = dict(axis=axis, keepdims=keepdims)
    if how == "none":
        check_vjp(lambda a: np.average(a, **kw), _kw_rule(np.average, "a", **kw), [a], 0)
        return
    w = values(seed + 1, w_shape, 0.5, 2.0)
    f = lambda a, w: np.average(a, weights=w, **kw)     # noqa: E731
    for k, p in enumerate(["a", "weights"]):
        r = rule_vjp(np.average, p)
        check_vjp(f, lambda g, ans, a, w, r=r: r(g, ans, a, weights=w, **kw), [a, w], k)


def test_average_returned_is_not_implemented():
    with pytest.raises(NotImplementedError, match="returned"):
        rule_vjp(np.average, "a")(np.ones(2), None, np.ones((2, 2)), 0, None, True)
