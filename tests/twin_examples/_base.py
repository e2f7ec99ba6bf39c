"""What an example is made of: calls, and random arrays of a dtype and drawn shape."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Call:
    """One call of a target: positional and keyword arguments."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    known_bug: str = ""     # why the twin is known to fail this call (it must still fail)


def call(*args, **kwargs) -> Call:
    return Call(args, kwargs)


def known_bug(reason: str, c: Call) -> Call:
    """``c``, which the twin is known to get wrong or refuse wrongly (checked to still fail)."""
    c.known_bug = reason
    return c


def upcasts(dt, c: Call) -> Call:
    """``c``, marked a known bug in float32: the twin returns float64 there."""
    return known_bug("the twin returns float64 for float32", c) if dt == np.float32 else c


@dataclass
class Xfail:
    """An example whose twin is known to disagree with its target (strict xfail)."""
    make: object
    reason: str
    dtypes: tuple = (np.dtype(np.float64), np.dtype(np.float32))   # the dtypes it fails in


def sizes(rng, n: int) -> tuple:
    """``n`` random dimension sizes (2 to 5)."""
    return tuple(int(s) for s in rng.integers(2, 6, size=n))


def arr(rng, dtype, shape, lo=None, hi=None):
    """A random array of ``shape`` (normal, or uniform in [lo, hi))."""
    if lo is None:
        return rng.standard_normal(shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


def num(rng, dtype, lo=-1.0, hi=1.0):
    """A random number of ``dtype`` (a NumPy scalar, as a 0-d result would be)."""
    return dtype(rng.uniform(lo, hi))


def like(rng, value):
    """A random cotangent shaped as ``value`` (a number for a number)."""
    v = np.asarray(value)
    if v.ndim == 0:
        return v.dtype.type(rng.standard_normal())
    return rng.standard_normal(v.shape).astype(v.dtype)


def spd(rng, dtype, n):
    """A well-conditioned symmetric positive definite matrix."""
    m = rng.standard_normal((n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


def square(rng, dtype, n):
    """A well-conditioned square matrix."""
    return (rng.standard_normal((n, n)) + n * np.eye(n)).astype(dtype)
