"""Writes through an index array that names an entry more than once.

``y[idx] = v`` keeps, for a repeated entry, the last value written to it (NumPy
assigns in order); ``y[idx] += v`` reads every entry once and writes it once, so
a repeated entry gains ``v`` once, not once per repeat (``np.add.at`` is the
function that adds per repeat).  The earlier writes reach nothing, so their
cotangent is zero.  Before, each repeat got the entry's whole cotangent: the
gradient of ``y[[1, 1]] = x[[0, 2]]`` credited ``x[0]`` too.

Every gradient is checked against central finite differences, on both backends.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pullback
from helpers import assert_fd_close, fd_estimate


def assign_repeated(x):
    y = np.zeros(3)
    y[[1, 1]] = x[[0, 2]]
    return np.sum(y ** 2)


def add_repeated(x, v):
    y = x.copy()
    y[[1, 1]] += v
    return np.sum(y * y)


def scale_through_an_index(x, v):
    y = x.copy()
    idx = np.array([2, 0, 2])
    y[idx] = y[idx] * v
    return np.sum(y * y)


def negative_and_positive_alike(x):
    y = np.zeros(4)
    y[np.array([-1, 3, 0])] = x[:3] * 2.0
    return np.sum(y ** 3)


def rows_of_a_matrix(A, w):
    B = A.copy()
    B[np.array([0, 2, 0])] = B[np.array([1, 1, 2])] * w
    return np.sum(B * B)


def columns_of_a_matrix(A, w):
    B = A * 1.0
    B[:, np.array([1, 1, 0])] += w
    return np.sum(B ** 2)


def forces_on_bonded_atoms(pos, k):
    # A vectorised spring model: F[bonds[:, 0]] += f adds once per distinct atom
    # (NumPy's buffered +=), which the gradient must follow.
    bonds = np.array([[0, 1], [1, 2], [0, 2]])
    F = np.zeros(3)
    f = k * (pos[bonds[:, 1]] - pos[bonds[:, 0]])
    F[bonds[:, 0]] += f
    return np.sum(F * pos)


def masked_write(x, v):
    y = x.copy()
    y[x > 0.5] = v * x[x > 0.5]
    return np.sum(y ** 2)


X = np.array([1.0, 2.0, 3.0])
A = np.arange(1.0, 13.0).reshape(4, 3) / 7.0
CASES = [
    (assign_repeated, (X,), 0),
    (add_repeated, (X, 1.5), (0, 1)),
    (scale_through_an_index, (X, 1.5), (0, 1)),
    (negative_and_positive_alike, (X,), 0),
    (rows_of_a_matrix, (A, 0.7), (0, 1)),
    (columns_of_a_matrix, (A, 0.7), (0, 1)),
    (forces_on_bonded_atoms, (np.array([0.1, 0.7, 1.6]), 2.0), (0, 1)),
    (masked_write, (np.array([0.2, 0.9, 1.4]), 1.3), (0, 1)),
]


def _check(f, args, argnums, jit):
    got = pullback.grad(f, argnums=argnums, jit=jit)(*args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    got = (got,) if isinstance(argnums, int) else got
    for g, k in zip(got, nums):
        assert_fd_close(g, fd_estimate(f, args, k))


@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_repeated_index_writes(f, args, argnums, jit):
    _check(f, args, argnums, jit)


def written_through(x, idx, c):
    y = x * 1.0
    y[idx] = y[idx] * c + x[idx[::-1]]
    y[idx] += c
    return np.sum(np.sin(y))


@settings(max_examples=30, deadline=None)
@given(idx=st.lists(st.integers(-5, 4), min_size=1, max_size=8),
       seed=st.integers(0, 2 ** 16))
def test_random_index_arrays_with_repeats(idx, seed):
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, 5)
    _check(written_through, (x, np.array(idx), 0.8), (0, 2), False)
