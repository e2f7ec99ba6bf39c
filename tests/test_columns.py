"""Dense Jacobians and Hessians from one compiled loop (pullback.columns): each
column is, to the bit, the single-direction call it replaces (jvp, vjp's back,
hvp), on every jit mode; and the loop runs where it should."""
import numpy as np
import pytest

import pullback
from helpers import fd_grad
from pullback.backends import batch_loop
from pullback.examples import reaction

RNG = np.random.default_rng(11)




def energy(x, k):
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        s += k * (d * d - 1.0) ** 2 + np.cos(x[i])
    return s


@pytest.fixture
def runs(monkeypatch):
    """What batch_loop.run returned in the test."""
    seen = []
    real = batch_loop.run
    monkeypatch.setattr(batch_loop, "run", lambda *a: seen.append(real(*a)) or seen[-1])
    return seen


def test_jacfwd_columns_are_the_jvps(jit_mode, runs):
    jit = jit_mode != "python"
    z = RNG.uniform(0.5, 1.5, 16)
    J = pullback.jacfwd(reaction, jit=jit)
    first = J(z)
    pullback.finish_compiling()
    singles = np.stack([pullback.jvp(reaction, (z,), (e,), jit=jit)[1] for e in np.eye(16)], 1)
    for got in (first, J(z)):
        assert np.array_equal(got, singles)
    if jit_mode != "numba-background":      # (there the first call loops in Python)
        assert (True in runs) == (jit_mode == "numba")


def test_jacrev_rows_are_the_vjps(jit_mode, runs):
    jit = jit_mode != "python"
    z = RNG.uniform(0.5, 1.5, 16)
    J = pullback.jacrev(reaction, jit=jit)
    first = J(z)
    pullback.finish_compiling()
    _, back = pullback.vjp(reaction, z, jit=jit)
    singles = np.stack([back(e)[0] for e in np.eye(16)])
    for got in (first, J(z)):
        np.testing.assert_allclose(got, singles, rtol=1e-13, atol=1e-15)
    if jit_mode == "numba":
        assert True in runs
        assert np.array_equal(J(z), singles)


def test_hessian_columns_are_the_hvps(jit_mode, runs):
    jit = jit_mode != "python"
    x, k = RNG.normal(size=16), 0.7
    H = pullback.hessian(energy, jit=jit)
    first = H(x, k)
    pullback.finish_compiling()
    singles = np.stack([pullback.hvp(energy, (x, k), (e, 0.0), jit=jit)[0]
                        for e in np.eye(16)], 1)
    for got in (first, H(x, k)):
        np.testing.assert_allclose(got, singles, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(first[2], fd_grad(lambda y: pullback.grad(energy)(y, k)[2],
                                                 (x,)), rtol=1e-6, atol=1e-6)
    if jit_mode == "numba":
        assert True in runs


def test_two_arguments_and_their_blocks(jit):
    def f(x, y):
        s = 0.0
        for i in range(x.shape[0]):
            s += np.sin(x[i]) * y[0] + x[i] ** 2 * y[1]
        return s
    x, y = RNG.normal(size=16), RNG.normal(size=2)      # x's columns from the loop
    blocks = pullback.hessian(f, argnums=(0, 1), jit=jit)(x, y)
    dense = pullback.hessian(lambda z: f(z[:16], z[16:]), jit=False)(np.concatenate((x, y)))
    np.testing.assert_allclose(blocks[0][0], dense[:16, :16], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(blocks[0][1], dense[:16, 16:], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(blocks[1][0], dense[16:, :16], rtol=1e-13, atol=1e-14)
    jac = pullback.jacfwd(lambda x, y: np.sin(x) * y[0], argnums=(0, 1), jit=jit)(x, y)
    np.testing.assert_allclose(jac[1][:, 0], np.sin(x), rtol=1e-14)


def test_batch_loop_runs_on_two_threads_to_the_bit(monkeypatch):
    import numba
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread")
    monkeypatch.setattr(batch_loop, "_THREADED", 0.0)       # split even a small batch
    z = RNG.uniform(0.5, 1.5, 16)
    J = pullback.jacfwd(reaction, jit=True)
    one = J(z)          # the first run measures, the second splits
    numba.set_num_threads(2)
    try:
        assert np.array_equal(J(z), one)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_a_few_columns_are_called_from_python(runs):
    z = RNG.uniform(0.5, 1.5, 8)
    J = pullback.jacfwd(reaction, jit=True)(z)
    assert True not in runs
    np.testing.assert_allclose(J, pullback.jacfwd(reaction)(z), rtol=1e-13)
