"""Derivatives of ``scipy.linalg`` solvers (registered only when SciPy is installed).

solve_triangular, cho_solve.  Conventions are those of :mod:`.linalg`; the
helpers are written against the array API namespace of their inputs.

Both solvers read one triangle of their matrix argument (and
``solve_triangular(unit_diagonal=True)`` not even its diagonal): the cotangent
of the matrix is zero outside what is read, so it is the exact derivative of
what SciPy computes.  ``b`` is a vector when it is 1-D, a matrix (or a stack of
matrices) otherwise.  ``cho_solve`` takes ``(c, lower)`` as one argument; its
cotangent is the pair ``[cotangent of c, None]``.
"""
from __future__ import annotations

import array_api_compat

try:
    from scipy import linalg
except ImportError:     # pragma: no cover - SciPy is an optional extra: no rules for it then
    linalg = None

from .elementwise import as_array, namespace, unbroadcast
from .registry import defrule
from .tangents import deftangent

__all__ = ["solve_triangular_vjp_a", "solve_triangular_vjp_b", "cho_solve_vjp_c",
           "cho_solve_vjp_b"]


def _mT(xp, x):
    return xp.matrix_transpose(x)


def _triangle_mask(xp, n, like, lower, strict=False):
    dev = array_api_compat.device(like)
    rows = xp.expand_dims(xp.arange(n, device=dev), axis=1)
    cols = xp.expand_dims(xp.arange(n, device=dev), axis=0)
    if strict:
        return rows > cols if lower else rows < cols
    return rows >= cols if lower else rows <= cols


def _as_matrix(xp, v, vector):
    return xp.expand_dims(v, axis=-1) if vector else v


# ---------------------------------------------------------------------------
# solve_triangular: x = op(T)^-1 b with T the triangle read and op = transpose or not

def _transposed(trans) -> bool:
    if trans in (0, "N", "n"):
        return False
    if trans in (1, 2, "T", "t", "C", "c"):
        return True
    raise ValueError(f"solve_triangular: invalid trans {trans!r}")


def _triangular_parts(g, ans, a, b, trans, lower, unit_diagonal):
    xp = namespace(g, a, b)
    A = as_array(xp, a, g, b)
    B = as_array(xp, b, A)
    vector = B.ndim == 1
    keep = _triangle_mask(xp, A.shape[-1], A, lower, strict=unit_diagonal)
    T = xp.where(keep, A, xp.zeros_like(A))
    if unit_diagonal:
        T = T + xp.eye(A.shape[-1], dtype=A.dtype, device=array_api_compat.device(A))
    op = _mT(xp, T) if _transposed(trans) else T
    G = _as_matrix(xp, as_array(xp, g, A), vector)
    gb = xp.linalg.solve(_mT(xp, op), G)        # the cotangent of b, as a matrix
    return xp, A, B, keep, vector, gb, _as_matrix(xp, as_array(xp, ans, A), vector)


def solve_triangular_vjp_b(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    """Cotangent of ``b`` in ``x = solve_triangular(a, b, trans, lower, unit_diagonal)``:
    ``op(T)^-T g``."""
    xp, _, B, _, vector, gb, _ = _triangular_parts(g, ans, a, b, trans, lower, unit_diagonal)
    return xp.reshape(gb, tuple(B.shape)) if vector else unbroadcast(gb, B)


def solve_triangular_vjp_a(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    """Cotangent of ``a``: ``-gb x^T`` (transposed for ``trans``), on the triangle read."""
    xp, A, _, keep, _, gb, X = _triangular_parts(g, ans, a, b, trans, lower, unit_diagonal)
    ct = -(gb @ _mT(xp, X))
    if _transposed(trans):
        ct = _mT(xp, ct)
    return unbroadcast(xp.where(keep, ct, xp.zeros_like(ct)), A)


# ---------------------------------------------------------------------------
# cho_solve: x = (L L^T)^-1 b, or (U^T U)^-1 b

def _cho_parts(g, ans, c_and_lower, b):
    c, lower = c_and_lower
    xp = namespace(g, c, b)
    C = as_array(xp, c, g, b)
    B = as_array(xp, b, C)
    vector = B.ndim == 1
    keep = _triangle_mask(xp, C.shape[-1], C, lower)
    F = xp.where(keep, C, xp.zeros_like(C))
    A = F @ _mT(xp, F) if lower else _mT(xp, F) @ F
    gb = xp.linalg.solve(A, _as_matrix(xp, as_array(xp, g, C), vector))
    return xp, C, B, F, keep, lower, vector, gb, _as_matrix(xp, as_array(xp, ans, C), vector)


def cho_solve_vjp_b(g, ans, c_and_lower, b):
    """Cotangent of ``b`` in ``x = cho_solve((c, lower), b)``: ``cho_solve((c, lower), g)``."""
    xp, _, B, _, _, _, vector, gb, _ = _cho_parts(g, ans, c_and_lower, b)
    return xp.reshape(gb, tuple(B.shape)) if vector else unbroadcast(gb, B)


def cho_solve_vjp_c(g, ans, c_and_lower, b):
    """Cotangent of ``(c, lower)``: ``[(ga + ga^T) L or U (ga + ga^T), None]`` on the
    triangle read, with ``ga = -gb x^T`` the cotangent of the matrix ``L L^T``."""
    xp, C, _, F, keep, lower, _, gb, X = _cho_parts(g, ans, c_and_lower, b)
    ga = -(gb @ _mT(xp, X))
    sym = ga + _mT(xp, ga)
    ct = sym @ F if lower else F @ sym
    return [unbroadcast(xp.where(keep, ct, xp.zeros_like(ct)), C), None]


# ---------------------------------------------------------------------------
# Tangents: dx = -op(T)^-1 op(dT) x, and for cho_solve dx = -A^-1 dA x

def solve_triangular_jvp_a(t, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    """Tangent of ``x = solve_triangular(a, b, ...)`` along ``t`` in ``a``, of which only
    the triangle read (without its diagonal for ``unit_diagonal``) counts."""
    xp = namespace(t, a)
    A = as_array(xp, a, t)
    T = as_array(xp, t, A)
    dT = xp.where(_triangle_mask(xp, A.shape[-1], A, lower, strict=unit_diagonal), T,
                  xp.zeros_like(T))
    X = as_array(xp, ans, A)
    vector = X.ndim == 1
    rhs = (_mT(xp, dT) if _transposed(trans) else dT) @ _as_matrix(xp, X, vector)
    dx = -linalg.solve_triangular(A, rhs, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    return xp.reshape(dx, tuple(X.shape)) if vector else dx


def cho_solve_jvp_c(t, ans, c_and_lower, b):
    """Tangent of ``x = cho_solve((c, lower), b)`` along ``t`` (the pair's tangent, its
    first item the factor's) in the factor, of which only the triangle read counts."""
    c, lower = c_and_lower
    xp = namespace(c, b)
    C = as_array(xp, c, b)
    keep = _triangle_mask(xp, C.shape[-1], C, lower)
    F = xp.where(keep, C, xp.zeros_like(C))
    dF = xp.where(keep, as_array(xp, t[0], C), xp.zeros_like(C))
    dA = dF @ _mT(xp, F) + F @ _mT(xp, dF) if lower else _mT(xp, dF) @ F + _mT(xp, F) @ dF
    X = as_array(xp, ans, C)
    vector = X.ndim == 1
    dx = -linalg.cho_solve((C, lower), dA @ _as_matrix(xp, X, vector))
    return xp.reshape(dx, tuple(X.shape)) if vector else dx


# ---------------------------------------------------------------------------
# Registrations

def register():
    """Register the rules of this module (when SciPy is installed)."""
    defrule(linalg.solve_triangular, "a, b, trans=0, lower=False, unit_diagonal=False, "
            "overwrite_b=False, check_finite=True", result="any",
            a="solve_triangular_vjp_a(g, ans, a, b, trans, lower, unit_diagonal)",
            b="solve_triangular_vjp_b(g, ans, a, b, trans, lower, unit_diagonal)")
    defrule(linalg.cho_solve, "c_and_lower, b, overwrite_b=False, check_finite=True", result="any",
            c_and_lower="cho_solve_vjp_c(g, ans, c_and_lower, b)",
            b="cho_solve_vjp_b(g, ans, c_and_lower, b)")
    deftangent(linalg.solve_triangular, shaped=True,
               a="solve_triangular_jvp_a(t, ans, a, b, trans, lower, unit_diagonal)",
               b="linalg.solve_triangular(a, t, trans, lower, unit_diagonal)")
    deftangent(linalg.cho_solve, shaped=True, c_and_lower="cho_solve_jvp_c(t, ans, c_and_lower, b)",
               b="linalg.cho_solve(c_and_lower, t)")


if linalg is not None:
    register()
