"""Derivatives of ``np.polyval`` and its compiled twins (Numba has no ``np.polyval``).

``polyval(p, x) = p[0]*x**(n-1) + ... + p[n-1]``, evaluated by Horner's rule.
"""
from __future__ import annotations

import numpy as np

from . import twins
from .elementwise import (  # noqa: F401 - unbroadcast: named by a template below
    as_array,
    float_dtype,
    like_arg,
    namespace,
    shape_of,
    unbroadcast,
)
from .forms import numba_twin
from .registry import defrule
from .tangents import deftangent

__all__ = ["polyval_vjp_p", "polyval_vjp_x"]


# Both cotangents use one pass over the n coefficients, each step vectorized over
# x: O(n) work per element of x and O(size of x) memory (no n-by-size matrix).
# The loop is over coefficients, not elements; p[i] stays a 0-d device array.

def polyval_vjp_x(g, p, x):
    """Cotangent of ``x``: ``g * p'(x)``, with ``p'`` evaluated by Horner's rule."""
    xp = namespace(p, x, g)
    pa, xa = as_array(xp, p, x, g), as_array(xp, x, p, g)
    n = pa.shape[0]
    deriv = xp.zeros_like(xa, dtype=float_dtype(xp, xa, pa))
    for i in range(n - 1):          # coefficient i multiplies x**(n-1-i)
        deriv = deriv * xa + (n - 1 - i) * pa[i]
    return like_arg(g * deriv, x)


def polyval_vjp_p(g, p, x):
    """Cotangent of ``p``: ``dp[i] = sum(g * x**(n-1-i))``, built from the last coefficient up."""
    xp = namespace(p, x, g)
    pa, xa = as_array(xp, p, x, g), as_array(xp, x, p, g)
    n = pa.shape[0]
    ga = xp.broadcast_to(as_array(xp, g, xa), np.broadcast_shapes(shape_of(xa), shape_of(g)))
    w = ga                      # g * x**k for k = 0, 1, ...
    parts = []
    for _ in range(n):
        parts.append(xp.sum(w))
        w = w * xa
    parts.reverse()             # dp[n-1] pairs with x**0
    return xp.stack(parts) if n else xp.zeros((0,), dtype=float_dtype(xp, xa))


defrule(np.polyval, "p, x", result="any", p="polyval_vjp_p(g, p, x)", x="polyval_vjp_x(g, p, x)")
# Linear in the coefficients; in x the Jacobian is diagonal, p'(x), as polyval_vjp_x's.
deftangent(np.polyval, p="np.polyval(t, x)", x="polyval_vjp_x(t, p, x)")


# polyval_vjp_x again (Hessians: polyval's tangent in x calls it).  c p'(x) is linear in
# c; in x it is c p''(x), polyval_vjp_x of the derivative's coefficients; in p it is
# the transpose of taking the derivative's coefficients, (n-1-i) p_i, applied to
# polyval_vjp_p's weights.

def derivative_coefficients(p):
    """The coefficients of p' (``np.polyder``, but of length ``n - 1`` for every ``n``)."""
    xp = namespace(p)
    pa = as_array(xp, p)
    n = pa.shape[0]
    return pa[:-1] * xp.astype(xp.arange(n - 1, 0, -1), pa.dtype) if n > 1 else pa[:0]


def polyval_vjp_x_vjp_p(g, c, p, x):
    """Cotangent of ``p`` in ``polyval_vjp_x(c, p, x) = c p'(x)``."""
    xp = namespace(p, x, g)
    pa = as_array(xp, p, x, g)
    n = pa.shape[0]
    if n < 2:
        return xp.zeros_like(pa)
    weights = polyval_vjp_p(g * c, pa[:-1], x)      # those of p's derivative's coefficients
    scaled = weights * xp.astype(xp.arange(n - 1, 0, -1), weights.dtype)
    return xp.concat([scaled, xp.zeros_like(pa[:1])])


defrule(polyval_vjp_x, "c, p, x", result="any", c="unbroadcast(polyval_vjp_x(g, p, x), c)",
        p="polyval_vjp_x_vjp_p(g, c, p, x)",
        x="unbroadcast(polyval_vjp_x(g * c, derivative_coefficients(p), x), x)")
deftangent(polyval_vjp_x, c="polyval_vjp_x(t, p, x)",
           p="polyval_vjp_x(c, t, x)",
           x="polyval_vjp_x(c * t, derivative_coefficients(p), x)")


# Numba twins of polyval (Numba has no np.polyval): the same Horner steps in the same
# order as NumPy and the rules above, for coefficients in a vector (or a tuple of
# numbers, as a list literal reaches Numba) and a number or an array of any rank x.

def _real(t) -> bool:
    from numba import types
    dtype = t.dtype if isinstance(t, types.Array) else t
    return isinstance(dtype, (types.Integer, types.Float, types.Boolean))


def _coefficients(p):
    """A compiled ``f(p)``: the coefficients ``p`` as a vector, or None for other types."""
    if twins.is_array(p, 1) and _real(p):
        return twins.jitted(lambda p: p)
    if twins.is_tuple(p) and all(twins.is_number(t) and _real(t) for t in p.types):
        from numba import literal_unroll, njit
        n = len(p.types)

        def f(p):
            c = np.empty(n)
            i = 0
            for v in literal_unroll(p):     # the numbers may differ in type
                c[i] = v
                i += 1
            return c
        return njit(f)          # not inlined: Numba unrolls only in a function it compiles
    return None


def _polyval_args(p, x):
    """The compiled coefficients of ``p``; refuses what the twins have no code for."""
    coeffs = _coefficients(p)
    if coeffs is None or not (twins.is_number(x) or twins.is_array(x)) or not _real(x):
        twins.unsupported(f"np.polyval of coefficients of type {p} at x of type {x}")
    return coeffs


@numba_twin(np.polyval, always=True)
@twins.keeps_dtype("p", "x")
def _polyval_numba(p, x):
    coeffs = _polyval_args(p, x)
    if twins.is_number(x):
        def number(p, x):
            c = coeffs(p)
            y = 0.0
            for i in range(c.shape[0]):
                y = y * x + c[i]
            return y
        return number

    def array(p, x):
        c = coeffs(p)
        y = np.zeros(x.shape)
        for i in range(c.shape[0]):
            y = y * x + c[i]
        return y
    return array


@numba_twin(polyval_vjp_x)
@twins.keeps_dtype("x")
def _polyval_vjp_x_numba(g, p, x):
    coeffs = _polyval_args(p, x)
    if twins.is_number(x):
        def number(g, p, x):
            c = coeffs(p)
            n = c.shape[0]
            deriv = 0.0
            for i in range(n - 1):
                deriv = deriv * x + (n - 1 - i) * c[i]
            return g * deriv
        return number

    def array(g, p, x):
        c = coeffs(p)
        n = c.shape[0]
        deriv = np.zeros(x.shape)
        for i in range(n - 1):
            deriv = deriv * x + (n - 1 - i) * c[i]
        return g * deriv
    return array


@numba_twin(polyval_vjp_p)
@twins.keeps_dtype("p")
def _polyval_vjp_p_numba(g, p, x):
    coeffs = _polyval_args(p, x)
    if twins.is_number(x) and twins.is_number(g):
        def number(g, p, x):
            n = coeffs(p).shape[0]
            out = np.empty(n)
            w = g * 1.0
            for k in range(n):
                out[n - 1 - k] = w
                w = w * x
            return out
        return number
    if not twins.is_array(x):
        return None

    def array(g, p, x):
        n = coeffs(p).shape[0]
        out = np.empty(n)
        w = np.zeros(x.shape) + g           # g * x**k, k = 0, 1, ...
        for k in range(n):
            out[n - 1 - k] = np.sum(w)
            w = w * x
        return out
    return array
