"""Derivatives of NumPy's functions that move entries without changing their
number: flip, fliplr, flipud, rot90, roll, rollaxis, sort.  Each VJP moves the
cotangent back: the inverse move.

Conventions are those of :mod:`pullback.rules.elementwise`.  ``sort``: ``g``
goes back through the inverse of the (stable) sorting permutation.  Tied
entries are interchangeable, so any permutation gives the same derivative of
the sorted values.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace, shape_of
from .forms import numba_twin
from .reductions_second import zero_cotangent  # noqa: F401 - named by templates
from .registry import defrule, lookup
from .tangents import deftangent

__all__ = ["flip_vjp", "rot90_vjp", "roll_vjp", "rollaxis_vjp", "sort_vjp", "partition_vjp"]


# ---------------------------------------------------------------------------
# flips, rotations, rolls: the inverse move

def flip_vjp(g, m, axis=None):
    """Cotangent of ``m`` in ``np.flip(m, axis)`` (fliplr: axis 1, flipud: axis 0)."""
    xp = namespace(g, m)
    return like_arg(xp.flip(as_array(xp, g, m), axis=axis), m)


def _rot90(xp, m, k, axes):
    """``np.rot90`` in the array API (as NumPy builds it: flips and a transpose)."""
    k %= 4
    a0, a1 = (int(ax) % m.ndim for ax in axes)
    if k == 0:
        return m
    if k == 2:
        return xp.flip(xp.flip(m, axis=a0), axis=a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return xp.permute_dims(xp.flip(m, axis=a1), tuple(perm))
    return xp.flip(xp.permute_dims(m, tuple(perm)), axis=a1)


def rot90_vjp(g, m, k=1, axes=(0, 1)):
    """Cotangent of ``m`` in ``np.rot90(m, k, axes)``: rotate back."""
    xp = namespace(g, m)
    return _rot90(xp, as_array(xp, g, m), -int(k), axes)


def roll_vjp(g, a, shift, axis=None):
    """Cotangent of ``a`` in ``np.roll(a, shift, axis)``: roll back."""
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    if isinstance(shift, (tuple, list)):
        back = tuple(-int(s) for s in shift)
    else:
        back = -int(shift)
    if axis is None:
        return like_arg(xp.reshape(xp.roll(xp.reshape(G, (-1,)), back), shape_of(a)), a)
    if isinstance(back, tuple) or isinstance(axis, (tuple, list)):
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        pairs = np.broadcast_arrays(np.asarray(back), np.asarray(axes))
        for s, ax in zip(pairs[0].ravel(), pairs[1].ravel()):
            G = xp.roll(G, int(s), axis=int(ax))
        return G
    return xp.roll(G, back, axis=axis)


def rollaxis_vjp(g, a, axis, start=0):
    """Cotangent of ``a`` in ``np.rollaxis(a, axis, start)``: the inverse permutation."""
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    n = G.ndim
    axis, start = axis % n, (start + n if start < 0 else start)
    if axis < start:
        start -= 1
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return xp.permute_dims(G, tuple(int(i) for i in np.argsort(order)))


def sort_vjp(g, a, axis=-1):
    """Cotangent of ``a`` in ``np.sort(a, axis)``: ``g`` put back where each entry came from."""
    xp = namespace(g, a)
    A = as_array(xp, a, g)
    G = as_array(xp, g, A)
    if axis is None:
        A = xp.reshape(A, (-1,))
        axis = 0
    order = xp.argsort(A, axis=axis, stable=True)
    back = xp.argsort(order, axis=axis, stable=True)      # the inverse permutation
    return like_arg(xp.reshape(xp.take_along_axis(G, back, axis=axis), shape_of(a)), a)


def partition_vjp(g, ans, a, kth, axis=-1):
    """Cotangent of ``a`` in ``np.partition(a, kth, axis)``, whose result is some
    permutation of each slice: the k-th smallest of ``ans`` is the k-th smallest of
    ``a`` (both ranked stably, so equal values pair up in order), and ``g`` goes
    back along that pairing.  It depends on ``ans`` only, not on how the
    partition arranged it."""
    xp = namespace(g, a)
    A, ANS, G = as_array(xp, a, g), as_array(xp, ans, g), as_array(xp, g, a)
    if axis is None:
        A, axis = xp.reshape(A, (-1,)), 0
    in_a = xp.argsort(A, axis=axis, stable=True)
    in_ans = xp.argsort(ANS, axis=axis, stable=True)
    ranked = xp.take_along_axis(G, in_ans, axis=axis)            # g by rank
    back = xp.argsort(in_a, axis=axis, stable=True)              # rank of each entry of a
    return like_arg(xp.reshape(xp.take_along_axis(ranked, back, axis=axis), shape_of(a)), a)


def sort_jvp(t, a, axis=-1):
    """Tangent of ``np.sort(a, axis)`` along ``t``: ``t`` gathered in the order of ``a``
    (ranked stably, as :func:`sort_vjp` puts ``g`` back)."""
    xp = namespace(t, a)
    A = as_array(xp, a, t)
    T = xp.broadcast_to(as_array(xp, t, A), tuple(A.shape))
    if axis is None:
        A, T, axis = xp.reshape(A, (-1,)), xp.reshape(T, (-1,)), 0
    return xp.take_along_axis(T, xp.argsort(A, axis=axis, stable=True), axis=axis)


def partition_jvp(t, ans, a, kth, axis=-1):
    """Tangent of ``np.partition(a, kth, axis)`` along ``t``: the pairing of
    :func:`partition_vjp` forwards (the entry of rank k in ``ans`` gets the tangent of
    the entry of rank k in ``a``)."""
    xp = namespace(t, a)
    A, ANS = as_array(xp, a, t), as_array(xp, ans, t)
    T = xp.broadcast_to(as_array(xp, t, A), tuple(A.shape))
    if axis is None:
        A, T, axis = xp.reshape(A, (-1,)), xp.reshape(T, (-1,)), 0
    by_rank = xp.take_along_axis(T, xp.argsort(A, axis=axis, stable=True), axis=axis)
    rank_in_ans = xp.argsort(xp.argsort(ANS, axis=axis, stable=True), axis=axis, stable=True)
    return xp.take_along_axis(by_rank, rank_in_ans, axis=axis)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.flip, "m, axis=None", result=results.same_shape, view=True,
        m="flip_vjp(g, m, axis)")
defrule(np.fliplr, "m", result=results.same_shape, view=True, m="flip_vjp(g, m, 1)")
defrule(np.flipud, "m", result=results.same_shape, view=True, m="flip_vjp(g, m, 0)")
for _flip in (np.flip, np.fliplr, np.flipud):
    deftangent(_flip, linear="m")
defrule(np.rot90, "m, k=1, axes=(0, 1)", result=results.same_shape, view=True,
        m="rot90_vjp(g, m, k, axes)")
defrule(np.roll, "a, shift, axis=None", result=results.same_shape,
        a="roll_vjp(g, a, shift, axis)")
defrule(np.rollaxis, "a, axis, start=0", result=results.same_shape, view=True,
        a="rollaxis_vjp(g, a, axis, start)")
for _linear in (np.rot90, np.roll, np.rollaxis):
    deftangent(_linear, linear=lookup(_linear).params[0].name)
defrule(np.sort, "a, axis=-1, kind=None, order=None, *, stable=None", result=results.array,
        a="sort_vjp(g, a, axis)")
defrule(np.partition, "a, kth, axis=-1, kind='introselect', order=None", result=results.array,
        a="partition_vjp(g, ans, a, kth, axis)")
deftangent(np.sort, shaped=True, a="sort_jvp(t, a, axis)")
deftangent(np.partition, shaped=True, a="partition_jvp(t, ans, a, kth, axis)")
# The tangents again (Hessians reverse over forward): linear in the tangent v, the
# transpose of a gather a scatter; the order is piecewise constant in the values.
defrule(sort_jvp, "v, a, axis=-1", result=results.array, v="sort_vjp(g, a, axis)",
        a="zero_cotangent(a)")
deftangent(sort_jvp, shaped=True, v="sort_jvp(t, a, axis)", a="0.0 * ans")
defrule(partition_jvp, "v, r, a, kth, axis=-1", result=results.array,
        v="partition_vjp(g, r, a, kth, axis)", r="zero_cotangent(r)", a="zero_cotangent(a)")
deftangent(partition_jvp, shaped=True, v="partition_jvp(t, r, a, kth, axis)", r="0.0 * ans",
           a="0.0 * ans")


# ---------------------------------------------------------------------------
# Numba twins of roll, sort and flip (and of the primals Numba lacks)

def _roll3(g3, shift):
    """``g3`` (pre, n, post) rolled by ``shift`` along its middle axis."""
    pre, n, post = g3.shape
    out = np.empty((pre, n, post))
    if n == 0:
        return out
    s = shift % n
    for i in range(pre):
        for k in range(n):
            kk = (k + s) % n
            for j in range(post):
                out[i, kk, j] = g3[i, k, j]
    return out


def _roll_body(sign):
    """A compiled ``f(x, shift, axis)``: ``np.roll(x, sign * shift, axis)`` for one int
    shift and one int axis (None: the flattened array)."""
    roll3, split = twins.jitted(_roll3), twins.split_shape()

    def whole(x, shift, axis):
        return roll3(np.ascontiguousarray(x).reshape((1, x.size, 1)), sign * shift).reshape(x.shape)

    def along(x, shift, axis):
        pre, n, post = split(x.shape, axis % x.ndim)
        return roll3(np.ascontiguousarray(x).reshape((pre, n, post)), sign * shift).reshape(x.shape)
    return whole, along


def _roll_choice(x, shift, axis, sign):
    if not (twins.is_array(x) and twins.is_int(shift)):
        twins.unsupported("np.roll with a tuple of shifts")
    whole, along = _roll_body(sign)
    if twins.is_none(axis):
        return twins.jitted(whole)
    if not twins.is_int(axis):
        twins.unsupported("np.roll with a tuple of axes")
    return twins.jitted(along)


@numba_twin(roll_vjp)
@twins.keeps_dtype("a")
def _roll_vjp_numba(g, a, shift, axis=None):
    body = _roll_choice(g, shift, axis, -1)
    return lambda g, a, shift, axis=None: body(g, shift, axis)


@numba_twin(np.roll)
@twins.keeps_dtype("a")
def _roll_numba(a, shift, axis=None):
    # Numba's np.roll takes no axis.
    body = _roll_choice(a, shift, axis, 1)
    return lambda a, shift, axis=None: body(a, shift, axis)


def _unsort3(g3, a3):
    """``g3`` put back where each entry of ``a3`` came from, sorting along the middle axis
    (stable, as the Python rule's argsort)."""
    pre, n, post = a3.shape
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            order = np.argsort(a3[i, :, j].copy(), kind="mergesort")
            for k in range(n):
                out[i, order[k], j] = g3[i, k, j]
    return out


@numba_twin(sort_vjp)
@twins.keeps_dtype("a")
def _sort_vjp_numba(g, a, axis=-1):
    if not (twins.is_array(g) and twins.is_array(a)):
        return None
    unsort, split = twins.jitted(_unsort3), twins.split_shape()
    if twins.is_none(axis):
        return lambda g, a, axis=-1: unsort(
            np.ascontiguousarray(g).reshape((1, g.size, 1)),
            np.ascontiguousarray(a).reshape((1, a.size, 1))).reshape(a.shape)
    if not twins.is_int(axis):
        twins.unsupported("np.sort with this axis")

    def along(g, a, axis=-1):
        pre, n, post = split(a.shape, axis % a.ndim)
        return unsort(np.ascontiguousarray(g).reshape((pre, n, post)),
                      np.ascontiguousarray(a).reshape((pre, n, post))).reshape(a.shape)
    return along


def _unpartition3(g3, ans3, a3):
    """``g3`` (the cotangent of ``ans3``, a partition of ``a3`` along the middle axis)
    put back along the pairing by stable rank, as the Python rule."""
    pre, n, post = a3.shape
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            in_a = np.argsort(a3[i, :, j].copy(), kind="mergesort")
            in_ans = np.argsort(ans3[i, :, j].copy(), kind="mergesort")
            for k in range(n):
                out[i, in_a[k], j] = g3[i, in_ans[k], j]
    return out


@numba_twin(np.partition)
def _partition_numba(a, kth, axis=-1, kind="introselect", order=None):
    # NumPy's own partition, in an object-mode block: which entries land on either side
    # of the k-th is NumPy's choice, and a function may read it (Numba's np.partition
    # arranges them differently, and takes no axis).
    axis_ok = twins.is_none(axis) or twins.is_int(axis) or isinstance(twins.literal(axis), int)
    if not (twins.is_array(a) and axis_ok and twins.is_none(order)):
        twins.unsupported(f"np.partition of {a} along axis {axis} (an int or None)")
    from numba import objmode
    # The object-mode blocks name only this module's globals and their locals: Numba
    # rebuilds a block's environment from this module when it loads the derivative
    # from the disk cache.
    if twins.is_none(axis):
        def flat(a, kth, axis=-1, kind="introselect", order=None):
            out = np.empty((a.size,), dtype=a.dtype)
            with objmode():
                out[...] = np.partition(a, kth, None)
            return out
        return flat

    def along(a, kth, axis=-1, kind="introselect", order=None):
        out = np.empty(a.shape, dtype=a.dtype)
        with objmode():
            out[...] = np.partition(a, kth, axis)
        return out
    return along


@numba_twin(partition_vjp)
@twins.keeps_dtype("a")
def _partition_vjp_numba(g, ans, a, kth, axis=-1):
    if not (twins.is_array(g) and twins.is_array(ans) and twins.is_array(a)):
        return None
    if not (twins.is_none(axis) or twins.is_int(axis)):
        twins.unsupported("np.partition with this axis")
    unpartition, split = twins.jitted(_unpartition3), twins.split_shape()
    if twins.is_none(axis):
        return lambda g, ans, a, kth, axis=-1: unpartition(
            np.ascontiguousarray(g).reshape((1, g.size, 1)),
            np.ascontiguousarray(ans).reshape((1, ans.size, 1)),
            np.ascontiguousarray(a).reshape((1, a.size, 1))).reshape(a.shape)

    def along(g, ans, a, kth, axis=-1):
        pre, n, post = split(a.shape, axis % a.ndim)
        return unpartition(np.ascontiguousarray(g).reshape((pre, n, post)),
                           np.ascontiguousarray(ans).reshape((pre, n, post)),
                           np.ascontiguousarray(a).reshape((pre, n, post))).reshape(a.shape)
    return along


def _sort3(a3):
    pre, n, post = a3.shape
    out = np.empty((pre, n, post), dtype=a3.dtype)
    for i in range(pre):
        for j in range(post):
            out[i, :, j] = np.sort(a3[i, :, j].copy())
    return out


def _sort_primal(t):
    a, axis = t["a"], t["axis"]
    if not twins.is_array(a):
        return None
    if not (twins.is_none(t["order"]) and twins.is_none(t["stable"])):
        twins.unsupported("np.sort with order= or stable=")
    sort3, split = twins.jitted(_sort3), twins.split_shape()
    if twins.is_none(axis):
        return lambda a, axis, kind, order, stable: np.sort(np.ascontiguousarray(a).ravel())
    if not twins.is_int(axis):
        twins.unsupported("np.sort with this axis")

    def along(a, axis, kind, order, stable):
        pre, n, post = split(a.shape, axis % a.ndim)
        return sort3(np.ascontiguousarray(a).reshape((pre, n, post))).reshape(a.shape)
    return along


numba_twin(np.sort)(twins.signature_twin("a, axis=-1, kind=None, order=None, *, stable=None",
                                         _sort_primal))


def _flip3(g3):
    return np.ascontiguousarray(g3[:, ::-1, :])


def _flip_body(x, axis):
    """A compiled ``f(x, axis)``: ``np.flip(x, axis)`` for no axis or one int axis."""
    if twins.is_none(axis):
        return twins.jitted(lambda x, axis: np.ascontiguousarray(
            np.ascontiguousarray(x).ravel()[::-1]).reshape(x.shape))
    if not twins.is_int(axis):
        twins.unsupported("np.flip with a tuple of axes")
    flip3, split = twins.jitted(_flip3), twins.split_shape()

    def along(x, axis):
        pre, n, post = split(x.shape, axis % x.ndim)
        return flip3(np.ascontiguousarray(x).reshape((pre, n, post))).reshape(x.shape)
    return twins.jitted(along)


@numba_twin(flip_vjp)
def _flip_vjp_numba(g, m, axis=None):
    if not twins.is_array(g):
        return None
    body = _flip_body(g, axis)
    return lambda g, m, axis=None: body(g, axis)


@numba_twin(np.flip)
def _flip_numba(m, axis=None):
    # Numba's np.flip takes no axis.
    if not twins.is_array(m):
        return None
    body = _flip_body(m, axis)
    return lambda m, axis=None: body(m, axis)


# rot90 (Numba's np.rot90 takes no axes): flips and a swap of the two axes, as NumPy
# builds it, for an int k and a pair of int axes known only at run time too.

def _int_pair(t) -> bool:
    """Whether ``t`` (a Numba type, or an omitted argument's default) is a pair of ints."""
    from numba import types
    if isinstance(t, types.Omitted):
        t = t.value
    if isinstance(t, tuple):
        return len(t) == 2 and all(isinstance(v, int) for v in t)
    return twins.is_tuple(t) and len(t.types) == 2 and all(twins.is_int(e) for e in t.types)


def _rot90_body(m, k, axes):
    """A compiled ``f(m, k, a0, a1)``: ``np.rot90(m, k, (a0, a1))``, a C-contiguous copy."""
    if not twins.is_array(m) or twins.rank(m) < 2:
        twins.unsupported(f"np.rot90 of {m}")
    if not (twins.is_int(k) or isinstance(twins.literal(k), int)):
        twins.unsupported(f"np.rot90 with k of type {k}")
    if not _int_pair(axes):
        twins.unsupported(f"np.rot90 with axes of type {axes}")
    flip3, split = twins.jitted(_flip3), twins.split_shape()

    def flip(x, axis):
        pre, n, post = split(x.shape, axis)
        return flip3(np.ascontiguousarray(x).reshape((pre, n, post))).reshape(x.shape)
    flip = twins.jitted(flip)

    def rot(m, k, a0, a1):
        nd = m.ndim
        if a0 == a1 or abs(a0 - a1) == nd:
            raise ValueError("np.rot90: axes must be different")
        if a0 >= nd or a0 < -nd or a1 >= nd or a1 < -nd:
            raise ValueError("np.rot90: axes out of range")
        a0, a1 = a0 % nd, a1 % nd
        k = k % 4
        if k == 0:
            return m.copy()
        if k == 2:
            return flip(flip(m, a0), a1)
        if k == 1:
            return np.ascontiguousarray(np.swapaxes(flip(m, a1), a0, a1))
        return flip(np.ascontiguousarray(np.swapaxes(m, a0, a1)), a1)
    return twins.jitted(rot)


@numba_twin(rot90_vjp)
def _rot90_vjp_numba(g, m, k=1, axes=(0, 1)):
    rot = _rot90_body(g, k, axes)
    return lambda g, m, k=1, axes=(0, 1): rot(g, -k, axes[0], axes[1])


@numba_twin(np.rot90)
def _rot90_numba(m, k=1, axes=(0, 1)):
    rot = _rot90_body(m, k, axes)
    return lambda m, k=1, axes=(0, 1): rot(m, k, axes[0], axes[1])


def _rolled_to(n, axis, start):
    """Where ``np.rollaxis(a, axis, start)`` puts ``axis`` of an ``n``-d array, both
    normalized: it is ``np.moveaxis(a, axis, to)``."""
    axis = axis % n
    start = start + n if start < 0 else start
    return axis, (start - 1 if axis < start else start)


@numba_twin(np.rollaxis)
def _rollaxis_numba(a, axis, start=0):
    # Numba has no np.rollaxis: it is a moveaxis.
    if not (twins.is_array(a) and twins.is_int(axis)):
        return None
    rolled = twins.jitted(_rolled_to)

    def rollaxis(a, axis, start=0):
        src, to = rolled(a.ndim, axis, start)
        return np.moveaxis(a, src, to)
    return rollaxis


@numba_twin(rollaxis_vjp)
def _rollaxis_vjp_numba(g, a, axis, start=0):
    if not (twins.is_array(g) and twins.is_int(axis)):
        return None
    rolled = twins.jitted(_rolled_to)

    def back(g, a, axis, start=0):
        src, to = rolled(g.ndim, axis, start)
        return np.ascontiguousarray(np.moveaxis(g, to, src))
    return back
