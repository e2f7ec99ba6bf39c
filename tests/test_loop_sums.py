"""Loop sums (reverse/loopsums.py): a matrix's cotangent added in every iteration of
a loop (``W @ h`` in an RNN step) is added once after the loop, as one product.

Every gradient is checked against central finite differences, on both backends
(the Numba backend keeps the per-iteration update), including the cases where
the sum must not be deferred: the matrix written or its cotangent read inside
the loop, a loop that runs zero times, arguments changed in place later.
"""
import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate

r = np.random.default_rng(3)


def rnn(W, U, h, x):
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + U @ x[t])
    return np.sum(h * h)


def row_rnn(W, h, x):
    """Row vectors on the left (``h @ W``), and x[t] @ W: the summed form of b."""
    for t in range(x.shape[0]):
        h = np.tanh(h @ W + x[t] @ W)
    return np.sum(h ** 2)


def batched_rnn(W, H, X):
    """A matrix per step (a batch of states): 2-D arguments on both sides."""
    for t in range(X.shape[0]):
        H = np.tanh(W @ H + X[t])
    return np.sum(H * H)


def twice_per_step(W, h, n):
    """W used twice in one step: its cotangent is read by both updates."""
    for t in range(n):
        h = np.sin(W @ h) + W @ np.cos(h)
    return np.sum(h)


def written_in_loop(W, h, n):
    """W changes inside the loop: its cotangent is read in the reverse loop."""
    W = W.copy()
    for t in range(n):
        h = np.tanh(W @ h)
        W[0, 0] = W[0, 0] * 0.9 + h[0]
    return np.sum(h * h) + np.sum(W)


def nested(W, h, n):
    for i in range(n):
        for j in range(2):
            h = np.tanh(W @ h) + 0.1 * h
    return np.sum(h * h)


def branchy(W, h, n):
    for t in range(n):
        if t % 2 == 0:
            h = np.tanh(W @ h)
        else:
            h = np.sin(h @ W)
    return np.sum(h)


def read_after(W, h, n):
    s = 0.0
    for t in range(n):
        h = np.tanh(W @ h)
        s = s + np.sum(W * W) * h[0]
    return s + np.sum(h)


CASES = {
    "rnn": (rnn, lambda: (0.4 * r.normal(size=(5, 5)), r.normal(size=(5, 3)), r.normal(size=5),
                          r.normal(size=(6, 3))), (0, 1, 2)),
    "row_rnn": (row_rnn, lambda: (0.4 * r.normal(size=(4, 4)), r.normal(size=4),
                                  r.normal(size=(5, 4))), (0, 1, 2)),
    "batched": (batched_rnn, lambda: (0.4 * r.normal(size=(4, 4)), r.normal(size=(4, 3)),
                                      r.normal(size=(5, 4, 3))), (0, 1, 2)),
    "twice": (twice_per_step, lambda: (0.4 * r.normal(size=(3, 3)), r.normal(size=3), 4), (0, 1)),
    "written": (written_in_loop, lambda: (0.4 * r.normal(size=(3, 3)), r.normal(size=3), 4),
                (0, 1)),
    "nested": (nested, lambda: (0.4 * r.normal(size=(3, 3)), r.normal(size=3), 3), (0, 1)),
    "branchy": (branchy, lambda: (0.4 * r.normal(size=(3, 3)), r.normal(size=3), 5), (0, 1)),
    "read_after": (read_after, lambda: (0.4 * r.normal(size=(3, 3)), r.normal(size=3), 4), (0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name, jit):
    f, make, argnums = CASES[name]
    args = make()
    before = [np.copy(a) for a in args]
    grads = pullback.grad(f, argnums=argnums, jit=jit)(*args)
    for k, g in zip(argnums, grads):
        assert_fd_close(g, fd_estimate(f, args, argnum=k), rtol=1e-5, atol=1e-7)
    for a, b in zip(args, before):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("steps", [0, 1])
def test_zero_and_one_iterations(steps):
    W, U, h = 0.4 * r.normal(size=(4, 4)), r.normal(size=(4, 2)), r.normal(size=4)
    x = r.normal(size=(steps, 2))
    gW, gU, gh = pullback.grad(rnn, argnums=(0, 1, 2))(W, U, h, x)
    assert_fd_close(gW, fd_estimate(rnn, (W, U, h, x), argnum=0))
    assert_fd_close(gU, fd_estimate(rnn, (W, U, h, x), argnum=1))
    assert_fd_close(gh, fd_estimate(rnn, (W, U, h, x), argnum=2))


def test_the_rnn_step_is_summed_after_the_loop():
    """The case the mechanism is for: no per-step dW update is left in the loop."""
    g = pullback.grad(rnn, argnums=(0, 1, 2))
    g(*CASES["rnn"][1]())
    src = g.source
    loop = src[src.index("# ---- reverse sweep"):]
    assert "dW += matmul_vjp_a_summed(" in loop
    assert "dW += matmul_vjp_a(" not in loop


def test_not_deferred_where_the_cotangent_is_read_in_the_loop():
    g = pullback.grad(written_in_loop, argnums=(0, 1))
    g(*CASES["written"][1]())
    assert "_summed" not in g.source


@pytest.mark.parametrize("k", [0, 1])
def test_summed_forms_equal_the_sum_of_their_terms(k):
    """The registered summed forms against the per-step helper they stand for,
    for vectors and matrices per step (and an empty loop)."""
    from pullback.rules import forms
    from pullback.rules.linalg import matmul_vjp_a, matmul_vjp_b
    helper = (matmul_vjp_a, matmul_vjp_b)[k]
    summed, varying = forms.summed_form(helper)
    M = r.normal(size=(4, 5))
    for per_step in [(), (5,), (5, 3)] if k == 0 else [(), (4,), (2, 4)]:
        if not per_step:
            assert summed([], M) == 0.0
            continue
        calls = []
        for _ in range(3):
            other = r.normal(size=per_step)
            if k == 0:
                g = M @ other
                calls.append((g, M, other))
            else:
                g = other @ M
                calls.append((g, other, M))
        expected = sum(helper(*c) for c in calls)
        steps = [tuple(c[i] for i in varying) for c in calls]
        assert_close(summed(steps, M), expected, rtol=1e-12, atol=1e-12)
