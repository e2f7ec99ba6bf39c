"""Vectorised NumPy code inside differentiated functions, end to end through the
transform, against central finite differences (and PyTorch where installed)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate

rng = np.random.default_rng(7)
A3 = rng.standard_normal((3, 3)) + 3 * np.eye(3)
B34 = rng.standard_normal((3, 4))
V3 = rng.standard_normal(3)
V4 = rng.uniform(0.5, 1.5, 4)


def elementwise(x):
    y = np.sin(x) * np.exp(-x) + np.sqrt(x) - np.log1p(x) / (1.0 + x ** 2)
    return np.sum(np.tanh(y) + np.abs(y - 0.3) + np.maximum(y, 0.1) + np.clip(y, -0.2, 0.4))


def broadcasting(x, M):
    return np.sum((M * x[:, None] - x[0]) ** 2) + np.mean(M / (1.0 + x[:, None] ** 2)) \
        + np.sum(x[None, :] * M[:, :3].T)


def reductions(M):
    return (np.sum(M, axis=0) @ np.min(M, axis=(0,)) + np.max(M, axis=1, keepdims=True).sum()
            + np.mean(M) * np.var(M, axis=1).sum() + np.std(M) + M.sum(axis=-1).prod()
            + np.linalg.norm(M) + np.cumsum(M, axis=1)[:, -1].sum())


def linalg(A, b):
    x = np.linalg.solve(A, b)
    return x @ x + np.trace(np.linalg.inv(A)) + np.linalg.det(A) + np.dot(b, A @ b) \
        + np.outer(b, x).sum() + np.inner(b, x) + np.einsum("ij,j->i", A, b).sum()


def shapes(M):
    R = M.reshape(4, 3).T
    S = np.concatenate([R, 2 * R], axis=1)
    T = np.stack([S, S * S])
    return np.sum(np.squeeze(np.expand_dims(T, 0), 0)[1]) + np.transpose(M)[0].sum()


def indexing(x, M):
    idx = np.array([0, 2, 2, 1])
    return (np.sum(x[1:] * x[:-1]) + np.sum(x[::2]) + np.sum(M[:, 1] ** 2) + np.sum(x[idx] ** 3)
            + np.sum(M[M > 0]) + M[1, 2] * x[0])


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


def methods(M):
    return M.sum(axis=0).dot(M.mean(axis=0)) + M.T.sum() + M.copy().max()


def polyval(p, x):
    return np.sum(np.polyval(p, x))


def local_array_writes(x):
    out = np.zeros(len(x))
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = out[i - 1] * 0.5 + x[i] ** 2
    out[1:3] = out[1:3] * 2.0
    return np.sum(out * out)


CASES = [
    (elementwise, (V4,), (0,)),
    (broadcasting, (V3, B34), (0, 1)),
    (reductions, (B34,), (0,)),
    (linalg, (A3, V3), (0, 1)),
    (shapes, (B34,), (0,)),
    (indexing, (V4, B34), (0, 1)),
    (rosen, (np.array([1.3, 0.7, 0.8, 1.9, 1.2]),), (0,)),
    (methods, (B34,), (0,)),
    (polyval, (np.array([2.0, -1.0, 0.5]), V4), (0, 1)),
    (local_array_writes, (V4,), (0,)),
]


@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_array_code_matches_finite_differences(f, args, argnums):
    value, grads = pullback.value_and_grad(f, argnums=argnums, jit=False)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    for k, g in zip(argnums, grads):
        assert g.shape == np.shape(args[k])
        assert_fd_close(g, fd_estimate(f, args, k), rtol=1e-5, atol=1e-6)


def test_rosen_matches_scipy():
    optimize = pytest.importorskip("scipy.optimize")
    x = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    assert_close(pullback.grad(rosen)(x), optimize.rosen_der(x), rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.floats(-2, 2)))
def test_sum_of_squares_any_shape(x):
    g = pullback.grad(lambda a: np.sum(a * a) + np.mean(np.sin(a)))(x)
    assert_close(g, 2 * x + np.cos(x) / x.size, rtol=1e-12, atol=1e-12)


def test_matches_pytorch_on_a_small_network():
    torch = pytest.importorskip("torch")

    def net(W1, W2, x):
        h = np.tanh(W1 @ x)
        return np.sum((W2 @ h) ** 2)
    W1, W2, x = rng.standard_normal((5, 3)), rng.standard_normal((2, 5)), rng.standard_normal(3)
    g1, g2 = pullback.grad(net, argnums=(0, 1))(W1, W2, x)
    t1 = torch.tensor(W1, requires_grad=True)
    t2 = torch.tensor(W2, requires_grad=True)
    out = ((t2 @ torch.tanh(t1 @ torch.tensor(x))) ** 2).sum()
    out.backward()
    assert_close(g1, t1.grad.numpy(), rtol=1e-12)
    assert_close(g2, t2.grad.numpy(), rtol=1e-12)


def numba_friendly(x, w, M):
    s = np.sum(np.sin(x) * w) + np.mean(x * x) * 2.0
    return s + np.sum(np.sum(M, axis=0) * x) + np.sum(M * w) + np.sum(np.exp(M) / (1.0 + x))


def test_numba_backend_handles_elementwise_and_sums():
    x, w = np.linspace(0.1, 1, 4), np.arange(4.0)
    M = np.arange(12.0).reshape(3, 4) / 10
    args = (x, w, M)
    grads = pullback.grad(numba_friendly, argnums=(0, 1, 2), jit=True)(*args)
    for k, g in enumerate(grads):
        assert_fd_close(g, fd_estimate(numba_friendly, args, k), rtol=1e-6)


def test_numba_backend_calls_a_rule_without_a_twin_as_python_and_says_so(monkeypatch):
    def f(x):
        return np.sum(np.sin(np.gradient(x * 2.0)))
    x = np.array([0.3, 1.0, -2.0, 0.5, 4.0, 1.5])
    # The warning comes when Numba first types a call's object-mode block: new
    # blocks, in case another test of this process typed these already.
    from pullback.backends import object_mode
    monkeypatch.setattr(object_mode, "_STUBS", {})
    with pytest.warns(pullback.PerformanceWarning, match="gradient_vjp runs as Python"):
        got = pullback.grad(f, jit=True)(x)
    assert_close(got, pullback.grad(f)(x), rtol=1e-12)
    assert_fd_close(got, fd_estimate(f, (x,)))


def monte_carlo_call(S0, sigma, z):
    """A European call priced over the paths z (steps x paths), each path starting
    from np.full(n, S0)."""
    n = z.shape[1]
    a = np.full(n, S0)
    for t in range(z.shape[0]):
        a = a * np.exp(sigma * z[t] * 0.1 - 0.005 * sigma ** 2)
    return np.mean(np.maximum(a - 1.0, 0.0))


def filled_like(x, c, row):
    return np.sum(np.full_like(x, c) * x) + np.sum(np.full((3, 2), row) * np.sin(x[:2]))


def test_np_full_and_full_like_carry_the_fill_values_derivative(jit):
    z = np.random.default_rng(3).standard_normal((5, 16))
    args = (1.05, 0.4, z)
    grads = pullback.grad(monte_carlo_call, argnums=(0, 1), jit=jit)(*args)
    for k, g in enumerate(grads):
        assert_fd_close(g, fd_estimate(monte_carlo_call, args, k), rtol=1e-6)
    args = (np.array([0.3, -1.2, 0.8]), 0.5, np.array([1.5, -0.4]))
    grads = pullback.grad(filled_like, argnums=(0, 1, 2), jit=jit)(*args)
    for k, g in enumerate(grads):
        assert_fd_close(g, fd_estimate(filled_like, args, k), rtol=1e-6)
    # forward mode: the tangent of the fill value, filled
    _, tangent = pullback.jvp(filled_like, args, (np.zeros(3), 1.0, np.array([0.0, 1.0])))
    assert tangent == pytest.approx(grads[1] + grads[2][1], rel=1e-12)
