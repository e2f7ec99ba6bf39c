"""Examples for the twins of rules/elementwise, scalar, reductions, prod, cumulative,
extrema, weighted and norm."""
from __future__ import annotations

import numpy as np

from ._base import arr, call, like, num, sizes

R = "pullback.rules."
EXAMPLES: dict = {}


# ---- elementwise: ufuncs of an array (their domain), unbroadcasting
_DOMAINS = {"exp": (-2, 2), "log": (0.1, 3), "tanh": (-2, 2), "tan": (-1, 1), "expm1": (-2, 2),
            "log1p": (-0.5, 3), "arctan": (-3, 3), "sinh": (-2, 2), "cosh": (-2, 2),
            "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
            "arcsinh": (-3, 3), "arccosh": (1.1, 3), "exp2": (-2, 2), "log2": (0.1, 3),
            "log10": (0.1, 3)}


def _ufunc(lo, hi):
    return lambda rng, dt: [call(arr(rng, dt, sizes(rng, 1), lo, hi)),
                            call(arr(rng, dt, sizes(rng, 2), lo, hi))]


for _name, (_lo, _hi) in _DOMAINS.items():
    EXAMPLES[f"numpy.{_name}"] = _ufunc(_lo, _hi)


def _unbroadcast(rng, dt):
    m, n = sizes(rng, 2)
    g = arr(rng, dt, (m, n))
    return [call(g, arr(rng, dt, (n,))), call(g, arr(rng, dt, (m, 1))),
            call(g, arr(rng, dt, (m, n))), call(g, num(rng, dt))]


def _unbroadcast_product(rng, dt):
    m, n = sizes(rng, 2)
    a, b = arr(rng, dt, (m, n)), arr(rng, dt, (m, n))
    return [call(a, b, num(rng, dt)), call(a[0], b[0], num(rng, dt)), call(a, b[0], num(rng, dt))]


EXAMPLES[R + "nondiff.stop_gradient"] = lambda rng, dt: [
    call(arr(rng, dt, (3, 4))), call(num(rng, dt))]
# The strong zero: 0 where the first argument is 0, even against inf or NaN.
def _strong_zero(rng, dt):
    u = arr(rng, dt, (3, 4))
    u[0, :2] = 0.0
    d = arr(rng, dt, (3, 4))
    d[0, 0], d[0, 1] = np.inf, 0.0
    return [call(u, d), call(u, d[0]), call(num(rng, dt), d), call(dt(0.0), d),
            call(num(rng, dt), num(rng, dt)), call(dt(0.0), dt(np.inf))]


EXAMPLES[R + "strong_zero.scaled"] = EXAMPLES[R + "strong_zero.divided"] = _strong_zero


def _powered(rng, dt):
    x = np.abs(arr(rng, dt, (3, 4)))
    x[0, :2] = 0.0
    e = arr(rng, dt, (3, 4))
    return [call(x, e), call(x, dt(-0.5)), call(dt(0.0), dt(-0.5)), call(num(rng, dt) ** 2, e[0])]


EXAMPLES[R + "strong_zero.powered"] = _powered
EXAMPLES["abs"] = lambda rng, dt: [call(arr(rng, dt, (3, 4))), call(arr(rng, dt, (5,)))]
EXAMPLES["pullback.core.runtime.cotangent_or_zero"] = lambda rng, dt: [
    call(None, arr(rng, dt, (3, 4))), call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4))),
    call(None, num(rng, dt)), call(num(rng, dt), num(rng, dt))]
EXAMPLES[R + "elementwise.unbroadcast"] = _unbroadcast
EXAMPLES[R + "elementwise.unbroadcast_product"] = _unbroadcast_product


# ---- scalar helpers Numba compiles as they are
def _scalars(k, lo=0.2, hi=2.0):
    return lambda rng, dt: [call(*(num(rng, dt, lo, hi) for _ in range(k)))]


EXAMPLES[R + "scalar.pow_dx"] = _scalars(3)
EXAMPLES[R + "scalar.pow_dy"] = _scalars(3)
EXAMPLES[R + "scalar.sqrt_dx"] = _scalars(2)
EXAMPLES[R + "scalar.div_dy"] = _scalars(3)
EXAMPLES[R + "scalar.digamma"] = _scalars(1, 0.5, 4.0)
EXAMPLES[R + "scalar.sign"] = lambda rng, dt: [call(num(rng, dt)), call(dt(0.0))]


# ---- reductions: a cotangent of the reduced shape
def _reduction_vjp(primal, with_ans, extra=()):
    """Examples of ``vjp(g, [ans,] a, axis, ..., keepdims)`` for the reduction ``primal``."""
    def make(rng, dt):
        a = arr(rng, dt, sizes(rng, 3), 0.5, 2.0)
        out = []
        for axis, keep in ((None, False), (1, False), (-1, True), ((0, 2), False)):
            kw = dict(axis=axis, keepdims=keep, **dict(extra))
            ans = primal(a, **kw)
            head = (like(rng, ans), ans) if with_ans else (like(rng, ans),)
            out.append(call(*head, a, **kw))
        return out
    return make


EXAMPLES[R + "reductions.sum_vjp"] = _reduction_vjp(np.sum, False)
EXAMPLES[R + "reductions.mean_vjp"] = _reduction_vjp(np.mean, False)
EXAMPLES[R + "reductions.var_vjp"] = _reduction_vjp(np.var, False, {"ddof": 1}.items())
EXAMPLES[R + "reductions.std_vjp"] = _reduction_vjp(np.std, True)
EXAMPLES[R + "prod.prod_vjp"] = _reduction_vjp(np.prod, True)
EXAMPLES[R + "extrema.max_vjp"] = _reduction_vjp(np.max, True)
EXAMPLES[R + "weighted.nansum_vjp"] = _reduction_vjp(np.nansum, False)
EXAMPLES[R + "weighted.nanmean_vjp"] = _reduction_vjp(np.nanmean, False)


def _like_one(rng, dt):
    return [call(arr(rng, dt, sizes(rng, 2))), call(num(rng, dt))]


def _slice_sum(rng, dt):
    x = arr(rng, dt, sizes(rng, 3))
    return [call(x, np.sum(x, axis=axis, keepdims=keep), axis, keep)
            for axis, keep in ((None, False), (None, True), (1, False), (-1, True), ((0, 2), False))]


def _prod_second(with_g):
    """Calls of prod_jvp(v, p, x, axis, keepdims) (or of its derivative in x, with g
    first), x with a zero, over all axes or one."""
    def make(rng, dt):
        x = arr(rng, dt, sizes(rng, 3), 0.5, 2.0)
        x[0, 1, 0] = 0.0
        out = []
        for axis, keep in ((None, False), (None, True), (1, False), (-1, True), (0, False)):
            p = np.prod(x, axis=axis, keepdims=keep)
            head = (like(rng, p),) if with_g else ()
            out.append(call(*head, arr(rng, dt, x.shape), p, x, axis, keep))
        return out
    return make


EXAMPLES[R + "prod_second.prod_jvp"] = _prod_second(False)
EXAMPLES[R + "prod_second.prod_jvp_vjp_x"] = _prod_second(True)
EXAMPLES[R + "reductions_second.zero_cotangent"] = _like_one
EXAMPLES[R + "reductions_second.ones_of"] = _like_one
EXAMPLES[R + "reductions_second.slice_sum"] = _slice_sum


def _reduction(extra=()):
    """Calls of a reduction primal with an axis (Numba's own takes none)."""
    def make(rng, dt):
        a = arr(rng, dt, sizes(rng, 3), 0.5, 2.0)
        return [call(a, axis=0, **dict(extra)), call(a, axis=-1, keepdims=True, **dict(extra)),
                call(a, axis=(0, 2), **dict(extra)), call(a[0], axis=1, **dict(extra))]
    return make


def _nan_reduction(rng, dt):
    a = arr(rng, dt, sizes(rng, 2))
    a[0, 1] = np.nan
    return [call(a, axis=0), call(a, axis=1, keepdims=True)] + _reduction()(rng, dt)


for _name in ("sum", "mean", "std", "prod", "max", "amax", "min", "amin"):
    EXAMPLES[f"numpy.{_name}"] = _reduction()
EXAMPLES["numpy.var"] = _reduction({"ddof": 1}.items())
EXAMPLES["numpy.nansum"] = EXAMPLES["numpy.nanmean"] = _nan_reduction


# ---- cumulative
def _cumulative_vjp(primal, with_ans):
    def make(rng, dt):
        a = arr(rng, dt, sizes(rng, 2), 0.5, 2.0)
        out = []
        for axis in (None, 0, -1):
            ans = primal(a, axis=axis)
            head = (like(rng, ans), ans) if with_ans else (like(rng, ans),)
            out.append(call(*head, a, axis=axis))
        return out
    return make


EXAMPLES[R + "cumulative.cumsum_vjp"] = _cumulative_vjp(np.cumsum, False)
EXAMPLES[R + "cumulative.cumprod_vjp"] = _cumulative_vjp(np.cumprod, True)
EXAMPLES["numpy.cumsum"] = lambda rng, dt: [call(arr(rng, dt, sizes(rng, 2)), axis=0),
                                            call(arr(rng, dt, sizes(rng, 3)), axis=-1)]
EXAMPLES["numpy.cumprod"] = EXAMPLES["numpy.cumsum"]


# ---- weighted average
def _average(rng, dt):
    m, n = sizes(rng, 2)
    a, w = arr(rng, dt, (m, n)), arr(rng, dt, (m, n), 0.5, 2.0)
    # (weights of another shape than a's the twin refuses)
    return [call(a, axis=0), call(a, axis=1, weights=w), call(a, weights=w)]


def _average_vjp(with_ans, param):
    def make(rng, dt):
        m, n = sizes(rng, 2)
        a, w = arr(rng, dt, (m, n)), arr(rng, dt, (m, n), 0.5, 2.0)
        out = []
        for kw in (dict(axis=1, weights=w), dict(weights=w),
                   dict(axis=0, weights=w, keepdims=True)):
            ans = np.average(a, **kw)
            head = (like(rng, ans), ans) if with_ans else (like(rng, ans),)
            out.append(call(*head, a, **kw))
        if param == "a":
            ans = np.average(a, axis=0)
            out.append(call(like(rng, ans), a, axis=0))
        return out
    return make


EXAMPLES["numpy.average"] = _average
EXAMPLES[R + "weighted.average_vjp_a"] = _average_vjp(False, "a")
EXAMPLES[R + "weighted.average_vjp_weights"] = _average_vjp(True, "weights")


# ---- norm
def _norm(rng, dt):
    a = arr(rng, dt, sizes(rng, 2))
    return [call(a, axis=1), call(a, axis=0, keepdims=True), call(a, ord=1, axis=1), call(a, 2),
            call(a, "fro"), call(a[0], 3)]   # (an ord not written as a constant is refused)


def _norm_vjp(rng, dt):
    a = arr(rng, dt, sizes(rng, 2))
    out = []
    for x, kw in ((a, dict(axis=1)), (a, dict(axis=0, keepdims=True)), (a, dict(ord="fro")),
                  (a[0], dict()), (a[0], dict(ord=1)), (a[0], dict(ord=3))):   # (not ord=2 of a matrix)
        ans = np.linalg.norm(x, **kw)
        out.append(call(like(rng, ans), ans, x, **kw))
    return out


EXAMPLES["numpy.linalg.norm"] = _norm
EXAMPLES[R + "norm.norm_vjp"] = _norm_vjp
