"""Derivatives of NumPy's sums and moments: sum, mean, var, std, and the Numba
machinery the other reduction modules share (cotangents spread back over the
reduced axis, forward twins of reductions along one axis).

Conventions are those of :mod:`pullback.rules.elementwise`: a helper takes the
cotangent ``g`` first, then ``ans`` when it needs it, then the primal arguments
(with NumPy's parameter names), and returns the cotangent of ``a`` with
``a``'s shape, computed with the array API namespace of its inputs.  ``axis``
may be None, an int, a negative int or a tuple; ``keepdims`` is honoured.
(Maxima and minima are in :mod:`.extrema`, cumulative sums and products in
:mod:`.cumulative`, NaN-ignoring and weighted reductions in :mod:`.weighted`,
``linalg.norm`` in :mod:`.norm`, ``prod`` in :mod:`.prod`.)

Where the derivative is not defined: ``std`` of a constant slice (std == 0)
gets 0, not 0/0.

``out=`` and ``dtype=`` are accepted by the signatures (so calls bind) but do
not enter the derivative.  ``var``/``std`` with ``where=`` raise
NotImplementedError.

Each registration names the ndarray methods that mean it (``x.sum(axis=0)``
is ``np.sum(x, axis=0)``).
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, expand_reduced, like_arg, mask_on, namespace, normalize_axes, shape_of
from .forms import numba_twin
from .registry import defrule
from .tangents import deftangent

__all__ = ["sum_vjp", "mean_vjp", "var_vjp", "var_vjp_mean", "std_vjp", "std_vjp_mean",
           "no_mask", "sum_keep", "safe_divisor", "spreader", "slice_sums", "check_axis",
           "takes_all", "along_axis", "reduction_twin"]


def no_mask(where) -> bool:
    """Whether ``where=`` leaves every entry in (its default, or None)."""
    return where is None or where is True


def sum_keep(xp, x, axes):
    """``x`` summed over ``axes``, keeping them as size 1."""
    # torch sums everything for an empty axis tuple; NumPy sums nothing.
    return xp.sum(x, axis=axes, keepdims=True) if axes else x


def _count(shape, axes) -> int:
    n = 1
    for i in axes:
        n *= shape[i]
    return n


def safe_divisor(xp, d):
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
    if not no_mask(where):
        ct = xp.where(mask_on(xp, where, ct), ct, xp.zeros_like(ct))
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
    if no_mask(where):
        return like_arg(ct / _count(shape, axes), a)
    mask = xp.broadcast_to(mask_on(xp, where, ct), shape)
    count = sum_keep(xp, xp.astype(mask, ct.dtype), axes)
    return like_arg(xp.where(mask, ct / count, xp.zeros_like(ct)), a)

def _var_parts(g, a, axis, ddof, keepdims, where, mean, correction):
    """Shared by var and std: (xp, expanded g, a - mean, divisor N - ddof, axes)."""
    if not no_mask(where):
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
    return xp.reshape(-sum_keep(xp, ge * (2.0 / divisor) * centred, axes), shape_of(mean))


def std_vjp(g, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None):
    """Cotangent of ``a`` in ``np.std``: ``g (a - mean) / ((N - ddof) std)``, 0 where std == 0."""
    xp, ge, centred, divisor, axes = _var_parts(g, a, axis, ddof, keepdims, where, mean, correction)
    sd = expand_reduced(ans, shape_of(a), axes, keepdims, xp, a)
    # std == 0 means a constant slice: centred is 0 there, so dividing by 1 gives 0.
    return like_arg(ge * centred / (divisor * safe_divisor(xp, sd)), a)


def std_vjp_mean(g, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None,
                 correction=None):
    """Cotangent of the ``mean=`` argument of ``np.std``."""
    xp, ge, centred, divisor, axes = _var_parts(g, a, axis, ddof, keepdims, where, mean, correction)
    sd = expand_reduced(ans, shape_of(a), axes, keepdims, xp, a)
    return xp.reshape(-sum_keep(xp, ge * centred / (divisor * safe_divisor(xp, sd)), axes),
                      shape_of(mean))


# ---------------------------------------------------------------------------
# Registrations, with NumPy's parameter names.

defrule(np.sum, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
        result=results.reduction, methods=("sum",), a="sum_vjp(g, a, axis, keepdims, where)")
defrule(np.mean, "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
        result=results.reduction, methods=("mean",), a="mean_vjp(g, a, axis, keepdims, where)")
deftangent(np.sum, linear="a")
deftangent(np.mean, linear="a")
_VAR_SIG = ("a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, "
            "mean=None, correction=None")
defrule(np.var, _VAR_SIG, result=results.reduction, methods=("var",),
        a="var_vjp(g, a, axis, ddof, keepdims, where, mean, correction)",
        mean="var_vjp_mean(g, a, axis, ddof, keepdims, where, mean, correction)")
defrule(np.std, _VAR_SIG, result=results.reduction, methods=("std",),
        a="std_vjp(g, ans, a, axis, ddof, keepdims, where, mean, correction)",
        mean="std_vjp_mean(g, ans, a, axis, ddof, keepdims, where, mean, correction)")


# ---------------------------------------------------------------------------
# Numba twins: the helpers above, and the reductions Numba cannot compile with an
# axis or keepdims (the forward sweep calls the twin).  One int axis, a tuple of int
# axes, or none.  The spreaders, axis checks and forward-twin builders serve the other
# reduction modules too.  A tuple of axes moves the reduced axes last
# (twins.axes_plan): the array becomes rows of (kept entries, reduced entries).

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


def _tuple_sums(a, axis, plan):
    """Numba: each entry of ``a`` replaced by the sum of its slice over the axes ``axis``."""
    perm, back, pre, n, kept, rest = plan(a.shape, axis)
    rows = np.ascontiguousarray(np.transpose(a, perm)).reshape((pre, n))
    out = np.empty(pre)
    for i in range(pre):
        acc = 0.0
        for k in range(n):
            acc += rows[i, k]
        out[i] = acc
    return np.zeros(a.shape) + out.reshape(kept)


def axis_sums(a, axis):
    """Numba: a compiled ``f(x, axis)``, ``x`` (of ``a``'s type) with each entry replaced
    by the sum of its slice over ``axis`` (an int or a tuple of ints, not all axes)."""
    r = twins.axes_count(axis)
    if r is None:
        sums = slice_sums()
        return twins.jitted(lambda x, axis: sums(x, axis % x.ndim))
    sums, plan = twins.jitted(_tuple_sums), twins.axes_plan(a.ndim, r)
    return twins.jitted(lambda x, axis: sums(x, axis, plan))


def axis_count(a, axis):
    """Numba: a compiled ``f(x, axis)``, the number of entries each slice over ``axis``
    (an int or a tuple of ints, not all axes) has."""
    r = twins.axes_count(axis)
    if r is None:
        return twins.jitted(lambda x, axis: x.shape[axis % x.ndim])
    plan = twins.axes_plan(a.ndim, r)
    return twins.jitted(lambda x, axis: plan(x.shape, axis)[3])


def _spread_axes(g, a, axis, plan):
    return np.zeros(a.shape) + np.ascontiguousarray(g).reshape(plan(a.shape, axis)[4])


def spreader(g, a, axis):
    """Numba: ``g`` (a reduction's result or cotangent) broadcast back to ``a``'s shape."""
    if twins.is_number(g):
        return twins.jitted(_spread_number)
    if twins.rank(g) == a.ndim:
        return twins.jitted(_spread_same)
    if twins.is_int(axis) and twins.rank(g) == a.ndim - 1:
        return twins.jitted(_spread_axis)
    r = twins.axes_count(axis)
    if r is not None and twins.rank(g) == a.ndim - r:
        spread, plan = twins.jitted(_spread_axes), twins.axes_plan(a.ndim, r)
        return twins.jitted(lambda g, a, axis: spread(g, a, axis, plan))
    twins.unsupported("a reduction over several axes")


def takes_all(a, axis) -> bool:
    """The reduction takes every entry (no axis, the one axis of a vector, or a tuple
    of as many axes as ``a`` has)."""
    return twins.is_none(axis) or a.ndim == 1 or twins.axes_count(axis) == a.ndim


def check_axis(axis, where=None, tuples=False):
    """Refuse an axis that is not None or an int (or, with ``tuples``, a tuple of
    ints), and a ``where=`` that is not a constant True."""
    if not (twins.is_none(axis) or twins.is_int(axis)
            or (tuples and twins.axes_count(axis) is not None)):
        twins.unsupported("a reduction over a tuple of axes" if twins.is_tuple(axis)
                          else "a reduction with an axis that is not an int or a tuple of ints")
    if where is not None and twins.literal(where, False) is not True:
        twins.unsupported("a reduction with where=")


@numba_twin(sum_vjp)
@twins.keeps_dtype("a")
def _sum_vjp_numba(g, a, axis=None, keepdims=False, where=True):
    if twins.is_number(a):
        return lambda g, a, axis=None, keepdims=False, where=True: g
    check_axis(axis, where, tuples=True)
    spread = spreader(g, a, axis)
    return lambda g, a, axis=None, keepdims=False, where=True: spread(g, a, axis)


@numba_twin(mean_vjp)
@twins.keeps_dtype("a")
def _mean_vjp_numba(g, a, axis=None, keepdims=False, where=True):
    if twins.is_number(a):
        return lambda g, a, axis=None, keepdims=False, where=True: g
    check_axis(axis, where, tuples=True)
    spread = spreader(g, a, axis)
    if takes_all(a, axis):
        return lambda g, a, axis=None, keepdims=False, where=True: spread(g, a, axis) / a.size
    count = axis_count(a, axis)
    return lambda g, a, axis=None, keepdims=False, where=True: \
        spread(g, a, axis) / count(a, axis)


def _var_twin(with_sd):
    """The twin of var_vjp (``with_sd`` False) or std_vjp: ``a`` only, no ``mean=``."""
    def decide(t):
        g, a, axis = t["g"], t["a"], t["axis"]
        if twins.is_number(a):      # the spread of one number is 0 wherever it is
            if with_sd:
                return lambda g, ans, a, axis, ddof, keepdims, where, mean, correction: g * 0.0
            return lambda g, a, axis, ddof, keepdims, where, mean, correction: g * 0.0
        check_axis(axis, t["where"], tuples=True)
        if not (twins.is_none(t["mean"]) and twins.is_none(t["correction"])):
            twins.unsupported("np.var/np.std with mean= or correction=")
        spread = spreader(g, a, axis)
        if takes_all(a, axis):
            def centred(a, axis):
                return a - np.mean(a), a.size
        else:
            sums, count = axis_sums(a, axis), axis_count(a, axis)

            def centred(a, axis):
                n = count(a, axis)
                return a - sums(a, axis) / n, n
        centre = twins.jitted(centred)
        if not with_sd:
            def var_body(g, a, axis, ddof, keepdims, where, mean, correction):
                c, n = centre(a, axis)
                return spread(g, a, axis) * (2.0 / (n - ddof)) * c
            return var_body
        spread_sd = spreader(t["ans"], a, axis)

        def std_body(g, ans, a, axis, ddof, keepdims, where, mean, correction):
            c, n = centre(a, axis)
            sd = spread_sd(ans, a, axis)
            return spread(g, a, axis) * c / ((n - ddof) * np.where(sd == 0, 1.0, sd))
        return std_body
    return decide


numba_twin(var_vjp)(twins.keeps_dtype("a")(twins.signature_twin(
    "g, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None",
    _var_twin(False))))
numba_twin(std_vjp)(twins.keeps_dtype("a")(twins.signature_twin(
    "g, ans, a, axis=None, ddof=0, keepdims=False, where=True, mean=None, correction=None",
    _var_twin(True))))


# Forward twins: each reduction over one axis (or all), with keepdims.

def along_axis(kernel, a, axis, keepdims, tuples=False, combine=None):
    """The body of a reduction's forward twin: ``kernel(x, p)`` (a function of a vector
    and a parameter such as ddof) applied to each slice along ``axis`` (Numba types
    ``a``, ``axis``, ``keepdims``); with ``tuples``, also to each slice over a tuple
    of axes (the kernel then gets the slice's entries as one vector).

    ``combine(s, v)``: the kernel is a left fold of the slice by this scalar
    function (``s * v`` for prod).  Over one axis of a float array, the rows
    are then folded into the result in turn, NumPy's own order along a leading
    axis: the loop runs along contiguous memory, where a slice at a time strides
    through it (prod's forward over axis 0 of a 10 x 1000 matrix: 1.8x faster)."""
    if not twins.is_array(a):
        if not (twins.is_number(a) and twins.literal(keepdims, False) is not False):
            return None
        if not twins.is_none(axis):
            twins.unsupported("keepdims=True on a reduction of a number along an axis")
        # NumPy returns a number here too (np.sum(2.0, keepdims=True) is a float64).
        k = twins.jitted(kernel)
        return lambda a, axis, keepdims, p: k(np.full(1, a * 1.0), p)
    check_axis(axis, tuples=tuples)
    keep = twins.literal(keepdims, None)
    if keep is None:
        twins.unsupported("keepdims= other than a constant True or False")
    k, nd, dt = twins.jitted(kernel), a.ndim, _result_dtype(a)
    ones = twins.ones_shape(nd)
    r = twins.axes_count(axis)
    if r is not None and r > 1 and r == nd:
        # Every axis, as a tuple: as axis=None, once the tuple is checked as NumPy does.
        plan, whole = twins.axes_plan(nd, r), twins.jitted(along_axis(kernel, a, None, keepdims))

        def every(a, axis, keepdims, p):
            plan(a.shape, axis)
            return whole(a, None, keepdims, p)
        return every
    if r is not None and nd > 1:
        return _over_axes(k, nd, r, keep, dt)
    if takes_all(a, axis):
        if keep:
            def whole_kept(a, axis, keepdims, p):
                out = np.empty(1, dt)
                out[0] = k(np.ascontiguousarray(a).ravel(), p)
                return out.reshape(ones)
            return whole_kept
        return lambda a, axis, keepdims, p: k(np.ascontiguousarray(a).ravel(), p)
    split, shaper = twins.split_shape(), twins.reduced_shape(nd, keep)
    if combine is not None and twins.is_float_array(a):
        return _folding_rows(k, twins.jitted(combine), split, shaper, nd, dt)

    def along(a, axis, keepdims, p):
        ax = axis % nd
        pre, n, post = split(a.shape, ax)
        a3 = np.ascontiguousarray(a).reshape((pre, n, post))
        out = np.empty((pre, post), dt)
        for i in range(pre):
            for j in range(post):
                out[i, j] = k(a3[i, :, j], p)
        return out.reshape(shaper(a.shape, ax))
    return along


def _folding_rows(k, combine, split, shaper, nd, dt):
    """See :func:`along_axis`: the rows along the axis folded by ``combine``, from
    the first row (the kernel's value of an empty slice when there is none)."""
    def along_rows(a, axis, keepdims, p):
        ax = axis % nd
        pre, n, post = split(a.shape, ax)
        a3 = np.ascontiguousarray(a).reshape((pre, n, post))
        out = np.empty((pre, post), dt)
        if n == 0:
            out[:] = k(np.empty(0, dt), p)
        for i in range(pre if n else 0):
            for j in range(post):
                out[i, j] = a3[i, 0, j]
            for m in range(1, n):
                for j in range(post):
                    out[i, j] = combine(out[i, j], a3[i, m, j])
        return out.reshape(shaper(a.shape, ax))
    return along_rows


def _result_dtype(a):
    """The dtype of a reduction's slices of the Numba array type ``a``: float32 for
    float32 (as NumPy keeps it), else float64."""
    from numba import types
    return np.float32 if a.dtype == types.float32 else np.float64


def _over_axes(k, nd, r, keep, dt):
    """The body of a forward twin over a tuple of ``r`` axes (not all) of a rank ``nd``
    array: ``k`` applied to each row of the array with the reduced axes moved last,
    into an array of dtype ``dt``."""
    plan = twins.axes_plan(nd, r)

    def rows(a, axis, p):
        perm, back, pre, n, kept, rest = plan(a.shape, axis)
        a2 = np.ascontiguousarray(np.transpose(a, perm)).reshape((pre, n))
        out = np.empty(pre, dt)
        for i in range(pre):
            out[i] = k(a2[i], p)
        return out, kept, rest
    over = twins.jitted(rows)
    if keep:
        def kept_dims(a, axis, keepdims, p):
            out, kept, rest = over(a, axis, p)
            return out.reshape(kept)
        return kept_dims

    def dropped(a, axis, keepdims, p):
        out, kept, rest = over(a, axis, p)
        return out.reshape(rest)
    return dropped


def reduction_twin(signature, kernel, args="a, axis, keepdims, 0", combine=None):
    """The forward twin of a reduction whose parameter list is ``signature``: ``kernel``
    (see :func:`along_axis`, and ``combine``) over no axis, an int axis or a tuple of
    axes; ``args`` are the body's arguments, the last one the kernel's parameter."""
    names = [n.split("=")[0].strip() for n in signature.replace("*, ", "").split(",")]
    a, axis, keepdims, last = (n.strip() for n in args.split(","))
    ia, ix, ik = names.index(a), names.index(axis), names.index(keepdims)
    p = int(last) if last.isdigit() else None       # the kernel's parameter, a constant
    k = names.index(last) if p is None else None    # or one of the parameters

    def decide(t):
        body = along_axis(kernel, t["a"], t["axis"], t["keepdims"], tuples=True, combine=combine)
        if body is None:
            return None
        b = twins.jitted(body)
        # run takes the signature's parameters positionally (see twins.signature_twin)
        if k is None:
            return lambda *ps: b(ps[ia], ps[ix], ps[ik], p)
        return lambda *ps: b(ps[ia], ps[ix], ps[ik], ps[k])
    return twins.signature_twin(signature, decide)


_SUM_SIG = "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True"
_MEAN_SIG = "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True"
numba_twin(np.sum)(reduction_twin(_SUM_SIG, lambda x, p: np.sum(x), combine=lambda s, v: s + v))
numba_twin(np.mean)(reduction_twin(_MEAN_SIG, lambda x, p: np.mean(x)))
_VAR_ARGS = "a, axis, keepdims, ddof"
numba_twin(np.var)(reduction_twin(
    _VAR_SIG, lambda x, ddof: np.sum((x - np.mean(x)) ** 2) / (x.size - ddof), _VAR_ARGS))
numba_twin(np.std)(reduction_twin(
    _VAR_SIG, lambda x, ddof: np.sqrt(np.sum((x - np.mean(x)) ** 2) / (x.size - ddof)), _VAR_ARGS))
