"""Numba twins of ``scipy.special`` functions: SciPy's own compiled scalar kernels.

SciPy exports the C kernels of its special functions from
``scipy.special.cython_special``; Numba calls one by its address (a ctypes
function pointer), and :func:`numba.vectorize` broadcasts it over arrays as a
Numba ufunc, so ``special.gammaln(x)`` and its derivative's
``special.digamma(x)`` compile under ``jit=True`` with SciPy's values, for a
number or an array of any rank.  ``softmax`` and ``log_softmax`` (and their
VJPs) are loops over the array's blocks along the axis.

The kernel taken is the one over doubles; float32 arguments are computed in
double and give float32, as SciPy's own loops do.  Nothing here imports Numba
until a twin is typed.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from . import twins
from .elementwise import unbroadcast
from .forms import numba_twin
from .reductions import along_axis
from .scipy_special import log_softmax_vjp, logsumexp_vjp, logsumexp_vjp_b, softmax_vjp

try:
    from scipy import special
except ImportError:     # pragma: no cover - SciPy is an optional extra
    special = None

#: The scipy.special functions that get a twin here, by the name of their kernel
#: in cython_special and their number of arguments.
KERNELS = {"gammaln": ("gammaln", 1), "digamma": ("psi", 1), "erf": ("erf", 1),
           "erfc": ("erfc", 1), "expit": ("expit", 1), "logit": ("logit", 1),
           "xlogy": ("xlogy", 2), "xlog1py": ("xlog1py", 2), "ndtr": ("ndtr", 1),
           "log_ndtr": ("log_ndtr", 1), "ndtri": ("ndtri", 1), "erfcx": ("erfcx", 1),
           "gamma": ("gamma", 1)}


def _capsule_signature(capsule) -> str:
    """The C signature a Cython capsule is named by: ``double (double, int ...)``."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule).decode()


def _kernel(name: str, nargs: int):
    """The double-precision C kernel of cython_special's ``name`` as a ctypes function
    of ``nargs`` doubles (and Cython's trailing ``skip_dispatch`` flag), or None."""
    import scipy.special.cython_special as cs
    from numba.extending import get_cython_function_address
    want = f"double ({', '.join(['double'] * nargs)}, int __pyx_skip_dispatch)"
    for exported in [name] + [f"__pyx_fuse_{i}{name}" for i in range(4)]:
        capsule = cs.__pyx_capi__.get(exported)
        if capsule is not None and _capsule_signature(capsule) == want:
            address = get_cython_function_address("scipy.special.cython_special", exported)
            proto = ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * nargs, ctypes.c_int)
            return proto(address)
    return None


_UFUNCS: dict = {}


def ufunc(name: str):
    """The Numba ufunc of ``special.<name>`` (made once, on first use)."""
    if name not in _UFUNCS:
        import numba
        kernel_name, nargs = KERNELS[name]
        kernel = _kernel(kernel_name, nargs)
        if kernel is None:      # pragma: no cover - a SciPy without this kernel
            raise NotImplementedError(f"scipy.special.{name} has no double kernel in "
                                      "cython_special: use jit=False")
        if nargs == 1:
            def scalar(x):
                return kernel(x, 0)
        else:
            def scalar(x, y):
                return kernel(x, y, 0)
        # float32 in, float32 out, as SciPy's own loops (computed in double).
        signatures = [f"{t}({', '.join([t] * nargs)})" for t in ("float32", "float64")]
        _UFUNCS[name] = numba.vectorize(signatures, nopython=True)(scalar)
    return _UFUNCS[name]


def _one(name):
    def twin(x):
        f = ufunc(name)
        return lambda x: f(x)
    return twin


def _two(name):
    def twin(x, y):
        f = ufunc(name)
        return lambda x, y: f(x, y)
    return twin


# B_2, B_4, ..., B_20: the Bernoulli numbers of the asymptotic series below.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330)


def polygamma_scalar(n, x):
    """``polygamma(n, x)`` for ``n >= 1`` (cython_special has no kernel for it): the
    recurrence ``ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x+1) - (-1)ⁿ n!/x^(n+1)`` up to x >= 20, then the
    asymptotic series ``(-1)^(n+1) [(n-1)!/xⁿ + n!/(2x^(n+1)) + Σ B₂ₖ (2k+n-1)!/((2k)!
    x^(2k+n))]``, whose first omitted term there is below 1e-17 relative."""
    fact_n = math.gamma(n + 1.0)
    sign = -1.0 if n % 2 == 1 else 1.0         # (-1)**n
    shifted = 0.0
    while x < 20.0:
        shifted -= sign * fact_n / x ** (n + 1)
        x += 1.0
    series = math.gamma(n * 1.0) / x ** n + fact_n / (2.0 * x ** (n + 1))
    for k in range(1, len(_BERNOULLI) + 1):
        series += (_BERNOULLI[k - 1] * math.gamma(2.0 * k + n) / math.gamma(2.0 * k + 1.0)
                   / x ** (2 * k + n))
    return shifted - sign * series


def _polygamma_twin(n, x):
    """``polygamma(n, x)``: SciPy's digamma kernel for n = 0, else the series."""
    f = _polygamma_ufunc()
    return lambda n, x: f(n, x)


def _polygamma_ufunc():
    if "polygamma" not in _UFUNCS:
        import numba
        series, psi = numba.njit(polygamma_scalar), _kernel("psi", 1)

        def scalar(n, x):
            return psi(x, 0) if n == 0 else series(n, x)
        # float64 always, as SciPy's polygamma (a Python function over zeta) gives.
        _UFUNCS["polygamma"] = numba.vectorize(["float64(int64, float64)"], nopython=True)(scalar)
    return _UFUNCS["polygamma"]


def register() -> None:
    """The twins, for the scipy.special functions this SciPy has."""
    for name, (_, nargs) in KERNELS.items():
        fn = getattr(special, name, None)
        if fn is not None:
            numba_twin(fn, always=True)(_one(name) if nargs == 1 else _two(name))
    numba_twin(special.psi, always=True)(_one("digamma"))
    numba_twin(special.polygamma, always=True)(_polygamma_twin)


if special is not None:
    register()


# ---------------------------------------------------------------------------
# softmax and log_softmax along one axis (or the whole array), and their VJPs:
# loops over the array as (before, along, after) blocks, C order, as the
# cumulative twins do.

def _blocks(axis):
    """The twin's view of an array: a compiled ``f(x, axis)`` giving it C-contiguous as
    (before, along, after) blocks, one block for ``axis=None``."""
    if twins.is_none(axis):
        return twins.jitted(_all_blocks)
    return twins.jitted(_axis_blocks)


def _all_blocks(x, axis):
    return np.ascontiguousarray(x).reshape((1, x.size, 1))


def _axis_blocks(x, axis):
    before, after = 1, 1
    ax = axis % x.ndim
    for i in range(x.ndim):
        if i < ax:
            before *= x.shape[i]
        elif i > ax:
            after *= x.shape[i]
    return np.ascontiguousarray(x).reshape((before, x.shape[ax], after))


def _softmax3(x3, log):
    out = np.empty(x3.shape, x3.dtype)
    for i in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            m = -np.inf         # the shift: the largest entry, 0 where not finite (as SciPy)
            for k in range(x3.shape[1]):
                m = max(m, x3[i, k, j])
            m = m if np.isfinite(m) else 0.0
            total = 0.0
            for k in range(x3.shape[1]):
                e = np.exp(x3[i, k, j] - m)
                total += e
                out[i, k, j] = x3[i, k, j] - m if log else e
            for k in range(x3.shape[1]):
                out[i, k, j] = out[i, k, j] - np.log(total) if log else out[i, k, j] / total
    return out


def _softmax_vjp3(g3, s3, log):
    """``s (g - sum(g s))`` for softmax, ``g - exp(s) sum(g)`` for log_softmax."""
    out = np.empty(s3.shape, s3.dtype)
    for i in range(s3.shape[0]):
        for j in range(s3.shape[2]):
            total = 0.0
            for k in range(s3.shape[1]):
                total += g3[i, k, j] if log else g3[i, k, j] * s3[i, k, j]
            for k in range(s3.shape[1]):
                out[i, k, j] = g3[i, k, j] - np.exp(s3[i, k, j]) * total if log \
                    else s3[i, k, j] * (g3[i, k, j] - total)
    return out


def _softmax_twin(log):
    def twin(x, axis=None):
        if not twins.is_float_array(x):
            return None
        blocks, kernel = _blocks(axis), twins.jitted(_softmax3)
        return lambda x, axis=None: kernel(blocks(x, axis), log).reshape(x.shape)
    return twin


def _softmax_vjp_twin(log):
    def twin(g, ans, x, axis=None):
        if not (twins.is_float_array(g) and twins.is_float_array(ans)):
            return None
        blocks, kernel = _blocks(axis), twins.jitted(_softmax_vjp3)
        return lambda g, ans, x, axis=None: kernel(
            blocks(np.broadcast_to(g, ans.shape), axis), blocks(ans, axis), log).reshape(x.shape)
    return twin


# logsumexp over the whole array or one axis, with weights b broadcast to a's
# shape or without: the shift by the slice's largest entry (0 where that is not
# finite), as SciPy's.  Its VJP g b exp(a - ans) gives an infinite result's g to
# the entries equal to it, shared in proportion to b (equally without b), as the
# Python rule does.

_LSE_SIG = "a, axis=None, b=None, keepdims=False, return_sign=False"


def _logsumexp_slice(x, p):
    m = np.max(x)
    m = m if np.isfinite(m) else 0.0
    return m + np.log(np.sum(np.exp(x - m)))


def _unweighted(t) -> bool:
    return twins.is_float_array(t["a"]) and twins.is_none(t["b"]) \
        and twins.literal(t["return_sign"], False) is False


def _weighted(t) -> bool:
    """``b`` an array of at most ``a``'s rank, or a number: broadcast to ``a``'s shape."""
    b = t["b"]
    return twins.is_float_array(t["a"]) and twins.literal(t["return_sign"], False) is False \
        and (twins.is_number(b) or twins.is_array(b) and b.ndim <= t["a"].ndim)


def _weights_like(a, b):
    """``b`` broadcast to ``a``'s shape, C-contiguous (a ValueError where it does not
    broadcast to it: SciPy's result would take a larger shape, which the twin does not)."""
    _, bb = np.broadcast_arrays(a, b)
    if bb.shape != a.shape:
        raise ValueError("logsumexp under jit=True: b must broadcast to the shape of a")
    return bb * 1.0     # a new C-contiguous float array: one copy, even of a broadcast


def _logsumexp_b3(a3, b3):
    """Weighted logsumexp of each (i, :, j) slice, as SciPy: entries with b = 0 left
    out, the shift their largest entry (0 where that is not finite), NaN where the
    weighted sum is negative."""
    out = np.empty((a3.shape[0], a3.shape[2]))
    for i in range(a3.shape[0]):
        for j in range(a3.shape[2]):
            m = -np.inf
            for k in range(a3.shape[1]):
                if b3[i, k, j] != 0.0:
                    m = max(m, a3[i, k, j])
            m = m if np.isfinite(m) else 0.0
            total = 0.0
            for k in range(a3.shape[1]):
                if b3[i, k, j] != 0.0:
                    total += b3[i, k, j] * np.exp(a3[i, k, j] - m)
            out[i, j] = m + np.log(total) if total >= 0.0 else np.nan
    return out


def _logsumexp_decide(t):
    if _weighted(t):
        return _logsumexp_weighted(t)
    if not _unweighted(t):
        return None
    body = along_axis(_logsumexp_slice, t["a"], t["axis"], t["keepdims"])
    if body is None:
        return None
    run = twins.jitted(body)
    return lambda a, axis, b, keepdims, return_sign: run(a, axis, keepdims, 0)


def _logsumexp_weighted(t):
    keep = twins.literal(t["keepdims"], None)
    if keep is None:
        twins.unsupported("keepdims= other than a constant True or False")
    blocks, kernel, nd = _blocks(t["axis"]), twins.jitted(_logsumexp_b3), t["a"].ndim
    weights = twins.jitted(_weights_like)
    # (pre, post): one result per slice
    sums = twins.jitted(lambda a, axis, b: kernel(blocks(a, axis), blocks(weights(a, b), axis)))
    if twins.is_none(t["axis"]):
        ones = twins.ones_shape(nd)
        if keep:
            return lambda a, axis, b, keepdims, return_sign: sums(a, axis, b).reshape(ones)
        return lambda a, axis, b, keepdims, return_sign: sums(a, axis, b)[0, 0]
    shaper = twins.reduced_shape(nd, keep)
    return lambda a, axis, b, keepdims, return_sign: sums(a, axis, b).reshape(
        shaper(a.shape, axis % nd))


def _logsumexp_vjp_b3(g3, r3, a3, b3, of_b):
    """The cotangent of a (``of_b`` False: g b w) or of b (g w), w = exp(a - ans) or,
    where ans is infinite, the entries equal to it sharing it in proportion to b."""
    out = np.empty(a3.shape, a3.dtype)
    for i in range(a3.shape[0]):
        for j in range(a3.shape[2]):
            r = r3[i, 0, j]
            count = 0.0
            if np.isinf(r):
                for k in range(a3.shape[1]):
                    count += b3[i, k, j] if a3[i, k, j] == r else 0.0
                count += 1.0 if count == 0.0 else 0.0
            for k in range(a3.shape[1]):
                if np.isinf(r):
                    w = 1.0 / count if a3[i, k, j] == r else 0.0
                else:
                    w = np.exp(a3[i, k, j] - r)
                out[i, k, j] = g3[i, 0, j] * w if of_b else g3[i, 0, j] * b3[i, k, j] * w
    return out


def _logsumexp_vjp_decide(t, of_b=False):
    if not (twins.is_number(t["g"]) or twins.is_float_array(t["g"])):
        return None
    blocks = _blocks(t["axis"])
    g3, r3 = _reduced_blocks(t["g"], t["axis"]), _reduced_blocks(t["ans"], t["axis"])
    kernel = twins.jitted(_logsumexp_vjp_b3)

    def spread(g, ans, a, axis, w, of_b):
        """The cotangent over a's shape, weights ``w`` of that shape."""
        return kernel(g3(g, a, axis), r3(ans, a, axis), blocks(a, axis), blocks(w, axis),
                      of_b).reshape(a.shape)
    spread = twins.jitted(spread)
    if _weighted(t):
        weights = twins.jitted(_weights_like)
        if of_b and not twins.is_array(t["b"]):
            return lambda g, ans, a, axis, b, keepdims, return_sign: np.sum(
                spread(g, ans, a, axis, weights(a, b), True))
        if of_b:    # summed onto b's shape where b was broadcast (unbroadcast's twin)
            return lambda g, ans, a, axis, b, keepdims, return_sign: unbroadcast(
                spread(g, ans, a, axis, weights(a, b), True), b)
        return lambda g, ans, a, axis, b, keepdims, return_sign: spread(
            g, ans, a, axis, weights(a, b), False)
    if of_b or not _unweighted(t):
        return None
    return lambda g, ans, a, axis, b, keepdims, return_sign: spread(      # every weight 1
        g, ans, a, axis, np.ones(a.shape), False)


def _reduced_blocks(v, axis):
    """A compiled ``f(v, a, axis)``: a reduction's result ``v`` over ``axis`` of ``a``
    (with the axis kept or not) as (before, 1, after) blocks, one for ``axis=None``."""
    if twins.is_number(v):
        return twins.jitted(lambda v, a, axis: np.full((1, 1, 1), v))
    if twins.is_none(axis):
        return twins.jitted(lambda v, a, axis: np.ascontiguousarray(v).reshape((1, 1, 1)))
    split = twins.split_shape()

    def along(v, a, axis):
        before, _, after = split(a.shape, axis % a.ndim)
        return np.ascontiguousarray(v).reshape((before, 1, after))
    return twins.jitted(along)


def register_softmax() -> None:
    numba_twin(special.softmax, always=True)(_softmax_twin(False))
    numba_twin(special.log_softmax, always=True)(_softmax_twin(True))
    numba_twin(softmax_vjp)(_softmax_vjp_twin(False))
    numba_twin(log_softmax_vjp)(_softmax_vjp_twin(True))
    # keeps_dtype: the weighted kernels compute in float64 (a and b both float32 give
    # float32, as SciPy and the Python rules do).
    numba_twin(special.logsumexp, always=True)(twins.keeps_dtype("a", "b")(
        twins.signature_twin(_LSE_SIG, _logsumexp_decide)))
    numba_twin(logsumexp_vjp)(twins.keeps_dtype("a", "b")(twins.signature_twin(
        "g, ans, " + _LSE_SIG, _logsumexp_vjp_decide)))
    numba_twin(logsumexp_vjp_b)(twins.keeps_dtype("a", "b")(twins.signature_twin(
        "g, ans, " + _LSE_SIG, lambda t: _logsumexp_vjp_decide(t, of_b=True))))


if special is not None:
    register_softmax()
