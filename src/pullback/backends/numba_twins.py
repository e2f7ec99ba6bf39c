"""Numba's side of the twins: installs every registered twin as an overload.

Rule helpers are written against the array API (so one rule serves NumPy,
CuPy, PyTorch and JAX arrays), which Numba cannot compile.  Each rule module
registers, beside a helper, its Numba twin (:func:`pullback.rules.forms.numba_twin`);
this module, imported only when the Numba backend first compiles, turns each
into a ``numba.extending.overload`` of the helper, so the generated code calls
the helpers by their own names and Numba compiles the twins.  The twins of the
runtime helpers the transform itself calls (``core.runtime``) are here.
"""
from __future__ import annotations

import functools

import numpy as np
from numba.extending import overload

from ..core import runtime
from ..rules import forms, linalg, registry
from ..rules.twins import (
    is_array,
    is_float_array,
    is_none,
    is_number,
    is_tuple,
    jitted,
    literal,
    one_dtype,
    rank,
    tuple_of,
)
from . import in_place

_INSTALLED: set = set()


def install() -> None:
    """Overload every registered twin not installed yet (a primal itself is never
    overloaded: the forward sweep calls its stub, see ``backends.numba``)."""
    _install_bool_casts()
    _install_stacked_matmul()
    for target, twin in forms.all_twins():
        if twin is forms.PLAIN or id(target) in _INSTALLED or (
                registry.lookup(target) and not _own(target)):
            continue
        overload(target, prefer_literal=True)(twin)
        _INSTALLED.add(id(target))


def _own(target) -> bool:
    """One of pullback's run-time helpers: generated code calls it as it is (forward
    mode's ``fit``), even where it is also a primitive with a rule (so that reverse
    mode differentiates that code again), so its twin is its overload."""
    return getattr(target, "__module__", "").startswith("pullback.")


@functools.cache
def _install_bool_casts() -> None:
    """``float(x > 0)`` and ``int(x > 0)``: Python takes a bool to 1.0 or 0.0, Numba
    does not type these casts at all (the commonest refusal in random programs).
    Installed once; only adds the bool case, which Numba otherwise refuses."""
    from numba import types

    @overload(float)
    def _float_of_bool(x):
        if isinstance(x, types.Boolean):
            return lambda x: 1.0 if x else 0.0
        return None

    @overload(int)
    def _int_of_bool(x):
        if isinstance(x, types.Boolean):
            return lambda x: 1 if x else 0
        return None


@functools.cache
def _install_stacked_matmul() -> None:
    """``a @ b`` of stacks (an operand of more than 2 dimensions), and of operands of
    different dtypes (a float32 matrix and an int vector), which Numba's own ``@``
    refuses: through linalg's twin, or with both cast to their common dtype, as NumPy
    computes it.  Installed once; only adds those cases."""
    import operator
    stacked = linalg.stacked_matmul

    @overload(operator.matmul)
    def _matmul_of_stacks(a, b):
        if is_array(a) and is_array(b) and max(a.ndim, b.ndim) > 2:
            return lambda a, b: stacked(a, b)
        if is_array(a) and is_array(b) and a.dtype != b.dtype:
            return one_dtype(lambda a, b: a @ b, a, b)
        return None


def _is_list_of_arrays(t) -> bool:
    """A Numba list of arrays (what Numba's np.split returns)."""
    from numba import types
    return isinstance(t, types.List) and is_array(t.dtype)


@forms.numba_twin(runtime.zeros_like)
def _zeros_like(value):
    from numba import types
    if is_number(value) or is_none(value) or isinstance(value, (types.UnicodeType,
                                                                  types.StringLiteral)):
        # None (scan's ys when f returns (carry, None)) or a string (a has_aux aux's
        # item, never differentiated): 0.0, as runtime.zeros_like.
        return lambda value: 0.0
    if is_float_array(value):
        return lambda value: np.zeros(value.shape, value.dtype)     # float32 kept
    if is_array(value):
        return lambda value: np.zeros(value.shape)
    if is_tuple(value):
        zeros = tuple_of(len(value), lambda k: lambda value: runtime.zeros_like(value[k]))
        return lambda value: zeros(value)
    if _is_list_of_arrays(value):
        if is_float_array(value.dtype):     # the arrays' dtype, float32 kept
            return lambda value: [np.zeros(v.shape, v.dtype) for v in value]
        return lambda value: [np.zeros(v.shape) for v in value]
    return None


@forms.numba_twin(runtime.cotangent_or_zero)
def _cotangent_or_zero(cotangent, arg):
    """Numba types a None a njit VJP returns as none: a zero of ``arg`` then."""
    if not is_none(cotangent):
        return lambda cotangent, arg: cotangent
    if is_float_array(arg):
        return lambda cotangent, arg: np.zeros(arg.shape, arg.dtype)    # float32 kept
    return lambda cotangent, arg: runtime.zeros_like(arg)


@forms.numba_twin(runtime.result_cotangent)
def _result_cotangent(g, ans):
    """Numba's cotangent of a tuple is already a tuple of typed zeros and contributions."""
    return lambda g, ans: g


@forms.numba_twin(runtime.zeros_tangent)
def _zeros_tangent(value):
    return lambda value: runtime.zeros_like(value)


@forms.numba_twin(runtime.fit)
def _fit(tangent, ans):
    if is_array(ans):
        return lambda tangent, ans: tangent + np.zeros_like(ans)
    return lambda tangent, ans: tangent


@forms.numba_twin(runtime.buffer_like)
def _buffer_like(adjoint, value):
    if is_array(adjoint):
        return lambda adjoint, value: adjoint
    if is_array(value):
        return lambda adjoint, value: np.zeros(value.shape) + adjoint
    return None


@forms.numba_twin(runtime.scatter_add)
def _scatter_add(adjoint, value, index, g):
    """``np.add.at``, which Numba lacks, for any index Numba itself can apply (an
    integer or boolean array, alone or beside slices and ints): the index is applied
    to the flat positions of ``value`` and ``g`` is added position by position, so a
    position the index repeats accumulates.  Writes into a contiguous buffer; the
    generated code takes the returned one."""
    if not is_array(value):
        return None

    def scatter_add(adjoint, value, index, g):
        buf = np.ascontiguousarray(runtime.buffer_like(adjoint, value))
        positions = np.arange(buf.size).reshape(buf.shape)[index]
        flat = buf.reshape(-1)
        picked = np.ravel(positions)
        added = np.ravel(np.broadcast_to(g, positions.shape))
        for k in range(picked.size):
            flat[picked[k]] += added[k]
        return buf
    return scatter_add


@forms.numba_twin(runtime.written_cotangent)
def _written_cotangent(adjoint, index):
    """As runtime.written_cotangent, for any index Numba can apply: the flat positions
    the index names, and a zero for each write a later one to the same entry undid."""
    if not is_array(adjoint):
        return None

    def written_cotangent(adjoint, index):
        g = np.ascontiguousarray(adjoint[index])
        positions = np.ravel(np.arange(adjoint.size).reshape(adjoint.shape)[index])
        last = np.full(adjoint.size, -1)
        for k in range(positions.size):
            last[positions[k]] = k
        flat = g.reshape(-1)
        for k in range(positions.size):
            if last[positions[k]] != k:
                flat[k] = 0.0
        return g
    return written_cotangent


@forms.numba_twin(runtime.snapshot)
def _snapshot(value):
    if is_array(value):
        return lambda value: value.copy()
    return lambda value: value


# ---- tuple cotangents: a tuple's cotangent is a tuple of its items' cotangents, built
# by zeros_like and updated item by item (so its type never changes, as Numba needs).
def _literal_index(k):
    v = literal(k)
    return v if isinstance(v, int) else None


@forms.numba_twin(runtime.accumulate)
def _accumulate(total, more):
    if is_tuple(total) and is_tuple(more) and len(total) == len(more):
        sums = tuple_of(len(total), lambda k: lambda total, more: runtime.accumulate(total[k], more[k]))
        return lambda total, more: sums(total, more)
    if is_tuple(total) and is_number(more):
        # A number added to each item, as runtime.accumulate does (a has_aux seed's
        # 0.0 for an aux item that is itself a tuple).
        each = tuple_of(len(total), lambda k: lambda total, more: runtime.accumulate(total[k], more))
        return lambda total, more: each(total, more)
    if (is_number(total) or is_array(total)) and (is_number(more) or is_array(more)):
        return lambda total, more: total + more
    if _is_list_of_arrays(total) and _is_list_of_arrays(more):
        return lambda total, more: [total[i] + more[i] for i in range(len(total))]
    return None


@forms.numba_twin(runtime.item_cotangent)
def _item_cotangent(cotangent, k):
    from numba import types
    if is_number(cotangent):
        return lambda cotangent, k: cotangent
    at = _literal_index(k)
    if is_tuple(cotangent) and at is not None:
        return lambda cotangent, k: cotangent[at]
    if isinstance(cotangent, types.UniTuple) or is_array(cotangent) \
            or _is_list_of_arrays(cotangent):
        return lambda cotangent, k: cotangent[k]
    return None


@forms.numba_twin(runtime.add_item)
def _add_item(cotangent, value, k, g):
    from numba import types
    if _is_list_of_arrays(cotangent):
        # A new list: the cotangent passed in may be read again.
        def add_to_list(cotangent, value, k, g):
            out = [c.copy() for c in cotangent]
            out[k] = out[k] + g
            return out
        return add_to_list
    if not is_tuple(cotangent):
        return None
    at = _literal_index(k)
    if at is not None:
        # A constant index (t[1] of a tuple of any item types): add to that item only.
        # An item may be a tuple itself: added item by item (``+`` would concatenate).
        added = tuple_of(len(cotangent), lambda i: (
            lambda cotangent, g: runtime.accumulate(cotangent[i], g)) if i == at
            else (lambda cotangent, g: cotangent[i]))
        return lambda cotangent, value, k, g: added(cotangent, g)
    if isinstance(cotangent, types.UniTuple):
        added = tuple_of(len(cotangent),
                         lambda i: lambda cotangent, k, g:
                         runtime.accumulate(cotangent[i], g) if k == i else cotangent[i])
        return lambda cotangent, value, k, g: added(cotangent, k, g)
    return None


# ---- adjoint buffers updated in place (see lower.py: add_into, accumulate_into)
def _extent(a):
    """The byte range [lo, hi) the elements of the array ``a`` lie in."""
    lo = hi = a.ctypes.data
    for d in range(a.ndim):
        if a.shape[d] == 0:
            return lo, lo
        step = a.strides[d] * (a.shape[d] - 1)
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + a.itemsize


def may_share(a, b):
    """Whether ``a`` and ``b`` may share memory: two arrays whose byte ranges meet
    (Numba has no ``np.shares_memory``)."""
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
        np.may_share_memory(a, b)


@overload(may_share)
def _may_share(a, b):
    if not (is_array(a) and is_array(b)):
        return lambda a, b: False
    extent = jitted(_extent)

    def impl(a, b):
        alo, ahi = extent(a)
        blo, bhi = extent(b)
        return alo < bhi and blo < ahi
    return impl


@forms.numba_twin(runtime.refill_zeros)
def _refill_zeros(buffer, like):
    """Numba gives ``buffer`` one type: only its shape is compared."""
    if not (is_array(buffer) and is_array(like)):
        return None

    def impl(buffer, like):
        if buffer.shape == like.shape:
            buffer.fill(0.0)
            return buffer
        return np.zeros_like(like)
    return impl


@forms.numba_twin(runtime.add_into)
def _add_into(out, g):
    if not is_array(out):
        return None
    if not is_array(g):
        def number(out, g):
            out += g
        return number

    def impl(out, g):
        if may_share(out, g):
            g = g.copy()            # Numba's in-place ufunc does not buffer an overlap
        out += g
    return impl


def _scaled_into(out, v, s):
    """``out += v * s`` for vectors ``out``, ``v`` and a number ``s``, one loop."""
    if v.shape != out.shape or may_share(out, v):
        out += v * s
        return
    for i in range(out.shape[0]):
        out[i] += v[i] * s


def _products_into(out, a, b):
    """``out += a * b`` for vectors of one length, one loop."""
    if a.shape != out.shape or b.shape != out.shape or may_share(out, a) or may_share(out, b):
        out += a * b
        return
    for i in range(out.shape[0]):
        out[i] += a[i] * b[i]


@forms.numba_twin(runtime.add_product_into)
def _add_product_into(out, a, b):
    if not is_array(out):
        return None
    scaled, products = jitted(_scaled_into), jitted(_products_into)
    if is_array(out, 1) and is_array(a, 1) and is_number(b):
        return lambda out, a, b: scaled(out, a, b)
    if is_array(out, 1) and is_number(a) and is_array(b, 1):
        return lambda out, a, b: scaled(out, b, a)      # a * b == b * a exactly
    if is_array(out, 1) and is_array(a, 1) and is_array(b, 1):
        return lambda out, a, b: products(out, a, b)

    def whole(out, a, b):       # the product is a new array: no overlap with out
        out += a * b
    return whole


@forms.numba_twin(in_place.add_matmul_vjp_a)
def _add_matmul_vjp_a(out, g, a, b):
    vjp = linalg.matmul_vjp_a
    if rank(out) == 2 and rank(g) == 1 and rank(a) == 2 and rank(b) == 1:
        def outer(out, g, a, b):        # out += np.outer(g, b)
            if out.shape != (g.shape[0], b.shape[0]) or may_share(out, g) or may_share(out, b):
                out += vjp(g, a, b)
                return
            for i in range(out.shape[0]):
                gi = g[i]
                row = out[i]
                for j in range(out.shape[1]):
                    row[j] += gi * b[j]
        return outer

    def general(out, g, a, b):
        out += vjp(g, a, b)
    return general if is_array(out) else None


@forms.numba_twin(in_place.add_matmul_vjp_b)
def _add_matmul_vjp_b(out, g, a, b):
    vjp = linalg.matmul_vjp_b
    if rank(out) == 1 and rank(g) == 1 and rank(a) == 2 and rank(b) == 1:
        def transposed(out, g, a, b):   # out += a.T @ g, row by row of a
            if a.shape != (g.shape[0], out.shape[0]) or may_share(out, g) or may_share(out, a):
                out += vjp(g, a, b)
                return
            for i in range(a.shape[0]):
                gi = g[i]
                row = a[i]
                for j in range(out.shape[0]):
                    out[j] += row[j] * gi
        return transposed

    def general(out, g, a, b):
        out += vjp(g, a, b)
    return general if is_array(out) else None
