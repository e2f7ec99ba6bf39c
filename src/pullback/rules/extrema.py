"""Derivatives of NumPy's maxima and minima: max, min, amax, amin.

``g`` is split evenly among the entries equal to the result (ties share, as
JAX); a slice whose result came from ``initial`` gets 0.  Conventions are
those of :mod:`pullback.rules.reductions`.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import (
    as_array,
    expand_reduced,
    float_dtype,
    like_arg,
    mask_on,
    namespace,
    normalize_axes,
    shape_of,
)
from .forms import numba_twin
from .reductions import axis_sums, check_axis, no_mask, reduction_twin, spreader, sum_keep, takes_all
from .reductions_second import kind_of_arg, ones_of, slice_sum, zero_cotangent  # noqa: F401
from .registry import defrule
from .tangents import deftangent

__all__ = ["max_vjp"]


def max_vjp(g, ans, a, axis=None, keepdims=False, where=True):
    """Cotangent of ``a`` in ``np.max``/``np.min``: ``g`` shared by the entries equal to ``ans``."""
    if type(a) is np.ndarray and a.dtype == np.float64 and no_mask(where) \
            and (type(g) is float or getattr(g, "dtype", None) == np.float64):
        return _max_vjp_numpy(g, ans, a, axis, keepdims)
    xp = namespace(g, a)
    a_arr = as_array(xp, a, g)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    hit = a_arr == expand_reduced(ans, shape, axes, keepdims, xp, a)
    if not no_mask(where):
        hit = hit & mask_on(xp, where, hit)
    dtype = float_dtype(xp, g, a)
    hit = xp.astype(hit, dtype)
    count = sum_keep(xp, hit, axes)
    # count is 0 only where the result came from `initial`: no entry gets anything.
    share = hit / xp.maximum(count, xp.ones_like(count))
    return like_arg(expand_reduced(g, shape, axes, keepdims, xp, a) * share, a)


def _max_vjp_numpy(g, ans, a, axis, keepdims):
    """max_vjp for float64 NumPy arrays, without the array API wrappers."""
    axes = normalize_axes(axis, a.ndim)
    if axis is not None and not keepdims:
        ans, g = np.expand_dims(ans, axes), np.expand_dims(g, axes)
    hit = a == ans
    count = np.sum(hit, axis=axes, keepdims=True) if axes else hit
    return like_arg(g * hit / np.maximum(count, 1), a)


# ---------------------------------------------------------------------------
# Registrations, with NumPy's parameter names.

for _f, _methods in ((np.max, ("max",)), (np.amax, ()), (np.min, ("min",)), (np.amin, ())):
    defrule(_f, "a, axis=None, out=None, keepdims=False, initial=None, where=True",
            result=results.reduction, methods=_methods,
            a="max_vjp(g, ans, a, axis, keepdims, where)")

# max_vjp again (Hessians: max's tangent calls it, see .reductions_second): linear in
# its cotangent c; the tie shares are piecewise constant in r and a, so zero there.
_MAX_VJP_SIG = "c, r, a, axis=None, keepdims=False, where=True"
defrule(max_vjp, _MAX_VJP_SIG, result=kind_of_arg(2),
        c="slice_sum(g * max_vjp(ones_of(c), r, a, axis, keepdims, where), c, axis, keepdims)",
        r="zero_cotangent(r)", a="zero_cotangent(a)")
deftangent(max_vjp, shaped=True, c="max_vjp(t, r, a, axis, keepdims, where)",
           r="zero_cotangent(a)", a="zero_cotangent(a)")


# ---------------------------------------------------------------------------
# Numba twins: max_vjp, and max and min along one axis or a tuple of axes (Numba's
# take no axis).

@numba_twin(max_vjp)
@twins.keeps_dtype("a")
def _max_vjp_numba(g, ans, a, axis=None, keepdims=False, where=True):
    if twins.is_number(a):          # the one number is the extreme: all of g
        return lambda g, ans, a, axis=None, keepdims=False, where=True: g * 1.0
    check_axis(axis, where, tuples=True)
    spread, spread_ans = spreader(g, a, axis), spreader(ans, a, axis)
    if takes_all(a, axis):
        def whole(g, ans, a, axis=None, keepdims=False, where=True):
            hit = (a == spread_ans(ans, a, axis)) * 1.0
            return spread(g, a, axis) * hit / max(np.sum(hit), 1.0)
        return whole
    sums = axis_sums(a, axis)

    def along(g, ans, a, axis=None, keepdims=False, where=True):
        hit = (a == spread_ans(ans, a, axis)) * 1.0
        return spread(g, a, axis) * hit / np.maximum(sums(hit, axis), 1.0)
    if not (twins.is_array(g) and twins.is_array(ans) and twins.is_int(axis)):
        return along
    share, split = twins.jitted(_share_along), twins.split_shape()

    def one_pass(g, ans, a, axis=None, keepdims=False, where=True):
        # No general path beside this one: compiling it (array expressions) cost
        # the MLP's gradient 3 of its 13 s of compile.
        ax = axis % a.ndim
        pre, n, post = split(a.shape, ax)
        if ans.size != pre * post or g.size not in (1, pre * post):
            raise ValueError("np.max's derivative under jit=True: a result or cotangent "
                             "whose size is not the reduction's")
        return share(g, ans, a, ax, split)
    return one_pass


def _share_along(g, ans, a, ax, split):
    """Numba: max_vjp along axis ``ax`` in one pass per slice, without the arrays
    of hits, counts and spread ``g``: each entry gets ``g * hit / max(count, 1)``,
    the same operations as the general twin.  ``g`` and ``ans`` have a's shape
    without ``ax`` (or 1 there): their C order is the slices' order; ``g`` may
    also be one entry, the same for every slice."""
    pre, n, post = split(a.shape, ax)
    a3 = np.ascontiguousarray(a).reshape((pre, n, post))
    gs = np.ascontiguousarray(g).reshape(-1)
    every = gs.size != 1
    m2 = np.ascontiguousarray(ans).reshape((pre, post))
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            m = m2[i, j]
            count = 0.0
            for k in range(n):
                if a3[i, k, j] == m:
                    count += 1.0
            gv = gs[i * post + j if every else 0]
            d = max(count, 1.0)
            for k in range(n):
                out[i, k, j] = gv * (1.0 if a3[i, k, j] == m else 0.0) / d
    return out.reshape(a.shape)


_MAX_SIG = "a, axis=None, out=None, keepdims=False, initial=None, where=True"
numba_twin(np.max, np.amax)(reduction_twin(_MAX_SIG, lambda x, p: np.max(x)))
numba_twin(np.min, np.amin)(reduction_twin(_MAX_SIG, lambda x, p: np.min(x)))
