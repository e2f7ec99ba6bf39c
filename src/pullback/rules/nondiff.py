"""Primitives no derivative flows through, and the result kind of each.

Integers, booleans, indices, shapes and fresh arrays carry no derivative from
their arguments: their cotangent is zero, so the transform generates nothing
for them.  Array factories that take a differentiable value (``np.full``) have
derivative rules of their own (``rules/shapes.py``).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..core.kinds import Kind
from ..core.runtime import scan_outputs, trip_count
from . import results, twins
from .forms import numba_twin
from .registry import defnondiff, defprimitive

for _fn in (len, int, round, math.floor, math.ceil, math.trunc, math.factorial, math.comb,
            np.count_nonzero, np.searchsorted, trip_count):
    defnondiff(_fn, result=results.integer)
defnondiff(np.argmax, result=results.integer, methods=("argmax",))
defnondiff(np.argmin, result=results.integer, methods=("argmin",))

for _fn in (bool, isinstance, math.isnan, math.isinf, math.isfinite, np.isnan, np.isinf,
            np.isfinite):
    defnondiff(_fn, result=results.boolean)
defnondiff(np.any, result=results.boolean, methods=("any",))
defnondiff(np.all, result=results.boolean, methods=("all",))

# Piecewise constant, or about shapes: the kind of a ufunc's or a generic result.
for _fn in (range, np.size, np.ndim, np.argsort, np.sign, np.floor, np.ceil, np.trunc,
            np.rint, np.floor_divide, operator.floordiv):
    defnondiff(_fn)
for _fn in (np.round, np.around, np.fix):
    defnondiff(_fn, result=results.rounded)

defnondiff(np.shape, result=results.shape_of)

# Fresh arrays.
for _fn in (np.zeros, np.ones, np.empty):
    defnondiff(_fn, result=results.new_array)
for _fn in (np.zeros_like, np.ones_like, np.empty_like):
    defnondiff(_fn, result=results.like_source)
defnondiff(np.arange, result=results.sequence)
for _fn in (np.eye, np.identity):
    defnondiff(_fn, result=results.identity_matrix)



def stop_gradient(x):
    """``x`` itself: its value passes, its derivative does not (zero in both modes).

    A primitive registered as non-differentiable, so the reverse sweep sends no
    cotangent back through it and forward mode gives it a zero tangent; Numba
    compiles it as it is (it returns its argument).  Exported as
    ``pullback.stop_gradient``."""
    return x


# The result is the argument itself, so it is marked as one that may share memory.
defnondiff(stop_gradient, result=results.like, view=True)


@numba_twin(stop_gradient, always=True)
def _stop_gradient_numba(x):
    """The forward sweep's ``stop_gradient`` under Numba: the argument itself."""
    return lambda x: x

def _stacked(fn, args, kws, call):
    """``scan_outputs(n, y)``: one more axis than ``y``."""
    y = args[1] if len(args) > 1 else None
    ndim = y.ndim + 1 if y is not None and isinstance(y.ndim, int) and y.ndim >= 0 else -1
    return Kind(ndim, "f")


defnondiff(scan_outputs, result=_stacked)


@numba_twin(scan_outputs, always=True)
def _scan_outputs_numba(n, y):
    """Zeros of shape ``(n,) + y.shape``; a None ``y`` is refused where Numba types it."""
    if twins.is_array(y):
        return lambda n, y: np.zeros((n,) + y.shape)
    if twins.is_number(y):
        return lambda n, y: np.zeros(n)
    return None


# Views made by functions and methods that have no derivative rule yet.
defprimitive(np.ndarray.view, result=results.unknown, view=True, methods=("view",))
