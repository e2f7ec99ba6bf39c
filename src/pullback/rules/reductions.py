"""Derivatives of NumPy's reductions: sum, mean, max/min, cumsum, var, std, linalg.norm,
nansum, nanmean, average.

Conventions are those of :mod:`pullback.rules.elementwise`: a helper takes the
cotangent ``g`` first, then ``ans`` when it needs it, then the primal arguments
(with NumPy's parameter names), and returns the cotangent of ``a`` with
``a``'s shape, computed with the array API namespace of its inputs.  ``axis``
may be None, an int, a negative int or a tuple; ``keepdims`` is honoured.

Choices where the derivative is not defined:

* ``max``/``min``: ``g`` is split evenly among the entries equal to the result
  (ties share, as JAX); a slice whose result came from ``initial`` gets 0.
* ``std`` of a constant slice (std == 0): 0, not 0/0.
* ``nansum``/``nanmean``: NaN entries get 0; a slice of NaNs only (whose
  ``nanmean`` is NaN) gets 0.
* ``linalg.norm``: the 2-norm (and Frobenius) of a zero vector has gradient 0;
  ``ord=inf``/``-inf`` split ``g`` among the tied extreme entries; ``ord=1``
  uses ``sign`` (0 at 0); ``ord=0`` (a count) has gradient 0.  Matrix norms:
  ``'fro'``, ``'nuc'``, ``1``, ``-1``, ``inf``, ``-inf``, ``2``, ``-2`` (the
  last two through the SVD; repeated singular values make them
  non-differentiable and the SVD picks one subgradient).

``out=`` and ``dtype=`` are accepted by the signatures (so calls bind) but do
not enter the derivative.  ``var``/``std`` with ``where=`` raise
NotImplementedError.

Each registration names the ndarray methods that mean it (``x.sum(axis=0)``
is ``np.sum(x, axis=0)``).
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import (
    as_array,
    expand_reduced,
    float_dtype,
    like_arg,
    namespace,
    normalize_axes,
    shape_of,
    unbroadcast,
)
from .registry import defrule, numba_twin

__all__ = ["sum_vjp", "mean_vjp", "max_vjp", "cumsum_vjp", "var_vjp", "var_vjp_mean",
           "std_vjp", "std_vjp_mean", "norm_vjp", "nansum_vjp", "nanmean_vjp", "average_vjp_a",
           "average_vjp_weights"]


def _no_mask(where) -> bool:
    return where is None or where is True


def _sum_keep(xp, x, axes):
    # torch sums everything for an empty axis tuple; NumPy sums nothing.
    return xp.sum(x, axis=axes, keepdims=True) if axes else x


def _count(shape, axes) -> int:
    n = 1
    for i in axes:
        n *= shape[i]
    return n


def _safe(xp, d):
    """``d`` with zeros replaced by ones, for divisions whose numerator is 0 there."""
    return xp.where(d == 0, xp.ones_like(d), d)


# ---------------------------------------------------------------------------

def _spread_numpy(g, a, axis, keepdims):
    """NumPy fast path: ``g`` broadcast back over the reduced axes (a read-only view)."""
    if axis is None and (type(g) is float or type(g) is np.float64):
        # The whole-array reduction of a float (a scalar loss): the read-only
        # zero-stride view np.broadcast_to makes, built directly (2 us -> 0.5 us).
        one = np.array(g)
        one.flags.writeable = False
        return np.ndarray(a.shape, one.dtype, one, 0, (0,) * a.ndim)
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, a.shape)


def sum_vjp(g, a, axis=None, keepdims=False, where=True):
    """Cotangent of ``a`` in ``np.sum(a, axis, keepdims=keepdims, where=where)``."""
    if type(a) is np.ndarray and (where is True or where is None):
        return _spread_numpy(g, a, axis, keepdims)
    xp = namespace(g, a)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    ct = expand_reduced(g, shape, axes, keepdims, xp, a)
    if not _no_mask(where):
        ct = xp.where(xp.asarray(where), ct, xp.zeros_like(ct))
    return like_arg(ct, a)


def mean_vjp(g, a, axis=None, keepdims=False, where=True):
    """Cotangent of ``a`` in ``np.mean``: ``g`` spread evenly over each reduced slice."""
    if type(a) is np.ndarray and (where is True or where is None):
        n = a.size if axis is None else _count(a.shape, normalize_axes(axis, a.ndim))
        return _spread_numpy(g / max(n, 1), a, axis, keepdims)
    xp = namespace(g, a)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    ct = expand_reduced(g, shape, axes, keepdims, xp, a)
    if _no_mask(where):
        return like_arg(ct / _count(shape, axes), a)
    mask = xp.broadcast_to(xp.asarray(where), shape)
    count = _sum_keep(xp, xp.astype(mask, ct.dtype), axes)
    return like_arg(xp.where(mask, ct / count, xp.zeros_like(ct)), a)


def max_vjp(g, ans, a, axis=None, keepdims=False, where=True):
    """Cotangent of ``a`` in ``np.max``/``np.min``: ``g`` shared by the entries equal to ``ans``."""
    if type(a) is np.ndarray and a.dtype == np.float64 and _no_mask(where) \
            and (type(g) is float or getattr(g, "dtype", None) == np.float64):
        return _max_vjp_numpy(g, ans, a, axis, keepdims)
    xp = namespace(g, a)
    a_arr = as_array(xp, a, g)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    hit = a_arr == expand_reduced(ans, shape, axes, keepdims, xp, a)
    if not _no_mask(where):
        hit = hit & xp.asarray(where)
    dtype = float_dtype(xp, g, a)
    hit = xp.astype(hit, dtype)
    count = _sum_keep(xp, hit, axes)
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


def cumsum_vjp(g, a, axis=None):
    """Cotangent of ``a`` in ``np.cumsum``: the reversed cumulative sum of ``g``.

    With ``axis=None`` NumPy works on the flattened array.
    """
    xp = namespace(g, a)
    shape = shape_of(a)
    g = as_array(xp, g, a)
    if axis is None:
        flat = xp.reshape(g, (-1,))
        rev = xp.flip(xp.cumulative_sum(xp.flip(flat, axis=0), axis=0), axis=0)
        return like_arg(xp.reshape(rev, shape), a)
    (ax,) = normalize_axes(axis, len(shape))
    return like_arg(xp.flip(xp.cumulative_sum(xp.flip(g, axis=ax), axis=ax), axis=ax), a)


def _var_parts(g, a, axis, ddof, keepdims, where, mean, correction):
    """Shared by var and std: (xp, expanded g, a - mean, divisor N - ddof, axes)."""
    if not _no_mask(where):
        raise NotImplementedError("the derivative of np.var/np.std with where= is not implemented")
    if correction is not None:
        ddof = correction   # NumPy 2's array-API spelling of ddof
    xp = namespace(g, a)
    a_arr = as_array(xp, a, g)
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    centre = xp.mean(a_arr, axis=axes, keepdims=True) if mean is None else mean
    centred = a_arr - centre
    divisor = _count(shape, axes) - ddof
    return xp, expand_reduced(g, shape, axes, keepdims, xp, a), centred, divisor, axes


def var_vjp(g, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None):
    """Cotangent of ``a`` in ``np.var``: ``2 g (a - mean) / (N - ddof)``.

    A given ``mean=`` (NumPy 2) is treated as the separate argument it is; its
    own cotangent is :func:`var_vjp_mean`.
    """
    xp, ge, centred, divisor, _ = _var_parts(g, a, axis, ddof, keepdims, where, mean, correction)
    return like_arg(ge * (2.0 / divisor) * centred, a)


def var_vjp_mean(g, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None):
    """Cotangent of the ``mean=`` argument of ``np.var`` (0 when it is the true mean)."""
    xp, ge, centred, divisor, axes = _var_parts(g, a, axis, ddof, keepdims, where, mean, correction)
    return xp.reshape(-_sum_keep(xp, ge * (2.0 / divisor) * centred, axes), shape_of(mean))


def std_vjp(g, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None):
    """Cotangent of ``a`` in ``np.std``: ``g (a - mean) / ((N - ddof) std)``, 0 where std == 0."""
    xp, ge, centred, divisor, axes = _var_parts(g, a, axis, ddof, keepdims, where, mean, correction)
    sd = expand_reduced(ans, shape_of(a), axes, keepdims, xp, a)
    # std == 0 means a constant slice: centred is 0 there, so dividing by 1 gives 0.
    return like_arg(ge * centred / (divisor * _safe(xp, sd)), a)


def std_vjp_mean(g, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None,
                 correction=None):
    """Cotangent of the ``mean=`` argument of ``np.std``."""
    xp, ge, centred, divisor, axes = _var_parts(g, a, axis, ddof, keepdims, where, mean, correction)
    sd = expand_reduced(ans, shape_of(a), axes, keepdims, xp, a)
    return xp.reshape(-_sum_keep(xp, ge * centred / (divisor * _safe(xp, sd)), axes),
                      shape_of(mean))


# ---------------------------------------------------------------------------
# NaN-ignoring reductions and weighted averages

def _present(xp, a_arr, where):
    """The entries a NaN-ignoring reduction uses: not NaN, and inside ``where``."""
    keep = ~xp.isnan(a_arr)
    if not _no_mask(where):
        keep = keep & xp.asarray(where)
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
    count = _sum_keep(xp, xp.astype(keep, ct.dtype), axes)
    return like_arg(xp.where(keep, ct / _safe(xp, count), xp.zeros_like(ct)), a)


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
    total = _sum_keep(xp, xp.broadcast_to(w, shape), axes)
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
# np.linalg.norm

def _vector_norm_vjp(xp, ge, ae, x, ord, axes):
    """``ge``, ``ae``: g and the norm broadcast to x's shape; ``axes``: the reduced axes."""
    if ord is None or ord == 2:
        return ge * x / _safe(xp, ae)            # x == 0 wherever the norm is 0
    if ord == 1:
        return ge * xp.sign(x)
    absx = xp.abs(x)
    if ord == np.inf or ord == -np.inf:
        hit = xp.astype(absx == ae, x.dtype)   # the max (or min) |x|; ties share
        count = _sum_keep(xp, hit, axes)
        return ge * xp.sign(x) * (hit / xp.maximum(count, xp.ones_like(count)))
    if ord == 0:
        return xp.zeros_like(ge * x)            # a count of non-zeros: piecewise constant
    p = float(ord)
    # d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) / norm^(p-1); 0 for a zero vector.
    return ge * xp.sign(x) * absx ** (p - 1) / _safe(xp, ae) ** (p - 1)


def _matrix_norm_vjp(xp, gm, am, xm, ord):
    """Matrix norm over the last two axes of ``xm``; ``gm``/``am`` have shape (..., 1, 1)."""
    if ord == "fro":
        return gm * xm / _safe(xp, am)
    if ord == "nuc":
        u, _, vh = xp.linalg.svd(xm, full_matrices=False)
        return gm * (u @ vh)
    if ord == 2 or ord == -2:
        u, _, vh = xp.linalg.svd(xm, full_matrices=False)
        k = 0 if ord == 2 else min(xm.shape[-2:]) - 1   # singular values come sorted descending
        return gm * (u[..., :, k:k + 1] @ vh[..., k:k + 1, :])
    if ord in (1, -1, np.inf, -np.inf):
        # 1: max over columns of the column sums of |x|; inf: max over rows of the row sums.
        over = -2 if ord in (1, -1) else -1
        sums = xp.sum(xp.abs(xm), axis=over, keepdims=True)
        hit = xp.astype(sums == am, xm.dtype)
        count = xp.sum(hit, axis=-1 if over == -2 else -2, keepdims=True)
        return gm * xp.sign(xm) * (hit / count)
    raise ValueError(f"invalid norm order {ord!r} for matrices")


def norm_vjp(g, ans, x, ord=None, axis=None, keepdims=False):
    """Cotangent of ``x`` in ``np.linalg.norm(x, ord, axis, keepdims)``.

    Follows NumPy's dispatch: ``axis=None`` with ``ord=None`` is the 2-norm of
    the flattened array; ``axis=None`` with an ``ord`` is a vector norm for 1-D
    and a matrix norm for 2-D input; an int axis is a vector norm, a pair of
    axes a matrix norm.
    """
    xp = namespace(g, x)
    xa = as_array(xp, x, g)
    if not xp.isdtype(xa.dtype, "real floating"):
        xa = xp.astype(xa, xp.float64)
    nd = xa.ndim
    if axis is None:
        if ord is None or nd == 1:
            axes = tuple(range(nd))
        elif nd == 2:
            axes = (0, 1)
        else:
            raise ValueError("improper number of dimensions to norm")
        if ord is None:   # 2-norm of everything, whatever the ndim
            ge = expand_reduced(g, xa.shape, axes, keepdims, xp, xa)
            ae = expand_reduced(ans, xa.shape, axes, keepdims, xp, xa)
            return like_arg(_vector_norm_vjp(xp, ge, ae, xa, None, axes), x)
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(int(a) % nd for a in axes)   # keep the order: (1, 0) transposes matrices
    if len(axes) == 1:
        ge = expand_reduced(g, xa.shape, axes, keepdims, xp, xa)
        ae = expand_reduced(ans, xa.shape, axes, keepdims, xp, xa)
        return like_arg(_vector_norm_vjp(xp, ge, ae, xa, ord, axes), x)
    if len(axes) != 2:
        raise ValueError("improper number of dimensions to norm")
    # Matrix norm: move the two axes last, work on (..., rows, cols), move them back.
    row, col = axes
    rest = [i for i in range(nd) if i not in axes]
    perm = rest + [row, col]
    xm = xp.permute_dims(xa, tuple(perm))
    batch = tuple(xm.shape[:-2])
    gm = xp.reshape(as_array(xp, g, xa), batch + (1, 1))
    am = xp.reshape(as_array(xp, ans, xa), batch + (1, 1))
    ctm = _matrix_norm_vjp(xp, gm, am, xm, "fro" if ord is None else ord)
    inverse = tuple(int(i) for i in np.argsort(perm))
    return like_arg(xp.permute_dims(ctm, inverse), x)


# ---------------------------------------------------------------------------
# Registrations, with NumPy's parameter names.

defrule(np.sum, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
        result=results.reduction, methods=("sum",), a="sum_vjp(g, a, axis, keepdims, where)")
defrule(np.mean, "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
        result=results.reduction, methods=("mean",), a="mean_vjp(g, a, axis, keepdims, where)")
for _f, _methods in ((np.max, ("max",)), (np.amax, ()), (np.min, ("min",)), (np.amin, ())):
    defrule(_f, "a, axis=None, out=None, keepdims=False, initial=None, where=True",
            result=results.reduction, methods=_methods,
            a="max_vjp(g, ans, a, axis, keepdims, where)")
defrule(np.cumsum, "a, axis=None, dtype=None, out=None", result=results.same_shape,
        methods=("cumsum",), a="cumsum_vjp(g, a, axis)")
_VAR_SIG = ("a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, "
            "mean=None, correction=None")
defrule(np.var, _VAR_SIG, result=results.reduction, methods=("var",),
        a="var_vjp(g, a, axis, ddof, keepdims, where, mean, correction)",
        mean="var_vjp_mean(g, a, axis, ddof, keepdims, where, mean, correction)")
defrule(np.std, _VAR_SIG, result=results.reduction, methods=("std",),
        a="std_vjp(g, ans, a, axis, ddof, keepdims, where, mean, correction)",
        mean="std_vjp_mean(g, ans, a, axis, ddof, keepdims, where, mean, correction)")
defrule(np.linalg.norm, "x, ord=None, axis=None, keepdims=False", result=results.reduction,
        x="norm_vjp(g, ans, x, ord, axis, keepdims)")
defrule(np.nansum, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
        result=results.reduction, a="nansum_vjp(g, a, axis, keepdims, where)")
defrule(np.nanmean, "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
        result=results.reduction, a="nanmean_vjp(g, a, axis, keepdims, where)")
defrule(np.average, "a, axis=None, weights=None, returned=False, *, keepdims=False",
        result=results.reduction,
        a="average_vjp_a(g, a, axis, weights, returned, keepdims)",
        weights="average_vjp_weights(g, ans, a, axis, weights, returned, keepdims)")


# ---------------------------------------------------------------------------
# Numba twins: the helpers above, and the reductions Numba cannot compile with an
# axis or keepdims (the forward sweep calls the twin).  One int axis or none.

def _spread_number(g, a, axis):
    return np.full(a.shape, g)


def _spread_same(g, a, axis):
    return np.zeros(a.shape) + g


def _spread_axis(g, a, axis):
    return np.zeros(a.shape) + np.expand_dims(g, axis)


def _slice_sums(a, ax, split):
    """Numba: each entry of ``a`` replaced by the sum of its slice along ``ax``."""
    pre, n, post = split(a.shape, ax)
    a3 = np.ascontiguousarray(a).reshape((pre, n, post))
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            acc = 0.0
            for k in range(n):
                acc += a3[i, k, j]
            for k in range(n):
                out[i, k, j] = acc
    return out.reshape(a.shape)


def slice_sums():
    sums, split = twins.jitted(_slice_sums), twins.split_shape()
    return twins.jitted(lambda a, ax: sums(a, ax, split))


def _spreader(g, a, axis):
    """Numba: ``g`` (a reduction's result or cotangent) broadcast back to ``a``'s shape."""
    if twins.is_number(g):
        return twins.jitted(_spread_number)
    if twins.rank(g) == a.ndim:
        return twins.jitted(_spread_same)
    if twins.is_int(axis) and twins.rank(g) == a.ndim - 1:
        return twins.jitted(_spread_axis)
    twins.unsupported("a reduction over several axes")


def _whole(a, axis) -> bool:
    """The reduction takes every entry (no axis, or the one axis of a vector)."""
    return twins.is_none(axis) or a.ndim == 1


def _check_axis(axis, where=None):
    if not (twins.is_none(axis) or twins.is_int(axis)):
        twins.unsupported("a reduction over a tuple of axes")
    if where is not None and twins.literal(where, False) is not True:
        twins.unsupported("a reduction with where=")


@numba_twin(sum_vjp)
def _sum_vjp_numba(g, a, axis=None, keepdims=False, where=True):
    if twins.is_number(a):
        return lambda g, a, axis=None, keepdims=False, where=True: g
    _check_axis(axis, where)
    spread = _spreader(g, a, axis)
    return lambda g, a, axis=None, keepdims=False, where=True: spread(g, a, axis)


@numba_twin(mean_vjp)
def _mean_vjp_numba(g, a, axis=None, keepdims=False, where=True):
    if twins.is_number(a):
        return lambda g, a, axis=None, keepdims=False, where=True: g
    _check_axis(axis, where)
    spread = _spreader(g, a, axis)
    if _whole(a, axis):
        return lambda g, a, axis=None, keepdims=False, where=True: spread(g, a, axis) / a.size
    return lambda g, a, axis=None, keepdims=False, where=True: \
        spread(g, a, axis) / a.shape[axis % a.ndim]


@numba_twin(max_vjp)
def _max_vjp_numba(g, ans, a, axis=None, keepdims=False, where=True):
    _check_axis(axis, where)
    spread, spread_ans = _spreader(g, a, axis), _spreader(ans, a, axis)
    if _whole(a, axis):
        def whole(g, ans, a, axis=None, keepdims=False, where=True):
            hit = (a == spread_ans(ans, a, axis)) * 1.0
            return spread(g, a, axis) * hit / max(np.sum(hit), 1.0)
        return whole
    sums = slice_sums()

    def along(g, ans, a, axis=None, keepdims=False, where=True):
        hit = (a == spread_ans(ans, a, axis)) * 1.0
        return spread(g, a, axis) * hit / np.maximum(sums(hit, axis % a.ndim), 1.0)
    return along


def _var_twin(with_sd):
    """The twin of var_vjp (``with_sd`` False) or std_vjp: ``a`` only, no ``mean=``."""
    def decide(t):
        g, a, axis = t["g"], t["a"], t["axis"]
        _check_axis(axis, t["where"])
        if not (twins.is_none(t["mean"]) and twins.is_none(t["correction"])):
            twins.unsupported("np.var/np.std with mean= or correction=")
        spread = _spreader(g, a, axis)
        sums = slice_sums()
        if _whole(a, axis):
            def centred(a, axis):
                return a - np.mean(a), a.size
        else:
            def centred(a, axis):
                ax = axis % a.ndim
                n = a.shape[ax]
                return a - sums(a, ax) / n, n
        centre = twins.jitted(centred)
        if not with_sd:
            def var_body(g, a, axis, ddof, keepdims, where, mean, correction):
                c, n = centre(a, axis)
                return spread(g, a, axis) * (2.0 / (n - ddof)) * c
            return var_body
        spread_sd = _spreader(t["ans"], a, axis)

        def std_body(g, ans, a, axis, ddof, keepdims, where, mean, correction):
            c, n = centre(a, axis)
            sd = spread_sd(ans, a, axis)
            return spread(g, a, axis) * c / ((n - ddof) * np.where(sd == 0, 1.0, sd))
        return std_body
    return decide


numba_twin(var_vjp)(twins.signature_twin(
    "g, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None",
    _var_twin(False)))
numba_twin(std_vjp)(twins.signature_twin(
    "g, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None",
    _var_twin(True)))


def _revcumsum3(g3):
    pre, n, post = g3.shape
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            acc = 0.0
            for k in range(n - 1, -1, -1):
                acc += g3[i, k, j]
                out[i, k, j] = acc
    return out


@numba_twin(cumsum_vjp)
def _cumsum_vjp_numba(g, a, axis=None):
    rev = twins.jitted(_revcumsum3)
    if twins.is_none(axis):
        return lambda g, a, axis=None: rev(
            np.ascontiguousarray(g).reshape((1, g.size, 1))).reshape(a.shape)
    split = twins.split_shape()

    def along(g, a, axis=None):
        pre, n, post = split(g.shape, axis % g.ndim)
        return rev(np.ascontiguousarray(g).reshape((pre, n, post))).reshape(a.shape)
    return along


# Forward twins: each reduction over one axis (or all), with keepdims.

def along_axis(kernel, a, axis, keepdims):
    """The body of a reduction's forward twin: ``kernel(x, p)`` (a function of a vector
    and a parameter such as ddof) applied to each slice along ``axis`` (Numba types
    ``a``, ``axis``, ``keepdims``)."""
    if not twins.is_array(a):
        return None
    _check_axis(axis)
    keep = twins.literal(keepdims, None)
    if keep is None:
        twins.unsupported("keepdims= other than a constant True or False")
    k, nd = twins.jitted(kernel), a.ndim
    ones = twins.ones_shape(nd)
    if _whole(a, axis):
        if keep:
            def whole_kept(a, axis, keepdims, p):
                out = np.empty(1)
                out[0] = k(np.ascontiguousarray(a).ravel(), p)
                return out.reshape(ones)
            return whole_kept
        return lambda a, axis, keepdims, p: k(np.ascontiguousarray(a).ravel(), p)
    split, shaper = twins.split_shape(), twins.reduced_shape(nd, keep)

    def along(a, axis, keepdims, p):
        ax = axis % nd
        pre, n, post = split(a.shape, ax)
        a3 = np.ascontiguousarray(a).reshape((pre, n, post))
        out = np.empty((pre, post))
        for i in range(pre):
            for j in range(post):
                out[i, j] = k(a3[i, :, j], p)
        return out.reshape(shaper(a.shape, ax))
    return along


def reduction_twin(signature, kernel, args="a, axis, keepdims, 0"):
    def decide(t):
        body = along_axis(kernel, t["a"], t["axis"], t["keepdims"])
        if body is None:
            return None
        b = twins.jitted(body)
        names = [n.split("=")[0].strip() for n in signature.replace("*, ", "").split(",")]
        ns = {"_b": b}
        exec(f"def run({', '.join(names)}):\n    return _b({args})\n", ns)
        return ns["run"]
    return twins.signature_twin(signature, decide)


_SUM_SIG = "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True"
_MEAN_SIG = "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True"
_MAX_SIG = "a, axis=None, out=None, keepdims=False, initial=None, where=True"
numba_twin(np.sum)(reduction_twin(_SUM_SIG, lambda x, p: np.sum(x)))
numba_twin(np.mean)(reduction_twin(_MEAN_SIG, lambda x, p: np.mean(x)))
numba_twin(np.max, np.amax)(reduction_twin(_MAX_SIG, lambda x, p: np.max(x)))
numba_twin(np.min, np.amin)(reduction_twin(_MAX_SIG, lambda x, p: np.min(x)))
_VAR_ARGS = "a, axis, keepdims, ddof"
numba_twin(np.var)(reduction_twin(
    _VAR_SIG, lambda x, ddof: np.sum((x - np.mean(x)) ** 2) / (x.size - ddof), _VAR_ARGS))
numba_twin(np.std)(reduction_twin(
    _VAR_SIG, lambda x, ddof: np.sqrt(np.sum((x - np.mean(x)) ** 2) / (x.size - ddof)), _VAR_ARGS))


def _cumsum3(a3):
    pre, n, post = a3.shape
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            acc = 0.0
            for k in range(n):
                acc += a3[i, k, j]
                out[i, k, j] = acc
    return out


def cumulative_twin(kernel3):
    """The forward twin of np.cumsum / np.cumprod (``kernel3`` on a (pre, n, post) array)."""
    def decide(t):
        a, axis = t["a"], t["axis"]
        if not twins.is_array(a):
            return None
        _check_axis(axis)
        k3, split = twins.jitted(kernel3), twins.split_shape()
        if twins.is_none(axis):
            return lambda a, axis, dtype, out: k3(
                np.ascontiguousarray(a).reshape((1, a.size, 1)) * 1.0).ravel()

        def along(a, axis, dtype, out):
            pre, n, post = split(a.shape, axis % a.ndim)
            return k3(np.ascontiguousarray(a).reshape((pre, n, post)) * 1.0).reshape(a.shape)
        return along
    return twins.signature_twin("a, axis=None, dtype=None, out=None", decide)


numba_twin(np.cumsum)(cumulative_twin(_cumsum3))


# np.linalg.norm: vector norms (no axis on a vector, or one int axis) and the
# Frobenius and nuclear norms of a matrix.  Numba's own np.linalg.norm takes no axis.

def _norm_order(ord):
    """``ord`` as a Python value (None, a number or 'fro'/'nuc'), or unsupported."""
    value = twins.literal(ord, ord)
    if twins.is_none(ord):
        return None
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    twins.unsupported("np.linalg.norm with an ord that is not a constant")


def _vector_weight(p):
    """The compiled ``f(x, n)``: d norm / dx times the norm**(p-1), for the vector p-norm
    ``n`` of ``x`` (broadcast to x's shape); 0 for a zero vector, as the Python rule."""
    if p in (None, 2, 2.0, "fro"):
        return twins.jitted(lambda x, n: x / np.where(n == 0, 1.0, n))
    if p == 1:
        return twins.jitted(lambda x, n: np.sign(x) + 0.0 * n)
    if p in (0, np.inf, -np.inf):
        twins.unsupported(f"the derivative of np.linalg.norm with ord={p!r}")
    q = float(p) - 1.0
    return twins.jitted(lambda x, n: np.sign(x) * np.abs(x) ** q / np.where(n == 0, 1.0, n) ** q)


@numba_twin(norm_vjp)
def _norm_vjp_numba(g, ans, x, ord=None, axis=None, keepdims=False):
    if not twins.is_array(x):
        twins.unsupported("np.linalg.norm of a list or a number")
    p = _norm_order(ord)
    if twins.is_none(axis):
        if p == "nuc" and x.ndim == 2:
            def nuclear(g, ans, x, ord=None, axis=None, keepdims=False):
                u, s, vh = np.linalg.svd(x, full_matrices=False)
                return np.sum(g) * (u @ vh)
            return nuclear
        if not (p is None or (x.ndim == 1 and p != "nuc") or (x.ndim == 2 and p == "fro")):
            twins.unsupported(f"the derivative of np.linalg.norm with ord={p!r} of a matrix")
        weight = _vector_weight(p)
        return lambda g, ans, x, ord=None, axis=None, keepdims=False: \
            np.sum(g) * weight(x, np.full(x.shape, np.sum(ans)))
    if not twins.is_int(axis) or isinstance(p, str):
        twins.unsupported("np.linalg.norm over a tuple of axes")
    weight = _vector_weight(p)
    spread, spread_ans = _spreader(g, x, axis), _spreader(ans, x, axis)
    return lambda g, ans, x, ord=None, axis=None, keepdims=False: \
        spread(g, x, axis % x.ndim) * weight(x, spread_ans(ans, x, axis % x.ndim))


def _norm_primal(t):
    x, axis = t["x"], t["axis"]
    if not twins.is_array(x):
        return None
    p = _norm_order(t["ord"])
    if twins.is_none(axis) and twins.literal(t["keepdims"], False) is False:
        if p is None or p == "fro":
            return lambda x, ord, axis, keepdims: np.sqrt(np.sum(x * x))
        if p == "nuc" and x.ndim == 2:
            return lambda x, ord, axis, keepdims: np.sum(np.linalg.svd(x)[1])
        return lambda x, ord, axis, keepdims: np.linalg.norm(x, ord)
    if isinstance(p, str) or p in (0, np.inf, -np.inf):
        twins.unsupported(f"np.linalg.norm with ord={p!r} along an axis")
    power = 2.0 if p is None else float(p)
    body = along_axis(lambda v, q: np.sum(np.abs(v) ** q) ** (1.0 / q), x, axis, t["keepdims"])
    if body is None:
        return None
    run = twins.jitted(body)
    return lambda x, ord, axis, keepdims: run(x, axis, keepdims, power)


numba_twin(np.linalg.norm, always=True)(twins.signature_twin("x, ord=None, axis=None, keepdims=False",
                                                _norm_primal))
