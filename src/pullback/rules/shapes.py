"""Derivatives of NumPy's shape functions: they move entries, so their VJPs move them back.

reshape, ravel, flatten, transpose (and the ``.T`` attribute through
:func:`transpose_vjp`), swapaxes, moveaxis, squeeze, expand_dims, broadcast_to,
concatenate, stack, the identities copy/array/asarray/astype, and full/full_like (a
broadcast of the fill value: its cotangent is ``g`` summed onto the fill value's
shape; the shape, or the array ``full_like`` copies the shape of, carries none).

Conventions are those of :mod:`pullback.rules.elementwise` (``g`` first, then the
primal arguments; the cotangent of one argument, with its shape).  Two exceptions,
for functions of a sequence of arrays: :func:`concatenate_vjp` and :func:`stack_vjp`
return a list with one cotangent per input array (a scalar for a scalar input), and
:func:`array_vjp` of a nested list returns nested lists.

Each registration names the ndarray methods that mean it.  ``x.reshape(3, 4)`` and
``x.transpose(1, 0)`` take their shape or axes as separate arguments, which NumPy's
functions do not, so those two map to
:func:`reshape_method` and :func:`transpose_method`, which behave like the
methods.  The registry cannot bind ``*args``, so their rules declare a fixed
number of positional slots: 32 for reshape (the template only reads ``a`` and
``order``), 8 for transpose (larger arrays pass their axes as one tuple).
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace, shape_of, unbroadcast
from .forms import numba_twin
from .reductions_second import zero_cotangent  # noqa: F401 - named by a template
from .registry import defrule
from .tangents import deftangent

__all__ = ["reshape_vjp", "transpose_vjp", "method_axes", "swapaxes_vjp", "moveaxis_vjp",
           "squeeze_vjp", "broadcast_to_vjp", "concatenate_vjp", "stack_vjp", "array_vjp",
           "astype_vjp", "reshape_method", "transpose_method", "flatten", "astype"]


def _reshape_order(xp, g, shape, order):
    """``reshape(g, shape, order)`` with C or Fortran order in the array API."""
    if order == "F":
        # Fortran order is C order on the fully transposed array.
        gt = xp.permute_dims(g, tuple(reversed(range(g.ndim))))
        r = xp.reshape(gt, tuple(reversed(shape)))
        return xp.permute_dims(r, tuple(reversed(range(len(shape)))))
    return xp.reshape(g, tuple(shape))


def reshape_vjp(g, a, order="C"):
    """Cotangent of ``a`` in ``np.reshape(a, shape, order)`` (and ravel, flatten, squeeze, ...)."""
    xp = namespace(g, a)
    if order == "A":
        # "A" means Fortran order for Fortran-contiguous NumPy arrays.
        flags = getattr(a, "flags", None)
        order = "F" if flags is not None and flags.f_contiguous and not flags.c_contiguous else "C"
    elif order not in ("C", "F", None):
        raise ValueError(f"reshape: order must be 'C', 'F' or 'A', not {order!r}")
    G = as_array(xp, g, a)
    if G.ndim == 0:
        # The same cotangent for every element (the adjoint's symbolic zero, 0.0).
        return like_arg(xp.broadcast_to(G, tuple(shape_of(a))), a)
    return like_arg(_reshape_order(xp, G, shape_of(a), order), a)


def transpose_vjp(g, a, axes=None):
    """Cotangent of ``a`` in ``np.transpose(a, axes)`` or ``a.T`` (``axes=None``).

    The inverse permutation of ``g``.
    """
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    nd = G.ndim
    if axes is None:
        inverse = tuple(reversed(range(nd)))
    else:
        inverse = tuple(int(i) for i in np.argsort([int(ax) % nd for ax in axes]))
    return like_arg(xp.permute_dims(G, inverse), a)


def method_axes(*axes):
    """The axes of ``x.transpose(*axes)`` as one tuple (None for reversed)."""
    axes = [ax for ax in axes if ax is not None]
    if not axes:
        return None
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        return tuple(axes[0])
    return tuple(axes)


def swapaxes_vjp(g, a, axis1, axis2):
    """Cotangent of ``a`` in ``np.swapaxes(a, axis1, axis2)``: swap them back."""
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    perm = list(range(G.ndim))
    i, j = axis1 % G.ndim, axis2 % G.ndim
    perm[i], perm[j] = perm[j], perm[i]
    return xp.permute_dims(G, tuple(perm))


def moveaxis_vjp(g, a, source, destination):
    """Cotangent of ``a`` in ``np.moveaxis(a, source, destination)``: move them back."""
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    nd = G.ndim
    src = [int(s) % nd for s in (source if isinstance(source, (tuple, list)) else [source])]
    dst = [int(d) % nd for d in (destination if isinstance(destination, (tuple, list))
                                  else [destination])]
    # The forward permutation, built as np.moveaxis does; then invert it.
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return xp.permute_dims(G, tuple(int(i) for i in np.argsort(order)))


def squeeze_vjp(g, a):
    """Cotangent of ``a`` in ``np.squeeze``/``np.expand_dims``: reshape back."""
    return reshape_vjp(g, a)


def broadcast_to_vjp(g, array):
    """Cotangent of ``array`` in ``np.broadcast_to(array, shape)``: sum over the broadcast axes."""
    return unbroadcast(g, array)


def concatenate_vjp(g, arrays, axis=0):
    """Cotangents of the inputs of ``np.concatenate(arrays, axis)``: a list of slices of ``g``.

    ``axis=None`` concatenates the flattened inputs.  A number ``g`` (the same
    cotangent for every entry) gives each input that number, at its shape.
    """
    if not shape_of(g):
        return [reshape_vjp(g, x) for x in arrays]
    xp = namespace(g, *arrays)
    G = as_array(xp, g, *arrays)
    cts = []
    start = 0
    if axis is None:
        for x in arrays:
            n = int(np.prod(shape_of(x)))
            cts.append(like_arg(xp.reshape(G[start:start + n], shape_of(x)), x))
            start += n
        return cts
    ax = axis % G.ndim
    lead = (slice(None),) * ax
    for x in arrays:
        n = shape_of(x)[ax]
        cts.append(G[lead + (slice(start, start + n),)])
        start += n
    return cts


def stack_vjp(g, arrays, axis=0):
    """Cotangents of the inputs of ``np.stack(arrays, axis)``: a list, one slice of ``g`` each
    (for a number ``g``, that number at each input's shape)."""
    if not shape_of(g):
        return [reshape_vjp(g, x) for x in arrays]
    xp = namespace(g, *arrays)
    G = as_array(xp, g, *arrays)
    ax = axis % G.ndim
    lead = (slice(None),) * ax
    return [like_arg(G[lead + (i,)], x) for i, x in enumerate(arrays)]


def array_vjp(g, object):
    """Cotangent of ``object`` in ``np.array``/``np.asarray``/``np.copy``: the identity.

    For an array argument that is ``g`` (reshaped for ``ndmin``); for a list or
    tuple it is a list of the cotangents of the items (``g[i]``, read per item:
    such lists live on the host anyway).  A number ``g`` stands for the same
    cotangent at every entry, so each item gets it: no shape of ``g`` is assumed.
    """
    if isinstance(object, (list, tuple)):
        if not shape_of(g):
            return [array_vjp(g, item) for item in object]
        return [array_vjp(g[i], item) for i, item in enumerate(object)]
    return reshape_vjp(g, object)


# Their second argument is read for its shape, dtype, order or list-ness, never its contents.
reshape_vjp.reads_only_the_shape_of = array_vjp.reads_only_the_shape_of = (1,)


def astype_vjp(g, a):
    """Cotangent of ``a`` in ``a.astype(dtype)``: ``g`` in ``a``'s floating dtype."""
    xp = namespace(g, a)
    G = as_array(xp, g, a)
    dt = getattr(a, "dtype", None)
    if dt is not None and xp.isdtype(dt, "real floating") and G.dtype != dt:
        G = xp.astype(G, dt)
    return like_arg(G, a)


# ---------------------------------------------------------------------------
# Functions standing for ndarray methods whose arguments differ from NumPy's functions.

def reshape_method(a, *shape, order="C", copy=None):
    """``a.reshape(*shape, order=order)``: shape as one tuple or as separate ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if copy is not None:
        return np.reshape(a, shape, order=order, copy=copy)
    return a.reshape(shape) if order == "C" else np.reshape(a, shape, order=order)


def transpose_method(a, *axes):
    """``a.transpose(*axes)``: axes as one tuple, as separate ints, or none (reversed)."""
    return a.transpose(*axes)


def flatten(a, order="C"):
    """``a.flatten(order)``: always a copy (``np.ravel`` may return a view)."""
    return np.asarray(a).flatten(order)


def astype(a, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """``a.astype(dtype, ...)``."""
    return a.astype(dtype, order=order, casting=casting, subok=subok, copy=copy)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.reshape, "a, /, shape=None, order='C', *, newshape=None, copy=None", view=True,
        result=results.reshaped,
        a="reshape_vjp(g, a, order)")
defrule(np.ravel, "a, order='C'", result=results.flat, view=True, methods=("ravel",),
        a="reshape_vjp(g, a, order)")
defrule(flatten, "a, order='C'", result=results.flat, methods=("flatten",), a="reshape_vjp(g, a, order)")
defrule(np.transpose, "a, axes=None", view=True, result=results.permuted,
        a="transpose_vjp(g, a, axes)")
if getattr(np, "permute_dims", np.transpose) is not np.transpose:   # an alias in NumPy >= 2.x
    defrule(np.permute_dims, "a, /, axes=None", view=True, result=results.permuted,
            a="transpose_vjp(g, a, axes)")
defrule(np.swapaxes, "a, axis1, axis2", view=True, methods=("swapaxes",), result=results.permuted,
        a="swapaxes_vjp(g, a, axis1, axis2)")
defrule(np.moveaxis, "a, source, destination", view=True, result=results.permuted,
        a="moveaxis_vjp(g, a, source, destination)")
defrule(np.squeeze, "a, axis=None", view=True, result=results.squeezed, methods=("squeeze",),
        a="squeeze_vjp(g, a)")
defrule(np.expand_dims, "a, axis", view=True, result=results.expanded, a="squeeze_vjp(g, a)")
defrule(np.broadcast_to, "array, shape, subok=False", view=True, result=results.reshaped,
        array="broadcast_to_vjp(g, array)")
# np.full(shape, v) is broadcast_to(v, shape), copied: unbroadcast (which has a Numba
# twin) sums g onto v's shape, a number for a number.
defrule(np.full, "shape, fill_value, dtype=None, order='C', *, device=None, like=None",
        result=results.new_array, fill_value="unbroadcast(g, fill_value)")
defrule(np.full_like, "a, fill_value, dtype=None, order='K', subok=True, shape=None, *, "
        "device=None", result=results.like_source, fill_value="unbroadcast(g, fill_value)",
        a="zero_cotangent(a)")        # a gives the shape and dtype only
defrule(np.concatenate, "arrays, /, axis=0, out=None, *, dtype=None, casting='same_kind'",
        result=results.concatenated, arrays="concatenate_vjp(g, arrays, axis)")
defrule(np.stack, "arrays, axis=0, out=None, *, dtype=None, casting='same_kind'",
        result=results.stacked, arrays="stack_vjp(g, arrays, axis)")
defrule(np.copy, "a, order='K', subok=False", result=results.like_source, methods=("copy",),
        a="array_vjp(g, a)")
defrule(np.array, "object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0, "
        "ndmax=0, like=None", result=results.like_source, object="array_vjp(g, object)")
defrule(np.asarray, "a, dtype=None, order=None, *, device=None, copy=None, like=None",
        result=results.like_source, view=True, a="array_vjp(g, a)")
defrule(astype, "a, dtype, order='K', casting='unsafe', subok=True, copy=True",
        result=results.retyped, methods=("astype",),
        a="astype_vjp(g, a)")
for _linear in (np.reshape, np.ravel, flatten, np.transpose, np.swapaxes, np.moveaxis, np.squeeze,
                np.expand_dims, np.copy, np.asarray, astype):
    deftangent(_linear, linear="a")
deftangent(np.broadcast_to, linear="array")
deftangent(np.array, linear="object")
deftangent(np.full, linear="fill_value")
deftangent(np.full_like, linear="fill_value", constant="a")
for _joining in (np.concatenate, np.stack):
    deftangent(_joining, linear="arrays")
_SLOTS = 32
defrule(reshape_method,
        "a, /, " + ", ".join(f"d{i}=None" for i in range(_SLOTS)) + ", *, order='C', copy=None",
        view=True, result=results.reshaped, methods=("reshape",), a="reshape_vjp(g, a, order)")
_AXES = ", ".join(f"ax{i}" for i in range(8))
defrule(transpose_method, "a, /, " + ", ".join(f"ax{i}=None" for i in range(8)),
        view=True, methods=("transpose",), result=results.permuted,
        a=f"transpose_vjp(g, a, method_axes({_AXES}))")
deftangent(reshape_method, linear="a")
deftangent(transpose_method, linear="a")


# ---------------------------------------------------------------------------
# Numba twins (C order; one int axis)

@numba_twin(array_vjp)
def _array_vjp_numba(g, object):
    # np.array / np.copy / x.copy() of an array: the cotangent passes through (a number
    # for every entry: filled in at the array's shape).
    if twins.is_array(object) and twins.is_number(g):
        return lambda g, object: np.full(object.shape, g)
    if twins.is_array(object) or twins.is_number(object):
        return lambda g, object: g
    if twins.is_tuple(object) and twins.is_array(g):
        # np.array((x, y, ...)): item i's cotangent is g[i] (items in turn may be tuples)
        items = twins.tuple_of(len(object.types), lambda k: lambda g, object: array_vjp(g[k], object[k]))
        return lambda g, object: items(g, object)
    if twins.is_tuple(object) and twins.is_number(g):
        # the same cotangent for every entry: each item gets it
        items = twins.tuple_of(len(object.types), lambda k: lambda g, object: array_vjp(g, object[k]))
        return lambda g, object: items(g, object)
    return None


@numba_twin(reshape_vjp)
def _reshape_vjp_numba(g, a, order="C"):
    if twins.literal(order, "C") not in ("C", None):
        twins.unsupported("reshape with order other than 'C'")
    if twins.is_array(g) and twins.is_array(a):
        return lambda g, a, order="C": np.ascontiguousarray(g).reshape(a.shape)
    if twins.is_array(a):
        return lambda g, a, order="C": np.full(a.shape, g)
    return None


def _squeeze_axis(a, axis, shaper):
    ax = axis % a.ndim
    if a.shape[ax] != 1:
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return np.ascontiguousarray(a).reshape(shaper(a.shape, ax))


@numba_twin(np.squeeze, always=True)
def _squeeze_numba(a, axis=None):
    """Numba has no np.squeeze: one int axis, by a reshape.  Without an axis the
    result's rank depends on the shape, which Numba must know when it compiles."""
    if not twins.is_array(a):
        return None
    if not twins.is_int(axis):
        twins.unsupported("np.squeeze without an int axis= (give one: the rank of its "
                          "result depends on the shape)")
    shaper, body = twins.reduced_shape(a.ndim, False), twins.jitted(_squeeze_axis)
    return lambda a, axis=None: body(a, axis, shaper)


@numba_twin(squeeze_vjp)
def _squeeze_vjp_numba(g, a):
    # squeeze / expand_dims: the same elements, in a's shape.
    if twins.is_array(g) and twins.is_array(a):
        return lambda g, a: np.ascontiguousarray(g).reshape(a.shape)
    return None


@numba_twin(method_axes)
def _method_axes_numba(*axes):
    given = [k for k, t in enumerate(axes) if not twins.is_none(t)]
    if not given:
        return lambda *axes: None                       # x.transpose(): reversed
    if len(given) == 1 and twins.is_tuple(axes[given[0]]):
        k = given[0]
        return lambda *axes: axes[k]                    # x.transpose((1, 0))
    twins.unsupported("x.transpose(i, j, ...) with the axes as separate arguments "
                      "(pass them as one tuple: x.transpose((i, j, ...)))")


@numba_twin(transpose_vjp)
def _transpose_vjp_numba(g, a, axes=None):
    if not twins.is_array(g):
        return None
    if twins.is_none(axes):
        return lambda g, a, axes=None: g.T
    if not twins.is_tuple(axes) or len(axes) != g.ndim:
        twins.unsupported("transpose with these axes")
    inverse_of = _inverse_axes(g.ndim)
    return lambda g, a, axes=None: np.transpose(g, inverse_of(axes))


def _place(axes, k):
    nd = len(axes)
    for i in range(nd):
        if axes[i] % nd == k:
            return i
    return k


def _inverse_axes(nd):
    """A compiled ``f(axes)``: the inverse permutation, a tuple of static length ``nd``."""
    from numba.np.unsafe.ndarray import to_fixed_tuple
    place = twins.jitted(_place)

    def f(axes):
        out = np.empty(nd, np.int64)
        for k in range(nd):
            out[k] = place(axes, k)
        return to_fixed_tuple(out, nd)
    return twins.jitted(f)


def join_impl(items: list, length):
    """A compiled ``split(g, seq, ax)``: the tuple of slices of ``g`` along axis ``ax``,
    one per item of the tuple ``seq`` (``items`` their Numba types), each shaped as its
    item; a number's cotangent is a number.  ``length(i)`` is a function in Numba's
    subset, ``(item i, ax) -> its length along ax``.  Items are indexed by constants,
    so the tuple may hold arrays of different types (a read-only global and a local)."""
    n = len(items)
    lengths = twins.tuple_of(n, lambda k: _length_of(k, length(k)))
    pieces = twins.tuple_of(n, lambda k: _piece(k, twins.is_number(items[k])))

    def split(g, seq, ax):
        ls = lengths(seq, ax)
        off = np.zeros(n + 1, np.int64)
        for k in range(n):
            off[k + 1] = off[k] + ls[k]
        return pieces(np.swapaxes(g, 0, ax), seq, off, ax)
    return twins.jitted(split)


def _length_of(k, length):
    along = twins.jitted(length)
    return lambda seq, ax: along(seq[k], ax)


def _piece(k, number):
    """Item ``k``'s slice of ``g0`` (``g`` with the joined axis first), as the item."""
    if number:
        return lambda g0, seq, off, ax: np.sum(np.swapaxes(g0[off[k]:off[k + 1]], 0, ax))
    return lambda g0, seq, off, ax: np.ascontiguousarray(
        np.swapaxes(g0[off[k]:off[k + 1]], 0, ax)).reshape(seq[k].shape)


def length_along(item, ax):
    return item.shape[ax]


@numba_twin(concatenate_vjp)
def _concatenate_vjp_numba(g, arrays, axis=0):
    if not (twins.is_array(g) and twins.is_tuple(arrays) and twins.is_int(axis)
            and all(twins.is_array(t, g.ndim) for t in arrays.types)):
        twins.unsupported("np.concatenate of these arguments")
    split = join_impl(arrays.types, lambda i: length_along)
    return lambda g, arrays, axis=0: split(g, arrays, axis % g.ndim)


@numba_twin(stack_vjp)
def _stack_vjp_numba(g, arrays, axis=0):
    if not (twins.is_array(g) and twins.is_tuple(arrays) and twins.is_int(axis)):
        twins.unsupported("np.stack of these arguments")
    # (Indexing the swapped array would leave the other axes swapped: slice, swap back.)
    items = twins.tuple_of(len(arrays.types), lambda k: lambda g, arrays, ax: np.ascontiguousarray(
        np.swapaxes(np.swapaxes(g, 0, ax)[k:k + 1], 0, ax)).reshape(arrays[k].shape))
    return lambda g, arrays, axis=0: items(g, arrays, axis % g.ndim)


@numba_twin(swapaxes_vjp)
def _swapaxes_vjp_numba(g, a, axis1, axis2):
    if not (twins.is_array(g) and twins.is_int(axis1) and twins.is_int(axis2)):
        return None
    return lambda g, a, axis1, axis2: np.ascontiguousarray(np.swapaxes(g, axis1, axis2))


@numba_twin(moveaxis_vjp)
def _moveaxis_vjp_numba(g, a, source, destination):
    if not (twins.is_array(g) and twins.is_int(source) and twins.is_int(destination)):
        twins.unsupported("np.moveaxis of several axes")
    return lambda g, a, source, destination: np.ascontiguousarray(
        np.moveaxis(g, destination, source))


@numba_twin(astype_vjp)
def _astype_vjp_numba(g, a):
    # g in a's dtype when that is a float type (float32 stays float32).
    from numba import types
    if twins.is_array(g) and twins.is_array(a):
        if isinstance(a.dtype, types.Float):
            dt = a.dtype
            return lambda g, a: g.astype(dt)
        return lambda g, a: g
    if twins.is_number(g) and twins.is_number(a):
        return lambda g, a: g
    return None


@numba_twin(np.full)
def _full_numba(shape, fill_value, dtype=None, order="C"):
    """Numba's np.full takes a number to fill with: an array fill value (broadcast
    along the shape, as NumPy does) is written as the copy of a broadcast."""
    if twins.literal(order, "C") != "C":
        twins.unsupported("np.full with order other than 'C'")
    if not twins.is_array(fill_value):
        return lambda shape, fill_value, dtype=None, order="C": np.full(shape, fill_value, dtype)
    if not twins.is_none(dtype):
        twins.unsupported("np.full of an array fill value with dtype=")
    return lambda shape, fill_value, dtype=None, order="C": \
        np.broadcast_to(fill_value, shape).copy()


@numba_twin(np.full_like)
def _full_like_numba(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    """As :func:`_full_numba`: an array fill value broadcast along ``a``'s shape, in
    ``a``'s dtype."""
    if not twins.is_none(shape):
        twins.unsupported("np.full_like with shape=")
    if not twins.is_array(fill_value):
        return lambda a, fill_value, dtype=None, order="K", subok=True, shape=None: \
            np.full_like(a, fill_value, dtype)
    if not twins.is_none(dtype):
        twins.unsupported("np.full_like of an array fill value with dtype=")
    return lambda a, fill_value, dtype=None, order="K", subok=True, shape=None: \
        np.broadcast_to(fill_value, a.shape).astype(a.dtype)
