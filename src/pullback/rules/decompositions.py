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
  crosses the cutoff ``rcond``).  The formula used holds for a matrix of the rank
  kept: a singular value cut off that is not negligible (above ``max(M, N) * eps``
  times the largest, NumPy's rank tolerance) raises NotImplementedError rather
  than give a gradient that is off by its size.

Under the Numba backend the rules' helpers and np.linalg's functions have the
twins below, which check the argument types and flags; the code they compile
(one matrix's derivative, the loops over a stack) is in
:mod:`.decomposition_kernels`.
"""
from __future__ import annotations

import array_api_compat
import numpy as np

from . import results, twins
from .decomposition_kernels import (
    _cholesky_grad,
    _cholesky_grad_stack,
    _cholesky_stack,
    _eigh_grad,
    _eigh_grad_stack,
    _eigh_stack,
    _pinv_grad,
    _pinv_grad_stack,
    _pinv_stack,
    _svd_grad,
    _svd_grad_stack,
    _svd_stack,
    _svd_values_grad_stack,
    _svd_values_stack,
)
from .elementwise import as_array, namespace
from .forms import numba_twin
from .joining import item_cotangents
from .registry import defrule

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
    _check_nothing_cut(xp, A, Xt)
    left = Gt @ (X @ Xt)
    right = (Xt @ X) @ Gt
    ct = -(Xt @ G @ Xt) + (left - A @ (X @ left)) + (right - (right @ X) @ A)
    return fold_triangle(xp, ct) if hermitian else ct


_CUT_OFF = ("the derivative of np.linalg.pinv where it cut off a singular value that is not "
            "negligible (below rcond times the largest, above max(M, N) * eps times it) is "
            "not implemented: pass a smaller rcond, or make the matrix of the rank you keep")


def _check_nothing_cut(xp, A, Xt):
    """Raise unless pinv kept every singular value above NumPy's rank tolerance: the
    number kept is trace(x a) (x a projects onto the kept singular vectors)."""
    s = xp.linalg.svdvals(A)
    m, n = A.shape[-2:]
    tol = max(m, n) * xp.finfo(A.dtype).eps * s[..., :1]
    rank = xp.sum(xp.astype(s > tol, A.dtype), axis=-1)
    kept = xp.round(xp.sum(Xt * A, axis=(-2, -1)))
    if bool(xp.any(rank > kept)):
        raise NotImplementedError(_CUT_OFF)


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
# Numba twins.  Numba's np.linalg functions take one matrix: for a stack (any
# number of leading axes) the twins compile a kernel of decomposition_kernels
# that loops over its matrices (``twins.compiled_with`` binds its ``_s3``,
# :func:`.twins.stack3`, and ``_one``, the kernel for one matrix).

def _matrix_or_stack(a, what):
    """Refuse anything but one matrix or a stack of them (of real floats)."""
    if not (twins.is_float_array(a) and a.ndim >= 2):
        twins.unsupported(f"{what} of this argument")


def _flag(value, what):
    """The constant True or False a flag argument holds, else refused."""
    v = twins.literal(value, None)
    if not isinstance(v, (bool, int)) or v not in (True, False):
        twins.unsupported(f"{what} other than a constant True or False")
    return bool(v)


@numba_twin(np.linalg.cholesky, always=True)
def _cholesky_numba(a, upper=False):
    """np.linalg.cholesky of a matrix or a stack, ``upper`` a constant."""
    _matrix_or_stack(a, "np.linalg.cholesky")
    up = _flag(upper, "np.linalg.cholesky's upper=")
    if a.ndim == 2 and not up:
        return lambda a, upper=False: np.linalg.cholesky(a)
    st = twins.compiled_with(_cholesky_stack, _s3=twins.stack3)
    return lambda a, upper=False: st(a, up)


@numba_twin(cholesky_vjp)
@twins.keeps_dtype("a")
def _cholesky_vjp_numba(g, ans, a, upper=False):
    """cholesky_vjp of a matrix or a stack, ``upper`` a constant."""
    _matrix_or_stack(a, "the derivative of np.linalg.cholesky")
    up = _flag(upper, "np.linalg.cholesky's upper=")
    st = twins.compiled_with(_cholesky_grad_stack, _s3=twins.stack3, _one=_cholesky_grad)
    return twins.one_dtype(lambda g, ans, a, upper=False: st(g, ans, up), g, ans, a)


# eigh and svd: the cotangent of the tuple arrives as a tuple of arrays (zeros where
# nothing reached an item); an item that is all zeros for a matrix is skipped, as
# the Python rule skips one nothing reached (its terms divide by eigenvalue gaps
# and singular values).

def _side(UPLO):
    side = twins.literal(UPLO, None)
    if side not in ("L", "U", "l", "u"):
        twins.unsupported("np.linalg.eigh with UPLO other than a constant 'L' or 'U'")
    return side.upper() == "L"


@numba_twin(np.linalg.eigh, always=True)
def _eigh_numba(a, UPLO="L"):
    """np.linalg.eigh of a matrix or a stack, ``UPLO`` a constant."""
    _matrix_or_stack(a, "np.linalg.eigh")
    lower = _side(UPLO)
    if a.ndim == 2 and lower:
        return lambda a, UPLO="L": np.linalg.eigh(a)
    st = twins.compiled_with(_eigh_stack, _s3=twins.stack3)
    return lambda a, UPLO="L": st(a, lower)


@numba_twin(eigh_vjp)
@twins.keeps_dtype("a")
def _eigh_vjp_numba(g, ans, a, UPLO="L"):
    """eigh_vjp of a matrix or a stack, ``UPLO`` a constant."""
    _matrix_or_stack(a, "the derivative of np.linalg.eigh")
    lower = _side(UPLO)
    if not twins.is_tuple(g):
        return None
    st = twins.compiled_with(_eigh_grad_stack, _s3=twins.stack3, _one=_eigh_grad)
    return twins.one_dtype(lambda g, ans, a, UPLO="L": st(g, ans, lower), g, ans, a)


def _svd_flags(a, full_matrices, compute_uv, hermitian, what):
    _matrix_or_stack(a, what)
    if _flag(hermitian, "np.linalg.svd's hermitian="):
        twins.unsupported("np.linalg.svd(hermitian=True)")
    return _flag(full_matrices, "np.linalg.svd's full_matrices="), \
        _flag(compute_uv, "np.linalg.svd's compute_uv=")


@numba_twin(np.linalg.svd, always=True)
def _svd_numba(a, full_matrices=True, compute_uv=True, hermitian=False):
    """np.linalg.svd of a matrix or a stack, the flags constants, hermitian=False."""
    full, uv = _svd_flags(a, full_matrices, compute_uv, hermitian, "np.linalg.svd")
    if a.ndim == 2:         # Numba's svd takes full_matrices only
        if uv:
            return lambda a, full_matrices=True, compute_uv=True, hermitian=False: \
                np.linalg.svd(a, full)
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: \
            np.linalg.svd(a, False)[1]
    if uv:
        st = twins.compiled_with(_svd_stack, _s3=twins.stack3)
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: st(a, full)
    sv = twins.compiled_with(_svd_values_stack, _s3=twins.stack3)
    return lambda a, full_matrices=True, compute_uv=True, hermitian=False: sv(a)


@numba_twin(svd_vjp)
@twins.keeps_dtype("a")
def _svd_vjp_numba(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """svd_vjp of a matrix or a stack, the flags constants, hermitian=False."""
    _, uv = _svd_flags(a, full_matrices, compute_uv, hermitian,
                       "the derivative of np.linalg.svd")
    if not uv:
        sv = twins.compiled_with(_svd_values_grad_stack, _s3=twins.stack3, _one=_svd_grad)
        return twins.one_dtype(
            lambda g, ans, a, full_matrices=True, compute_uv=True, hermitian=False: sv(g, a),
            g, ans, a)
    if not twins.is_tuple(g):
        return None
    st = twins.compiled_with(_svd_grad_stack, _s3=twins.stack3, _one=_svd_grad)
    return twins.one_dtype(
        lambda g, ans, a, full_matrices=True, compute_uv=True, hermitian=False: st(g, ans),
        g, ans, a)


# pinv: NumPy's cutoff is rcond (or rtol) times the largest singular value, rcond
# 1e-15 when neither is given and max(M, N) * eps when rtol=None (NumPy 2); Numba's
# pinv takes rcond, a number.

_NO_RTOL = "<no rtol>"      # the twin's default for rtol: told apart from rtol=None


def _pinv_rcond(a, rcond, rtol):
    """A function of ``(a, rcond, rtol)`` giving NumPy's rcond, or refused."""
    no_rtol = twins.literal(rtol, None) == _NO_RTOL
    if not (twins.is_none(rcond) or twins.is_number(rcond)) or \
            not (no_rtol or twins.is_none(rtol) or twins.is_number(rtol)):
        twins.unsupported("np.linalg.pinv with rcond or rtol not a number or None")
    if not twins.is_none(rcond):
        if not no_rtol:
            twins.unsupported("np.linalg.pinv with both rcond and rtol")
        return lambda a, rcond, rtol: rcond
    if no_rtol:
        return lambda a, rcond, rtol: 1e-15
    if twins.is_number(rtol):
        return lambda a, rcond, rtol: rtol
    eps = float(np.finfo(np.dtype(str(a.dtype))).eps)
    return lambda a, rcond, rtol: max(a.shape[-2], a.shape[-1]) * eps


@numba_twin(np.linalg.pinv, always=True)
def _pinv_numba(a, rcond=None, hermitian=False, rtol=_NO_RTOL):
    """np.linalg.pinv of a matrix or a stack with NumPy's cutoff (rcond, rtol or
    their defaults, numbers); hermitian=False."""
    _matrix_or_stack(a, "np.linalg.pinv")
    if _flag(hermitian, "np.linalg.pinv's hermitian="):
        twins.unsupported("np.linalg.pinv(hermitian=True)")
    cut = twins.jitted(_pinv_rcond(a, rcond, rtol))
    if a.ndim == 2:
        return lambda a, rcond=None, hermitian=False, rtol=_NO_RTOL: \
            np.linalg.pinv(a, cut(a, rcond, rtol))
    st = twins.compiled_with(_pinv_stack, _s3=twins.stack3)
    return lambda a, rcond=None, hermitian=False, rtol=_NO_RTOL: st(a, cut(a, rcond, rtol))


@numba_twin(pinv_vjp)
@twins.keeps_dtype("a")
def _pinv_vjp_numba(g, ans, a, hermitian=False):
    """pinv_vjp of a matrix or a stack; hermitian=False."""
    _matrix_or_stack(a, "the derivative of np.linalg.pinv")
    if _flag(hermitian, "np.linalg.pinv's hermitian="):
        twins.unsupported("the derivative of np.linalg.pinv(hermitian=True)")
    if a.ndim == 2:
        one = twins.jitted(_pinv_grad)
        return twins.one_dtype(lambda g, ans, a, hermitian=False: one(g, ans, a), g, ans, a)
    st = twins.compiled_with(_pinv_grad_stack, _s3=twins.stack3, _one=_pinv_grad)
    return twins.one_dtype(lambda g, ans, a, hermitian=False: st(g, ans, a), g, ans, a)
