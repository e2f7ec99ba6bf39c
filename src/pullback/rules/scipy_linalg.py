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


if linalg is not None:
    register()
