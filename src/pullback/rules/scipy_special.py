"""Derivatives of ``scipy.special`` functions (registered only when SciPy is installed).

gammaln, digamma (psi), gamma, erf, erfc, erfcx, ndtr, log_ndtr, ndtri, expit,
logit, xlogy, xlog1py (elementwise
templates, like :mod:`.elementwise`); logsumexp, softmax, log_softmax (helpers
written against the array API namespace of their inputs, conventions of
:mod:`.reductions`).

Choices where the derivative is not defined:

* ``xlogy(x, y)`` and ``xlog1py(x, y)`` are 0 wherever ``x == 0``, so their
  derivative in ``y`` is 0 there (not ``0 / 0``).
* ``logsumexp(a, b=b)`` assumes ``sum(b * exp(a)) > 0``; ``return_sign=True``
  (a tuple) raises NotImplementedError.  At an infinite result (an entry +inf, or
  every entry -inf) its derivative is the limit: the entries equal to the result
  share it in proportion to ``b``, the others get 0.
"""
from __future__ import annotations

import numpy as np

try:
    from scipy import special
except ImportError:     # pragma: no cover - SciPy is an optional extra: no rules for it then
    special = None

from . import results
from .elementwise import (
    as_array,
    expand_reduced,
    like_arg,
    namespace,
    normalize_axes,
    shape_of,
    unbroadcast,
)
from .reductions_second import kind_of_arg, ones_of, slice_sum, zero_cotangent  # noqa: F401
from .registry import defrule
from .tangents import deftangent

__all__ = ["logsumexp_vjp", "logsumexp_vjp_b", "softmax_vjp", "log_softmax_vjp"]

_TWO_OVER_SQRT_PI = 1.1283791670955126
_SQRT_2PI = 2.5066282746310002
_ONE_OVER_SQRT_2PI = 0.3989422804014327


# ---------------------------------------------------------------------------
# logsumexp, softmax, log_softmax

def _logsumexp_parts(g, ans, a, axis, b, keepdims, return_sign):
    if return_sign:
        raise NotImplementedError("the derivative of logsumexp(..., return_sign=True) is not "
                                  "implemented")
    xp = namespace(g, a, b)
    A = as_array(xp, a, g, b)
    B = None if b is None else as_array(xp, b, A)
    shape = tuple(np.broadcast_shapes(tuple(A.shape), () if B is None else tuple(B.shape)))
    axes = normalize_axes(axis, len(shape))
    if keepdims:    # SciPy keeps a 0-d input's dimension as (1,)
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        g, ans = (xp.reshape(as_array(xp, v, A), kept) for v in (g, ans))
    ge = expand_reduced(g, shape, axes, keepdims, xp, A)
    ANS = expand_reduced(ans, shape, axes, keepdims, xp, A)
    # exp(A - ans) is inf - inf where an entry equals an infinite result: the limit
    # shares the result among those entries, in proportion to b, as at a finite tie.
    infinite = xp.isinf(ANS)
    weights = xp.exp(A - xp.where(infinite, xp.zeros_like(ANS), ANS))
    tied = xp.astype(A == ANS, weights.dtype)
    count = xp.sum(tied if B is None else tied * B, axis=axes, keepdims=True)
    weights = xp.where(infinite, tied / (count + xp.astype(count == 0, count.dtype)), weights)
    return ge, weights, B


def logsumexp_vjp(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    """Cotangent of ``a`` in ``logsumexp(a, axis, b, keepdims)``: ``g b exp(a - ans)``."""
    ge, weights, B = _logsumexp_parts(g, ans, a, axis, b, keepdims, return_sign)
    return unbroadcast(ge * weights if B is None else ge * B * weights, a)


def logsumexp_vjp_b(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    """Cotangent of ``b`` in ``logsumexp(a, axis, b, keepdims)``: ``g exp(a - ans)``."""
    ge, weights, _ = _logsumexp_parts(g, ans, a, axis, b, keepdims, return_sign)
    return unbroadcast(ge * weights, b)


def softmax_vjp(g, ans, x, axis=None):
    """Cotangent of ``x`` in ``s = softmax(x, axis)``: ``s (g - sum(g s))``."""
    xp = namespace(g, x)
    S = as_array(xp, ans, x)
    G = as_array(xp, g, S)
    axes = normalize_axes(axis, S.ndim)
    total = xp.sum(G * S, axis=axes, keepdims=True) if axes else G * S
    return like_arg(xp.reshape(S * (G - total), shape_of(x)), x)


def log_softmax_vjp(g, ans, x, axis=None):
    """Cotangent of ``x`` in ``log_softmax(x, axis)``: ``g - exp(ans) sum(g)``."""
    xp = namespace(g, x)
    L = as_array(xp, ans, x)
    G = as_array(xp, g, L)
    axes = normalize_axes(axis, L.ndim)
    total = xp.sum(G, axis=axes, keepdims=True) if axes else G
    return like_arg(xp.reshape(G - xp.exp(L) * total, shape_of(x)), x)


def log_softmax_jvp(t, ans, x, axis=None):
    """Tangent of ``log_softmax(x, axis)`` along ``t``: ``t - sum(exp(ans) t)``."""
    xp = namespace(t, x)
    L = as_array(xp, ans, x)
    T = xp.broadcast_to(as_array(xp, t, L), tuple(L.shape))
    axes = normalize_axes(axis, L.ndim)
    total = xp.sum(xp.exp(L) * T, axis=axes, keepdims=True) if axes else xp.exp(L) * T
    return T - total


def softmax_vjp_vjp_s(g, c, s, x, axis=None):
    """Cotangent of ``s`` in ``softmax_vjp(c, s, x, axis) = s (c - sum(c s))``:
    ``g (c - sum(c s)) - c sum(g s)``."""
    xp = namespace(g, s)
    S = as_array(xp, s, g)
    G, C = as_array(xp, g, S), as_array(xp, c, S)
    axes = normalize_axes(axis, S.ndim)
    def total(v):       # noqa: E306 - the sum over each slice, kept
        return xp.sum(v, axis=axes, keepdims=True) if axes else v
    return like_arg(G * (C - total(C * S)) - C * total(G * S), s)


def log_softmax_jvp_vjp_l(g, t, ans, x, axis=None):
    """Cotangent of ``ans`` in ``log_softmax_jvp(t, ans, x, axis) = t - sum(exp(ans) t)``:
    ``-sum(g) exp(ans) t``."""
    xp = namespace(g, t, ans)
    L = as_array(xp, ans, g)
    G = as_array(xp, g, L)
    T = xp.broadcast_to(as_array(xp, t, L), tuple(L.shape))
    axes = normalize_axes(axis, L.ndim)
    total = xp.sum(G, axis=axes, keepdims=True) if axes else G
    return like_arg(-total * xp.exp(L) * T, ans)


def _softmax_vjp_s_dot(u, c, s, x, axis=None):
    """The tangent of ``softmax_vjp(c, s, x, axis)`` along ``u`` in ``s``:
    ``u (c - sum(c s)) - s sum(c u)``."""
    xp = namespace(u, s)
    S = as_array(xp, s, u)
    U, C = as_array(xp, u, S), as_array(xp, c, S)
    axes = normalize_axes(axis, S.ndim)
    def total(v):       # noqa: E306 - the sum over each slice, kept
        return xp.sum(v, axis=axes, keepdims=True) if axes else v
    return like_arg(U * (C - total(C * S)) - S * total(C * U), s)


def _log_softmax_jvp_l_dot(u, v, r, x, axis=None):
    """The tangent of ``log_softmax_jvp(v, r, x, axis)`` along ``u`` in ``r``:
    ``-sum(exp(r) u v)`` over each slice."""
    xp = namespace(u, v, r)
    L = as_array(xp, r, u)
    P = xp.exp(L) * as_array(xp, u, L) * as_array(xp, v, L)
    axes = normalize_axes(axis, L.ndim)
    total = xp.sum(P, axis=axes, keepdims=True) if axes else P
    return like_arg(-xp.broadcast_to(total, tuple(L.shape)), r)


# ---------------------------------------------------------------------------
# Registrations

_LSE_DEFAULTS = "axis=None, b=None, keepdims=False, return_sign=False"


def register():
    """Register the rules of this module (when SciPy is installed)."""
    defrule(special.gammaln, "x, /", x="g * digamma(x)")
    defrule(special.digamma, "x, /", x="g * polygamma(1, x)")    # special.psi is digamma
    defrule(special.gamma, "x, /", x="g * ans * digamma(x)")
    defrule(special.erf, "x, /", x="g * _TWO_OVER_SQRT_PI * np.exp(-x * x)")
    defrule(special.erfcx, "x, /", x="g * (2.0 * x * ans - _TWO_OVER_SQRT_PI)")
    defrule(special.ndtr, "x, /", x="g * _ONE_OVER_SQRT_2PI * np.exp(-0.5 * x * x)")
    # exp(-x²/2) / ndtr(x) as one exponential: finite far in the left tail.
    defrule(special.log_ndtr, "x, /", x="g * _ONE_OVER_SQRT_2PI * np.exp(-0.5 * x * x - ans)")
    defrule(special.ndtri, "x, /", x="g * _SQRT_2PI * np.exp(0.5 * ans * ans)")
    defrule(special.erfc, "x, /", x="-g * _TWO_OVER_SQRT_PI * np.exp(-x * x)")
    defrule(special.expit, "x, /", x="g * ans * (1.0 - ans)")
    defrule(special.logit, "x, /", x="g / (x * (1.0 - x))")
    defrule(special.xlogy, "x, y, /", x="g * np.log(y)",
            y="g * x / (y * (x != 0) + (x == 0))")
    defrule(special.xlog1py, "x, y, /", x="g * np.log1p(y)",
            y="g * x / (1.0 + y * (x != 0))")
    defrule(special.logsumexp, "a, axis=None, b=None, keepdims=False, return_sign=False",
            result=results.reduction,
            a="logsumexp_vjp(g, ans, a, axis, b, keepdims, return_sign)",
            b="logsumexp_vjp_b(g, ans, a, axis, b, keepdims, return_sign)")
    # logsumexp_vjp again (Hessians: logsumexp's tangent calls it): c b exp(a - r) is
    # linear in c, its own derivative in a, minus it in r; in b, c exp(a - r).
    args = "axis, b, keepdims, return_sign"
    defrule(logsumexp_vjp, f"c, r, a, {_LSE_DEFAULTS}", result=kind_of_arg(2),
            c=f"slice_sum(g * logsumexp_vjp(ones_of(c), r, a, {args}), c, axis, keepdims)",
            r=f"slice_sum(-g * logsumexp_vjp(c, r, a, {args}), r, axis, keepdims)",
            a=f"g * logsumexp_vjp(c, r, a, {args})",
            b="unbroadcast(g * logsumexp_vjp(c, r, a, axis, None, keepdims, return_sign), b)")
    deftangent(logsumexp_vjp, shaped=True, c=f"logsumexp_vjp(t, r, a, {args})",
               r=f"-logsumexp_vjp(c * t, r, a, {args})",
               a=f"t * logsumexp_vjp(c, r, a, {args})")
    defrule(special.softmax, "x, axis=None", result=results.same_shape,
            x="softmax_vjp(g, ans, x, axis)")
    defrule(special.log_softmax, "x, axis=None", result=results.same_shape,
            x="log_softmax_vjp(g, ans, x, axis)")
    # softmax's Jacobian diag(s) - s s^T is symmetric: its tangent is its VJP of t.
    deftangent(special.softmax, shaped=True, x="softmax_vjp(t, ans, x, axis)")
    deftangent(special.log_softmax, shaped=True, x="log_softmax_jvp(t, ans, x, axis)")
    # Their tangents again (Hessians): linear in the tangent (softmax's Jacobian is
    # symmetric; log_softmax's transposes to its VJP), functions of the result, not of x.
    defrule(softmax_vjp, "c, s, x, axis=None", result=kind_of_arg(1),
            c="softmax_vjp(g, s, x, axis)", s="softmax_vjp_vjp_s(g, c, s, x, axis)",
            x="zero_cotangent(x)")
    deftangent(softmax_vjp, shaped=True, c="softmax_vjp(t, s, x, axis)",
               s="_softmax_vjp_s_dot(t, c, s, x, axis)", x="0.0 * ans")
    defrule(log_softmax_jvp, "v, r, x, axis=None", result=kind_of_arg(1),
            v="log_softmax_vjp(g, r, x, axis)", r="log_softmax_jvp_vjp_l(g, v, r, x, axis)",
            x="zero_cotangent(x)")
    deftangent(log_softmax_jvp, shaped=True, v="log_softmax_jvp(t, r, x, axis)",
               r="_log_softmax_jvp_l_dot(t, v, r, x, axis)", x="0.0 * ans")


if special is not None:
    # By name in the templates: a helper name is bound to its Numba twin under jit=True
    # (an attribute of the module would reach Numba as the module's attribute).
    digamma, polygamma = special.digamma, special.polygamma
    register()
