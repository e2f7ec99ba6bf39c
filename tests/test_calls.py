"""Recursion and sums over generators, against finite differences."""
import math

import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def tree_sum(a, b, depth):
    """Recursion with two calls per level and data-independent depth."""
    if depth == 0:
        return a * b
    return tree_sum(a * 0.9, b, depth - 1) + math.sin(tree_sum(b, a, depth - 1))


def sum_generator(p):
    return sum(p[i] * p[i] for i in range(len(p)) if i != 1)


def fsum_list(p, w):
    return math.fsum([a * math.exp(b) for a, b in zip(p, w)])


def nested_generator(A):
    return sum(A[i, j] * (i + 1) for i in range(A.shape[0]) for j in range(A.shape[1]) if j >= i)


K = 5


def generator_names_do_not_leak(p):
    s = sum(p[K] for K in range(2))
    return s * K


P = np.array([0.3, -1.2, 0.8, 1.5])
CASES = [
    (power, (1.3, 5), (0,)),
    (tree_sum, (0.7, 0.4, 3), (0, 1)),
    (sum_generator, (P,), (0,)),
    (fsum_list, (P, P[::-1].copy()), (0, 1)),
    (nested_generator, (np.arange(12.0).reshape(3, 4) / 5,), (0,)),
    (generator_names_do_not_leak, (P,), (0,)),
]


@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_matches_finite_differences(f, args, argnums):
    value, grads = pullback.value_and_grad(f, argnums=argnums, jit=False)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    for k, g in zip(argnums, grads):
        assert_fd_close(g, fd_estimate(f, args, k), rtol=1e-6, atol=1e-8)


def test_power_matches_the_analytic_derivative():
    for n in range(6):
        assert pullback.grad(power)(1.3, n) == pytest.approx(n * 1.3 ** (n - 1) if n else 0.0)


def test_recursion_under_numba_is_a_clear_error():
    with pytest.raises(pullback.NumbaCompileError, match="(?s)recursive call.*jit=False"):
        pullback.grad(power, jit=True)(1.3, 3)


def test_sum_of_generator_on_numba():
    g = pullback.grad(sum_generator, jit=True)(P)
    assert_fd_close(g, fd_estimate(sum_generator, (P,), 0), rtol=1e-6)


def _sum_of_listed_arrays(x, y):
    total = sum([x, y * 2.0])
    total[0] = 5.0              # a new array, as Python's 0 + x makes: x is not written
    return np.sum(np.sin(total)) + np.sum(sum((x, y), np.ones(3)) ** 2) + np.sum(x)


def _sum_of_listed_numbers(a, b):
    return sum([a * b, b, 1.5]) * sum([a], start=2.0) + sum([]) + sum((a,))


@pytest.mark.parametrize("jit", [False, True])
def test_builtin_sum_of_a_list_written_out(jit):
    """sum([a, b]) is (0 + a) + b, as Python computes it: arrays or numbers, with start."""
    r = np.random.default_rng(4)
    for f, args in [(_sum_of_listed_numbers, (0.7, -1.3)),
                    (_sum_of_listed_arrays, (r.normal(size=3), r.normal(size=3)))]:
        for k, g in enumerate(pullback.grad(f, argnums=(0, 1), jit=jit)(*args)):
            assert_fd_close(g, fd_estimate(f, args, k))
