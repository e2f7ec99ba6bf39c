"""Index sets: the numbers a tangent program runs on to trace a sparsity pattern.

A tangent program is linear in its tangents: each tangent is a sum of other
tangents times coefficients computed from the primal values.  Run it with each
entry of an input's tangent replaced by the set ``{j}`` of its own index, and
every tangent it computes holds, instead of a number, the set of inputs that
number depends on: a sum is the union of its terms' sets, a coefficient times a
set is the set (also a zero coefficient: the pattern is structural, what the
program reads, not which partial derivatives happen to vanish at this point),
and a constant is the empty set.  The primal values run as they do, so each
branch goes the way it goes at this point.

:class:`IndexSet` holds a set as the bits of an int; NumPy runs whole arrays of
them (object arrays) through its ufuncs, reductions, indexing and products.
Anything that is not linear in the tangents (a product of two tangents, a
tangent compared or passed to a function that needs floats) raises TypeError:
never a set that is too small.  The tangent program's zero tangents of arrays
(:func:`zeros`), its broadcasting of tangents (:func:`fit`) and the strong-zero
products of its rules (:func:`product`, :func:`quotient`) are this module's in
a pattern program (``mode="pattern"``, :mod:`pullback.pipeline`).
"""
from __future__ import annotations

import numbers

import numpy as np


class IndexSet:
    """The set of input indices a tangent entry depends on (bit ``j`` of ``bits``)."""

    __slots__ = ("bits",)

    def __init__(self, bits: int):
        self.bits = bits

    def __add__(self, other):
        if type(other) is IndexSet:
            return IndexSet(self.bits | other.bits)
        if isinstance(other, numbers.Number):     # a constant: no dependence
            return self
        return NotImplemented       # an array: NumPy adds entry by entry

    __radd__ = __sub__ = __rsub__ = __add__

    def __mul__(self, other):
        if isinstance(other, numbers.Number):     # a coefficient, zero or not
            return self
        if type(other) is IndexSet:
            raise TypeError("a product of two tangents: the program is not linear in them")
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, numbers.Number):
            return self
        if type(other) is IndexSet:
            raise TypeError("a tangent divided by a tangent")
        return NotImplemented

    def __neg__(self):
        return self

    __pos__ = __neg__

    def conjugate(self):
        return self

    @property
    def real(self):
        return self

    def __float__(self):
        raise TypeError("a tangent's index set written into a float array")

    def __repr__(self):
        return f"IndexSet({sorted(indices(self.bits))})"


def indices(bits: int) -> list:
    """The indices of the bits set in ``bits``, ascending."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def seeds(shape) -> np.ndarray | IndexSet:
    """The tangent of an input of ``shape`` whose entry ``j`` (C order) is ``{j}``."""
    if shape == ():
        return IndexSet(1)
    return np.array([IndexSet(1 << j) for j in range(int(np.prod(shape)))],
                    dtype=object).reshape(shape)


def bits_of(entry) -> int:
    """The bits of a traced tangent entry: a set, or a number (no dependence)."""
    if type(entry) is IndexSet:
        return entry.bits
    if isinstance(entry, numbers.Number):
        return 0
    raise TypeError(f"a tangent entry of type {type(entry).__name__}")


def zeros(value):
    """The zero tangent of ``value`` in a pattern program: empty sets in its shape
    (item by item for a tuple), 0.0 for a number."""
    if isinstance(value, tuple):
        return tuple(zeros(v) for v in value)
    if isinstance(value, np.ndarray):
        out = np.empty(value.shape, dtype=object)
        out.fill(0.0)
        return out
    return 0.0


def product(u, d):
    """``u * d``: strong_zero.scaled's twin (no zero to keep: a set times a
    coefficient is the set)."""
    return u * d


def quotient(u, d):
    """``u / d``: strong_zero.divided's twin."""
    return u / d


def fit(tangent, ans):
    """A tangent broadcast to the shape of the result ``ans`` (runtime.fit's twin)."""
    shape = np.shape(ans)
    if np.shape(tangent) == shape:
        return tangent
    out = np.empty(shape, dtype=object)
    out[...] = tangent
    return out
