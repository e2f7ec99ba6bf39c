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

A user's function that has a rule (``pullback.rule``) is compiled with Numba when
Numba compiles it; when Numba cannot (it calls SciPy, say), the backend declares
what its calls give (:func:`declare`): the primal's result of the kind the
transform found for it, the rule's cotangents like the call's arguments.  An item
of a declared result is a position (a cotangent like that argument) or a
:class:`~pullback.core.kinds.Kind` (a float, int or bool number or array).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core.errors import PerformanceWarning
from ..core.kinds import NUMPY_DTYPES, Kind
from ..core.names import identifier
from ..core.runtime import cotangent_or_zero
from ..rules import forms
from ..rules.twins import function_from_source

_STUBS: dict = {}       # id(callable) -> (callable, its stub)
_DECLARED: dict = {}    # id(callable) -> (callable, (items, many)): what the backend found


def spec(fn, nargs):
    """``(items, many)``, what a call of ``fn`` with ``nargs`` arguments gives, if ``fn``
    may be called through object mode, else None."""
    say = getattr(fn, "object_mode", None)
    return say(nargs) if callable(say) else _declared(fn)


def cotangents_like_arguments(many=None):
    """The ``object_mode`` of a VJP called ``(g, ans, *args)``: one cotangent per
    argument after ``g`` and ``ans``, like it; a tuple of them when ``many`` (None:
    when there are several)."""
    return lambda n: (tuple(range(2, n)), n > 3 if many is None else many)


def called_through(fn) -> bool:
    """Whether calls of ``fn`` go through object mode (it says so, or was declared)."""
    return callable(getattr(fn, "object_mode", None)) or _declared(fn) is not None


def _declared(fn):
    hit = _DECLARED.get(id(fn))
    return hit[1] if hit is not None and hit[0] is fn else None


def declare(fn, items: tuple, many: bool) -> None:
    """Call ``fn`` through object mode from now on, its result ``items``, positions
    of the arguments it is like (one, or a tuple of them when ``many``)."""
    _DECLARED[id(fn)] = (fn, (tuple(items), many))


def numba_type(kind):
    """The Numba type of a value of ``kind`` (a float, int or bool number, a C array
    of them, or a tuple of such items), or None for any other kind."""
    from numba import types
    if kind.items is not None:
        items = [numba_type(k) for k in kind.items]
        return None if None in items else types.Tuple(items)
    scalar = {"f": types.float64, "i": types.int64, "b": types.boolean}.get(kind.dtype)
    if scalar is None or kind.items is not None or kind.ndim is None or kind.ndim < 0:
        return None
    return scalar if kind.ndim == 0 else types.Array(scalar, kind.ndim, "C")


def result_kind(result, arguments):
    """The kind to declare for a call's result: ``result``, or for an array whose
    dimensions the transform does not know (a user's function without a result
    rule), that of its arguments' arrays of most dimensions, a float array (a
    result of another shape fails by name when it comes back); None if not known."""
    if result.ndim is not None and result.ndim >= 0 and result.items is None:
        return result
    if result.items is not None or result.ndim is None:
        return None
    ndims = [k.ndim for k in arguments if k.ndim is not None and k.ndim > 0]
    return Kind(max(ndims), result.dtype if result.dtype in "fib" and result.dtype else "f") \
        if ndims else None


def compiles(dispatcher, kinds) -> bool:
    """Whether Numba compiles ``dispatcher`` for arguments of these kinds (True when a
    kind has no Numba type here: Numba will say, naming the line)."""
    signature = tuple(numba_type(k) for k in kinds)
    if None in signature:
        return True
    try:
        dispatcher.compile(signature)
    except Exception:       # noqa: BLE001 - any failure of Numba's means: not compiled
        return False
    return True


def stub(fn, result=None, call_site=None):
    """The function compiled code calls for ``fn``: it calls ``fn`` from Python, and
    its Numba twin is the object-mode block.  ``result``: ``(items, many)`` for this
    call site (a primal's kind), else what ``fn`` says or was declared to give.
    ``call_site``: ``(positional count, keyword names)`` of a call with keywords,
    which the stub then takes by those names."""
    key = (id(fn), result, call_site)
    hit = _STUBS.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    name = getattr(fn, "__name__", type(fn).__name__)
    if call_site is None:
        def call(*args):
            return fn(*args)
    else:
        call = _by_name("call", call_site, ["return _fn({call})"], {"_fn": fn})
    call.__name__ = call.__qualname__ = identifier(f"{name}_object_mode")
    # A Hessian differentiates the tangent program that calls the stub: registry.lookup
    # follows py_func (as for a Numba dispatcher) to fn's rule.
    call.py_func = fn
    # Warned of by the name the user wrote (a helper of grad(f)'s rule says grad(f)).
    forms.numba_twin(call)(_typer(fn, getattr(fn, "object_mode_name", name), result, call_site))
    _STUBS[key] = (fn, call)
    return call


def _by_name(name, call_site, body, namespace, params=None):
    """``def name(a0, ..., kw, ...)``, the call site's positional parameters then its
    keywords (or ``params``); each line of ``body`` formats ``{params}`` as those
    names, ``{call}`` as ``a0, ..., kw=kw, ...`` and ``{args}`` as their tuple."""
    count, keywords = call_site
    names = [f"a{k}" for k in range(count)] + list(keywords)
    call = ", ".join([f"a{k}" for k in range(count)] + [f"{k}={k}" for k in keywords])
    lines = [line.format(params=", ".join(names), call=call,
                         args="(" + "".join(p + ", " for p in names) + ")") for line in body]
    return function_from_source(name, names if params is None else params, lines,
                                {"__name__": __name__, **namespace})


_WARNED: set = set()    # the names warned of: one warning per name and process


def _typer(fn, name, result, call_site):
    def typer(*args):
        from numba import objmode, types
        positions, many = result if result is not None else spec(fn, len(args))
        items = [_cotangent_type(args[p], types) if isinstance(p, int) else numba_type(p)
                 for p in positions]
        out_type = types.Tuple(items) if many else items[0]
        if name not in _WARNED:     # (the primal's stub and its VJP's share a name)
            _WARNED.add(name)
            warnings.warn(f"{name} runs as Python inside the compiled derivative (a Numba "
                          "object-mode block, a few microseconds per call)", PerformanceWarning)
        if call_site is not None:   # fn called with the call site's keywords, by name
            # (made by a function of its own: the object-mode block reads closure
            # variables, not globals)
            closure = {"objmode": objmode, "out_type": out_type, "_fn": fn, "_made": _made,
                       "positions": positions, "many": many}
            make = _by_name("make", call_site, [
                "def impl({params}):",
                "    with objmode(out=out_type):",
                "        out = _made(_fn({call}), {args}, positions, many)",
                "    return out",
                "return impl"], {}, params=list(closure))
            return make(*closure.values())

        def impl(*args):
            with objmode(out=out_type):
                out = _made(fn(*args), args, positions, many)
            return out
        return impl
    if call_site is None:
        return typer
    # Numba passes a call's keywords by name: the typer takes the call site's names.
    return _by_name("typer", call_site, ["return _typer(*{args})"], {"_typer": typer})


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
    made = [_item(v, p if isinstance(p, Kind) else args[p]) for v, p in zip(items, positions)]
    return tuple(made) if many else made[0]


def _item(value, arg):
    if isinstance(arg, Kind):       # a declared kind: a number or a C array of its dtype
        dtype = NUMPY_DTYPES[arg.dtype]
        if arg.ndim == 0:
            return dtype(value).item()
        out = np.ascontiguousarray(value, dtype=dtype)
        if out.ndim != arg.ndim:
            raise TypeError(f"a function called from compiled code returned an array of "
                            f"{out.ndim} dimensions where {arg.ndim} were found")
        return out
    if isinstance(arg, np.ndarray) and arg.dtype.kind == "f":
        return np.ascontiguousarray(cotangent_or_zero(value, arg), dtype=np.float64)
    if isinstance(arg, float):
        return float(cotangent_or_zero(value, arg))
    return None
