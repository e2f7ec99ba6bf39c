"""The spellings of a matrix product, ``np.dot``, ``a.dot``, ``np.inner`` and
``np.einsum``, where they compute ``a @ b``, get the derivative ``a @ b`` gets: the
same generated code (so the same summed form over a loop, fusion and Numba path,
and the same cost, measured by benchmarks/spellings.py), and gradients that match
finite differences.  Where they compute something else, the call stays as written."""
import numpy as np
import pytest

import pullback
from helpers import assert_close, fd_grad

RNG = np.random.default_rng(4)
W = RNG.normal(size=(4, 4)) / 2
H0 = RNG.normal(size=4)


def rnn_at(W, h0):
    h = h0
    for _ in range(3):
        h = np.tanh(W @ h)
    return np.sum(h)


def rnn_dot(W, h0):
    h = h0
    for _ in range(3):
        h = np.tanh(np.dot(W, h))
    return np.sum(h)


def rnn_method(W, h0):
    h = h0
    for _ in range(3):
        h = np.tanh(W.dot(h))
    return np.sum(h)


def rnn_inner(W, h0):
    h = h0
    for _ in range(3):
        h = np.tanh(np.inner(W, h))
    return np.sum(h)


def rnn_einsum(W, h0):
    h = h0
    for _ in range(3):
        h = np.tanh(np.einsum("ij,j->i", W, h))
    return np.sum(h)


def _body(src):
    """The generated code without its name, docstring and comments."""
    lines = src.split("# ---- forward sweep", 1)[1].splitlines()
    return [ln for ln in lines if not ln.strip().startswith("#")]


@pytest.mark.parametrize("f", [rnn_dot, rnn_method, rnn_inner, rnn_einsum],
                         ids=lambda f: f.__name__)
def test_a_spelling_of_matmul_is_differentiated_as_matmul(f):
    g = pullback.grad(f, argnums=(0, 1))
    dW, dh = g(W, H0)
    ref = pullback.grad(rnn_at, argnums=(0, 1))
    ref(W, H0)
    assert _body(g.source) == _body(ref.source)
    assert_close(dW, fd_grad(f, (W, H0), 0), rtol=1e-6)
    assert_close(dh, fd_grad(f, (W, H0), 1), rtol=1e-6)


def test_matrix_times_matrix_spellings():
    A, B = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))

    def f(A, B):
        return (np.sum(np.sin(np.dot(A, B))) + np.sum(np.einsum("ij,jk->ik", A, B) ** 2)
                + np.sum(np.einsum("ij,jk", A, B)) + np.einsum("i,i->", A[0], B[:, 0]))
    dA, dB = pullback.grad(f, argnums=(0, 1))(A, B)
    assert_close(dA, fd_grad(f, (A, B), 0), rtol=1e-6)
    assert_close(dB, fd_grad(f, (A, B), 1), rtol=1e-6)


def test_products_that_are_not_matmul_keep_their_own_rule():
    """dot with a number, inner of two matrices (a @ b.T), einsum of a transpose or of
    a repeated output: each as written, each still right."""
    A, B = RNG.normal(size=(3, 4)), RNG.normal(size=(2, 4))

    def f(A, B, s):
        return (np.sum(np.dot(s, A)) + np.sum(np.inner(A, B) ** 2)
                + np.sum(np.einsum("ij,kj->ik", A, B) ** 2) + np.sum(np.einsum("ij,ij->i", A, A)))
    g = pullback.grad(f, argnums=(0, 1, 2))
    dA, dB, ds = g(A, B, 1.5)
    src = g.source
    assert "np.inner(" in src and "np.einsum('ij,kj->ik'" in src
    assert_close(dA, fd_grad(f, (A, B, 1.5), 0), rtol=1e-6)
    assert_close(dB, fd_grad(f, (A, B, 1.5), 1), rtol=1e-6)
    assert ds == pytest.approx(fd_grad(f, (A, B, 1.5), 2), rel=1e-6)


def test_a_spelling_under_numba_matches_the_python_backend():
    pytest.importorskip("numba")
    want = pullback.grad(rnn_dot, argnums=(0, 1))(W, H0)
    got = pullback.grad(rnn_einsum, argnums=(0, 1), jit=True)(W, H0)
    for a, b in zip(got, want):
        assert_close(a, b, rtol=1e-12)
