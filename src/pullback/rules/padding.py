"""Derivative of ``np.pad``.

Every mode that fills the border with copies of entries (``edge``, ``reflect``,
``symmetric``, ``wrap``) or with a constant is handled by one mechanism: pad the
*positions* ``0 .. size-1`` of the array the same way, and each entry of the
result names the entry it copies (a constant border gets ``-1``).  The cotangent
of ``array`` is ``g`` added back at those positions (a scatter-add, so a copied
entry gets every copy's share); for the constant mode, the commonest, it is
simply ``g`` without its border.  The cotangent of a scalar ``constant_values``
is the sum of ``g`` over the border.  Modes that compute their border
(``linear_ramp``, ``maximum``, ``mean``, ``median``, ``minimum``) and a
``constant_values`` differentiated per axis, and ``reflect_type='odd'`` (whose
border is computed, not copied) raise NotImplementedError.  Under ``jit=True`` the
Numba twins (below; Numba has no ``np.pad``) cover the same modes, with ``pad_width``
an int, a pair, or a pair per axis, and a number for ``constant_values``.
Conventions are those of :mod:`pullback.rules.elementwise`.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace, shape_of
from .forms import numba_twin
from .indexing import getitem_vjp
from .registry import defrule
from .tangents import deftangent

__all__ = ["pad_vjp_array", "pad_vjp_constant"]

_COPYING = ("constant", "edge", "reflect", "symmetric", "wrap")


def _check_mode(mode, reflect_type="even"):
    if mode not in _COPYING:
        raise NotImplementedError(
            f"the derivative of np.pad with mode={mode!r} is not implemented (the modes "
            f"that copy entries or a constant are: {', '.join(_COPYING)})")
    if reflect_type != "even" and mode in ("reflect", "symmetric"):
        # An 'odd' border is computed (2 * edge - mirror), not copied.
        raise NotImplementedError("the derivative of np.pad with reflect_type='odd' is not "
                                  "implemented; use the default 'even'")


def _interior(g, shape, pad_width):
    """``g`` without the border ``np.pad`` added around an array of ``shape``."""
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (len(shape), 2))
    return g[tuple(slice(int(lo), int(lo) + n) for (lo, _), n in zip(widths, shape))]


def pad_vjp_array(g, array, pad_width, mode="constant", reflect_type="even"):
    """Cotangent of ``array`` in ``np.pad(array, pad_width, mode, ...)``."""
    _check_mode(mode, reflect_type)
    xp = namespace(g, array)
    A = as_array(xp, array, g)
    shape = tuple(A.shape)
    if mode == "constant":
        return like_arg(_interior(as_array(xp, g, A), shape, pad_width), array)
    positions = np.pad(np.arange(int(np.prod(shape))).reshape(shape), pad_width, mode)
    flat = xp.reshape(as_array(xp, g, A), (-1,))
    ct = getitem_vjp(flat, xp.reshape(A, (-1,)), positions.reshape(-1))
    return like_arg(xp.reshape(ct, shape), array)


def pad_vjp_constant(g, array, pad_width, mode="constant", constant_values=0):
    """Cotangent of ``constant_values`` (a number): the sum of ``g`` over the border."""
    if np.ndim(constant_values) != 0:
        raise NotImplementedError("the derivative of np.pad with respect to per-axis "
                                  "constant_values is not implemented; pass one number")
    xp = namespace(g, array)
    G = as_array(xp, g, array)
    return xp.sum(G) - xp.sum(_interior(G, shape_of(array), pad_width))


defrule(np.pad, "array, pad_width, mode='constant', *, stat_length=None, constant_values=0, "
        "end_values=0, reflect_type='even'", result=results.same_shape,
        array="pad_vjp_array(g, array, pad_width, mode, reflect_type)",
        constant_values="pad_vjp_constant(g, array, pad_width, mode, constant_values)")
deftangent(np.pad, linear="array, constant_values")


# ---------------------------------------------------------------------------
# Numba twins (Numba has no np.pad).  Each axis is padded in turn with an index map:
# entry j of the padded axis copies entry idx[j] of the axis (-1: the constant).  The
# cotangent undoes the axes in reverse order, adding each entry's share back at
# idx[j], so a copied entry gets every copy's share as in the Python rule.

def _axis_index(code, n, before, after):
    """The index map of one padded axis: ``np.pad(np.arange(n), (before, after), mode)``
    for the mode numbered ``code`` in ``_COPYING``, with -1 for a constant border."""
    if n == 0 and code != 0:
        raise ValueError("can't extend empty axis using modes other than 'constant'")
    idx = np.empty(n + before + after, dtype=np.int64)
    for j in range(idx.shape[0]):
        m = j - before
        if 0 <= m < n:
            idx[j] = m
        elif code == 0:                             # constant
            idx[j] = -1
        elif code == 1:                             # edge
            idx[j] = min(max(m, 0), n - 1)
        elif code == 2:                             # reflect: period 2 (n - 1)
            r = m % (2 * (n - 1)) if n > 1 else 0
            idx[j] = r if r < n else 2 * (n - 1) - r
        elif code == 3:                             # symmetric: period 2 n
            r = m % (2 * n)
            idx[j] = r if r < n else 2 * n - 1 - r
        else:                                       # wrap
            idx[j] = m % n
    return idx


def _pad_axis3(x3, idx, fill):
    pre, _, post = x3.shape
    out = np.empty((pre, idx.shape[0], post), dtype=x3.dtype)      # as np.pad: the dtype kept
    for j in range(idx.shape[0]):
        if idx[j] < 0:
            out[:, j, :] = fill
        else:
            out[:, j, :] = x3[:, idx[j], :]
    return out


def _unpad_axis3(g3, idx, n):
    pre, _, post = g3.shape
    out = np.zeros((pre, n, post))
    for j in range(idx.shape[0]):
        if idx[j] >= 0:
            out[:, idx[j], :] += g3[:, j, :]
    return out


def _widths(pad_width, nd):
    """A compiled ``f(pad_width)``: the (before, after) widths of each axis as an (nd, 2)
    int array, from the type of ``pad_width``: an int, a pair (or one) of ints for every
    axis, or one pair (or one int) per axis."""
    from numba import literal_unroll, njit
    both = twins.jitted(_both)

    def ints(t, n):
        return twins.is_tuple(t) and len(t) == n and all(twins.is_int(i) for i in t)
    if twins.is_int(pad_width):
        return twins.jitted(lambda pad_width: np.full((nd, 2), pad_width, np.int64))
    if ints(pad_width, 1):
        return twins.jitted(lambda pad_width: np.full((nd, 2), pad_width[0], np.int64))
    if ints(pad_width, 2):
        return twins.jitted(lambda pad_width: both(nd, pad_width[0], pad_width[1]))
    if twins.is_tuple(pad_width) and len(pad_width) in (1, nd):
        last = 1 if all(ints(t, 2) for t in pad_width) else 0
        if not all(ints(t, last + 1) for t in pad_width):
            twins.unsupported(f"np.pad with pad_width of type {pad_width} for an array of rank {nd}")
        if len(pad_width) == 1:
            return twins.jitted(lambda pad_width: both(nd, pad_width[0][0], pad_width[0][last]))

        def rows(pad_width):
            out = np.empty((nd, 2), np.int64)
            k = 0
            for row in literal_unroll(pad_width):   # (the rows' types may differ)
                out[k, 0] = row[0]
                out[k, 1] = row[last]
                k += 1
            return out
        return njit(rows)       # not inlined: Numba unrolls only in a function it compiles
    twins.unsupported(f"np.pad with pad_width of type {pad_width} for an array of rank {nd}")


def _both(nd, before, after):
    out = np.empty((nd, 2), np.int64)
    out[:, 0] = before
    out[:, 1] = after
    return out


def _number(t) -> bool:
    """A number, or an omitted argument whose default is one."""
    return twins.is_number(t) or isinstance(twins.literal(t), (int, float))


def _pad_setup(array, pad_width, mode, reflect_type):
    """(the mode's number, the compiled widths, :func:`_widths`) after refusing what has
    no twin."""
    mode = twins.literal(mode, None)
    if not twins.is_array(array) or mode not in _COPYING:
        twins.unsupported(f"np.pad of {array} with mode {mode!r} (a constant string among "
                          f"{', '.join(_COPYING)})")
    if twins.literal(reflect_type, None) != "even":
        twins.unsupported("np.pad with a reflect_type other than the default 'even'")
    return _COPYING.index(mode), _widths(pad_width, array.ndim)


def _pad_primal(t):
    code, widths = _pad_setup(t["array"], t["pad_width"], t["mode"], t["reflect_type"])
    if not (twins.is_none(t["stat_length"]) and _number(t["end_values"])
            and _number(t["constant_values"])):
        twins.unsupported("np.pad with stat_length=, end_values= or constant_values other "
                          "than one number")
    nd = t["array"].ndim
    index, split, pad, resized = (twins.jitted(_axis_index), twins.split_shape(),
                                  twins.jitted(_pad_axis3), twins.resized_shape(nd))

    def body(array, pad_width, mode, stat_length, constant_values, end_values, reflect_type):
        w = widths(pad_width)
        x = np.ascontiguousarray(array)
        for k in range(nd):         # each axis in turn
            pre, n, post = split(x.shape, k)
            x = pad(x.reshape((pre, n, post)), index(code, n, w[k, 0], w[k, 1]),
                    constant_values).reshape(resized(x.shape, k, n + w[k, 0] + w[k, 1]))
        return x
    return body


numba_twin(np.pad)(twins.signature_twin(
    "array, pad_width, mode='constant', *, stat_length=None, constant_values=0, "
    "end_values=0, reflect_type='even'", _pad_primal))


@numba_twin(pad_vjp_array)
@twins.keeps_dtype("array")
def _pad_vjp_array_numba(g, array, pad_width, mode="constant", reflect_type="even"):
    code, widths = _pad_setup(array, pad_width, mode, reflect_type)
    nd = array.ndim
    index, split, unpad, resized = (twins.jitted(_axis_index), twins.split_shape(),
                                    twins.jitted(_unpad_axis3), twins.resized_shape(nd))

    # Each axis's cotangent is float64 (_unpad_axis3), the loop's x of one type throughout.
    f64 = twins.float64_of(g)
    start = twins.jitted(lambda g: f64(np.ascontiguousarray(g)))

    def impl(g, array, pad_width, mode="constant", reflect_type="even"):
        w = widths(pad_width)
        x = start(g)
        for k in range(nd - 1, -1, -1):     # each axis in turn, the last first
            pre, m, post = split(x.shape, k)
            n = array.shape[k]
            x = unpad(x.reshape((pre, m, post)), index(code, n, w[k, 0], w[k, 1]),
                      n).reshape(resized(x.shape, k, n))
        return x
    return impl


@numba_twin(pad_vjp_constant)
def _pad_vjp_constant_numba(g, array, pad_width, mode="constant", constant_values=0):
    _, widths = _pad_setup(array, pad_width, mode, "even")
    if not _number(constant_values):
        twins.unsupported("the derivative of np.pad with respect to per-axis constant_values")
    from numba.cpython.unsafe.tuple import build_full_slice_tuple, tuple_setitem
    nd = array.ndim

    def impl(g, array, pad_width, mode="constant", constant_values=0):
        w = widths(pad_width)
        inside = build_full_slice_tuple(nd)
        for k in range(nd):
            inside = tuple_setitem(inside, k, slice(w[k, 0], w[k, 0] + array.shape[k]))
        return np.sum(g) - np.sum(g[inside])
    return impl
