"""SciPy's private array-API plumbing (``scipy._lib``), which its Python functions call.

SciPy's own Python functions (``scipy.optimize.rosen``) are inlined: the frontend
reads and differentiates their source (the policy is written down in
:mod:`pullback.frontend.resolve`).  ``scipy._lib`` is not inlined; what those
functions call from it to pick an array namespace or to check and convert their
arguments is registered here:

* Namespace pickers (:func:`~.registry.defnamespace`): ``array_namespace`` (and
  the vendored ``array_api_compat``'s).  For the values pullback differentiates
  (NumPy arrays and Python floats) they return NumPy, so the frontend binds
  ``xp = array_namespace(x)`` to NumPy when transforming and ``xp.sum`` is
  ``np.sum``, with its rule.
* Conversions the derivative passes through unchanged (an identity on the
  values, in the argument's own shape and dtype): ``xp_promote`` (type
  promotion, optionally broadcasting), ``_asarray``, ``xp_copy``, ``xp_ravel``,
  ``atleast_nd``.

These are private SciPy names, so each is looked up where it lives today and
skipped if a SciPy version does not have it; a missing one is then a primitive
without a rule, refused with a MissingRuleError, never a wrong derivative.
"""
from __future__ import annotations

import ast
import importlib

import numpy as np

from ..core.kinds import OTHER, Kind
from ..core.runtime import item_cotangent
from . import results, twins
from .elementwise import unbroadcast
from .forms import numba_twin
from .registry import defnamespace, defrule
from .shapes import array_vjp, astype_vjp, reshape_vjp
from .tangents import deftangent

__all__ = ["conversion_vjp", "promote_vjp", "reshape_vjp"]

# Positional slots of xp_promote(*args, ...) that may carry a derivative.
_PROMOTE_SLOTS = 8


def conversion_vjp(g, x):
    """Cotangent of ``x`` in a conversion of ``x`` to an array (``_asarray(x, dtype)``,
    ``xp_copy``): ``g`` in ``x``'s form (a list's items, a scalar, its float dtype)."""
    if isinstance(x, (list, tuple)):
        return array_vjp(g, x)
    return astype_vjp(g, x)


def promote_vjp(g, ans, x, k):
    """Cotangent of the ``k``-th argument ``x`` of ``xp_promote(...)``: item ``k`` of
    ``g`` when the result is a tuple, summed over what broadcasting added."""
    if isinstance(ans, tuple):
        g = item_cotangent(g, k)
    return conversion_vjp(unbroadcast(g, x), x)


def promoted(fn, args, kws, call) -> Kind:
    """``xp_promote(x, ...)``: one argument comes back as an array of its rank (a
    float one with ``force_floating=True``); several come back as a tuple."""
    if len(args) != 1:
        return OTHER
    first = args[0]
    forced = any(k.arg == "force_floating" and isinstance(k.value, ast.Constant)
                 and k.value.value is True for k in call.keywords)
    if first.ndim is None or first.dtype not in "bif":
        return Kind(-1, "f")
    return Kind(first.ndim, "f" if first.dtype == "f" or forced else first.dtype)


def _lookup(path: str):
    """The object at ``module:attribute``, or None when this SciPy has no such thing."""
    module, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module), attr, None)
    except ImportError:
        return None


_NAMESPACE_PICKERS = ("scipy._lib._array_api:array_namespace",
                      "scipy._lib.array_api_compat:array_namespace",
                      "array_api_compat:array_namespace")


def register_pickers():
    """Register the namespace pickers there are (array_api_compat's always)."""
    seen = set()
    for path in _NAMESPACE_PICKERS:
        fn = _lookup(path)
        if fn is not None and id(fn) not in seen:
            seen.add(id(fn))
            defnamespace(fn)


def register():
    """Register the conversions of ``scipy._lib`` that this SciPy has."""
    promote = _lookup("scipy._lib._array_api:xp_promote")
    if promote is not None:
        slots = [f"a{k}" for k in range(_PROMOTE_SLOTS)]
        defrule(promote, "a0, " + ", ".join(f"{s}=None" for s in slots[1:])
                + ", *, broadcast=False, force_floating=False, xp=None", result=promoted,
                **{s: f"promote_vjp(g, ans, {s}, {k})" for k, s in enumerate(slots)})
        deftangent(promote, linear=", ".join(slots))
    asarray = _lookup("scipy._lib._array_api:_asarray")
    if asarray is not None:
        defrule(asarray, "array, dtype=None, order=None, copy=None, *, xp=None, "
                "check_finite=False, subok=False", result=results.like_source, view=True,
                array="conversion_vjp(g, array)")
        deftangent(asarray, linear="array")
    copy = _lookup("scipy._lib._array_api:xp_copy")
    if copy is not None:
        defrule(copy, "x, *, xp=None", result=results.like_source, x="conversion_vjp(g, x)")
        deftangent(copy, linear="x")
    ravel = _lookup("scipy._lib._array_api:xp_ravel")
    if ravel is not None:
        defrule(ravel, "x, /, *, xp=None", result=results.flat, view=True,
                x="reshape_vjp(g, x)")
        deftangent(ravel, linear="x")
    atleast = _lookup("scipy._lib.array_api_extra:atleast_nd")
    if atleast is not None:
        defrule(atleast, "x, /, *, ndim, xp=None", result=results.rank_unknown, view=True,
                x="reshape_vjp(g, x)")
        deftangent(atleast, linear="x")


def _promote_twin(a0, a1=None, a2=None, a3=None, a4=None, a5=None, a6=None, a7=None,
                  broadcast=False, force_floating=False, xp=None):
    """``xp_promote(x, ...)`` of one float array (what SciPy's functions pass it): the
    array itself; an integer array with ``force_floating``: as float64."""
    if not twins.is_array(a0) or not all(twins.is_none(a) for a in (a1, a2, a3, a4, a5, a6, a7)):
        return None
    if twins.is_float_array(a0):
        return lambda a0, a1=None, a2=None, a3=None, a4=None, a5=None, a6=None, a7=None, \
            broadcast=False, force_floating=False, xp=None: a0
    if twins.literal(force_floating) is True:
        return lambda a0, a1=None, a2=None, a3=None, a4=None, a5=None, a6=None, a7=None, \
            broadcast=False, force_floating=False, xp=None: a0.astype(np.float64)
    return None


def _promote_vjp_twin(g, ans, x, k):
    """The cotangent of the one float array ``xp_promote`` was given: ``g`` itself."""
    if twins.is_tuple(ans) or not (twins.is_float_array(x) and twins.is_float_array(g)):
        return None
    return lambda g, ans, x, k: g


register_pickers()
if _lookup("scipy:__version__") is not None:
    register()
    if _lookup("scipy._lib._array_api:xp_promote") is not None:
        numba_twin(_lookup("scipy._lib._array_api:xp_promote"), always=True)(_promote_twin)
        numba_twin(promote_vjp)(_promote_vjp_twin)
