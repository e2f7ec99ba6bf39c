"""Derivatives of the reductions' derivative helpers, for Hessians reverse over forward.

A reduction's tangent is derived (:func:`.tangents.tangent_of`): ``sum(t * w, axis)``
with ``w = helper(ones, ans, a, ...)`` the derivative rule's contribution for a
cotangent of ones.  Reverse mode differentiates that tangent program again, so each
such helper (``max_vjp``, ``var_vjp``, ``std_vjp``, ``norm_vjp``, ``logsumexp_vjp``,
``nansum_vjp``, ``nanmean_vjp``, ``average_vjp_a``) has a derivative rule of its own.
The shared parts are here, with those of ``var_vjp`` and ``std_vjp``; the others sit
beside their helpers.

Every such helper is linear in its cotangent argument, entry by entry: it is the
cotangent spread over the reduced slice times a weight.  Its rule's parameter for
that argument is named ``c`` (``g`` is the template's own cotangent), and the
cotangent of ``c`` is the slice sum of ``g`` times the weight (:func:`slice_sum`).
``ans`` is a parameter of its own: in a tangent program it is the primal's result,
whose dependence on ``a`` reverse mode follows through the primal's rule.

Where a helper's weight is piecewise constant (the tie shares of ``max``, the NaN
masks of ``nansum``), its derivative in ``a`` and ``ans`` is zero, the derivative
almost everywhere; at a tie the shares stay those of the first-order rule, so the
second derivative is that of the same convention.
"""
from __future__ import annotations

import numpy as np

from ..core.kinds import Kind
from . import twins
from .elementwise import expand_reduced, is_scalar, like_arg, namespace, normalize_axes, shape_of
from .forms import numba_twin
from .reductions import _var_parts, along_axis, safe_divisor, std_vjp, var_vjp
from .registry import defrule
from .tangents import deftangent

__all__ = ["zero_cotangent", "ones_of", "slice_sum", "kind_of_arg", "var_vjp_vjp_a",
           "var_vjp_vjp_mean", "std_vjp_vjp_a", "std_vjp_vjp_ans", "std_vjp_vjp_mean"]


def zero_cotangent(x):
    """A zero of ``x``'s form: the cotangent of an argument the value is locally constant in."""
    if is_scalar(x):
        return 0.0
    return namespace(x).zeros_like(x)


def ones_of(c):
    """Ones of ``c``'s form (a helper's cotangent argument): its weight comes back."""
    if is_scalar(c):
        return 1.0
    return namespace(c).ones_like(c)


def slice_sum(x, c, axis, keepdims):
    """``x`` (a reduction's argument's shape) summed over the reduced axes, in the form of
    ``c`` (the reduction's result): the transpose of spreading ``c`` over each slice."""
    if np.ndim(x) == 0:
        return like_arg(x, c)
    xp = namespace(x)
    axes = normalize_axes(axis, x.ndim)
    s = xp.sum(x, axis=axes, keepdims=keepdims) if axes else x
    return like_arg(xp.reshape(s, shape_of(c)), c)


def kind_of_arg(index: int):
    """A result kind: a float of the kind of the call's argument ``index`` (a helper that
    returns a cotangent of that argument)."""
    def kind(fn, args, kws, call) -> Kind:
        a = args[index] if len(args) > index else None
        return Kind(a.ndim, "f") if a is not None and a.ndim is not None else Kind(-1, "f")
    kind.__name__ = f"like_argument_{index}"
    return kind


# Numba twins of the three above (max_vjp's rule, under jit=True, calls them).

@numba_twin(zero_cotangent)
def _zero_cotangent_numba(x):
    if twins.is_number(x):
        return lambda x: 0.0
    return lambda x: np.zeros_like(x)


@numba_twin(ones_of)
def _ones_of_numba(c):
    if twins.is_number(c):
        return lambda c: 1.0
    return lambda c: np.ones_like(c)


@numba_twin(slice_sum)
def _slice_sum_numba(x, c, axis, keepdims):
    if twins.is_number(x):
        return lambda x, c, axis, keepdims: x * 1.0
    body = twins.jitted(along_axis(lambda v, p: np.sum(v), x, axis, keepdims, tuples=True))
    if twins.is_number(c):
        return lambda x, c, axis, keepdims: body(x, axis, keepdims, 0)
    return lambda x, c, axis, keepdims: np.reshape(np.asarray(body(x, axis, keepdims, 0)),
                                                   c.shape)


def _centred(xp, h, axes, mean):
    """``h`` less its mean over ``axes`` (the transpose of centring, which is symmetric);
    ``h`` itself when the centre is a given ``mean=`` rather than the slice's mean."""
    if mean is not None:
        return h
    return h - xp.mean(h, axis=axes, keepdims=True) if axes else h * 0.0


def var_vjp_vjp_a(g, c, a, axis=None, ddof=0, keepdims=False, where=True, mean=None,
                  correction=None):
    """Cotangent of ``a`` in ``var_vjp(c, a, ...) = c (2 / (N - ddof)) (a - mean(a))``:
    the centring of ``g c 2 / (N - ddof)``."""
    xp, ce, _, divisor, axes = _var_parts(c, a, axis, ddof, keepdims, where, mean, correction)
    return like_arg(_centred(xp, g * ce * (2.0 / divisor), axes, mean), a)


def var_vjp_vjp_mean(g, c, a, axis=None, ddof=0, keepdims=False, where=True, mean=None,
                     correction=None):
    """Cotangent of a given ``mean=`` in ``var_vjp(c, a, ..., mean=mean)``:
    ``-sum(g c 2 / (N - ddof))`` over each slice, in the form of ``mean``."""
    xp, ce, _, divisor, axes = _var_parts(c, a, axis, ddof, keepdims, where, mean, correction)
    return _as_mean(xp, -(g * ce * (2.0 / divisor)), axes, mean)


def _as_mean(xp, h, axes, mean):
    """``h`` summed over ``axes`` in the form of ``mean`` (kept axes, or a number)."""
    s = xp.sum(h, axis=axes, keepdims=True) if axes else h
    return like_arg(xp.reshape(s, shape_of(mean)), mean)


def _std_parts(c, ans, a, axis, ddof, keepdims, where, mean, correction):
    xp, ce, centred, divisor, axes = _var_parts(c, a, axis, ddof, keepdims, where, mean,
                                                correction)
    sd = safe_divisor(xp, expand_reduced(ans, shape_of(a), axes, keepdims, xp, a))
    return xp, ce, centred, divisor, axes, sd


def std_vjp_vjp_a(g, c, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None,
                  correction=None):
    """Cotangent of ``a`` in ``std_vjp(c, ans, a, ...) = c (a - mean(a)) / ((N - ddof) ans)``,
    ``ans`` held fixed: the centring of ``g c / ((N - ddof) ans)`` (``ans`` 0 counts as 1,
    as in std_vjp)."""
    xp, ce, _, divisor, axes, sd = _std_parts(c, ans, a, axis, ddof, keepdims, where, mean,
                                              correction)
    return like_arg(_centred(xp, g * ce / (divisor * sd), axes, mean), a)


def std_vjp_vjp_ans(g, c, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None,
                    correction=None):
    """Cotangent of ``ans`` in ``std_vjp``: ``-sum(g std_vjp / ans)`` over each slice."""
    xp, ce, centred, divisor, axes, sd = _std_parts(c, ans, a, axis, ddof, keepdims, where,
                                                    mean, correction)
    return slice_sum(-g * ce * centred / (divisor * sd * sd), ans, axis, keepdims)


def std_vjp_vjp_mean(g, c, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None,
                     correction=None):
    """Cotangent of a given ``mean=`` in ``std_vjp``: ``-sum(g c / ((N - ddof) ans))``."""
    xp, ce, _, divisor, axes, sd = _std_parts(c, ans, a, axis, ddof, keepdims, where, mean,
                                              correction)
    return _as_mean(xp, -(g * ce / (divisor * sd)), axes, mean)


def _std_dot_a(t, c, ans, a, axis, ddof, keepdims, where, mean, correction):
    """The tangent of ``std_vjp`` along ``t`` in ``a``: ``c centred(t) / ((N - ddof) ans)``."""
    xp, ce, _, divisor, axes, sd = _std_parts(c, ans, a, axis, ddof, keepdims, where, mean,
                                              correction)
    return like_arg(ce * _centred(xp, t, axes, mean) / (divisor * sd), a)


def _std_dot_ans(t, c, ans, a, axis, ddof, keepdims, where, mean, correction):
    """The tangent of ``std_vjp`` along ``t`` in ``ans``: ``-std_vjp(c) t / ans``."""
    xp, ce, centred, divisor, axes, sd = _std_parts(c, ans, a, axis, ddof, keepdims, where,
                                                    mean, correction)
    te = expand_reduced(t, shape_of(a), axes, keepdims, xp, a)
    return like_arg(-ce * centred * te / (divisor * sd * sd), a)


def _var_dot_a(t, c, a, axis, ddof, keepdims, where, mean, correction):
    """The tangent of ``var_vjp`` along ``t`` in ``a``: ``c 2 / (N - ddof) centred(t)``."""
    xp, ce, _, divisor, axes = _var_parts(c, a, axis, ddof, keepdims, where, mean, correction)
    return like_arg(ce * (2.0 / divisor) * _centred(xp, t, axes, mean), a)


# ---------------------------------------------------------------------------
# Registrations.  ``mean=`` differentiated in a tangent program has no rule (refused).

_VAR = "c, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None"
_VAR_ARGS = "axis, ddof, keepdims, where, mean, correction"
defrule(var_vjp, _VAR, result=kind_of_arg(1),
        c=f"slice_sum(g * var_vjp(ones_of(c), a, {_VAR_ARGS}), c, axis, keepdims)",
        a=f"var_vjp_vjp_a(g, c, a, {_VAR_ARGS})", mean=f"var_vjp_vjp_mean(g, c, a, {_VAR_ARGS})")
deftangent(var_vjp, shaped=True, c=f"var_vjp(t, a, {_VAR_ARGS})",
           a=f"_var_dot_a(t, c, a, {_VAR_ARGS})")

_STD = "c, r, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None"
defrule(std_vjp, _STD, result=kind_of_arg(2),
        c=f"slice_sum(g * std_vjp(ones_of(c), r, a, {_VAR_ARGS}), c, axis, keepdims)",
        r=f"std_vjp_vjp_ans(g, c, r, a, {_VAR_ARGS})",
        a=f"std_vjp_vjp_a(g, c, r, a, {_VAR_ARGS})",
        mean=f"std_vjp_vjp_mean(g, c, r, a, {_VAR_ARGS})")
deftangent(std_vjp, shaped=True, c=f"std_vjp(t, r, a, {_VAR_ARGS})",
           r=f"_std_dot_ans(t, c, r, a, {_VAR_ARGS})",
           a=f"_std_dot_a(t, c, r, a, {_VAR_ARGS})")
