"""Derivative of ``np.gradient``: central differences in the interior, one-sided
ones (first or second order) at the ends, along each axis asked for.

``np.gradient`` is linear in ``f``: along an axis of ``n`` points each result
entry is a weighted sum of at most three neighbouring entries of ``f``, with
weights set by the spacing (a number, or the coordinates of the points).
:func:`_weights` gives those weights as NumPy computes them, and the cotangent
of ``f`` adds each weight times ``g`` back onto the entry it weighed (the
transposed operator), built from slices and concatenations (no scalar indexing,
array API).  With a number ``h`` as spacing every weight is ``1/h`` times a
constant, so the cotangent of ``h`` is ``-sum(g * result) / h``; the cotangent
of coordinates raises NotImplementedError.  Conventions are those of
:mod:`pullback.rules.elementwise`; no Numba twin (refused under ``jit=True``).
"""
from __future__ import annotations

import ast

import numpy as np

from ..core.kinds import OTHER, Kind
from .elementwise import as_array, device_of, float_dtype, like_arg, namespace, shape_of
from .joining import item_cotangents
from .registry import defrule
from .tangents import deftangent

__all__ = ["gradient_vjp", "gradient_vjp_spacing"]


def _axes(axis, ndim) -> list:
    if axis is None:
        return list(range(ndim))
    return [int(a) % ndim for a in (axis if isinstance(axis, (tuple, list)) else [axis])]


def _spacings(varargs, n_axes) -> list:
    """One spacing per axis: ``None`` for 1, else a number or a coordinate array."""
    if not varargs:
        return [None] * n_axes
    if len(varargs) == 1 and n_axes > 1:
        return list(varargs) * n_axes
    if len(varargs) != n_axes:
        raise TypeError(f"np.gradient: {len(varargs)} spacings given for {n_axes} axes")
    return list(varargs)


def _is_number(h) -> bool:
    return h is None or np.ndim(h) == 0


def _weights(xp, h, edge_order, like):
    """The weights along one axis: ``(lo, mid, hi)`` of the interior
    rows (weights of ``f[i-1]``, ``f[i]``, ``f[i+1]``, each a number or an array of
    ``n - 2``), and the weights of the first and of the last row on their 2 or 3
    nearest points (first row on ``f[0], f[1], ...``, last on ``..., f[-2], f[-1]``)."""
    if _is_number(h):
        s = 1.0 if h is None else h
        first = (-1.0 / s, 1.0 / s) if edge_order == 1 else (-1.5 / s, 2.0 / s, -0.5 / s)
        last = (-1.0 / s, 1.0 / s) if edge_order == 1 else (0.5 / s, -2.0 / s, 1.5 / s)
        return (-0.5 / s, 0.0, 0.5 / s), first, last
    x = as_array(xp, h, like)
    dx = x[1:] - x[:-1]
    d1, d2 = dx[:-1], dx[1:]
    inner = (-d2 / (d1 * (d1 + d2)), (d2 - d1) / (d1 * d2), d1 / (d2 * (d1 + d2)))
    if edge_order == 1:
        return inner, (-1.0 / dx[0], 1.0 / dx[0]), (-1.0 / dx[-1], 1.0 / dx[-1])
    a, b = dx[0], dx[1]
    first = (-(2.0 * a + b) / (a * (a + b)), (a + b) / (a * b), -a / (b * (a + b)))
    a, b = dx[-2], dx[-1]
    last = (b / (a * (a + b)), -(a + b) / (a * b), (2.0 * b + a) / (b * (a + b)))
    return inner, first, last


def _along(G, ax, start, stop):
    return G[(slice(None),) * ax + (slice(start, stop),)]


def _on_axis(w, ax, nd):
    """A weight: a number as it is, an array of the axis' length laid along ``ax``."""
    if np.ndim(w) == 0:
        return w
    return w.reshape((1,) * ax + (-1,) + (1,) * (nd - ax - 1))


def _transposed(xp, G, ax, h, edge_order):
    """The cotangent of ``f`` from the cotangent ``G`` of its differences along ``ax``."""
    n, nd = G.shape[ax], G.ndim
    (lo, mid, hi), first, last = _weights(xp, h, edge_order, G)

    def zeros(k):
        return xp.zeros(G.shape[:ax] + (k,) + G.shape[ax + 1:], dtype=G.dtype, device=device_of(G))

    inner = _along(G, ax, 1, n - 1)
    parts = [xp.concat([_on_axis(lo, ax, nd) * inner, zeros(2)], axis=ax),
             xp.concat([zeros(1), _on_axis(mid, ax, nd) * inner, zeros(1)], axis=ax),
             xp.concat([zeros(2), _on_axis(hi, ax, nd) * inner], axis=ax)]
    g0, g_end = _along(G, ax, 0, 1), _along(G, ax, n - 1, n)
    k = len(first)
    parts.append(xp.concat([w * g0 for w in first] + [zeros(n - k)], axis=ax))
    parts.append(xp.concat([zeros(n - k)] + [w * g_end for w in last], axis=ax))
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def _cotangents(g, f, axes):
    """``g`` as one cotangent array per axis (zeros where nothing reached it)."""
    xp = namespace(g, f)
    F = as_array(xp, f, g)
    dtype = float_dtype(xp, F, g)
    F = xp.astype(F, dtype) if F.dtype != dtype else F
    if len(axes) == 1:
        return xp, [as_array(xp, g, F)]
    return xp, item_cotangents(xp, g, [F] * len(axes))


def gradient_vjp(g, f, axis, edge_order, *varargs):
    """Cotangent of ``f`` in ``np.gradient(f, *varargs, axis=axis, edge_order=edge_order)``."""
    nd = len(shape_of(f))
    axes = _axes(axis, nd)
    xp, gs = _cotangents(g, f, axes)
    out = None
    for G, ax, h in zip(gs, axes, _spacings(varargs, len(axes))):
        ct = _transposed(xp, G, ax, h, edge_order)
        out = ct if out is None else out + ct
    return like_arg(out, f)


def gradient_vjp_spacing(g, ans, k, f, axis, edge_order, *varargs):
    """Cotangent of spacing ``k`` (a number ``h``: the results along its axes are
    ``1/h`` times differences, so it is ``-sum(g * result) / h``)."""
    h = varargs[k]
    if not _is_number(h):
        raise NotImplementedError("the derivative of np.gradient with respect to coordinate "
                                  "arrays is not implemented; pass the coordinates as constants")
    axes = _axes(axis, len(shape_of(f)))
    xp, gs = _cotangents(g, f, axes)
    results = [ans] if len(axes) == 1 else list(ans)
    mine = range(len(axes)) if len(varargs) == 1 else [k]
    total = 0.0
    for i in mine:
        total = total + xp.sum(gs[i] * results[i])
    return -total / h


def gradient_result(fn, args, kws, call) -> Kind:
    """One float array of ``f``'s rank along one axis, else a tuple of them (one per
    axis); not known when the axes are not constants."""
    nd = args[0].ndim if args else None
    if nd is None or nd < 1:
        return OTHER
    given = [k.value for k in call.keywords if k.arg == "axis"]
    if not given:
        n = nd
    elif isinstance(given[0], ast.Constant) and isinstance(given[0].value, int):
        n = 1
    else:
        return OTHER
    return Kind(nd, "f") if n == 1 else Kind(None, "o", (Kind(nd, "f"),) * n)


defrule(np.gradient, "f, *varargs, axis=None, edge_order=1", result=gradient_result,
        f="gradient_vjp(g, f, axis, edge_order, *varargs)",
        varargs="gradient_vjp_spacing(g, ans, k, f, axis, edge_order, *varargs)")
# Linear in f (the spacings, differentiated, have no tangent yet: refused).
deftangent(np.gradient, linear="f")
