"""Numba implementations of the array-rule helpers the generated code calls most.

The helpers in this package are written against the array API (so one rule
serves NumPy, CuPy, PyTorch and JAX arrays), which Numba cannot compile.  For
the Numba backend, ``numba.extending.overload`` gives the common ones a
compiled twin; the emitter passes these helpers to Numba as they are and Numba
picks the twin.  A case a twin does not cover fails to compile with a clear
message, never with a wrong number.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ..core import runtime
from ..rules.elementwise import unbroadcast
from ..rules.reductions import mean_vjp, sum_vjp
from ..rules.shapes import array_vjp, reshape_vjp

# Helpers with a Numba twin: the emitter must not njit them itself.
OVERLOADED = {unbroadcast, sum_vjp, mean_vjp, array_vjp, reshape_vjp, runtime.zeros_like,
              runtime.buffer_like, runtime.snapshot, runtime.accumulate, runtime.add_item,
              runtime.item_cotangent}


def _is_none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) or t == types.none


def _unbroadcast_same_rank(x):
    """``unbroadcast`` of a cotangent with the rank of ``x``: summed over the axes
    where ``x`` has length 1 (2-D), or ``x``'s own shape (other ranks)."""
    if x.ndim == 2:
        def impl2(g, x):
            if g.shape == x.shape:
                return g
            out = np.zeros(x.shape)
            r1, c1 = x.shape[0] == 1, x.shape[1] == 1
            for i in range(g.shape[0]):
                for j in range(g.shape[1]):
                    out[0 if r1 else i, 0 if c1 else j] += g[i, j]
            return out
        return impl2

    def impl_same(g, x):
        if g.shape != x.shape:
            raise ValueError("pullback (Numba backend): broadcasting of arrays with more "
                             "than 2 dimensions is not supported; use jit=False")
        return g
    return impl_same


@overload(unbroadcast)
def _unbroadcast(g, x):
    if isinstance(x, types.Number):
        if isinstance(g, types.Array):
            return lambda g, x: np.sum(g)
        return lambda g, x: g
    if not isinstance(x, types.Array):
        return None
    if isinstance(g, types.Number):
        return lambda g, x: np.full(x.shape, g)
    if g.ndim == x.ndim:
        return _unbroadcast_same_rank(x)
    if g.ndim > x.ndim:
        off = g.ndim - x.ndim     # known when typing: a static tuple slice below

        def impl_leading(g, x):
            if g.shape[off:] != x.shape:
                raise ValueError("pullback (Numba backend): this broadcast is not supported; "
                                 "use jit=False")
            return np.sum(np.ascontiguousarray(g).reshape((-1, x.size)), axis=0).reshape(x.shape)
        return impl_leading
    return None


@overload(sum_vjp)
def _sum_vjp(g, a, axis=None, keepdims=False, where=True):
    if isinstance(a, types.Number):
        return lambda g, a, axis=None, keepdims=False, where=True: g
    if _is_none(axis):
        return lambda g, a, axis=None, keepdims=False, where=True: np.full(a.shape, g)
    if isinstance(axis, types.Integer) and isinstance(g, types.Array) and g.ndim == a.ndim - 1:
        def impl(g, a, axis=None, keepdims=False, where=True):
            return np.broadcast_to(np.expand_dims(g, axis), a.shape).copy()
        return impl
    return None


@overload(mean_vjp)
def _mean_vjp(g, a, axis=None, keepdims=False, where=True):
    if isinstance(a, types.Number):
        return lambda g, a, axis=None, keepdims=False, where=True: g
    if _is_none(axis):
        return lambda g, a, axis=None, keepdims=False, where=True: np.full(a.shape, g / a.size)
    if isinstance(axis, types.Integer) and isinstance(g, types.Array) and g.ndim == a.ndim - 1:
        def impl(g, a, axis=None, keepdims=False, where=True):
            n = a.shape[axis]
            return np.broadcast_to(np.expand_dims(g / n, axis), a.shape).copy()
        return impl
    return None


@overload(runtime.zeros_like)
def _zeros_like(value):
    if isinstance(value, types.Number):
        return lambda value: 0.0
    if isinstance(value, types.Array):
        return lambda value: np.zeros(value.shape)
    if isinstance(value, types.BaseTuple):
        return _tuple_impl("value", len(value), "zeros_like(value[{0}])".format)
    return None


@overload(array_vjp)
def _array_vjp(g, object):
    # np.array / np.copy / x.copy() of an array: the cotangent passes through.
    if isinstance(object, (types.Array, types.Number)):
        return lambda g, object: g
    return None


@overload(runtime.buffer_like)
def _buffer_like(adjoint, value):
    if isinstance(adjoint, types.Array):
        return lambda adjoint, value: adjoint
    if isinstance(value, types.Array):
        return lambda adjoint, value: np.zeros(value.shape) + adjoint
    return None


@overload(runtime.snapshot)
def _snapshot(value):
    if isinstance(value, types.Array):
        return lambda value: value.copy()
    return lambda value: value


@overload(reshape_vjp)
def _reshape_vjp(g, a, order="C"):
    # C order (the default and what x.reshape(...) passes); other orders: jit=False.
    if isinstance(g, types.Array) and isinstance(a, types.Array):
        def impl(g, a, order="C"):
            if order != "C":
                raise ValueError("pullback (Numba backend): reshape with order other than "
                                 "'C' is not supported; use jit=False")
            return np.ascontiguousarray(g).reshape(a.shape)
        return impl
    return None


# ---- tuple cotangents: a tuple's cotangent is a tuple of its items' cotangents, built
# by zeros_like and updated item by item (so its type never changes, as Numba needs).
def _tuple_impl(params, n, item):
    """An implementation ``def impl(params): return (item(0), ..., item(n - 1),)``;
    ``item(i)`` is source text, which may call the runtime helpers by name."""
    items = "".join(item(i) + ", " for i in range(n))
    namespace = {"zeros_like": runtime.zeros_like, "accumulate": runtime.accumulate}
    exec(f"def impl({params}):\n    return ({items})\n", namespace)
    return namespace["impl"]


def _literal_index(k):
    return k.literal_value if isinstance(k, types.IntegerLiteral) else None


@overload(runtime.accumulate)
def _accumulate(total, more):
    if isinstance(total, types.BaseTuple) and isinstance(more, types.BaseTuple) \
            and len(total) == len(more):
        return _tuple_impl("total, more", len(total), "accumulate(total[{0}], more[{0}])".format)
    if isinstance(total, (types.Number, types.Array)) and isinstance(more, (types.Number,
                                                                            types.Array)):
        return lambda total, more: total + more
    return None


@overload(runtime.item_cotangent, prefer_literal=True)
def _item_cotangent(cotangent, k):
    if isinstance(cotangent, types.Number):
        return lambda cotangent, k: cotangent
    at = _literal_index(k)
    if isinstance(cotangent, types.BaseTuple) and at is not None:
        return lambda cotangent, k: cotangent[at]
    if isinstance(cotangent, (types.UniTuple, types.Array)):
        return lambda cotangent, k: cotangent[k]
    return None


@overload(runtime.add_item, prefer_literal=True)
def _add_item(cotangent, value, k, g):
    if not isinstance(cotangent, types.BaseTuple):
        return None
    at = _literal_index(k)
    if at is not None:
        # A constant index (t[1] of a tuple of any item types): add to that item only.
        return _tuple_impl("cotangent, value, k, g", len(cotangent),
                           lambda i: f"cotangent[{i}]" + (" + g" if i == at else ""))
    if isinstance(cotangent, types.UniTuple):
        return _tuple_impl("cotangent, value, k, g", len(cotangent),
                           lambda i: f"(cotangent[{i}] + g if k == {i} else cotangent[{i}])")
    return None
