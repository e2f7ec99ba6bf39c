"""Calls that compiled code makes back into Python, through Numba's object mode.

Some callables are Python through and through: ``grad(f)`` called inside a
differentiated function, whose derivative runs pullback's transforms again when it
runs (:mod:`pullback.nesting`).  Under the Numba backend such a callable is called
through a stub whose Numba implementation is an object-mode block around the call,
so the derivative compiles, and each such call costs a few microseconds more (a
:class:`~pullback.core.errors.PerformanceWarning`, once per callable, says so).

Object mode needs the result's Numba type before the call.  A callable that may
be called so says what its result is like: ``fn.object_mode(n)``, for a call with
``n`` arguments, gives ``(positions, many)``, the result being one value (or a
tuple of them when ``many``) per position, each a cotangent of that argument: a
float for a number, a C-contiguous float64 array of its dimension for an array,
None for an argument that is not a float.  The block makes the value so
(``None`` from the callable is a zero).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core.errors import PerformanceWarning
from ..core.runtime import cotangent_or_zero
from ..rules import forms

_STUBS: dict = {}       # id(callable) -> (callable, its stub)


def spec(fn, nargs):
    """``fn.object_mode(nargs)`` if ``fn`` may be called through object mode, else None."""
    say = getattr(fn, "object_mode", None)
    return say(nargs) if callable(say) else None


def stub(fn):
    """The function compiled code calls for ``fn``: it calls ``fn`` from Python, and
    its Numba twin is the object-mode block."""
    hit = _STUBS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]

    def call(*args):
        return fn(*args)
    name = getattr(fn, "__name__", type(fn).__name__)
    call.__name__ = call.__qualname__ = "".join(c if c.isalnum() else "_" for c in name) \
        + "_object_mode"
    # A Hessian differentiates the tangent program that calls the stub: registry.lookup
    # follows py_func (as for a Numba dispatcher) to fn's rule.
    call.py_func = fn
    # Warned of by the name the user wrote (a helper of grad(f)'s rule says grad(f)).
    forms.numba_twin(call)(_typer(fn, getattr(fn, "object_mode_name", name)))
    _STUBS[id(fn)] = (fn, call)
    return call


def _typer(fn, name):
    def typer(*args):
        from numba import objmode, types
        positions, many = spec(fn, len(args))
        items = [_cotangent_type(args[p], types) for p in positions]
        out_type = types.Tuple(items) if many else items[0]
        warnings.warn(f"{name} runs as Python inside the compiled derivative (a Numba "
                      "object-mode block, a few microseconds per call)", PerformanceWarning)

        def impl(*args):
            with objmode(out=out_type):
                out = _made(fn(*args), args, positions, many)
            return out
        return impl
    return typer


def _cotangent_type(t, types):
    if isinstance(t, types.Array) and isinstance(t.dtype, types.Float):
        return types.Array(types.float64, t.ndim, "C")
    if isinstance(t, types.Float):
        return types.float64
    return types.none


def _made(out, args, positions, many):
    """``out`` as the block declared it: each item a float, a C-contiguous float64
    array, or None (for an argument that is not a float)."""
    items = out if many else (out,)
    return tuple(_item(v, args[p]) for v, p in zip(items, positions)) if many else \
        _item(items[0], args[positions[0]])


def _item(value, arg):
    if isinstance(arg, np.ndarray) and arg.dtype.kind == "f":
        return np.ascontiguousarray(cotangent_or_zero(value, arg), dtype=np.float64)
    if isinstance(arg, float):
        return float(cotangent_or_zero(value, arg))
    return None
