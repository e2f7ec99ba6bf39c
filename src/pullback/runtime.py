"""Small functions the generated code calls.

Each is plain Python that Numba can also compile, so the same generated
source runs under both backends.
"""
from __future__ import annotations

import numpy as np


def trip_count(start, stop, step):
    """len(range(start, stop, step)) without building the range."""
    if step > 0:
        n = (stop - start + step - 1) // step
    else:
        n = (start - stop - step - 1) // (-step)
    return n if n > 0 else 0


def grow(tape):
    """A tape twice as long, holding the old contents (amortised O(1) pushes)."""
    new = np.empty(2 * tape.shape[0] + 16, dtype=tape.dtype)
    new[:tape.shape[0]] = tape
    return new


def reserve(tape, needed):
    """``tape`` with room for at least ``needed`` entries (grown geometrically)."""
    if needed <= tape.shape[0]:
        return tape
    size = max(needed, 2 * tape.shape[0])
    new = np.empty(size, dtype=tape.dtype)
    new[:tape.shape[0]] = tape
    return new


def buffer_like(adjoint, value):
    """An adjoint ready for in-place element updates: ``adjoint`` itself when it
    is already an array of ``value``'s shape, else zeros plus what it holds."""
    if isinstance(adjoint, np.ndarray) and adjoint.shape == np.shape(value):
        return adjoint
    return np.zeros(np.shape(value), dtype=np.result_type(value, 1.0)) + adjoint


def zeros_like(value):
    """A float zero of value's shape (a Python float for a scalar)."""
    if np.ndim(value) == 0:
        return 0.0
    return np.zeros(np.shape(value), dtype=np.result_type(value, 1.0))


def scatter_add(adjoint, value, index, g):
    """``adjoint[index] += g`` with repeated indices accumulated (advanced indexing)."""
    buf = buffer_like(adjoint, value)
    np.add.at(buf, index, g)
    return buf
