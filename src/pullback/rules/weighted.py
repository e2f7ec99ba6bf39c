"""Derivatives of NumPy's reductions that weigh their entries: nansum and
nanmean (a NaN entry weighs 0) and average (given weights).

NaN entries get 0; a slice of NaNs only (whose ``nanmean`` is NaN) gets 0.
``average(..., returned=True)`` raises NotImplementedError.  Conventions are
those of :mod:`pullback.rules.reductions`.  Under ``jit=True`` these run through
Numba twins (average: weights absent or of the array's shape, not ``returned``).
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import (
    as_array,
    expand_reduced,
    like_arg,
    mask_on,
    namespace,
    normalize_axes,
    shape_of,
    unbroadcast,
)
from .forms import numba_twin
from .reductions import (
    _MEAN_SIG,
    _SUM_SIG,
    along_axis,
    axis_sums,
    check_axis,
    mean_vjp,
    no_mask,
    reduction_twin,
    safe_divisor,
    spreader,
    sum_keep,
    takes_all,
)
from .reductions_second import kind_of_arg, ones_of, slice_sum, zero_cotangent  # noqa: F401
from .registry import defrule
from .tangents import deftangent

__all__ = ["nansum_vjp", "nanmean_vjp", "average_vjp_a", "average_vjp_weights"]


# ---------------------------------------------------------------------------
# NaN-ignoring sums and means

def _present(xp, a_arr, where):
    """The entries a NaN-ignoring reduction uses: not NaN, and inside ``where``."""
    keep = ~xp.isnan(a_arr)
    if not no_mask(where):
        keep = keep & mask_on(xp, where, keep)
    return keep


def nansum_vjp(g, a, axis=None, keepdims=False, where=True):
    """Cotangent of ``a`` in ``np.nansum``: ``g`` at the entries that are not NaN."""
    xp = namespace(g, a)
    a_arr = as_array(xp, a, g)
    shape = shape_of(a)
    ct = expand_reduced(g, shape, normalize_axes(axis, len(shape)), keepdims, xp, a)
    return like_arg(xp.where(_present(xp, a_arr, where), ct, xp.zeros_like(ct)), a)


def nanmean_vjp(g, a, axis=None, keepdims=False, where=True):
    """Cotangent of ``a`` in ``np.nanmean``: ``g`` shared by the entries that are not NaN."""
    xp = namespace(g, a)
    a_arr = as_array(xp, a, g)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    keep = xp.broadcast_to(_present(xp, a_arr, where), shape)
    ct = expand_reduced(g, shape, axes, keepdims, xp, a)
    count = sum_keep(xp, xp.astype(keep, ct.dtype), axes)
    return like_arg(xp.where(keep, ct / safe_divisor(xp, count), xp.zeros_like(ct)), a)


# ---------------------------------------------------------------------------
# weighted averages

def _given_axes(axis, ndim):
    """``axis`` as non-negative ints in the order given (NumPy pairs them with the
    axes of the weights in that order)."""
    if axis is None:
        return list(range(ndim))
    return [int(ax) % ndim for ax in (axis if isinstance(axis, (tuple, list)) else [axis])]


def _weights_layout(a_shape, w_shape, axis):
    """How weights of ``w_shape`` broadcast against ``a``: the permutation of their
    axes and the shape they take (NumPy's rule for weights given along ``axis``)."""
    if tuple(w_shape) == tuple(a_shape):
        return None, tuple(a_shape)
    given = _given_axes(axis, len(a_shape))
    perm = tuple(int(i) for i in np.argsort(given))
    laid = tuple(n if ax in given else 1 for ax, n in enumerate(a_shape))
    return perm, laid


def _average_parts(g, a, axis, weights, keepdims):
    xp = namespace(g, a, weights)
    a_arr = as_array(xp, a, g, weights)
    shape = tuple(a_arr.shape)
    axes = normalize_axes(axis, len(shape))
    w = as_array(xp, weights, a_arr)
    perm, laid = _weights_layout(shape, w.shape, axis)
    if perm is not None:
        w = xp.reshape(xp.permute_dims(w, perm), laid)
    total = sum_keep(xp, xp.broadcast_to(w, shape), axes)
    return xp, a_arr, w, total, expand_reduced(g, shape, axes, keepdims, xp, a_arr), axes


def _not_returned(returned):
    if returned:
        raise NotImplementedError("the derivative of np.average(..., returned=True) is not "
                                  "implemented; compute the sum of the weights separately")


def average_vjp_a(g, a, axis=None, weights=None, returned=False, keepdims=False):
    """Cotangent of ``a`` in ``np.average(a, axis, weights)``: ``g w / sum(w)``."""
    _not_returned(returned)
    if weights is None:
        return mean_vjp(g, a, axis, keepdims)
    xp, a_arr, w, total, ge, _ = _average_parts(g, a, axis, weights, keepdims)
    return like_arg(ge * w / total, a)


def average_vjp_weights(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    """Cotangent of ``weights`` in ``np.average``: ``g (a - average) / sum(w)``, summed
    to the shape of the weights."""
    _not_returned(returned)
    xp, a_arr, w, total, ge, axes = _average_parts(g, a, axis, weights, keepdims)
    avg = expand_reduced(ans, tuple(a_arr.shape), axes, keepdims, xp, a_arr)
    ct = unbroadcast(ge * (a_arr - avg) / total, w)
    perm, _ = _weights_layout(tuple(a_arr.shape), shape_of(weights), axis)
    if perm is not None:
        permuted = tuple(shape_of(weights)[i] for i in perm)
        ct = xp.permute_dims(xp.reshape(ct, permuted), tuple(int(i) for i in np.argsort(perm)))
    return like_arg(ct, weights)


# ---------------------------------------------------------------------------
# Registrations, with NumPy's parameter names.

defrule(np.nansum, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
        result=results.reduction, a="nansum_vjp(g, a, axis, keepdims, where)")
defrule(np.nanmean, "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
        result=results.reduction, a="nanmean_vjp(g, a, axis, keepdims, where)")
defrule(np.average, "a, axis=None, weights=None, returned=False, *, keepdims=False",
        result=results.reduction,
        a="average_vjp_a(g, a, axis, weights, returned, keepdims)",
        weights="average_vjp_weights(g, ans, a, axis, weights, returned, keepdims)")

# The helpers again (Hessians: the reductions' tangents call them, see
# .reductions_second): each is linear in its cotangent c and constant in a (a NaN
# mask, given weights).  In the weights, c w / sum(w) is average_vjp_weights of c
# with g (a's shape) for a: c (g - average(g)) / sum(w).
for _h in (nansum_vjp, nanmean_vjp):
    defrule(_h, "c, a, axis=None, keepdims=False, where=True", result=kind_of_arg(1),
            c=f"slice_sum(g * {_h.__name__}(ones_of(c), a, axis, keepdims, where), c, axis, "
              "keepdims)", a="zero_cotangent(a)")
    deftangent(_h, shaped=True, c=f"{_h.__name__}(t, a, axis, keepdims, where)",
               a="zero_cotangent(a)")
defrule(average_vjp_a, "c, a, axis=None, weights=None, returned=False, keepdims=False",
        result=kind_of_arg(1), a="zero_cotangent(a)",
        weights="average_vjp_weights(c, np.average(g, axis, weights, keepdims=keepdims), g, axis, "
                "weights, returned, keepdims)",
        c="slice_sum(g * average_vjp_a(ones_of(c), a, axis, weights, returned, keepdims), c, "
          "axis, keepdims)")
deftangent(average_vjp_a, shaped=True, a="zero_cotangent(a)",
           c="average_vjp_a(t, a, axis, weights, returned, keepdims)")


# ---------------------------------------------------------------------------
# Numba twins: NaN-ignoring reductions over an int axis, a tuple of axes or all
# (Numba's own nansum and nanmean take no axis: the forward sweep calls these).

numba_twin(np.nansum)(reduction_twin(_SUM_SIG, lambda x, p: np.nansum(x)))
numba_twin(np.nanmean)(reduction_twin(_MEAN_SIG, lambda x, p: np.nanmean(x)))


def _nan_of_number(g, a, axis=None, keepdims=False, where=True):
    return 0.0 if np.isnan(a) else g


def _slice_totals(a, axis):
    """A compiled ``f(w, axis)``: each entry of ``w`` (of ``a``'s shape) replaced by
    the total of its slice over ``axis``."""
    if takes_all(a, axis):
        return twins.jitted(lambda w, axis: np.full(w.shape, np.sum(w)))
    return axis_sums(a, axis)


@numba_twin(nansum_vjp)
@twins.keeps_dtype("a")
def _nansum_vjp_numba(g, a, axis=None, keepdims=False, where=True):
    if twins.is_number(a):
        return _nan_of_number
    check_axis(axis, where, tuples=True)
    spread = spreader(g, a, axis)
    return lambda g, a, axis=None, keepdims=False, where=True: \
        np.where(np.isnan(a), 0.0, spread(g, a, axis))


@numba_twin(nanmean_vjp)
@twins.keeps_dtype("a")
def _nanmean_vjp_numba(g, a, axis=None, keepdims=False, where=True):
    if twins.is_number(a):
        return _nan_of_number
    check_axis(axis, where, tuples=True)
    spread, totals = spreader(g, a, axis), _slice_totals(a, axis)

    def vjp(g, a, axis=None, keepdims=False, where=True):
        present = np.where(np.isnan(a), 0.0, 1.0)
        count = np.maximum(totals(present, axis), 1.0)
        return np.where(present > 0.0, spread(g, a, axis) / count, 0.0)
    return vjp


_AVERAGE_SIG = "a, axis=None, weights=None, returned=False, keepdims=False"


def _average_forward(t):
    a, weights = t["a"], t["weights"]
    if not twins.is_array(a):
        return None
    if twins.literal(t["returned"], False) is not False:
        twins.unsupported("np.average with returned=True")
    if twins.is_none(weights):
        mean = twins.jitted(along_axis(lambda x, p: np.mean(x), a, t["axis"], t["keepdims"],
                                       tuples=True))
        return lambda a, axis, weights, returned, keepdims: mean(a, axis, keepdims, 0)
    _same_shape_weights(a, weights)
    total = twins.jitted(along_axis(lambda x, p: np.sum(x), a, t["axis"], t["keepdims"],
                                    tuples=True))
    return lambda a, axis, weights, returned, keepdims: \
        total(a * weights, axis, keepdims, 0) / total(weights + np.zeros(a.shape), axis, keepdims, 0)


def _same_shape_weights(a, weights):
    if not (twins.is_array(weights) and weights.ndim == a.ndim):
        twins.unsupported("np.average with weights of another shape than the array's")


numba_twin(np.average)(twins.signature_twin(_AVERAGE_SIG, _average_forward))


@numba_twin(average_vjp_a)
@twins.keeps_dtype("a")
def _average_vjp_a_numba(g, a, axis=None, weights=None, returned=False, keepdims=False):
    if twins.is_none(weights):
        return lambda g, a, axis=None, weights=None, returned=False, keepdims=False: \
            mean_vjp(g, a, axis, keepdims, True)
    _same_shape_weights(a, weights)
    check_axis(axis, tuples=True)
    spread, totals = spreader(g, a, axis), _slice_totals(a, axis)
    return lambda g, a, axis=None, weights=None, returned=False, keepdims=False: \
        spread(g, a, axis) * weights / totals(weights + np.zeros(a.shape), axis)


@numba_twin(average_vjp_weights)
@twins.keeps_dtype("weights")
def _average_vjp_weights_numba(g, ans, a, axis=None, weights=None, returned=False,
                               keepdims=False):
    _same_shape_weights(a, weights)
    check_axis(axis, tuples=True)
    spread, totals = spreader(g, a, axis), _slice_totals(a, axis)
    return lambda g, ans, a, axis=None, weights=None, returned=False, keepdims=False: \
        spread(g, a, axis) * (a - spread(ans, a, axis)) / totals(weights + np.zeros(a.shape), axis)
