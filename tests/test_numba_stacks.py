"""Stacks of matrices under the Numba backend: cholesky, eigh, svd, pinv, diagonal,
tril and triu of (batch, n, m) arrays, each gradient compiled with ``jit=True``
against ``jit=False`` (to rounding) and against central finite differences.

Numba's own ``np.linalg`` functions take one matrix; their twins loop over a
stack.  Functions of eigenvectors and singular vectors here do not depend on the
signs LAPACK picks for them.
"""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from helpers import assert_close
from helpers import check_jit as check

RNG = np.random.default_rng(31)


def _spd(b, n):
    M = RNG.normal(size=(b, n, n))
    return M @ np.swapaxes(M, -1, -2) + n * np.eye(n)


W3 = np.arange(1.0, 10.0).reshape(3, 3) / 9.0


# ------------------------------------------------------------------- cholesky
def _cholesky(A):
    L = np.linalg.cholesky(A)
    U = np.linalg.cholesky(A, upper=True)
    return np.sum(np.sin(L)) + np.sum(U * U * W3) + np.sum(np.log(np.diagonal(L, 0, 1, 2)))


def test_cholesky_of_a_stack():
    A = _spd(2, 3)
    A[:, 0, 2] += 0.3           # not symmetric: each factor reads one triangle
    check(_cholesky, (A,))


# ----------------------------------------------------------------------- eigh
def _eigh(A):
    w, v = np.linalg.eigh(A)
    w2, v2 = np.linalg.eigh(A, "U")
    return (np.sum(w * w) + np.sum(np.sin(w)) + np.sum(v * v * W3)
            + np.sum(w2 * w2) + np.sum(np.sin(v2[:, 0, :] * v2[:, 0, :])))


def test_eigh_of_a_stack():
    A = np.random.default_rng(5).normal(size=(2, 3, 3))    # not symmetric: one triangle read
    for i in range(2):
        for side in ("L", "U"):
            assert np.min(np.diff(np.linalg.eigvalsh(A[i], side))) > 0.3   # distinct
    check(_eigh, (A,))


# ------------------------------------------------------------------------ svd
def _svd(A, B):
    u, s, vh = np.linalg.svd(A, full_matrices=False)
    u2, s2, vh2 = np.linalg.svd(B)                  # square: full factors are thin
    u3, s3, vh3 = np.linalg.svd(A)                  # full factors, s only used
    return (np.sum(s * s) + np.sum(np.sin(s)) + np.sum(np.sin((u[0] * s[0]) @ vh[0]))
            + np.sum(np.sin((u[1] * s[1]) @ vh[1]))
            + np.sum(u * u * W3[0]) + np.sum(vh * vh * W3) + np.sum(s3 * s3 * s3)
            + np.sum(np.sin(np.linalg.svd(A, compute_uv=False)))
            + np.sum(np.sin(u2[:, :, 0:1] * vh2[:, 0:1, :])) + np.sum(np.sin(s2)))


def _with_singular_values(A, s):
    u, _, vh = np.linalg.svd(A, full_matrices=False)
    return (u * np.asarray(s)) @ vh


def test_svd_of_a_stack():
    rng = np.random.default_rng(6)
    A = _with_singular_values(rng.normal(size=(2, 4, 3)), [3.0, 2.0, 1.0])
    B = _with_singular_values(rng.normal(size=(2, 3, 3)), [2.5, 1.5, 0.7])
    check(_svd, (A, B), (0, 1))


def test_svd_full_matrices_of_a_tall_stack_is_refused_at_run_time():
    def f(A):
        u, s, vh = np.linalg.svd(A)
        return np.sum(np.sin(u))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        pullback.grad(f, jit=True)(RNG.normal(size=(2, 4, 3)))


# ----------------------------------------------------------------------- pinv
def _pinv(A, B):
    return (np.sum(np.sin(np.linalg.pinv(A))) + np.sum(np.linalg.pinv(B) * W3)
            + np.sum(np.sin(np.linalg.pinv(B[0]))))


def test_pinv_of_a_stack():
    check(_pinv, (RNG.normal(size=(2, 4, 3)), RNG.normal(size=(2, 3, 3)) + 3 * np.eye(3)),
          (0, 1))


def _low_rank(sing, b=2, n=3, m=3):
    """A stack of n x m matrices with singular values ``sing``."""
    q1 = np.linalg.qr(RNG.normal(size=(b, n, n)))[0]
    q2 = np.swapaxes(np.linalg.qr(RNG.normal(size=(b, m, n)))[0], -1, -2)
    return (q1 * np.asarray(sing)) @ q2


def _pinv_cutoffs(A):
    return (np.sum(np.linalg.pinv(A, rtol=0.1) * W3) + np.sum(np.sin(np.linalg.pinv(A, 0.1)))
            + np.sum(np.linalg.pinv(A[0], rcond=0.1) ** 2))


def test_pinv_honours_rtol_and_rcond():
    # Rank 2: the singular value 0 stays below the cutoff 0.1 under the finite
    # differences' perturbations, so the rank does not change (the rule's domain).
    check(_pinv_cutoffs, (_low_rank([1.0, 0.5, 0.0]),))


W40 = np.linspace(-1.0, 1.0, 120).reshape(40, 3)


def _pinv_default(A):
    return np.sum(np.linalg.pinv(A) * W40)


def _pinv_rtol_none(A):
    return np.sum(np.linalg.pinv(A, rtol=None) * W40)


def test_pinv_cutoff_is_numpys():
    # A singular value of 3e-15 lies between NumPy's two default cutoffs for a 3 x 40
    # matrix: 1e-15 with neither rcond nor rtol (kept: its inverse 3e14 is in the
    # result) and 40 * eps = 8.9e-15 with rtol=None (cut); the twin's 1e-15 kept it
    # under rtol=None too.
    A = _low_rank([1.0, 0.5, 3e-15], m=40)
    assert np.max(np.abs(np.linalg.pinv(A))) > 1e13
    assert np.max(np.abs(np.linalg.pinv(A, rtol=None))) < 1e3
    kept = [pullback.grad(_pinv_default, jit=jit)(A) for jit in (False, True)]
    assert all(np.max(np.abs(g)) > 1e20 for g in kept)      # of the rounding's size
    py, nb = (pullback.grad(_pinv_rtol_none, jit=jit)(A) for jit in (False, True))
    assert np.max(np.abs(py)) < 1e3
    assert_close(nb, py, rtol=1e-9, atol=1e-11)


# ----------------------------------------------------- diagonal, tril and triu
def _diagonals(T, A):
    return (np.sum(np.sin(np.diagonal(T, axis1=1, axis2=2))) + np.sum(np.diagonal(T) ** 2)
            + np.sum(np.sin(np.diagonal(T, 1, 1, 2))) + np.sum(np.diagonal(T, -1, 2, 1) ** 3)
            + np.sum(np.sin(T.diagonal(0, -2, -1))) + np.sum(np.diagonal(A, 1) ** 2)
            + np.sum(np.sin(A.diagonal())) + np.sum(np.diagonal(A, -2) ** 3))


def test_diagonal_with_offsets_and_axes():
    check(_diagonals, (RNG.normal(size=(2, 3, 4)), RNG.normal(size=(3, 4))), (0, 1))


def _triangles(T):
    return (np.sum(np.sin(np.tril(T))) + np.sum(np.triu(T, 1) ** 2)
            + np.sum(np.sin(np.tril(T, -1)) * np.triu(T)) + np.sum(np.cos(np.triu(T, -1))))


def test_tril_triu_of_a_stack():
    check(_triangles, (RNG.normal(size=(2, 3, 4)),))
