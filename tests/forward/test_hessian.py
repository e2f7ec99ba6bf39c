"""Second derivatives, reverse mode over forward mode (``hvp``, ``hessian``), against
analytic Hessians (SciPy's ``rosen_hess``, Horner's), central differences of the
gradient, and SciPy's trust-region Newton methods converging with them."""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from helpers import fd_grad

from .test_jvp import horner, lennard_jones

RNG = np.random.default_rng(41)
optimize = pytest.importorskip("scipy.optimize")


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


def test_rosenbrock_hessian_is_scipys():
    x = RNG.uniform(-1.5, 1.5, 7)
    np.testing.assert_allclose(pullback.hessian(rosen)(x), optimize.rosen_hess(x),
                               rtol=1e-13, atol=1e-12)
    # SciPy's own rosen, with its array-API conversions, read from its source.
    np.testing.assert_allclose(pullback.hessian(optimize.rosen)(x), optimize.rosen_hess(x),
                               rtol=1e-13, atol=1e-12)


def test_hvp_is_the_hessian_times_the_vector():
    x, v = RNG.uniform(-1.5, 1.5, 6), RNG.normal(size=6)
    hv, = pullback.hvp(rosen, (x,), (v,))
    np.testing.assert_allclose(hv, optimize.rosen_hess_prod(x, v), rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("newton", ["hess", "hessp"])
def test_trust_region_newton_converges(newton):
    second = {"hess": pullback.hessian(rosen)} if newton == "hess" else \
        {"hessp": lambda x, p: pullback.hvp(rosen, (x,), (p,))[0]}
    result = optimize.minimize(rosen, np.zeros(5), jac=pullback.grad(rosen), method="trust-ncg",
                               options={"gtol": 1e-10}, **second)
    assert result.success
    np.testing.assert_allclose(result.x, np.ones(5), atol=1e-6)


def test_horner_second_derivative_is_the_analytic_one():
    p, x = RNG.normal(size=6), 0.9
    n = len(p)
    expected = sum((n - 1 - i) * (n - 2 - i) * p[i] * x ** (n - 3 - i) for i in range(n - 2))
    assert pullback.hessian(horner)(x, p) == pytest.approx(expected, rel=1e-13)
    # The mixed block: d/dp d/dx is the derivative of x^(n-1-i) in x.
    (hxx, hxp), (hpx, hpp) = pullback.hessian(horner, argnums=(0, 1))(x, p)
    mixed = np.array([(n - 1 - i) * x ** (n - 2 - i) if i < n - 1 else 0.0 for i in range(n)])
    np.testing.assert_allclose(hxp, mixed, rtol=1e-13)
    np.testing.assert_allclose(hpx, mixed, rtol=1e-13)
    np.testing.assert_allclose(hpp, np.zeros((n, n)), atol=1e-14)


def test_pair_loop_hessian_against_differences_of_the_gradient():
    x, y = RNG.uniform(0, 2.5, 5), RNG.uniform(0, 2.5, 5)
    H = pullback.hessian(lennard_jones)(x, y, 3.0)
    grad_x = pullback.grad(lennard_jones)
    expected = np.array([fd_grad(lambda x: grad_x(x, y, 3.0)[k], (x,), 0, eps=1e-6)
                         for k in range(5)])
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-6 * np.max(np.abs(H)))
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-9)


def vector_valued(x):
    return np.sin(x) * 2.0


def test_hessian_of_a_vector_function_is_refused():
    with pytest.raises(TypeError, match="return a scalar"):
        pullback.hessian(vector_valued)(np.ones(3))


def mixed(x, y):
    return np.sin(x) * y ** 3 + x * x * y


def test_grad_of_grad_is_the_second_derivative():
    x, y = 0.7, 1.3
    dxx = -np.sin(x) * y ** 3 + 2 * y
    dxy = 3 * np.cos(x) * y ** 2 + 2 * x
    assert pullback.grad(pullback.grad(mixed))(x, y) == pytest.approx(dxx, rel=1e-14)
    both = pullback.grad(pullback.grad(mixed), argnums=(0, 1))(x, y)
    assert both == pytest.approx((dxx, dxy), rel=1e-14)
    value, d2 = pullback.value_and_grad(pullback.grad(mixed, argnums=1))(x, y)
    assert value == pytest.approx(3 * np.sin(x) * y ** 2 + x * x, rel=1e-14)
    assert d2 == pytest.approx(dxy, rel=1e-14)


def test_jvp_of_grad_is_the_hessian_times_the_tangent():
    x, v = RNG.uniform(-1, 1, 5), RNG.normal(size=5)
    g, hv = pullback.jvp(pullback.grad(rosen), (x,), (v,))
    np.testing.assert_allclose(g, optimize.rosen_der(x), rtol=1e-13)
    np.testing.assert_allclose(hv, optimize.rosen_hess_prod(x, v), rtol=1e-13, atol=1e-12)


def test_grad_of_a_gradient_that_is_not_a_number_is_refused():
    with pytest.raises(TypeError, match="pullback.hessian"):
        pullback.grad(pullback.grad(rosen))(np.ones(3))
    with pytest.raises(TypeError, match="argnums to be one int"):
        pullback.grad(pullback.grad(mixed, argnums=(0, 1)))(0.5, 0.5)


def test_hessian_under_numba():
    x = RNG.uniform(-1.5, 1.5, 6)
    np.testing.assert_allclose(pullback.hessian(rosen, jit=True)(x), optimize.rosen_hess(x),
                               rtol=1e-13, atol=1e-12)


def prod_columns(A):
    return np.sum(np.prod(A, axis=0))


@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
def test_the_seeds_prod_hessian_with_zeros(zeros):
    """d2/dA[i,j]dA[k,l] sum(prod(A, axis=0)) is the product of column j without rows i
    and k when j == l and i != k, else 0: brute force, exact with zeros, no NaN."""
    A = RNG.uniform(0.5, 1.5, size=(4, 3))
    A[:zeros, 1] = 0.0
    H = pullback.hessian(prod_columns)(A)
    expected = np.zeros((4, 3, 4, 3))
    for i, j, k in np.ndindex(4, 3, 4):
        if i != k:
            expected[i, j, k, j] = np.prod(np.delete(A[:, j], [i, k]))
    np.testing.assert_allclose(H, expected, rtol=1e-13, atol=1e-15)
    assert np.all(np.isfinite(H))
    torch = pytest.importorskip("torch")
    reference = torch.func.hessian(lambda T: torch.sum(torch.prod(T, dim=0)))(torch.from_numpy(A))
    finite = np.isfinite(reference.numpy())
    np.testing.assert_allclose(H[finite], reference.numpy()[finite], rtol=1e-12, atol=1e-14)


GRAD_ROSEN = pullback.grad(rosen)


def gradient_norm(x):
    g = GRAD_ROSEN(x)           # a gradient function called inside: a primitive
    return np.sum(g * g)


def test_grad_of_a_function_that_calls_grad():
    x = RNG.uniform(-1, 1, 5)
    expected = 2 * optimize.rosen_hess(x) @ optimize.rosen_der(x)
    np.testing.assert_allclose(pullback.grad(gradient_norm)(x), expected, rtol=1e-12)
    # Forward mode too: the tangent of H g along v is the derivative of 2 g.(H v).
    v = RNG.normal(size=5)
    value, tangent = pullback.jvp(gradient_norm, (x,), (v,))
    assert tangent == pytest.approx(expected @ v, rel=1e-12)
    # Under Numba the call runs in an object-mode block (a PerformanceWarning says so).
    with pytest.warns(pullback.PerformanceWarning):
        np.testing.assert_allclose(pullback.grad(gradient_norm, jit=True)(x), expected,
                                   rtol=1e-12)


def test_mlp_loss_hessian_against_jax_and_differences_of_the_gradient():
    # np.max's tangent (the softmax shift) calls max_vjp, which reverse mode differentiates.
    from pullback.bench.workloads import mlp_loss
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((6, 3)), np.eye(3)[rng.integers(0, 3, 6)]
    W1, b1 = rng.standard_normal((3, 4)) * 0.7, rng.standard_normal(4) * 0.1
    W2, b2 = rng.standard_normal((4, 3)) * 0.7, rng.standard_normal(3) * 0.1
    H = pullback.hessian(mlp_loss, argnums=2)(W1, b1, W2, b2, X, Y)
    grad_w2 = pullback.grad(mlp_loss, argnums=2)
    expected = np.array([fd_grad(lambda W: grad_w2(W1, b1, W, b2, X, Y).ravel()[k], (W2,), 0,
                                 eps=1e-6) for k in range(W2.size)]).reshape(H.shape)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-8)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def loss(W1, b1, W2, b2):
        z = jnp.tanh(X @ W1 + b1) @ W2 + b2
        z = z - jnp.max(z, axis=1, keepdims=True)
        return -jnp.sum(Y * (z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True)))) / 6
    blocks = pullback.hessian(mlp_loss, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, X, Y)
    want = jax.hessian(loss, argnums=(0, 1, 2, 3))(W1, b1, W2, b2)
    for i in range(4):
        for j in range(4):
            np.testing.assert_allclose(blocks[i][j], np.asarray(want[i][j]), rtol=1e-12,
                                       atol=1e-14)


def exp_weighted(x):
    return np.sum(np.exp(x) * x)


def test_hessian_under_numba_through_a_ufunc_numba_calls_from_python():
    # Under jit=True, np.exp of an array is a stub calling NumPy (SIMD); the tangent
    # program calls that stub, and the Hessian differentiates it again by np.exp's rule.
    x = RNG.uniform(-1.0, 1.0, 4)
    np.testing.assert_allclose(pullback.hessian(exp_weighted, jit=True)(x),
                               np.diag(np.exp(x) * (x + 2.0)), rtol=1e-13)
