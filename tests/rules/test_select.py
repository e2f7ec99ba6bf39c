"""np.select: the cotangent of each choice (where it was the first whose condition
held) and of the default, against finite differences, with broadcasting."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pullback
from helpers import assert_fd_close, check_jit, fd_estimate
from pullback.rules.piecewise import select_vjp_choices, select_vjp_default

from .checks import SETTINGS, check_vjp, seeds
from .checks import array_values as values


@SETTINGS
@given(n=st.integers(1, 6), k=st.integers(1, 3), seed=seeds, data=st.data())
def test_select_cotangents(n, k, seed, data):
    rng = np.random.default_rng(seed)
    conds = [rng.random(n) < 0.4 for _ in range(k)]
    # each choice an array of n, a broadcast (1,) or (n, 1) would change the result's shape
    shapes = [data.draw(st.sampled_from([(n,), (1,), ()])) for _ in range(k)]
    choices = [values(seed + i, s) for i, s in enumerate(shapes)]
    default = values(seed + 7, data.draw(st.sampled_from([(n,), ()])))
    for i in range(k):
        def fn(c, i=i):
            return np.select(conds, choices[:i] + [c] + choices[i + 1:], default)
        check_vjp(fn, lambda g, ans, c, i=i: select_vjp_choices(
            g, conds, choices[:i] + [c] + choices[i + 1:], default)[i], [choices[i]], 0)
    check_vjp(lambda d: np.select(conds, choices, d),
              lambda g, ans, d: select_vjp_default(g, conds, choices, d), [default], 0)


def test_select_in_a_differentiated_function():
    def f(x, y, d):
        return np.sum(np.select([x < -0.3, x > 0.4], [x ** 2, y * x], default=d) ** 2)
    r = np.random.default_rng(1)
    args = (r.normal(size=9), r.normal(size=9), 0.7)
    for k, g in enumerate(pullback.grad(f, argnums=(0, 1, 2))(*args)):
        assert_fd_close(g, fd_estimate(f, args, k))
    assert pullback.grad(f, argnums=2)(*args) != 0.0      # the default is reached


def _selected_by_three_conditions(x, y, d):
    return np.sum(np.select([x < -0.3, x > 0.4, y > 1.0], [x ** 2, y * x, np.sin(y)], d) ** 2)


@given(n=st.integers(1, 7), seed=seeds, array_default=st.booleans())
@SETTINGS
def test_select_compiles_under_numba(n, seed, array_default):
    """The twins of both cotangents, a number or an array default, against jit=False and
    finite differences."""
    r = np.random.default_rng(seed)
    d = r.normal(size=n) if array_default else 0.7
    check_jit(_selected_by_three_conditions, (r.normal(size=n), r.normal(size=n), d), (0, 1, 2))


def _select_of_a_broadcast_choice(x, y):
    return np.sum(np.select([x > 0], [y], np.zeros(x.shape)))


def _select_of_a_list_of_numbers(x):
    return np.sum(np.select([x > 0, x < -1], [1.5, 2.5], 0.0) * x)


def test_select_that_broadcasts_is_refused_under_numba():
    with pytest.raises(ValueError, match="one shape"):
        pullback.grad(_select_of_a_broadcast_choice, argnums=(0, 1), jit=True)(np.ones(4), np.ones(1))
    with pytest.raises(pullback.NumbaCompileError, match="np.select"):
        pullback.grad(_select_of_a_list_of_numbers, jit=True)(np.ones(4))


def _selected_by_a_list(x, y, masks):
    return np.sum(np.sin(np.select(masks, [x, y * x], default=1.1)))


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPendingDeprecationWarning")   # a list argument
def test_select_with_a_list_of_conditions_compiles_under_numba():
    """A list of masks passed in reaches Numba as a list, not a tuple."""
    r = np.random.default_rng(5)
    masks = [np.array([True, False, False, True]), np.array([False, True, False, True])]
    check_jit(_selected_by_a_list, (r.normal(size=4), r.normal(size=4), masks), (0, 1))
