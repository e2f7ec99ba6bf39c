"""Derivatives of matrix decompositions: linalg.cholesky, eigh, svd and pinv.

Conventions are those of :mod:`pullback.rules.linalg` (stacks of matrices
broadcast; one cotangent per argument).  ``eigh`` and ``svd`` (with
``compute_uv``) return tuples: their cotangent arrives as a list with one item
per array of the result, ``0.0`` or ``None`` for an item nothing reached
(:func:`pullback.rules.joining.item_cotangents`).

What each rule assumes, and where it stops:

* **One triangle.**  ``cholesky`` (and ``eigh``, ``svd(hermitian=True)``,
  ``pinv(hermitian=True)``) read only one triangle of their input: the lower one
  (``UPLO='L'``, the default), the upper one for ``cholesky(upper=True)`` and
  ``UPLO='U'``.  The cotangent is the exact derivative of that function: zero
  on the triangle that is not read, ``G_ij + G_ji`` below (or above) the
  diagonal, where ``G`` is the cotangent of the symmetric matrix the triangle
  stands for.  For a symmetric perturbation this gives the same directional
  derivatives as the symmetric gradient ``(G + G.T) / 2`` that PyTorch and JAX
  return.
* **eigh** needs distinct eigenvalues when the eigenvectors' cotangent is used
  (the derivative of an eigenvector has ``1 / (w_j - w_i)``); the eigenvalues
  alone are differentiable anyway.
* **svd** needs distinct nonzero singular values when ``u`` or ``vh`` is used
  (``1 / (s_j**2 - s_i**2)`` and ``1 / s``).  With ``full_matrices=True`` and a
  non-square matrix, the extra columns of ``u`` (or rows of ``vh``) are not
  determined by the matrix, so a cotangent of ``u`` or ``vh`` raises
  NotImplementedError (use ``full_matrices=False``); ``s`` alone works.
* **pinv** is differentiable where the rank does not change (no singular value
  crosses the cutoff ``rcond``).
"""
from __future__ import annotations

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, namespace
from .joining import item_cotangents
from .registry import defrule, numba_twin

__all__ = ["cholesky_vjp", "eigh_vjp", "svd_vjp", "pinv_vjp", "fold_triangle",
           "symmetric_from_lower"]


def _mT(xp, x):
    return xp.matrix_transpose(x)


def _eye_mask(xp, n, like):
    return xp.eye(n, dtype=xp.bool, device=array_api_compat.device(like))


def fold_triangle(xp, G, lower=True):
    """The cotangent of a matrix of which only one triangle is read, from the
    cotangent ``G`` of the symmetric matrix it stands for: ``G_ii`` on the
    diagonal, ``G_ij + G_ji`` in the read triangle, 0 in the other."""
    n = G.shape[-1]
    dev = array_api_compat.device(G)
    rows = xp.expand_dims(xp.arange(n, device=dev), axis=1)
    cols = xp.expand_dims(xp.arange(n, device=dev), axis=0)
    inside = rows > cols if lower else rows < cols
    zero = xp.zeros_like(G)
    return xp.where(inside, G + _mT(xp, G), xp.where(rows == cols, G, zero))


def symmetric_from_lower(xp, A):
    """The symmetric matrix that the lower triangle of ``A`` stands for."""
    n = A.shape[-1]
    dev = array_api_compat.device(A)
    rows = xp.expand_dims(xp.arange(n, device=dev), axis=1)
    cols = xp.expand_dims(xp.arange(n, device=dev), axis=0)
    return xp.where(rows >= cols, A, _mT(xp, A))


def _parts(xp, g, items):
    """Each item's cotangent, or None where nothing reached it."""
    if isinstance(g, (list, tuple)):
        return [None if c is None or (not hasattr(c, "shape") and c == 0) else
                as_array(xp, c, item) for c, item in zip(g, items)]
    return item_cotangents(xp, g, items)


def _off_diagonal_inverse(xp, d):
    """``1 / d`` off the diagonal of the (..., n, n) array ``d``, 0 on it."""
    eye = _eye_mask(xp, d.shape[-1], d)
    return xp.where(eye, xp.zeros_like(d), 1.0 / xp.where(eye, xp.ones_like(d), d))


# ---------------------------------------------------------------------------
# cholesky: Murray (2016), arXiv:1602.07527

def cholesky_vjp(g, ans, a, upper=False):
    """Cotangent of ``a`` in ``L = np.linalg.cholesky(a)`` (``U = L.T`` with ``upper=True``).

    ``S = L^-T Phi(L^T g) L^-1`` with ``Phi`` the lower triangle, diagonal halved, is
    the cotangent of the symmetric input up to symmetrization; folded onto the
    triangle that is read.
    """
    xp = namespace(g, a)
    L = as_array(xp, ans, a)
    G = as_array(xp, g, L)
    if upper:
        L, G = _mT(xp, L), _mT(xp, G)
    P = _mT(xp, L) @ G
    dev = array_api_compat.device(P)
    rows = xp.expand_dims(xp.arange(P.shape[-1], device=dev), axis=1)
    cols = xp.expand_dims(xp.arange(P.shape[-1], device=dev), axis=0)
    P = xp.where(rows > cols, P, xp.where(rows == cols, 0.5 * P, xp.zeros_like(P)))
    Lt = _mT(xp, L)
    Y = xp.linalg.solve(Lt, P)                          # L^-T P
    S = _mT(xp, xp.linalg.solve(Lt, _mT(xp, Y)))        # L^-T P L^-1
    return fold_triangle(xp, 0.5 * (S + _mT(xp, S)), lower=not upper)


# ---------------------------------------------------------------------------
# eigh

def eigh_vjp(g, ans, a, UPLO="L"):
    """Cotangent of ``a`` in ``w, v = np.linalg.eigh(a, UPLO)``.

    ``G = v (diag(gw) + F * (v^T gv)) v^T`` with ``F_ij = 1 / (w_j - w_i)``,
    folded onto the triangle ``UPLO`` names.
    """
    xp = namespace(a, *ans)
    w, v = ans
    gw, gv = _parts(xp, g, (w, v))
    vt = _mT(xp, v)
    inner = xp.zeros_like(v)
    if gw is not None:
        inner = inner + xp.where(_eye_mask(xp, w.shape[-1], v), xp.expand_dims(gw, axis=-2),
                                 xp.zeros_like(v))
    if gv is not None:
        gaps = xp.expand_dims(w, axis=-2) - xp.expand_dims(w, axis=-1)     # w_j - w_i
        inner = inner + _off_diagonal_inverse(xp, gaps) * (vt @ gv)
    return fold_triangle(xp, v @ inner @ vt, lower=str(UPLO).upper() == "L")


# ---------------------------------------------------------------------------
# svd: Townsend (2016), "Differentiating the singular value decomposition"

def _svd_uv_terms(xp, u, s, vt, gu, gvt):
    """The part of the cotangent that comes from ``u`` and ``vh``, as (inner, outer):
    ``u @ inner @ vh + outer``."""
    v = _mT(xp, vt)
    s_row = xp.expand_dims(s, axis=-2)
    s_col = xp.expand_dims(s, axis=-1)
    F = _off_diagonal_inverse(xp, s_row * s_row - s_col * s_col)     # 1 / (s_j^2 - s_i^2)
    inner = xp.zeros_like(F)
    outer = 0.0
    if gu is not None:
        ut_gu = _mT(xp, u) @ gu
        inner = inner + (F * (ut_gu - _mT(xp, ut_gu))) * s_row
        gu_s = gu / s_row
        outer = outer + (gu_s - u @ (_mT(xp, u) @ gu_s)) @ vt        # (I - u u^T) gu S^-1 v^T
    if gvt is not None:
        gv = _mT(xp, gvt)
        vt_gv = vt @ gv
        inner = inner + s_col * (F * (vt_gv - _mT(xp, vt_gv)))
        s_gvt = gvt / s_col
        outer = outer + u @ (s_gvt - (s_gvt @ v) @ vt)               # u S^-1 gv^T (I - v v^T)
    return inner, outer


def svd_vjp(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """Cotangent of ``a`` in ``np.linalg.svd(a, full_matrices, compute_uv, hermitian)``."""
    xp = namespace(a, *(ans if compute_uv else (ans,)))
    A = as_array(xp, a)
    if hermitian:
        A = symmetric_from_lower(xp, A)
    if not compute_uv:
        u, s, vt = xp.linalg.svd(A, full_matrices=False)
        gs, gu, gvt = as_array(xp, g, A), None, None
    else:
        u, s, vt = ans
        gu, gs, gvt = _parts(xp, g, (u, s, vt))
        k = s.shape[-1]
        if full_matrices and u.shape[-1] != vt.shape[-2]:
            if gu is not None or gvt is not None:
                raise NotImplementedError(
                    "the derivative of u or vh from np.linalg.svd(a, full_matrices=True) of a "
                    "non-square matrix is not defined (its extra columns are arbitrary): use "
                    "full_matrices=False")
            u, vt = u[..., :, :k], vt[..., :k, :]
    inner, outer = _svd_uv_terms(xp, u, s, vt, gu, gvt)
    if gs is not None:
        inner = inner + xp.where(_eye_mask(xp, s.shape[-1], inner), xp.expand_dims(gs, axis=-2),
                                 xp.zeros_like(inner))
    ct = u @ inner @ vt + outer
    return fold_triangle(xp, ct) if hermitian else ct


# ---------------------------------------------------------------------------
# pinv: Golub and Pereyra (1973), for a matrix of constant rank

def pinv_vjp(g, ans, a, hermitian=False):
    """Cotangent of ``a`` in ``x = np.linalg.pinv(a)``:
    ``-x^T g x^T + (I - a x) g^T x x^T + x^T x g^T (I - x a)``."""
    xp = namespace(g, a)
    A = as_array(xp, a, g)
    if hermitian:
        A = symmetric_from_lower(xp, A)
    X = as_array(xp, ans, A)
    G = as_array(xp, g, A)
    Xt, Gt = _mT(xp, X), _mT(xp, G)
    left = Gt @ (X @ Xt)
    right = (Xt @ X) @ Gt
    ct = -(Xt @ G @ Xt) + (left - A @ (X @ left)) + (right - (right @ X) @ A)
    return fold_triangle(xp, ct) if hermitian else ct


# ---------------------------------------------------------------------------
# Registrations

defrule(np.linalg.cholesky, "a, /, *, upper=False", result=results.same_shape,
        a="cholesky_vjp(g, ans, a, upper)")
defrule(np.linalg.eigh, "a, UPLO='L'", result=results.factors(1, 0),
        a="eigh_vjp(g, ans, a, UPLO)")
defrule(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False",
        result=results.svd_result, a="svd_vjp(g, ans, a, full_matrices, compute_uv, hermitian)")
defrule(np.linalg.pinv, "a, rcond=None, hermitian=False, *, rtol=None", result=results.array,
        a="pinv_vjp(g, ans, a, hermitian)")


# ---------------------------------------------------------------------------
# Numba twin of cholesky_vjp (one matrix, not a stack)

def _cholesky_grad(G, L, lower):
    """Numba: cholesky_vjp for the lower factor ``L`` with cotangent ``G``, folded onto
    the lower triangle (``lower``) or the upper one."""
    n = L.shape[0]
    P = L.T @ G
    for i in range(n):
        for j in range(n):
            if i < j:
                P[i, j] = 0.0
            elif i == j:
                P[i, j] *= 0.5
    Lt = np.ascontiguousarray(L.T)
    Y = np.linalg.solve(Lt, P)
    S = np.linalg.solve(Lt, np.ascontiguousarray(Y.T)).T
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            sym = 0.5 * (S[i, j] + S[j, i])
            if i == j:
                out[i, j] = sym
            elif (i > j) == lower:
                out[i, j] = 2.0 * sym
    return out


@numba_twin(cholesky_vjp)
def _cholesky_vjp_numba(g, ans, a, upper=False):
    if not twins.is_array(a, 2):
        twins.unsupported("the derivative of np.linalg.cholesky of a stack of matrices")
    grad = twins.jitted(_cholesky_grad)
    if twins.literal(upper, None) is True:
        return lambda g, ans, a, upper=False: grad(np.ascontiguousarray(g.T),
                                                    np.ascontiguousarray(ans.T), False)
    if twins.literal(upper, None) is not False:
        twins.unsupported("cholesky's upper= other than a constant")
    return lambda g, ans, a, upper=False: grad(g, ans, True)


# ---------------------------------------------------------------------------
# Numba twins of eigh_vjp and svd_vjp (one matrix, not a stack).  The cotangent of
# the tuple arrives as a tuple of arrays (zeros where nothing reached an item); an
# item that is all zeros is skipped, as the Python rule skips one nothing reached
# (its terms divide by eigenvalue gaps and singular values).

def _eigh_grad(gw, gv, w, v, lower):
    n = w.shape[0]
    inner = np.zeros((n, n))
    for i in range(n):
        inner[i, i] = gw[i]
    if np.any(gv != 0.0):
        vtgv = v.T @ gv
        for i in range(n):
            for j in range(n):
                if i != j:
                    inner[i, j] += vtgv[i, j] / (w[j] - w[i])
    G = v @ inner @ v.T
    out = np.zeros((n, n))          # folded onto the triangle that is read
    for i in range(n):
        for j in range(n):
            if i == j:
                out[i, j] = G[i, j]
            elif (i > j) == lower:
                out[i, j] = G[i, j] + G[j, i]
    return out


@numba_twin(eigh_vjp)
def _eigh_vjp_numba(g, ans, a, UPLO="L"):
    side = twins.literal(UPLO, None)
    if not (twins.is_array(a, 2) and twins.is_tuple(g) and side in ("L", "U", "l", "u")):
        twins.unsupported("the derivative of np.linalg.eigh of a stack of matrices")
    grad, lower = twins.jitted(_eigh_grad), side.upper() == "L"
    return lambda g, ans, a, UPLO="L": grad(np.zeros(ans[0].shape) + g[0],
                                            np.zeros(ans[1].shape) + g[1], ans[0], ans[1], lower)


def _svd_grad(gu, gs, gvt, u, s, vt):
    """The cotangent of ``a = u diag(s) vt`` (thin factors) from those of u, s and vt."""
    k = s.shape[0]
    F = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                F[i, j] = 1.0 / (s[j] * s[j] - s[i] * s[i])
    inner = np.zeros((k, k))
    for i in range(k):
        inner[i, i] = gs[i]
    outer = np.zeros((u.shape[0], vt.shape[1]))
    if np.any(gu != 0.0):
        ut_gu = u.T @ gu
        inner += (F * (ut_gu - ut_gu.T)) * s.reshape((1, k))
        gu_s = gu / s.reshape((1, k))
        outer += (gu_s - u @ (u.T @ gu_s)) @ vt
    if np.any(gvt != 0.0):
        v = np.ascontiguousarray(vt.T)
        vt_gv = vt @ np.ascontiguousarray(gvt.T)
        inner += s.reshape((k, 1)) * (F * (vt_gv - vt_gv.T))
        s_gvt = gvt / s.reshape((k, 1))
        outer += u @ (s_gvt - (s_gvt @ v) @ vt)
    return u @ inner @ vt + outer


def _svd_full(grad):
    """svd_vjp from the full factors: the extra columns of u (rows of vt) of a
    non-square matrix are arbitrary, so a cotangent reaching them is refused at run time."""
    def full(g, ans):
        u, s, vt = ans
        k = s.shape[0]
        gu = np.zeros(u.shape) + g[0]
        gvt = np.zeros(vt.shape) + g[2]
        if np.any(gu[:, k:] != 0.0) or np.any(gvt[k:, :] != 0.0):
            raise NotImplementedError("the derivative of u or vh from np.linalg.svd(a, "
                                      "full_matrices=True) of a non-square matrix is not "
                                      "defined")
        return grad(np.ascontiguousarray(gu[:, :k]), np.zeros(k) + g[1],
                    np.ascontiguousarray(gvt[:k, :]), np.ascontiguousarray(u[:, :k]), s,
                    np.ascontiguousarray(vt[:k, :]))
    return twins.jitted(full)


@numba_twin(svd_vjp)
def _svd_vjp_numba(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    full, uv = twins.literal(full_matrices, None), twins.literal(compute_uv, None)
    if not (twins.is_array(a, 2) and full in (True, False) and uv in (True, False)
            and twins.literal(hermitian, None) is False):
        twins.unsupported("the derivative of np.linalg.svd of a stack of matrices or with "
                          "hermitian=True or non-constant flags")
    grad = twins.jitted(_svd_grad)
    if not uv:
        def values_only(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
            u, s, vt = np.linalg.svd(a, full_matrices=False)
            zero = np.zeros((1, 1))
            return grad(zero, np.zeros(s.shape) + g, zero, u, s, vt)
        return values_only
    if not twins.is_tuple(g):
        return None
    if full:
        full_grad = _svd_full(grad)
        return lambda g, ans, a, full_matrices=True, compute_uv=True, hermitian=False: \
            full_grad(g, ans)
    return lambda g, ans, a, full_matrices=True, compute_uv=True, hermitian=False: grad(
        np.zeros(ans[0].shape) + g[0], np.zeros(ans[1].shape) + g[1],
        np.zeros(ans[2].shape) + g[2], ans[0], ans[1], ans[2])


@numba_twin(np.linalg.eigh)
def _eigh_numba(a, UPLO="L"):
    # Numba's eigh reads the lower triangle and takes no UPLO: the upper one of a is
    # the lower one of a.T.
    side = twins.literal(UPLO, None)
    if not twins.is_array(a, 2) or side not in ("L", "U", "l", "u"):
        return None
    if side.upper() == "L":
        return lambda a, UPLO="L": np.linalg.eigh(a)
    return lambda a, UPLO="L": np.linalg.eigh(np.ascontiguousarray(a.T))


@numba_twin(np.linalg.svd)
def _svd_numba(a, full_matrices=True, compute_uv=True, hermitian=False):
    # Numba's svd takes full_matrices only.
    full, uv = twins.literal(full_matrices, None), twins.literal(compute_uv, None)
    if not (twins.is_array(a, 2) and full in (True, False) and uv in (True, False)
            and twins.literal(hermitian, None) is False):
        return None
    if uv:
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: \
            np.linalg.svd(a, full)
    return lambda a, full_matrices=True, compute_uv=True, hermitian=False: \
        np.linalg.svd(a, False)[1]


@numba_twin(pinv_vjp)
def _pinv_vjp_numba(g, ans, a, hermitian=False):
    if not (twins.is_array(a, 2) and twins.literal(hermitian, None) is False):
        twins.unsupported("the derivative of np.linalg.pinv of a stack or with hermitian=True")

    def pinv_grad(g, ans, a, hermitian=False):
        X, G = ans, g
        Xt, Gt = np.ascontiguousarray(X.T), np.ascontiguousarray(G.T)
        left = Gt @ (X @ Xt)
        right = (Xt @ X) @ Gt
        return -(Xt @ G @ Xt) + (left - a @ (X @ left)) + (right - (right @ X) @ a)
    return pinv_grad
