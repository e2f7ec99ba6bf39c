"""Examples for the twins of rules/scipy_special_twins (SciPy's compiled kernels as
Numba ufuncs, of a number, arrays, and (two arguments) broadcast arrays; softmax)
and of rules/scipy_lib (``xp_promote``)."""
from __future__ import annotations

import numpy as np

from ._base import arr, call, num, sizes

EXAMPLES: dict = {}

# Each function's domain, where SciPy's value is finite.
_ONE = {"gammaln": (0.2, 5), "psi": (0.2, 5), "erf": (-2, 2), "erfc": (-2, 2),
        "expit": (-4, 4), "logit": (0.05, 0.95), "ndtr": (-3, 3), "log_ndtr": (-3, 3),
        "ndtri": (0.05, 0.95), "erfcx": (-1, 3), "gamma": (0.2, 4)}


def _one(lo, hi):
    return lambda rng, dt: [call(arr(rng, dt, sizes(rng, 1), lo, hi)),
                            call(arr(rng, dt, sizes(rng, 2), lo, hi)),
                            call(num(rng, dt, lo, hi))]


for _name, (_lo, _hi) in _ONE.items():
    EXAMPLES[_name] = _one(_lo, _hi)


def _two(rng, dt):
    m, n = sizes(rng, 2)
    return [call(arr(rng, dt, (m, n), 0.1, 2), arr(rng, dt, (n,), 0.1, 2)),
            call(num(rng, dt, 0.1, 2), arr(rng, dt, (m,), 0.1, 2))]


EXAMPLES["xlogy"] = EXAMPLES["xlog1py"] = _two


def _polygamma(rng, dt):
    x = arr(rng, dt, sizes(rng, 1), 0.3, 4)
    return [call(1, x), call(0, x), call(2, num(rng, dt, 0.3, 4))]


EXAMPLES["scipy.special._basic.polygamma"] = _polygamma


def _softmax(rng, dt):
    shape = sizes(rng, 3)
    return [call(arr(rng, dt, shape), axis=1), call(arr(rng, dt, shape[:2])),
            call(arr(rng, dt, shape), axis=-1)]


def _softmax_vjp(fn):
    def make(rng, dt):
        shape = sizes(rng, 3)
        out = []
        for axis in (1, None, -1):
            x = arr(rng, dt, shape)
            out.append(call(arr(rng, dt, shape), fn(x, axis=axis), x, axis))
        return out
    return make


def _weights(rng, dt, shape):
    """Weights b of logsumexp: positive, one of them 0 (SciPy leaves its entry out)."""
    b = arr(rng, dt, shape, 0.2, 2.0)
    b.flat[0] = 0.0
    return b


def _logsumexp(rng, dt):
    shape = sizes(rng, 3)
    return [call(arr(rng, dt, shape)), call(arr(rng, dt, shape), axis=1),
            call(arr(rng, dt, shape[:2]), axis=-1, keepdims=True),
            call(arr(rng, dt, shape), axis=1, b=_weights(rng, dt, shape)),
            call(arr(rng, dt, shape), b=_weights(rng, dt, shape[1:]), keepdims=True),
            call(arr(rng, dt, shape[:2]), axis=0, b=_weights(rng, dt, (1, shape[1])))]


def _logsumexp_vjp_calls(weighted):
    def make(rng, dt):
        from scipy.special import logsumexp
        shape, out = sizes(rng, 3), []
        for axis, keepdims, bshape in ((None, False, shape), (1, False, shape[1:]),
                                       (-1, True, shape), (0, True, (1,) + shape[1:])):
            a = arr(rng, dt, shape)
            b = _weights(rng, dt, bshape) if weighted else None
            ans = np.asarray(logsumexp(a, axis=axis, b=b, keepdims=keepdims), dtype=dt)
            g = arr(rng, dt, ans.shape) if ans.ndim else num(rng, dt)
            out.append(call(g, ans if ans.ndim else ans.item(), a, axis, b, keepdims, False))
        return out
    return make


def _logsumexp_vjp(rng, dt):
    return _logsumexp_vjp_calls(False)(rng, dt) + _logsumexp_vjp_calls(True)(rng, dt)


EXAMPLES["scipy.special._logsumexp.logsumexp"] = _logsumexp
EXAMPLES["pullback.rules.scipy_special.logsumexp_vjp"] = _logsumexp_vjp
EXAMPLES["pullback.rules.scipy_special.logsumexp_vjp_b"] = _logsumexp_vjp_calls(True)
EXAMPLES["scipy.special._logsumexp.softmax"] = EXAMPLES["scipy.special._logsumexp.log_softmax"] \
    = _softmax
try:
    from scipy import special as _special
    EXAMPLES["pullback.rules.scipy_special.softmax_vjp"] = _softmax_vjp(_special.softmax)
    EXAMPLES["pullback.rules.scipy_special.log_softmax_vjp"] = _softmax_vjp(_special.log_softmax)
    from scipy._lib._array_api import xp_promote as _xp_promote  # noqa: F401
except ImportError:     # pragma: no cover
    pass


def _promote(rng, dt):
    return [call(arr(rng, dt, sizes(rng, 1)), xp=np),
            call(arr(rng, dt, sizes(rng, 2)), force_floating=True, xp=np)]


def _promote_vjp(rng, dt):
    x = arr(rng, dt, sizes(rng, 2))
    return [call(arr(rng, dt, x.shape), x, x, 0)]


EXAMPLES["scipy._lib._array_api.xp_promote"] = _promote
EXAMPLES["pullback.rules.scipy_lib.promote_vjp"] = _promote_vjp
