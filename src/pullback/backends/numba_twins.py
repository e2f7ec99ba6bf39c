"""Numba's side of the twins: installs every registered twin as an overload.

Rule helpers are written against the array API (so one rule serves NumPy,
CuPy, PyTorch and JAX arrays), which Numba cannot compile.  Each rule module
registers, beside a helper, its Numba twin (:func:`pullback.rules.registry.numba_twin`);
this module, imported only when the Numba backend first compiles, turns each
into a ``numba.extending.overload`` of the helper, so the generated code calls
the helpers by their own names and Numba compiles the twins.  The twins of the
runtime helpers the transform itself calls (``core.runtime``) are here.
"""
from __future__ import annotations

import numpy as np
from numba.extending import overload

from ..core import runtime
from ..rules import registry
from ..rules.twins import is_array, is_number, is_tuple, literal, tuple_impl

_INSTALLED: set = set()


def install() -> None:
    """Overload every registered twin not installed yet (a primal itself is never
    overloaded: the forward sweep calls its stub, see ``backends.numba``)."""
    for target, twin in registry.all_twins():
        if twin is registry.PLAIN or id(target) in _INSTALLED or registry.lookup(target):
            continue
        overload(target, prefer_literal=True)(twin)
        _INSTALLED.add(id(target))


def _is_list_of_arrays(t) -> bool:
    """A Numba list of arrays (what Numba's np.split returns)."""
    from numba import types
    return isinstance(t, types.List) and is_array(t.dtype)


def _runtime_tuple(params, n, item):
    return tuple_impl(params, n, item, {"zeros_like": runtime.zeros_like,
                                        "accumulate": runtime.accumulate})


@registry.numba_twin(runtime.zeros_like)
def _zeros_like(value):
    if is_number(value):
        return lambda value: 0.0
    if is_array(value):
        return lambda value: np.zeros(value.shape)
    if is_tuple(value):
        return _runtime_tuple("value", len(value), "zeros_like(value[{0}])".format)
    if _is_list_of_arrays(value):
        return lambda value: [np.zeros(v.shape) for v in value]
    return None


@registry.numba_twin(runtime.buffer_like)
def _buffer_like(adjoint, value):
    if is_array(adjoint):
        return lambda adjoint, value: adjoint
    if is_array(value):
        return lambda adjoint, value: np.zeros(value.shape) + adjoint
    return None


@registry.numba_twin(runtime.snapshot)
def _snapshot(value):
    if is_array(value):
        return lambda value: value.copy()
    return lambda value: value


# ---- tuple cotangents: a tuple's cotangent is a tuple of its items' cotangents, built
# by zeros_like and updated item by item (so its type never changes, as Numba needs).
def _literal_index(k):
    v = literal(k)
    return v if isinstance(v, int) else None


@registry.numba_twin(runtime.accumulate)
def _accumulate(total, more):
    if is_tuple(total) and is_tuple(more) and len(total) == len(more):
        return _runtime_tuple("total, more", len(total), "accumulate(total[{0}], more[{0}])".format)
    if (is_number(total) or is_array(total)) and (is_number(more) or is_array(more)):
        return lambda total, more: total + more
    if _is_list_of_arrays(total) and _is_list_of_arrays(more):
        return lambda total, more: [total[i] + more[i] for i in range(len(total))]
    return None


@registry.numba_twin(runtime.item_cotangent)
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


@registry.numba_twin(runtime.add_item)
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
        return _runtime_tuple("cotangent, value, k, g", len(cotangent),
                              lambda i: f"cotangent[{i}]" + (" + g" if i == at else ""))
    if isinstance(cotangent, types.UniTuple):
        return _runtime_tuple("cotangent, value, k, g", len(cotangent),
                              lambda i: f"(cotangent[{i}] + g if k == {i} else cotangent[{i}])")
    return None
