"""Derivatives of NumPy's array manipulation functions: they copy, move or mask entries,
so their VJPs add the cotangents back where the entries came from.

repeat, tile, diff, flip, fliplr, flipud, rot90, roll, rollaxis, diag, diagonal,
tril, triu, atleast_1d/2d/3d, sort.

Conventions are those of :mod:`pullback.rules.elementwise`: a helper takes the
cotangent ``g`` first, then the primal arguments (NumPy's parameter names), and
returns the cotangent of one argument with that argument's shape (a scalar for
a scalar), computed with the array API namespace of its inputs.

Notes:

* ``repeat`` with an array of repeats sums each run of ``g`` through one
  cumulative sum (no loop over the runs).
* ``sort``: ``g`` goes back through the inverse of the (stable) sorting
  permutation.  Tied entries are interchangeable, so any permutation gives the
  same derivative of the sorted values.
* ``atleast_1d/2d/3d`` take one array (with several they return a tuple, which
  their rule does not bind).
"""
from __future__ import annotations

import numbers

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, float_dtype, like_arg, namespace, shape_of, unbroadcast
from .registry import defrule, numba_twin
from .shapes import reshape_vjp

__all__ = ["repeat_vjp", "tile_vjp", "diff_vjp", "diff_vjp_prepend", "diff_vjp_append",
           "flip_vjp", "rot90_vjp", "roll_vjp", "rollaxis_vjp", "diag_vjp", "diagonal_vjp",
           "tril_vjp", "triu_vjp", "atleast_vjp", "sort_vjp"]


def _device(x):
    return array_api_compat.device(x) if hasattr(x, "shape") else None


# ---------------------------------------------------------------------------
# repeat, tile

def repeat_vjp(g, a, repeats, axis=None):
    """Cotangent of ``a`` in ``np.repeat(a, repeats, axis)``: each run of ``g`` summed."""
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    shape = shape_of(a)
    if axis is None:
        base = (int(np.prod(shape)),)
        ax = 0
    else:
        base = shape
        ax = axis % len(shape)
    n = base[ax]
    if isinstance(repeats, numbers.Integral) or np.ndim(repeats) == 0:
        r = int(repeats)
        G = xp.reshape(G, base[:ax] + (n, r) + base[ax + 1:])
        ct = xp.sum(G, axis=ax + 1)
    else:
        reps = xp.astype(as_array(xp, repeats, G), xp.int64)
        if reps.shape[0] == 1:
            reps = xp.broadcast_to(reps, (n,))
        ends = xp.cumulative_sum(reps)
        sums = xp.cumulative_sum(G, axis=ax, include_initial=True)
        ct = xp.take(sums, ends, axis=ax) - xp.take(sums, ends - reps, axis=ax)
    return like_arg(xp.reshape(ct, shape), a)


def tile_vjp(g, A, reps):
    """Cotangent of ``A`` in ``np.tile(A, reps)``: the tiles of ``g`` summed."""
    xp = namespace(g, A)
    G = as_array(xp, g, A)
    reps = tuple(int(r) for r in reps) if isinstance(reps, (tuple, list)) else (int(reps),)
    shape = shape_of(A)
    d = max(len(reps), len(shape))
    reps = (1,) * (d - len(reps)) + reps
    padded = (1,) * (d - len(shape)) + shape
    interleaved = tuple(n for pair in zip(reps, padded) for n in pair)
    ct = xp.sum(xp.reshape(G, interleaved), axis=tuple(range(0, 2 * d, 2)))
    return like_arg(xp.reshape(ct, shape), A)


# ---------------------------------------------------------------------------
# diff: the adjoint of one difference along an axis is a difference of g padded
# with a zero at each end; n differences, n adjoints.

def _diff_parts(g, a, n, axis, prepend, append):
    """The cotangent of the (prepended and appended) array np.diff differences,
    and the lengths of its three parts along the axis."""
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    nd = max(len(shape_of(a)), 1)
    ax = axis % nd

    def length(v):
        s = shape_of(v)
        return 0 if v is None else (1 if s == () else s[ax])

    # n == 0 returns ``a`` itself, without prepend or append.
    lengths = (length(prepend) if n else 0, shape_of(a)[ax], length(append) if n else 0)
    for _ in range(int(n)):
        zero = xp.zeros(G.shape[:ax] + (1,) + G.shape[ax + 1:], dtype=G.dtype, device=_device(G))
        G = xp.concat([zero, G], axis=ax) - xp.concat([G, zero], axis=ax)
    return xp, G, ax, lengths


def _take_range(G, ax, start, stop):
    return G[(slice(None),) * ax + (slice(start, stop),)]


def diff_vjp(g, a, n=1, axis=-1, prepend=None, append=None):
    """Cotangent of ``a`` in ``np.diff(a, n, axis, prepend, append)``."""
    xp, G, ax, (p, m, _) = _diff_parts(g, a, n, axis, prepend, append)
    return like_arg(_take_range(G, ax, p, p + m), a)


def diff_vjp_prepend(g, a, n=1, axis=-1, prepend=None, append=None):
    """Cotangent of ``prepend`` (a scalar was broadcast along the other axes)."""
    xp, G, ax, (p, _, _) = _diff_parts(g, a, n, axis, prepend, append)
    if not p:
        return like_arg(xp.zeros(shape_of(prepend), dtype=G.dtype, device=_device(G)), prepend)
    return unbroadcast(_take_range(G, ax, 0, p), prepend)


def diff_vjp_append(g, a, n=1, axis=-1, prepend=None, append=None):
    """Cotangent of ``append``."""
    xp, G, ax, (p, m, q) = _diff_parts(g, a, n, axis, prepend, append)
    if not q:
        return like_arg(xp.zeros(shape_of(append), dtype=G.dtype, device=_device(G)), append)
    return unbroadcast(_take_range(G, ax, p + m, p + m + q), append)


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


# ---------------------------------------------------------------------------
# diagonals and triangles

def _place_diagonal(xp, G, n, m, k, like):
    """An (..., n, m) array with ``G`` (..., L) on its ``k``-th diagonal, zeros elsewhere.

    Entry t of the diagonal is in column ``t + max(k, 0)``: pad ``G`` to one value
    per column and keep it on the diagonal only.
    """
    before = min(max(k, 0), m)
    after = m - before - G.shape[-1]
    lead = tuple(G.shape[:-1])
    dev, dt = _device(like), float_dtype(xp, G, like)
    cols = xp.concat([xp.zeros(lead + (before,), dtype=dt, device=dev), G,
                      xp.zeros(lead + (after,), dtype=dt, device=dev)], axis=-1)
    eye = xp.eye(n, m, k=k, dtype=dt, device=dev)
    return eye * xp.expand_dims(cols, axis=-2)


def diagonal_vjp(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of ``a`` in ``np.diagonal(a, offset, axis1, axis2)``: ``g`` on that diagonal."""
    xp = namespace(g, a)
    A = as_array(xp, a, g)
    nd = A.ndim
    ax1, ax2 = axis1 % nd, axis2 % nd
    perm = [i for i in range(nd) if i not in (ax1, ax2)] + [ax1, ax2]
    G = as_array(xp, g, A)
    ct = _place_diagonal(xp, G, A.shape[ax1], A.shape[ax2], int(offset), A)
    return xp.permute_dims(ct, tuple(int(i) for i in np.argsort(perm)))


def diag_vjp(g, v, k=0):
    """Cotangent of ``v`` in ``np.diag(v, k)``: the ``k``-th diagonal of ``g`` for a
    vector ``v`` (which was put on it), ``g`` put on that diagonal for a matrix."""
    xp = namespace(g, v)
    G = as_array(xp, g, v)
    if len(shape_of(v)) == 1:
        return xp.linalg.diagonal(G, offset=int(k))
    return diagonal_vjp(g, v, k)


def _triangle(xp, like, shape, k, lower):
    rows = xp.arange(shape[-2], device=_device(like))
    cols = xp.arange(shape[-1], device=_device(like))
    offset = xp.expand_dims(cols, axis=0) - xp.expand_dims(rows, axis=1)
    return offset <= k if lower else offset >= k


def tril_vjp(g, m, k=0):
    """Cotangent of ``m`` in ``np.tril(m, k)``: ``g`` on the kept triangle."""
    xp = namespace(g, m)
    G = as_array(xp, g, m)
    mask = _triangle(xp, G, G.shape, int(k), True)
    return unbroadcast(xp.where(mask, G, xp.zeros_like(G)), m)


def triu_vjp(g, m, k=0):
    """Cotangent of ``m`` in ``np.triu(m, k)``."""
    xp = namespace(g, m)
    G = as_array(xp, g, m)
    mask = _triangle(xp, G, G.shape, int(k), False)
    return unbroadcast(xp.where(mask, G, xp.zeros_like(G)), m)


@numba_twin(tril_vjp)
def _tril_vjp_numba(g, m, k=0):
    if twins.is_array(g, 2) and twins.is_array(m, 2):
        return lambda g, m, k=0: np.tril(g, k)
    return None


@numba_twin(triu_vjp)
def _triu_vjp_numba(g, m, k=0):
    if twins.is_array(g, 2) and twins.is_array(m, 2):
        return lambda g, m, k=0: np.triu(g, k)
    return None


# ---------------------------------------------------------------------------
# atleast_nd, sort

def atleast_vjp(g, ary):
    """Cotangent of ``ary`` in ``np.atleast_1d/2d/3d(ary)``: ``g`` reshaped back."""
    return reshape_vjp(g, ary)


@numba_twin(atleast_vjp)
def _atleast_vjp_numba(g, ary):
    # (Numba's own atleast_nd takes arrays only.)
    if twins.is_array(g) and twins.is_array(ary):
        return lambda g, ary: np.ascontiguousarray(g).reshape(ary.shape)
    if twins.is_array(g) and twins.is_number(ary):
        return lambda g, ary: np.sum(g)         # g holds the one entry
    return None


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


# ---------------------------------------------------------------------------
# Registrations

defrule(np.repeat, "a, repeats, axis=None", result=results.array, methods=("repeat",),
        a="repeat_vjp(g, a, repeats, axis)")
defrule(np.tile, "A, reps", result=results.array, A="tile_vjp(g, A, reps)")
defrule(np.diff, "a, n=1, axis=-1, prepend=None, append=None", result=results.same_shape,
        a="diff_vjp(g, a, n, axis, prepend, append)",
        prepend="diff_vjp_prepend(g, a, n, axis, prepend, append)",
        append="diff_vjp_append(g, a, n, axis, prepend, append)")
defrule(np.flip, "m, axis=None", result=results.same_shape, view=True,
        m="flip_vjp(g, m, axis)")
defrule(np.fliplr, "m", result=results.same_shape, view=True, m="flip_vjp(g, m, 1)")
defrule(np.flipud, "m", result=results.same_shape, view=True, m="flip_vjp(g, m, 0)")
defrule(np.rot90, "m, k=1, axes=(0, 1)", result=results.same_shape, view=True,
        m="rot90_vjp(g, m, k, axes)")
defrule(np.roll, "a, shift, axis=None", result=results.same_shape,
        a="roll_vjp(g, a, shift, axis)")
defrule(np.rollaxis, "a, axis, start=0", result=results.same_shape, view=True,
        a="rollaxis_vjp(g, a, axis, start)")
defrule(np.diagonal, "a, offset=0, axis1=0, axis2=1", result=results.array, view=True,
        methods=("diagonal",), a="diagonal_vjp(g, a, offset, axis1, axis2)")
defrule(np.diag, "v, k=0", result=results.array, view=True, v="diag_vjp(g, v, k)")
defrule(np.tril, "m, k=0", result=results.array, m="tril_vjp(g, m, k)")
defrule(np.triu, "m, k=0", result=results.array, m="triu_vjp(g, m, k)")
defrule(np.atleast_1d, "ary, /", result=results.at_least(1), view=True,
        ary="atleast_vjp(g, ary)")
defrule(np.atleast_2d, "ary, /", result=results.at_least(2), view=True,
        ary="atleast_vjp(g, ary)")
defrule(np.atleast_3d, "ary, /", result=results.at_least(3), view=True,
        ary="atleast_vjp(g, ary)")
defrule(np.sort, "a, axis=-1, kind=None, order=None, *, stable=None", result=results.array,
        a="sort_vjp(g, a, axis)")


# ---------------------------------------------------------------------------
# Numba twin of diag_vjp

def _put_diagonal(g, v, k):
    out = np.zeros(v.shape)
    for i in range(g.shape[0]):
        if k >= 0:
            out[i, i + k] = g[i]
        else:
            out[i - k, i] = g[i]
    return out


@numba_twin(diag_vjp)
def _diag_vjp_numba(g, v, k=0):
    if twins.is_array(v, 1):
        return lambda g, v, k=0: np.ascontiguousarray(np.diag(g, k))
    if twins.is_array(v, 2):
        put = twins.jitted(_put_diagonal)
        return lambda g, v, k=0: put(g, v, k)
    return None


# ---------------------------------------------------------------------------
# Numba twins of roll, sort and atleast_nd (and of the primals Numba lacks)

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
def _roll_vjp_numba(g, a, shift, axis=None):
    body = _roll_choice(g, shift, axis, -1)
    return lambda g, a, shift, axis=None: body(g, shift, axis)


@numba_twin(np.roll)
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


def _atleast_twin(n):
    """The primal twin of ``np.atleast_{n}d``: Numba's takes arrays only."""
    def twin(ary):
        if twins.is_number(ary):
            ones = twins.ones_shape(n)
            return lambda ary: np.full(ones, ary)
        if twins.is_array(ary):
            fn = (np.atleast_1d, np.atleast_2d, np.atleast_3d)[n - 1]
            return lambda ary: fn(ary)
        return None
    return twin


numba_twin(np.atleast_1d, always=True)(_atleast_twin(1))
numba_twin(np.atleast_2d, always=True)(_atleast_twin(2))
numba_twin(np.atleast_3d, always=True)(_atleast_twin(3))


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


# repeat with one int count: each run of g summed back (and the primal along an axis,
# which Numba's np.repeat does not take).
def _unrepeat3(g, shape3, r):
    pre, n, post = shape3
    g4 = np.ascontiguousarray(g).reshape((pre, n, r, post))
    out = np.zeros((pre, n, post))
    for i in range(pre):
        for k in range(n):
            for t in range(r):
                out[i, k] += g4[i, k, t]
    return out


def _repeat3(a3, r):
    pre, n, post = a3.shape
    out = np.empty((pre, n, r, post), dtype=a3.dtype)
    for i in range(pre):
        for k in range(n):
            for t in range(r):
                out[i, k, t] = a3[i, k]
    return out.reshape((pre, n * r, post))


def _repeat_shape(a, repeats, axis):
    if not (twins.is_array(a) and twins.is_int(repeats)):
        twins.unsupported("np.repeat with an array of counts")
    if not (twins.is_none(axis) or twins.is_int(axis)):
        return None
    return twins.is_none(axis)


@numba_twin(repeat_vjp)
def _repeat_vjp_numba(g, a, repeats, axis=None):
    flat = _repeat_shape(a, repeats, axis)
    un, split = twins.jitted(_unrepeat3), twins.split_shape()
    if flat:
        return lambda g, a, repeats, axis=None: un(g, (1, a.size, 1), repeats).reshape(a.shape)
    return lambda g, a, repeats, axis=None: un(
        g, split(a.shape, axis % a.ndim), repeats).reshape(a.shape)


@numba_twin(np.repeat)
def _repeat_numba(a, repeats, axis=None):
    if twins.is_none(axis):
        return lambda a, repeats, axis=None: np.repeat(a, repeats)
    _repeat_shape(a, repeats, axis)
    rep, split = twins.jitted(_repeat3), twins.split_shape()
    shaper = _repeated_shape(a.ndim)

    def along(a, repeats, axis=None):
        ax = axis % a.ndim
        return rep(np.ascontiguousarray(a).reshape(split(a.shape, ax)),
                   repeats).reshape(shaper(a.shape, ax, repeats))
    return along


def _repeated_shape(nd):
    """A compiled ``f(shape, ax, r)``: ``shape`` with axis ``ax`` ``r`` times longer."""
    items = "".join(f"(shape[{i}] * r if ax == {i} else shape[{i}]), " for i in range(nd))
    ns: dict = {}
    exec(f"def f(shape, ax, r):\n    return ({items})\n", ns)
    return twins.jitted(ns["f"])
