"""Numba twins of reductions over a tuple of axes and of stacked (batched) matmul:
each gradient compiled with ``jit=True`` against ``jit=False`` and central finite
differences (``check``), on small fixed shapes (each new combination of ranks is one
more Numba compile); and the cases the twins refuse, with a located NumbaCompileError."""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from helpers import check_jit as check

RNG = np.random.default_rng(7)
A3 = RNG.normal(size=(3, 4, 2))
A2 = RNG.normal(size=(3, 4))


# ------------------------------------------------------- reductions over a tuple of axes
def _sums3(A):
    return (np.sum(np.sum(A, axis=(0, 2)) ** 2) + np.sum(A.mean(axis=(-1, 1), keepdims=True) * A)
            + np.sum(np.sum(A, axis=(0, A.ndim - 1)) ** 3))    # a tuple known when it runs


def _extrema3(A):
    return np.sum(np.max(A, axis=(0, 2)) ** 2) + np.sum(A.min(axis=(1, 2), keepdims=True) * A)


def _moments3(A):
    return np.sum(np.var(A, axis=(0, 2)) ** 2) + np.sum(A.std(axis=(1, 2), ddof=1, keepdims=True) * A)


def _prod3(A):
    return np.sum(np.prod(A, axis=(0, 2))) + np.sum(np.prod(A, axis=(1, 2), keepdims=True) * A)


def _mixed2(A):
    # Every axis of a matrix as a tuple (a number, or with keepdims a 1x1 array), and
    # a tuple of one axis.
    return (np.sum(A, axis=(0, 1)) ** 2 + np.sum(np.max(A, axis=(0, -1), keepdims=True) * A)
            + np.std(A, axis=(1, 0)) + np.sum(np.mean(A, axis=(-1,)) ** 2))


@pytest.mark.parametrize("f", [_sums3, _extrema3, _moments3, _prod3])
def test_reductions_over_a_tuple_of_axes_3d(f):
    check(f, (A3,))


def test_reductions_over_a_tuple_of_axes_2d():
    check(_mixed2, (A2,))


def test_max_over_a_tuple_of_axes_shares_ties():
    A = np.array([[[1.0, 2.0], [2.0, 0.5]], [[2.0, -1.0], [0.0, 2.0]]])
    g = pullback.grad(lambda A: np.sum(np.max(A, axis=(0, 2)) * np.array([1.0, 3.0])), jit=True)(A)
    py = pullback.grad(lambda A: np.sum(np.max(A, axis=(0, 2)) * np.array([1.0, 3.0])), jit=False)(A)
    np.testing.assert_allclose(g, py)
    np.testing.assert_allclose(g[:, 0, :], [[0.0, 0.5], [0.5, 0.0]])


# ------------------------------------------------------------- stacked matmul and dot
def _matmul(A, B):
    return np.sum(np.sin(A @ B))


def _np_matmul(A, B):
    return np.sum(np.cos(np.matmul(A, B)) * 2.0)


def _dot(A, B):
    return np.sum(np.sin(np.dot(A, B))) + np.sum(A.dot(B) ** 2)


K, N, M, P = 2, 3, 4, 2
STACKS = [
    ((K, N, M), (M, P)),            # a stack of matrices times one matrix
    ((K, N, M), (K, M, P)),         # stack times stack
    ((N, M), (K, M, P)),            # one matrix times a stack
    ((1, N, M), (K, M, P)),         # a batch dimension of 1, broadcast
    ((K, N, M), (M,)),              # a stack times a vector
    ((M,), (K, M, P)),              # a vector times a stack
]


@pytest.mark.parametrize("shapes", STACKS, ids=["stack-matrix", "stack-stack", "matrix-stack",
                                                "batch1-stack", "stack-vector", "vector-stack"])
def test_stacked_matmul(shapes):
    args = tuple(RNG.normal(size=s) for s in shapes)
    check(_matmul, args, (0, 1))


def test_np_matmul_of_stacks():
    check(_np_matmul, (RNG.normal(size=(K, N, M)), RNG.normal(size=(K, M, P))), (0, 1))


@pytest.mark.parametrize("shapes", [((K, N, M), (M,)), ((K, N, M), (M, P))],
                         ids=["stack-vector", "stack-matrix"])
def test_dot_of_an_nd_array(shapes):
    args = tuple(RNG.normal(size=s) for s in shapes)
    check(_dot, args, (0, 1))


# ------------------------------------------------------------------------ numbers
def _kept_sums_of_a_number(x):
    return np.sum(np.sum(x * x, keepdims=True)) + np.mean(np.sin(x), keepdims=True)


def _kept_reductions_of_a_number(x):
    y = np.sin(x)
    return (np.max(y, keepdims=True) * np.min(x * x, keepdims=True) + np.prod(y, keepdims=True)
            + np.var(y, keepdims=True) + 3.0 * np.std(x, keepdims=True))


def test_keepdims_on_a_number_compiles():
    """np.sum(2.0, keepdims=True) is a number in NumPy too (a float64, not a 0-d array);
    the spread of one number is 0 and its extreme and product are itself."""
    check(_kept_sums_of_a_number, (1.5,), 0)
    check(_kept_reductions_of_a_number, (0.7,), 0)


# ------------------------------------------------------------------------ refusals
def test_dot_with_an_nd_second_operand_is_refused_with_its_line():
    def f(A, B):
        return np.sum(np.dot(A, B))
    with pytest.raises(pullback.NumbaCompileError, match=r"(?s)np\.dot\(A, B\).*np\.dot with"):
        pullback.grad(f, jit=True)(RNG.normal(size=(K, N, M)), RNG.normal(size=(K, M, P)))
