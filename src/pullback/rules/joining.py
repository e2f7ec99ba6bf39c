"""Derivatives of NumPy's joining and splitting functions.

split, array_split, hsplit, vsplit, dsplit (a tuple of arrays out); hstack,
vstack, dstack, column_stack, append (a sequence of arrays in).

Conventions are those of :mod:`pullback.rules.elementwise` and, for sequences,
of :func:`pullback.rules.shapes.concatenate_vjp`:

* A function of a sequence of arrays returns a list with one cotangent per
  item (a scalar for a scalar item).
* A function returning a tuple of arrays receives its cotangent as a list (or
  tuple) with one item per array; an item nothing reached is ``0.0`` or
  ``None`` (:func:`item_cotangents` turns those into zeros).  A single array
  whose leading axis indexes the items is also accepted.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace, shape_of
from .forms import numba_twin
from .registry import defrule
from .shapes import join_impl, length_along
from .tangents import deftangent

__all__ = ["item_cotangents", "split_vjp", "hsplit_vjp", "join_vjp", "hstack_vjp", "vstack_vjp",
           "dstack_vjp", "column_stack_vjp", "append_vjp_arr", "append_vjp_values"]


def item_cotangents(xp, g, items) -> list:
    """The cotangent of a tuple of arrays ``items`` as one array per item.

    ``g`` is a list or tuple of cotangents (``None`` or a scalar 0 where nothing
    reached the item), a scalar (the same for every item) or an array whose
    leading axis runs over the items.
    """
    if isinstance(g, (list, tuple)):
        parts = list(g)
    elif hasattr(g, "shape") and len(g.shape) > 0:
        parts = [g[i, ...] for i in range(len(items))]
    else:
        parts = [g] * len(items)
    out = []
    for ct, item in zip(parts, items):
        zeros = xp.zeros_like(item, dtype=item.dtype if xp.isdtype(item.dtype, "real floating")
                              else xp.float64)
        if ct is None:
            out.append(zeros)
        elif hasattr(ct, "shape"):
            out.append(xp.broadcast_to(ct, tuple(item.shape)))
        else:
            out.append(zeros + ct)
    return out


# ---------------------------------------------------------------------------
# split: the cotangents of the pieces, joined back

def split_vjp(g, ans, ary, axis=0):
    """Cotangent of ``ary`` in ``np.split``/``np.array_split(ary, sections, axis)``."""
    xp = namespace(ary, *ans)
    A = as_array(xp, ary)
    parts = item_cotangents(xp, g, ans)
    return xp.concat(parts, axis=axis % A.ndim)


def hsplit_vjp(g, ans, ary):
    """Cotangent of ``ary`` in ``np.hsplit``: axis 1, or 0 for a vector."""
    return split_vjp(g, ans, ary, 0 if len(shape_of(ary)) == 1 else 1)


# ---------------------------------------------------------------------------
# stacks: each input is promoted to a rank, then they are concatenated

def join_vjp(g, arrays, shapes, axis):
    """Cotangents of ``arrays`` concatenated along ``axis`` after being reshaped to
    ``shapes``: slices of ``g``, reshaped back."""
    xp = namespace(g, *arrays)
    G = as_array(xp, g, *arrays)
    lead = (slice(None),) * axis
    cts, start = [], 0
    for x, s in zip(arrays, shapes):
        n = s[axis]
        cts.append(like_arg(xp.reshape(G[lead + (slice(start, start + n),)], shape_of(x)), x))
        start += n
    return cts


def _at_least(shape, n, where):
    """The shape ``np.atleast_{n}d`` gives: ``where`` says where a vector's axis goes."""
    if len(shape) >= n:
        return shape
    if len(shape) == 0:
        return (1,) * n
    if len(shape) == 1:
        return {"row": (1,) + shape, "middle": (1,) + shape + (1,), "column": shape + (1,)}[where]
    return shape + (1,)


def hstack_vjp(g, tup):
    """Cotangents of the inputs of ``np.hstack(tup)``: along axis 1, or 0 for vectors."""
    shapes = [_at_least(shape_of(x), 1, "row") for x in tup]
    return join_vjp(g, tup, shapes, 0 if len(shapes[0]) == 1 else 1)


def vstack_vjp(g, tup):
    """Cotangents of the inputs of ``np.vstack(tup)``: vectors become rows, then axis 0."""
    return join_vjp(g, tup, [_at_least(shape_of(x), 2, "row") for x in tup], 0)


def dstack_vjp(g, tup):
    """Cotangents of the inputs of ``np.dstack(tup)``: promoted to 3-D, then axis 2."""
    return join_vjp(g, tup, [_at_least(shape_of(x), 3, "middle") for x in tup], 2)


def column_stack_vjp(g, tup):
    """Cotangents of the inputs of ``np.column_stack(tup)``: vectors become columns."""
    return join_vjp(g, tup, [_at_least(shape_of(x), 2, "column") for x in tup], 1)


def _append_shapes(arr, values, axis):
    if axis is None:
        return [(int(np.prod(shape_of(arr))),), (int(np.prod(shape_of(values))),)], 0
    return [shape_of(arr), shape_of(values)], axis % max(len(shape_of(arr)), 1)


def append_vjp_arr(g, arr, values, axis=None):
    """Cotangent of ``arr`` in ``np.append(arr, values, axis)`` (both flattened without axis)."""
    shapes, ax = _append_shapes(arr, values, axis)
    return join_vjp(g, [arr, values], shapes, ax)[0]


def append_vjp_values(g, arr, values, axis=None):
    """Cotangent of ``values`` in ``np.append(arr, values, axis)``."""
    shapes, ax = _append_shapes(arr, values, axis)
    return join_vjp(g, [arr, values], shapes, ax)[1]


# ---------------------------------------------------------------------------
# Registrations.  The pieces of a split are views of its input.

defrule(np.split, "ary, indices_or_sections, axis=0", result=results.tuple_of_arrays,
        view=True, ary="split_vjp(g, ans, ary, axis)")
defrule(np.array_split, "ary, indices_or_sections, axis=0", result=results.tuple_of_arrays,
        view=True, ary="split_vjp(g, ans, ary, axis)")
defrule(np.hsplit, "ary, indices_or_sections", result=results.tuple_of_arrays, view=True,
        ary="hsplit_vjp(g, ans, ary)")
defrule(np.vsplit, "ary, indices_or_sections", result=results.tuple_of_arrays, view=True,
        ary="split_vjp(g, ans, ary, 0)")
defrule(np.dsplit, "ary, indices_or_sections", result=results.tuple_of_arrays, view=True,
        ary="split_vjp(g, ans, ary, 2)")
defrule(np.hstack, "tup, *, dtype=None, casting='same_kind'", result=results.array,
        tup="hstack_vjp(g, tup)")
defrule(np.vstack, "tup, *, dtype=None, casting='same_kind'", result=results.array,
        tup="vstack_vjp(g, tup)")
defrule(np.dstack, "tup", result=results.array, tup="dstack_vjp(g, tup)")
defrule(np.column_stack, "tup", result=results.array, tup="column_stack_vjp(g, tup)")
defrule(np.append, "arr, values, axis=None", result=results.array,
        arr="append_vjp_arr(g, arr, values, axis)", values="append_vjp_values(g, arr, values, axis)")
for _linear in (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit):
    deftangent(_linear, linear="ary")
for _linear in (np.hstack, np.vstack, np.dstack, np.column_stack):
    deftangent(_linear, linear="tup")
deftangent(np.append, linear="arr, values")


# ---------------------------------------------------------------------------
# Numba twins: the promoted items' lengths along the joined axis are known from their
# ranks, so each is a constant or a shape entry.

def _stack_twin(axis_of, length_of):
    """The twin of a stack's VJP: ``axis_of(rank of g)`` is the joined axis and
    ``length_of(i, rank of item i, axis)`` the source of item i's length along it."""
    def twin(g, tup):
        if not (twins.is_array(g) and twins.is_tuple(tup)
                and all(twins.rank(t) is not None for t in tup.types)):
            twins.unsupported("this stack of arrays")
        ax = axis_of(g.ndim)
        split = join_impl(tup.types, lambda i: length_of(i, twins.rank(tup.types[i]), ax))
        return lambda g, tup: split(g, tup, ax)
    return twin


def _length(i, rank, ax, promoted):
    """Item ``i``'s length along the joined axis: 1 for one of lower rank, promoted."""
    return _one if rank < promoted else length_along


def _one(item, ax):
    return 1


numba_twin(hstack_vjp)(_stack_twin(lambda nd: 0 if nd == 1 else 1,
                                   lambda i, r, ax: _length(i, r, ax, 1)))
numba_twin(vstack_vjp)(_stack_twin(lambda nd: 0, lambda i, r, ax: _length(i, r, ax, 2)))
numba_twin(column_stack_vjp)(_stack_twin(lambda nd: 1, lambda i, r, ax: _length(i, r, ax, 2)))
numba_twin(dstack_vjp)(_stack_twin(lambda nd: 2, lambda i, r, ax: _length(i, r, ax, 3)))


@numba_twin(np.column_stack, always=True)
def _column_stack_numba(tup):
    # Numba has no np.column_stack: vectors become columns, then np.concatenate.
    if not (twins.is_tuple(tup) and all(twins.rank(t) in (1, 2) for t in tup.types)):
        return None
    vectors = [twins.rank(t) == 1 for t in tup.types]
    columns = twins.tuple_of(len(vectors), lambda k: _column(k, vectors[k]))
    return lambda tup: np.concatenate(columns(tup), axis=1)


def _column(k, vector):
    """Item ``k`` of the tuple, a vector made a column."""
    if vector:
        return lambda tup: np.ascontiguousarray(tup[k]).reshape((tup[k].shape[0], 1))
    return lambda tup: tup[k]


def _size(item, ax):
    return item.size


def _append_twin(which):
    def twin(g, arr, values, axis=None):
        if not (twins.is_array(g) and twins.is_array(arr)
                and (twins.is_array(values) or twins.is_number(values))):
            twins.unsupported("np.append of these arguments")
        items = (arr, values)
        if twins.is_none(axis):
            flat = join_impl(items, lambda i: _one if twins.is_number(items[i]) else _size)
            return lambda g, arr, values, axis=None: flat(g, (arr, values), 0)[which]
        if not (twins.is_int(axis) and twins.is_array(values, arr.ndim)):
            twins.unsupported("np.append with this axis")
        along = join_impl(items, lambda i: length_along)
        return lambda g, arr, values, axis=None: along(g, (arr, values), axis % g.ndim)[which]
    return twin


numba_twin(append_vjp_arr)(_append_twin(0))
numba_twin(append_vjp_values)(_append_twin(1))


def _join_list(g, ax):
    """Numba: the arrays of the list ``g`` joined along axis ``ax``."""
    n = 0
    for piece in g:
        n += piece.shape[ax]
    first = np.swapaxes(g[0], 0, ax)
    out = np.empty((n,) + first.shape[1:])
    start = 0
    for piece in g:
        m = piece.shape[ax]
        out[start:start + m] = np.swapaxes(piece, 0, ax)
        start += m
    return np.ascontiguousarray(np.swapaxes(out, 0, ax))


def _split_join(g, ary):
    """The compiled ``f(g, ax)`` joining the cotangent ``g`` (a list or tuple of arrays)."""
    if not (twins.is_array(ary) and (twins.is_tuple(g) or twins.is_array(g.dtype))):
        twins.unsupported("the derivative of np.split with these arguments")
    join = twins.jitted(_join_list)
    if twins.is_tuple(g):
        return twins.jitted(lambda g, ax: join(list(g), ax))
    return join


@numba_twin(split_vjp)
@twins.keeps_dtype("ary")
def _split_vjp_numba(g, ans, ary, axis=0):
    join = _split_join(g, ary)
    return lambda g, ans, ary, axis=0: join(g, axis % ary.ndim)


@numba_twin(hsplit_vjp)
@twins.keeps_dtype("ary")
def _hsplit_vjp_numba(g, ans, ary):
    join, ax = _split_join(g, ary), 0 if ary.ndim == 1 else 1
    return lambda g, ans, ary: join(g, ax)
