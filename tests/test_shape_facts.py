"""Gradients where shape facts decide whether an operand's cotangent is summed
(analysis/shapes.py): programs that broadcast must keep the sum, programs that
provably do not may drop it; both against finite differences, on both backends."""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate


def heat(u0, c):
    u = u0.copy()
    for k in range(4):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u * u)


def scalar_into_slice(u, c):
    v = u.copy()
    v[1:-1] = c * 2.0
    return np.sum(v * v * u)


def one_element_broadcast_into_slice(u, c):
    w = u * c
    w[1:3] = u[0:1] * 2.0
    return np.sum(w * w)


def row_times_matrix(A, b):
    return np.sum(np.tanh(A * b) * A)


def neighbours(x, c):
    y = x * c
    return np.sum(y[:-1] * y[1:] + x[1:] * x[:-1])


def slice_of_slice(x, c):
    inner = x[1:-1]
    return np.sum(inner[1:] * x[2:-1] * c)


def previous_iteration(x, c):
    z = x[:1] * c
    y = x[:1]
    for i in range(1, 5):
        t = x[:i] * c
        z = y + t           # y of the previous iteration has length 1: broadcast
        y = t[:1] * 2.0
    return np.sum(z * z)


def used_in_a_branch(x, c):
    t = x * c
    s = 0.0
    if c > 10.0:
        s = np.sum(t)
    return s + np.sum(x * x)


def transposes_broadcast(A, c):
    # (3, 1) against (1, 3): every one of these permutes axes, none keeps the shape.
    B, C, D, E = np.transpose(A), np.swapaxes(A, 0, 1), np.moveaxis(A, 0, 1), A.transpose()
    F = A.transpose((1, 0))
    return np.sum(np.sin(B * A) + C * A * c + D * A + (E * A) * (A.T * A) + F * A)


CASES = [
    (transposes_broadcast, lambda rng: (rng.standard_normal((1, 3)), 0.4)),
    (heat, lambda rng: (rng.standard_normal(9), 0.2)),
    (scalar_into_slice, lambda rng: (rng.standard_normal(6), 0.7)),
    (one_element_broadcast_into_slice, lambda rng: (rng.standard_normal(5), 1.3)),
    (row_times_matrix, lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal(4))),
    (neighbours, lambda rng: (rng.standard_normal(7), 0.9)),
    (slice_of_slice, lambda rng: (rng.standard_normal(8), 1.1)),
    (previous_iteration, lambda rng: (rng.standard_normal(6), 0.8)),
    (used_in_a_branch, lambda rng: (rng.standard_normal(4), 0.5)),
]


@pytest.mark.parametrize("f, make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_matches_finite_differences(f, make, jit):
    args = make(np.random.default_rng(7))
    grads = pullback.grad(f, argnums=(0, 1), jit=jit)(*args)
    for k in range(2):
        assert_fd_close(grads[k], fd_estimate(f, args, k), rtol=1e-6, atol=1e-8)
        assert np.shape(grads[k]) == np.shape(args[k])


def transpose_with_separate_axes(A):
    return np.sum(A.transpose(1, 0) * A)


def test_separate_transpose_axes_are_refused_under_numba_and_work_in_python():
    A = np.random.default_rng(3).standard_normal((3, 3))
    with pytest.raises(pullback.NumbaCompileError, match="as one tuple"):
        pullback.grad(transpose_with_separate_axes, jit=True)(A)
    g = pullback.grad(transpose_with_separate_axes)(A)
    assert_fd_close(g, fd_estimate(transpose_with_separate_axes, (A,)))
