"""Array rules under the Numba backend (issue #12): each gradient compiled with
``jit=True`` against the Python backend and against central finite differences.

The twins that make these compile are registered beside their rules
(``pullback.rules.registry.numba_twin``); a rule without one is refused when the
derivative is generated, with a located ``NumbaCompileError``.
"""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_grad

RNG = np.random.default_rng(12)


def check(f, args, argnums=0, rtol=1e-6, atol=1e-8):
    """jit=True against jit=False (to rounding) and against finite differences."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    py = pullback.grad(f, argnums=nums, jit=False)(*args)
    nb = pullback.grad(f, argnums=nums, jit=True)(*args)
    for k, a, b in zip(nums, py, nb):
        assert_close(np.asarray(b), np.asarray(a), rtol=1e-9, atol=1e-11)
        assert_fd_close(np.asarray(b), fd_grad(f, args, k), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- reductions
def _sum(A):
    return np.sum(np.sum(A, axis=-1) ** 2) + np.sum(np.sum(A, axis=0, keepdims=True) * A)


def _mean(A):
    return np.sum(np.mean(A, axis=0) ** 2) + np.sum(A.mean(axis=1, keepdims=True) * A)


def _max_min(A):
    return np.sum(np.max(A, axis=1) ** 2) + np.sum(A.min(axis=0, keepdims=True) * A) + np.max(A)


def _var(A):
    return (np.sum(np.var(A, axis=1) ** 2) + np.var(A)
            + np.sum(np.var(A, axis=0, ddof=1, keepdims=True) * A))


def _std(A):
    return np.sum(np.std(A, axis=1)) + np.std(A, ddof=1) + np.sum(A.std(axis=0) * A[0])


def _prod(A):
    return np.sum(np.prod(A, axis=0) ** 2) + np.sum(np.prod(A, axis=-1, keepdims=True) * A) \
        + np.prod(A[0])


def _cumsum(A):
    return np.sum(np.cumsum(A, axis=0) ** 2) + np.sum(np.cumsum(A) ** 2)


def _cumprod(A):
    return np.sum(np.cumprod(A, axis=1) * A) + np.sum(np.cumprod(A))


@pytest.mark.parametrize("f", [_sum, _mean, _max_min, _var, _std, _cumsum],
                         ids=lambda f: f.__name__)
def test_reductions_with_axis_and_keepdims(f):
    check(f, (RNG.random((3, 4)) + 0.5,))


@pytest.mark.parametrize("f", [_prod, _cumprod], ids=lambda f: f.__name__)
def test_prod_and_cumprod_are_exact_with_zeros(f):
    A = RNG.random((3, 4)) + 0.5
    A[0, 0] = A[1, 2] = A[2, 0] = 0.0        # one zero in some slices, two in another
    check(f, (A,))


# ---------------------------------------------------- products, linalg, shapes
def _linalg(A, b):
    return (np.sum(np.linalg.solve(A, b)) + np.sum(np.linalg.inv(A) * A) + np.linalg.det(A)
            + np.linalg.slogdet(A)[1] + np.sum(np.linalg.solve(A, A.T))
            + np.dot(b, np.dot(A, b)) + np.sum(b @ A))


def _shapes_and_broadcasting(M, b):
    return (np.sum(np.concatenate((M, M * 2.0), axis=1) ** 2)
            + np.sum(np.stack((b, b * b), axis=1) ** 2) + np.sum(np.transpose(M) @ b)
            + np.sum(M.reshape(2, 6)[1] ** 2) + np.sum(np.maximum(M, 0.5) ** 2)
            + np.sum(np.minimum(M, M[0])) + np.sum(np.where(M > 0.5, M, M[0] * 2.0) ** 2)
            + np.sum(M[1:, ::2] ** 2) + M[2, 3] * b[0])


def test_products_and_linear_algebra():
    A = RNG.random((3, 3)) + 3 * np.eye(3)
    check(_linalg, (A, RNG.random(3)), (0, 1))


def test_shapes_indexing_and_broadcasting():
    check(_shapes_and_broadcasting, (RNG.random((3, 4)), RNG.random(3)), (0, 1))


# ------------------------------------------------------------------ workloads
def mlp_loss(W1, b1, W2, b2, X, Y):
    """Softmax cross-entropy of a one-hidden-layer MLP (Y one-hot)."""
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    s = z - np.max(z, axis=1, keepdims=True)
    logp = s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def heat(u, c):
    """200 explicit steps of the 1-D heat equation, then the energy."""
    u = u.copy()
    for _ in range(200):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u * u)


def rnn(W, U, h, x):
    for t in range(50):
        h = np.tanh(W @ h + U @ x[t])
    return np.sum(h * h)


def gp_nll(K, y):
    """Negative log-likelihood of a Gaussian process (up to the constant)."""
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))


def workloads():
    r = np.random.default_rng(4)
    Y = np.eye(3)[r.integers(0, 3, 10)]
    B = r.normal(size=(6, 6))
    return {
        "mlp": (mlp_loss, (r.normal(size=(4, 8)), r.normal(size=8), r.normal(size=(8, 3)),
                           r.normal(size=3), r.normal(size=(10, 4)), Y), (0, 1, 2, 3)),
        "heat": (heat, (r.random(20), 0.2), (0, 1)),
        "rnn": (rnn, (0.3 * r.normal(size=(5, 5)), r.normal(size=(5, 3)), r.normal(size=5),
                      r.normal(size=(50, 3))), (0, 1, 2)),
        "gp": (gp_nll, (B @ B.T + 6 * np.eye(6), r.normal(size=6)), (0, 1)),
    }


@pytest.mark.parametrize("name", ["mlp", "heat", "rnn", "gp"])
def test_workloads_compile_and_match(name):
    f, args, argnums = workloads()[name]
    check(f, args, argnums, rtol=1e-5, atol=1e-7)


def test_a_rule_without_twin_is_refused_before_numba_sees_it():
    def f(K):
        return np.nansum(K)
    with pytest.raises(pullback.NumbaCompileError,
                       match="(?s)numpy.nansum.*nansum_vjp.*no compiled.*test_numba_arrays.py"
                             ".*line.*jit=False, or register a Numba twin") as info:
        pullback.grad(f, jit=True).compiled(np.eye(3))
    assert "TypingError" not in str(info.value)


# ------------------------------------------- shape-only tapes and view recomputation
def growing_slices(x, w, b):
    """Temporaries whose shape changes every iteration, read back only for their
    shape (their tape keeps the shape) and views of an array written in place
    (computed again in the reverse sweep), with broadcasting against b[:1]."""
    u = x.copy()
    s = 0.0
    for k in range(2, 7):
        u[1:4] = u[1:4] + 0.5 * (u[:3] - 2.0 * w * u[2:5]) + b[:1]
        s = s + np.sum((w * u[:k] - 0.5 * u[k:2 * k] + b[:1]) * u[1:k + 1])
    return s + np.sum(u * u)


def rows_of_constant(W, x, h):
    """Rows of an array never written, read as values (x[t] in U @ x[t])."""
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t] * h)
    return np.sum(h * h)


def matrix_rnn(W, X, H):
    """2-D temporaries read back only for their shape (two ints a push)."""
    for t in range(X.shape[0]):
        H = np.tanh(W @ H + X[t])
    return np.sum(H * H)


def test_shape_only_tapes_and_recomputed_views():
    r = np.random.default_rng(7)
    check(growing_slices, (r.normal(size=14), 0.7, r.normal(size=3)), (0, 1, 2))
    check(rows_of_constant, (0.3 * r.normal(size=(4, 4)), r.normal(size=(6, 4)), r.normal(size=4)),
          (0, 1, 2))
    check(matrix_rnn, (0.3 * r.normal(size=(4, 4)), r.normal(size=(5, 4, 3)), r.normal(size=(4, 3))),
          (0, 1, 2))
    g = pullback.grad(growing_slices, (0, 1, 2), jit=True)
    g(r.normal(size=14), 0.7, r.normal(size=3))
    src = g.source
    assert "with_shape(" in src, src


def _triangles_and_new_axes(A, v):
    B = np.tril(A, -1) + np.triu(A, 1) * 2.0
    w = np.atleast_2d(v)
    e = np.expand_dims(v, 0)
    return np.sum(B * B) + np.sum(w @ A) + np.sum(e * v) + np.sum(np.atleast_3d(A) * 3.0)


def test_triangles_atleast_and_expand_dims_compile():
    rng = np.random.default_rng(1)
    check(_triangles_and_new_axes, (rng.normal(size=(3, 3)), rng.normal(size=3)), (0, 1))
