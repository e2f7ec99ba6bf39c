"""The storage plan: how each adjoint is held in the generated code, and why.

One record per active variable, decided once from facts gathered when the
adjoints were generated; lowering reads it and never decides again.

* ``LOCAL``  a temporary defined and read once in one block: its one
  contribution defines its adjoint (``d_t3 = dex * x``), never zeroed or added.
* ``LIST``   a 1-D float array whose adjoint is only ever touched element by
  element (Python backend): a Python list, cheapest for ``dp[i] += g`` in
  CPython, turned into an array at the end.
* ``BUFFER`` an array adjoint allocated once (zeros) and updated in place.
* ``VALUE``  a float, an array or a tuple's cotangent that is reset to zero,
  bound to its first contribution and added to after that.

``typed_reset`` (Numba, where a variable keeps one type): a ``VALUE`` that is
not a scalar is reset to a zero of its own type, never to ``0.0``.
``items``: the primal is a tuple (``np.linalg.slogdet(A)``), so the cotangent
holds one cotangent per item and contributions go through ``accumulate``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

LOCAL, LIST, BUFFER, VALUE = "local", "list", "buffer", "value"


@dataclass(frozen=True)
class Storage:
    how: str                 # LOCAL, LIST, BUFFER or VALUE
    why: str
    typed_reset: bool = False
    items: bool = False


@dataclass(frozen=True)
class StoragePlan:
    storage: MappingProxyType       # active name -> Storage

    def __getitem__(self, name) -> Storage:
        return self.storage[name]

    def names(self, how: str) -> list:
        """The active names stored ``how``, sorted (the generated code's order)."""
        return sorted(n for n, s in self.storage.items() if s.how == how)


def plan(active, kinds, local_temps, list_buffers, is_buffer, fixed_types) -> StoragePlan:
    """``local_temps``/``list_buffers``: names found to qualify; ``is_buffer(name)``:
    whether the backend's policy makes ``name``'s adjoint an in-place buffer;
    ``fixed_types``: the backend keeps one type per variable."""
    out = {}
    for name in active:
        k = kinds.get(name)
        ndim = k.ndim if k is not None else 0
        if name in local_temps:
            out[name] = Storage(LOCAL, "a temporary defined and read once in one block")
        elif name in list_buffers:
            out[name] = Storage(LIST, "a 1-D array whose adjoint is updated element by element")
        elif is_buffer(name):
            out[name] = Storage(BUFFER, "an array whose adjoint is updated in place")
        else:
            out[name] = Storage(VALUE, "bound to its first contribution, then added to",
                                typed_reset=fixed_types and ndim != 0, items=ndim is None)
    return StoragePlan(MappingProxyType(out))
