"""Derivatives of NumPy's functions that build an array of another size or shape
from the entries of one: repeat, tile, diff (differences along an axis),
atleast_1d/2d/3d.  Their VJPs add the cotangents back where the entries came
from.  (Functions that move entries are in :mod:`.reorder`, diagonals and
triangles in :mod:`.diagonals`.)

Conventions are those of :mod:`pullback.rules.elementwise`: a helper takes the
cotangent ``g`` first, then the primal arguments (NumPy's parameter names), and
returns the cotangent of one argument with that argument's shape (a scalar for
a scalar), computed with the array API namespace of its inputs.

Notes:

* ``repeat`` with an array of repeats sums each run of ``g`` through one
  cumulative sum (no loop over the runs).
* ``atleast_1d/2d/3d`` take one array (with several they return a tuple, which
  their rule does not bind).
"""
from __future__ import annotations

import numbers

import numpy as np

from . import results, twins
from .elementwise import as_array, device_of, like_arg, namespace, shape_of, unbroadcast
from .forms import numba_twin
from .registry import defrule, lookup
from .shapes import reshape_vjp
from .tangents import deftangent

__all__ = ["repeat_vjp", "tile_vjp", "diff_vjp", "diff_vjp_prepend", "diff_vjp_append",
           "atleast_vjp"]


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
        zero = xp.zeros(G.shape[:ax] + (1,) + G.shape[ax + 1:], dtype=G.dtype, device=device_of(G))
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
        return like_arg(xp.zeros(shape_of(prepend), dtype=G.dtype, device=device_of(G)), prepend)
    return unbroadcast(_take_range(G, ax, 0, p), prepend)


def diff_vjp_append(g, a, n=1, axis=-1, prepend=None, append=None):
    """Cotangent of ``append``."""
    xp, G, ax, (p, m, q) = _diff_parts(g, a, n, axis, prepend, append)
    if not q:
        return like_arg(xp.zeros(shape_of(append), dtype=G.dtype, device=device_of(G)), append)
    return unbroadcast(_take_range(G, ax, p + m, p + m + q), append)


# ---------------------------------------------------------------------------
# atleast_nd

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


# ---------------------------------------------------------------------------
# Registrations

defrule(np.repeat, "a, repeats, axis=None", result=results.array, methods=("repeat",),
        a="repeat_vjp(g, a, repeats, axis)")
defrule(np.tile, "A, reps", result=results.array, A="tile_vjp(g, A, reps)")
defrule(np.diff, "a, n=1, axis=-1, prepend=None, append=None", result=results.same_shape,
        a="diff_vjp(g, a, n, axis, prepend, append)",
        prepend="diff_vjp_prepend(g, a, n, axis, prepend, append)",
        append="diff_vjp_append(g, a, n, axis, prepend, append)")
deftangent(np.diff, linear="a, prepend, append")
defrule(np.atleast_1d, "ary, /", result=results.at_least(1), view=True,
        ary="atleast_vjp(g, ary)")
defrule(np.atleast_2d, "ary, /", result=results.at_least(2), view=True,
        ary="atleast_vjp(g, ary)")
defrule(np.atleast_3d, "ary, /", result=results.at_least(3), view=True,
        ary="atleast_vjp(g, ary)")
for _linear in (np.repeat, np.tile, np.atleast_1d, np.atleast_2d, np.atleast_3d):
    deftangent(_linear, linear=lookup(_linear).params[0].name)


# ---------------------------------------------------------------------------
# Numba twins: the primals of atleast_nd, and repeat

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
@twins.keeps_dtype("a")
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
    from numba.cpython.unsafe.tuple import tuple_setitem

    def f(shape, ax, r):
        out = shape
        for i in range(nd):         # (tuple_setitem checks no bounds: i, not ax)
            if i == ax:
                out = tuple_setitem(out, i, shape[i] * r)
        return out
    return twins.jitted(f)


# tile with an int or a tuple of ints as reps: A broadcast into (r0, s0, r1, s1, ...) and
# flattened, and back (the r axes summed).  A list's length is not known when compiling.
def _tile_rank(A, reps):
    """The static lengths (rank of A, length of reps), or a refusal."""
    if twins.is_int(reps):
        nr = 1
    elif twins.is_tuple(reps) and all(twins.is_int(t) for t in reps):
        nr = len(reps)
    else:
        twins.unsupported(f"np.tile with reps of type {reps} (pass an int or a tuple of ints)")
    nd = twins.rank(A)
    if nd is None or max(nd, nr) == 0:
        twins.unsupported(f"np.tile of {A} with reps {reps}")
    return nd, nr


_TILE_SHAPES: dict = {}


def _tile_shapes(nd, nr):
    """A compiled ``f(shape, reps)``: A's shape spread as (1, s0, 1, s1, ...), the
    interleaved shape (r0, s0, r1, s1, ...) and the result's, for static lengths."""
    if (nd, nr) not in _TILE_SHAPES:
        _TILE_SHAPES[nd, nr] = twins.jitted(_tile_shaper(nd, nr))
    return _TILE_SHAPES[nd, nr]


def _tile_shaper(nd, nr):
    """``f(shape, reps)`` of :func:`_tile_shapes`, ``reps`` an int array (:func:`_as_reps`)."""
    from numba.np.unsafe.ndarray import to_fixed_tuple
    d = max(nd, nr)
    d2 = 2 * d          # (to_fixed_tuple takes a constant: a name, not an expression)
    if nd:
        size = twins.jitted(lambda shape, i: shape[i - d + nd] if i >= d - nd else 1)
    else:
        size = twins.jitted(lambda shape, i: 1)       # (Numba indexes no empty tuple)

    def f(shape, reps):
        spread = np.ones(d2, np.int64)
        inter = np.empty(d2, np.int64)
        tiled = np.empty(d, np.int64)
        for i in range(d):
            s = size(shape, i)
            r = reps[i - d + nr] if i >= d - nr else 1
            spread[2 * i + 1] = s
            inter[2 * i] = r
            inter[2 * i + 1] = s
            tiled[i] = r * s
        return (to_fixed_tuple(spread, d2), to_fixed_tuple(inter, d2),
                to_fixed_tuple(tiled, d))
    return f


def _as_reps(reps):
    """A compiled ``f(reps)``: an int, or a tuple of ints, as an int array."""
    if twins.is_int(reps):
        return twins.jitted(lambda reps: np.full(1, reps, np.int64))
    from numba import literal_unroll, njit
    n = len(reps)

    def as_array(reps):
        out = np.empty(n, np.int64)
        i = 0
        for r in literal_unroll(reps):      # (the ints' types may differ)
            out[i] = r
            i += 1
        return out
    return njit(as_array)       # not inlined: Numba unrolls only in a function it compiles


@numba_twin(np.tile)
def _tile_numba(A, reps):
    nd, nr = _tile_rank(A, reps)
    shapes, as_reps = _tile_shapes(nd, nr), _as_reps(reps)
    if nd == 0:
        return lambda A, reps: np.full(shapes((), as_reps(reps))[2], A)

    def impl(A, reps):
        spread, inter, tiled = shapes(A.shape, as_reps(reps))
        A2 = np.ascontiguousarray(A).reshape(spread)
        return np.broadcast_to(A2, inter).copy().reshape(tiled)
    return impl


@numba_twin(tile_vjp)
def _tile_vjp_numba(g, A, reps):
    nd, nr = _tile_rank(A, reps)
    if nd == 0:
        return lambda g, A, reps: np.sum(g)
    shapes, as_reps = _tile_shapes(nd, nr), _as_reps(reps)
    summed = _summing_reps(0, max(nd, nr))

    def impl(g, A, reps):
        G = np.ascontiguousarray(g).reshape(shapes(A.shape, as_reps(reps))[1])
        return np.ascontiguousarray(summed(G)).reshape(A.shape)
    return impl


def _summing_reps(k, d):
    """A compiled ``f(G)``: ``G`` summed over its axes k, k + 1, ... d - 1 in turn (after
    k sums, the k-th r axis of the interleaved shape is axis k)."""
    if k == d:
        return twins.jitted(lambda G: G)
    rest = _summing_reps(k + 1, d)
    return twins.jitted(lambda G: rest(np.sum(G, axis=k)))


# diff along any axis (Numba's np.diff takes the last axis only), as differences
# along the middle axis of a (pre, n, post) view; its VJP pads g back n times.
def _diff_args(a, prepend, append):
    if not twins.is_array(a):
        twins.unsupported(f"np.diff of {a}")
    if not (twins.is_none(prepend) and twins.is_none(append)):
        twins.unsupported("np.diff with prepend or append")


def _diff3(a3, n):
    if n < 0:
        raise ValueError("order must be non-negative")
    out = a3
    for _ in range(n):
        out = out[:, 1:, :] - out[:, :-1, :]
    return out


def _undiff3(g3, n, m):
    G = np.ascontiguousarray(g3)
    for _ in range(n):
        pre, k, post = G.shape
        out = np.zeros((pre, k + 1, post), dtype=G.dtype)
        out[:, 1:, :] += G
        out[:, :-1, :] -= G
        G = out
    return np.ascontiguousarray(G[:, :m, :])   # n past the length: g was empty, so zeros


@numba_twin(np.diff)
def _diff_numba(a, n=1, axis=-1, prepend=None, append=None):
    _diff_args(a, prepend, append)
    dif, split, resized = twins.jitted(_diff3), twins.split_shape(), twins.resized_shape(a.ndim)

    def impl(a, n=1, axis=-1, prepend=None, append=None):
        ax = axis % a.ndim
        out = dif(np.ascontiguousarray(a).reshape(split(a.shape, ax)), n)
        return out.reshape(resized(a.shape, ax, out.shape[1]))
    return impl


@numba_twin(diff_vjp)
def _diff_vjp_numba(g, a, n=1, axis=-1, prepend=None, append=None):
    _diff_args(a, prepend, append)
    undif, split = twins.jitted(_undiff3), twins.split_shape()

    def impl(g, a, n=1, axis=-1, prepend=None, append=None):
        ax = axis % a.ndim
        pre, m, post = split(a.shape, ax)
        g3 = np.ascontiguousarray(g).reshape((pre, g.shape[ax], post))
        return undif(g3, n, m).reshape(a.shape)
    return impl
