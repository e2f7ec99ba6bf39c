"""The Numba twins with float32 arrays (and int operands mixed in): jit=True gives
the gradient jit=False gives, in the arguments' dtype, within float32 rounding; the
float64 gradient is checked against central finite differences."""
import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate


def least_squares(w, X, y):
    return np.sum((X @ w - y) ** 2)


def residual_squares(w, X, y):
    r = X @ w - y                                # the report: unbroadcast failed to compile
    return np.sum(r * r)


def column_residuals(w, X, y):
    r = X * w - y[:, None]                       # g (5, 3) summed onto w (3,) and y[:, None]
    return np.sum(r * r)


def bias_broadcast(b, A, c):
    return np.sum(np.tanh(A + b) * c)           # unbroadcast of b (4,) and c (3, 1)


def reductions(b, A, c):
    return np.sum(np.mean(A * b, axis=0) ** 2) + np.max(A * b) + np.sum(np.sum(c * A, axis=1))


def dot_and_matmul(b, A, c):
    return np.dot(A @ b, c[:, 0]) + np.sum(A.T @ (A * b))


def with_ints(b, A, c):
    k = np.arange(3)
    return np.sum((A * b) * k[:, None]) + np.sum((A @ b) * k) + np.sum(c * 2)


RNG = np.random.default_rng(7)
X, Y, W = RNG.normal(size=(5, 3)), RNG.normal(size=5), RNG.normal(size=3)
A, B, C = RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(3, 1))
CASES = [(least_squares, (W, X, Y)), (residual_squares, (W, X, Y)), (column_residuals, (W, X, Y)),
         (bias_broadcast, (B, A, C)), (reductions, (B, A, C)), (dot_and_matmul, (B, A, C)),
         (with_ints, (B, A, C))]


@pytest.mark.parametrize("nums", [(0,), (0, 1, 2)], ids=["first", "all"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_twins_in_float32_and_float64(f, args, dtype, nums):
    args = tuple(a.astype(dtype) for a in args)
    py = pullback.grad(f, argnums=nums, jit=False)(*args)
    nb = pullback.grad(f, argnums=nums, jit=True)(*args)
    tol = 2e-5 if dtype == np.float32 else 1e-10
    for k, p, n in zip(nums, py, nb):
        assert n.dtype == p.dtype == dtype
        np.testing.assert_allclose(n, p, rtol=tol, atol=tol * max(1.0, np.abs(p).max()))
        if dtype == np.float64:
            assert_fd_close(n, fd_estimate(f, args, k))
