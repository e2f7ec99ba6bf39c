"""Forward mode's tangents of the decompositions (rules/decompositions.py has their
derivatives): cholesky, eigh, svd and pinv, each on the triangle or symmetric matrix
its derivative rule reads, so that ``<g, J v> = <J^T g, v>`` holds with it.

Where the derivative rule refuses (repeated eigen- or singular values make the
factors non-differentiable; ``svd(..., full_matrices=True)`` of a non-square matrix
has arbitrary extra columns; ``pinv`` that cut off a singular value), these divide
by the same zero or refuse the same way.
"""
from __future__ import annotations

import array_api_compat
import numpy as np

from .decompositions import (
    _check_nothing_cut,
    _mT,
    _off_diagonal_inverse,
    symmetric_from_lower,
)
from .elementwise import as_array, namespace
from .tangents import deftangent

__all__ = ["cholesky_jvp", "eigh_jvp", "svd_jvp", "pinv_jvp"]


def cholesky_jvp(t, ans, a, upper=False):
    """Tangent of ``L = np.linalg.cholesky(a)`` along ``t``: ``L Phi(L^-1 S L^-T)``, ``S``
    the symmetric matrix the triangle read of ``t`` stands for (the convention of
    :func:`cholesky_vjp`), ``Phi`` the lower triangle with the diagonal halved."""
    xp = namespace(t, a)
    L = as_array(xp, ans, a)
    T = as_array(xp, t, L)
    if upper:       # U = L^T, and the upper triangle of t is the lower one of t^T
        L, T = _mT(xp, L), _mT(xp, T)
    X = xp.linalg.solve(L, symmetric_from_lower(xp, T))     # L^-1 S
    M = _mT(xp, xp.linalg.solve(L, _mT(xp, X)))             # L^-1 S L^-T (symmetric)
    n = M.shape[-1]
    dev = array_api_compat.device(M)
    rows = xp.expand_dims(xp.arange(n, device=dev), axis=1)
    cols = xp.expand_dims(xp.arange(n, device=dev), axis=0)
    dL = L @ xp.where(rows > cols, M, xp.where(rows == cols, 0.5 * M, xp.zeros_like(M)))
    return _mT(xp, dL) if upper else dL


def eigh_jvp(t, ans, a, UPLO="L"):
    """Tangent of ``w, v = np.linalg.eigh(a, UPLO)`` along ``t`` (its triangle ``UPLO``
    read, as :func:`eigh_vjp`): ``P = v^T S v``, ``dw = diag(P)``, ``dv = v (F * P)``."""
    xp = namespace(a, t)
    w, v = ans
    T = as_array(xp, t, v)
    S = symmetric_from_lower(xp, T if str(UPLO).upper() == "L" else _mT(xp, T))
    P = _mT(xp, v) @ S @ v
    gaps = xp.expand_dims(w, axis=-2) - xp.expand_dims(w, axis=-1)     # w_j - w_i
    return xp.linalg.diagonal(P), v @ (_off_diagonal_inverse(xp, gaps) * P)


def svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """Tangent of ``np.linalg.svd(a, ...)`` along ``t`` (Townsend 2016, forwards): with
    ``P = u^T da v``, ``ds = diag(P)``, ``du = u (F * (P S + S P^T)) + (I - u u^T) da v / s``
    and ``dv = v (F * (S P + P^T S)) + (I - v v^T) da^T u / s``, ``F_ij = 1 / (s_j^2 - s_i^2)``."""
    xp = namespace(a, t)
    A = as_array(xp, a, t)
    T = as_array(xp, t, A)
    if hermitian:       # the symmetric matrices the lower triangles stand for, as svd_vjp
        A, T = symmetric_from_lower(xp, A), symmetric_from_lower(xp, T)
    if not compute_uv:
        u, s, vt = xp.linalg.svd(A, full_matrices=False)
    else:
        u, s, vt = ans
        if full_matrices and u.shape[-1] != vt.shape[-2]:
            raise NotImplementedError(
                "the tangent of u or vh from np.linalg.svd(a, full_matrices=True) of a "
                "non-square matrix is not defined (its extra columns are arbitrary): use "
                "full_matrices=False")
    v = _mT(xp, vt)
    P = _mT(xp, u) @ T @ v
    ds = xp.linalg.diagonal(P)
    if not compute_uv:
        return ds
    s_row, s_col = xp.expand_dims(s, axis=-2), xp.expand_dims(s, axis=-1)
    F = _off_diagonal_inverse(xp, s_row * s_row - s_col * s_col)
    du = u @ (F * (P * s_row + s_col * _mT(xp, P)))
    dv = v @ (F * (s_col * P + _mT(xp, P) * s_row))
    # The parts outside the spans of u and v (a non-square matrix): zero for square ones.
    du = du + (T @ v - u @ P) / s_row
    dv = dv + (_mT(xp, T) @ u - v @ _mT(xp, P)) / s_row
    return du, ds, _mT(xp, dv)


def pinv_jvp(t, ans, a, hermitian=False):
    """Tangent of ``x = np.linalg.pinv(a)`` along ``t``:
    ``-x t x + x x^T t^T (I - a x) + (I - x a) t^T x^T x``."""
    xp = namespace(t, a)
    A = as_array(xp, a, t)
    T = as_array(xp, t, A)
    if hermitian:
        A, T = symmetric_from_lower(xp, A), symmetric_from_lower(xp, T)
    X = as_array(xp, ans, A)
    Xt, Tt = _mT(xp, X), _mT(xp, T)
    _check_nothing_cut(xp, A, Xt)
    left = (X @ Xt) @ Tt
    right = Tt @ (Xt @ X)
    return -(X @ T @ X) + (left - (left @ A) @ X) + (right - X @ (A @ right))


deftangent(np.linalg.cholesky, shaped=True, a="cholesky_jvp(t, ans, a, upper)")
deftangent(np.linalg.eigh, shaped=True, a="eigh_jvp(t, ans, a, UPLO)")
deftangent(np.linalg.svd, shaped=True,
           a="svd_jvp(t, ans, a, full_matrices, compute_uv, hermitian)")
deftangent(np.linalg.pinv, shaped=True, a="pinv_jvp(t, ans, a, hermitian)")
