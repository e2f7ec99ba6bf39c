"""Kinds: what the transform knows of a value before it runs.

A kind is how many dimensions a value has (0 for a scalar, -1 for "an array or
a scalar, not known", None for "not a number") and its dtype family ('b' bool,
'i' integer, 'f' float, 'c' complex, 't' a tuple of ints such as a shape, 'o'
anything else).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Kind:
    ndim: int | None
    dtype: str
    #: The kinds of a tuple's items, when the tuple is built where it is known
    #: (``t = (a, b)``; a helper returning ``a, b``), so that ``t[0]`` has a kind
    #: and, under Numba, the tuple a placeholder and a typed cotangent.
    items: tuple | None = None

    @property
    def numeric_float(self) -> bool:
        return self.dtype in "fco" and self.dtype != ""

    @property
    def is_scalar(self) -> bool:
        return self.ndim == 0

    @property
    def is_array(self) -> bool:
        return self.ndim is not None and self.ndim != 0

    def __repr__(self):
        items = "" if self.items is None else f", items={self.items!r}"
        return f"Kind({self.ndim}, {self.dtype!r}{items})"


INT = Kind(0, "i")
BOOL = Kind(0, "b")
FLOAT = Kind(0, "f")
SHAPE = Kind(None, "t")
OTHER = Kind(None, "o")
DTYPE_ORDER = "bifc"
#: The NumPy dtype a value of a kind's dtype takes in compiled code (64-bit).
NUMPY_DTYPES = {"b": np.bool_, "i": np.int64, "f": np.float64, "c": np.complex128}


def kind_of_value(v) -> Kind:
    if isinstance(v, (bool, np.bool_)):
        return BOOL
    if isinstance(v, (int, np.integer)):
        return INT
    if isinstance(v, (float, np.floating)):
        return FLOAT
    if isinstance(v, (complex, np.complexfloating)):
        return Kind(0, "c")
    shape = getattr(v, "shape", None)
    dtype = getattr(v, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        k = getattr(dtype, "kind", None)
        if k is None:   # torch and other array libraries
            name = str(dtype)
            k = "f" if "float" in name else "c" if "complex" in name else \
                "b" if "bool" in name else "i" if "int" in name else "o"
        k = {"u": "i"}.get(k, k)
        return Kind(len(shape), k if k in "bifc" else "o")
    if isinstance(v, tuple) and all(isinstance(x, (int, np.integer)) for x in v):
        return Kind(len(v), "t")
    if isinstance(v, tuple) and v and len(v) <= 64:
        # A tuple of numbers and arrays (a global PAIR = (0.5, 1.5)): its items' kinds,
        # so that PAIR[1] is known to be a number.
        items = tuple(kind_of_value(x) for x in v)
        if all(k.dtype in "bifc" or k.items is not None for k in items):
            return Kind(None, "o", items)
    return OTHER


def join(a: Kind | None, b: Kind | None) -> Kind | None:
    if a is None:
        return b
    if b is None or a == b:
        return a
    if a.dtype in "ot" or b.dtype in "ot":
        dtype = a.dtype if a.dtype == b.dtype else "o"
    else:
        dtype = max(a.dtype, b.dtype, key=DTYPE_ORDER.index)
    if a.ndim == b.ndim:
        ndim = a.ndim
    elif a.ndim is None or b.ndim is None:
        ndim = None
    else:
        ndim = -1
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items))
    return Kind(ndim, dtype, items)


def broadcast(kinds, dtype=None) -> Kind:
    """The kind of an elementwise result of values of these kinds (NumPy broadcasting)."""
    ndims = [k.ndim for k in kinds]
    if any(n is None for n in ndims):
        return OTHER
    if any(n == -1 for n in ndims):
        ndim = -1
    else:
        ndim = max(ndims) if ndims else 0
    if dtype is None:
        dtypes = [k.dtype for k in kinds]
        dtype = max(dtypes, key=lambda d: DTYPE_ORDER.index(d) if d in DTYPE_ORDER else 5)
        if dtype not in DTYPE_ORDER:
            dtype = "o"
    return Kind(ndim, dtype)


class _Missing:
    """The value of a name that is bound nowhere (not a local, global, closure or builtin)."""

    def __repr__(self):
        return "MISSING"


MISSING = _Missing()


def index_rank(ndim: int | None, items: list) -> int | None:
    """The rank of ``x[items]`` for an ``x`` of rank ``ndim``, by NumPy's rules, or
    None when it cannot be told.  Each item is the :class:`Kind` of an index, or
    ``None`` for a slice, ``"none"`` for ``np.newaxis``, ``"..."`` for Ellipsis.

    Slices and Ellipsis keep the axes they take; an int removes one; an integer
    array takes one axis and a boolean mask as many as it has; the index arrays
    together put in the rank they broadcast to (a mask counts as rank 1)."""
    if ndim is None or ndim < 0:
        return None
    taken, added, advanced = 0, 0, []
    for k in items:
        if k is None or k == "...":
            continue
        if k == "none":
            added += 1
        elif k.ndim == 0 and k.dtype == "i":
            taken += 1
        elif k.ndim is not None and k.ndim > 0 and k.dtype == "i":
            taken += 1
            advanced.append(k.ndim)
        elif k.ndim is not None and k.ndim > 0 and k.dtype == "b":
            taken += k.ndim
            advanced.append(1)
        else:
            return None
    if taken > ndim:
        return None
    return ndim - taken + added + max(advanced, default=0)


def kind_of_atom(atom, kinds) -> Kind:
    """The kind of an IR atom: a name's from ``kinds``, a constant's from its value;
    unknown (``Kind(None, "o")``) otherwise."""
    if isinstance(atom, ast.Name):
        return kinds.get(atom.id, Kind(None, "o"))
    if isinstance(atom, ast.Constant):
        return kind_of_value(atom.value)
    return Kind(None, "o")
