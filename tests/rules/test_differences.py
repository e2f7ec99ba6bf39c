"""np.gradient: the cotangent of f (any axes, spacing as numbers or coordinates,
edge_order 1 or 2) and of a number spacing, against finite differences."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate
from pullback.rules.differences import gradient_vjp, gradient_vjp_spacing

from .checks import SETTINGS, check_vjp, seeds
from .checks import array_values as values


@st.composite
def problems(draw):
    """A shape (each length at least edge_order + 1), axes, and a spacing per axis."""
    edge_order = draw(st.sampled_from([1, 2]))
    shape = tuple(draw(st.lists(st.integers(edge_order + 1, 5), min_size=1, max_size=3)))
    nd = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                          st.permutations(range(nd)).map(lambda p: tuple(p[:max(1, nd - 1)]))))
    axes = list(range(nd)) if axis is None else \
        [a % nd for a in (axis if isinstance(axis, tuple) else (axis,))]
    rng = np.random.default_rng(draw(seeds))
    style = draw(st.sampled_from(["none", "one", "each"]))
    if style == "none":
        spacing = ()
    elif style == "one":
        spacing = (float(rng.uniform(0.3, 2.0)),)
    else:
        # a number or the (uneven, increasing) coordinates of the points, per axis
        spacing = tuple(float(rng.uniform(0.3, 2.0)) if draw(st.booleans())
                        else np.cumsum(rng.uniform(0.3, 1.5, shape[a])) for a in axes)
    return shape, axis, axes, spacing, edge_order


def _stacked(axis, edge_order, spacing, many):
    def fn(x, *h):
        out = np.gradient(x, *(h or spacing), axis=axis, edge_order=edge_order)
        return np.stack(out) if many else out
    return fn


@SETTINGS
@given(problem=problems(), seed=seeds)
def test_gradient_cotangent_of_f(problem, seed):
    shape, axis, axes, spacing, edge_order = problem
    many = len(axes) > 1
    check_vjp(_stacked(axis, edge_order, spacing, many),
              lambda g, ans, x: gradient_vjp(list(g) if many else g, x, axis, edge_order, *spacing),
              [values(seed, shape)], 0)


@SETTINGS
@given(problem=problems(), seed=seeds)
def test_gradient_cotangent_of_a_number_spacing(problem, seed):
    shape, axis, axes, spacing, edge_order = problem
    numbers = [k for k, h in enumerate(spacing) if np.ndim(h) == 0]
    if not numbers:
        return
    k = numbers[0]
    many = len(axes) > 1
    x = values(seed, shape)

    def fn(h):
        given = spacing[:k] + (h,) + spacing[k + 1:]
        return _stacked(axis, edge_order, given, many)(x)
    check_vjp(fn, lambda g, ans_, h: gradient_vjp_spacing(
        list(g) if many else g, list(ans_) if many else ans_, k, x, axis, edge_order, *spacing),
        [spacing[k]], 0)


def test_whole_functions_through_the_rule():
    """The registered rule in differentiated functions: one axis (an array) and
    several (a tuple unpacked), coordinates as constants, a spacing differentiated."""
    r = np.random.default_rng(0)
    W = r.normal(size=(3, 4, 5))
    xs = np.cumsum(r.uniform(0.5, 1.5, 5))

    def along_one(A, h):
        return np.sum(np.gradient(A, h, axis=1) * W) + np.sum(np.gradient(A, xs, axis=-1) ** 2)

    def along_two(A, h):
        gy, gz = np.gradient(A, h, xs, axis=(1, 2), edge_order=2)
        return np.sum(gy * W) + np.sum(gz * gy)

    def along_all(A):
        g0, g1, g2 = np.gradient(A)
        return np.sum(g0 * W) + np.sum(g2 * g1)

    A = r.normal(size=(3, 4, 5))
    for f, args in [(along_one, (A, 0.7)), (along_two, (A, 0.4)), (along_all, (A,))]:
        nums = tuple(range(len(args)))
        for k, g in zip(nums, pullback.grad(f, argnums=nums)(*args)):
            assert_fd_close(g, fd_estimate(f, args, k))


def test_coordinates_differentiated_are_refused():
    def f(a, x):
        return np.sum(np.gradient(a, x) ** 2)
    with pytest.raises(NotImplementedError, match="coordinate arrays"):
        pullback.grad(f, argnums=(0, 1))(np.arange(4.0) ** 2, np.array([0.0, 1.0, 3.0, 4.0]))


def test_runs_through_object_mode_under_numba():
    # np.gradient has no Numba twin (nor does Numba implement it): the compiled
    # derivative calls it and its VJP as Python, slower but the same numbers.
    def f(a):
        return np.sum(np.gradient(a) ** 2)
    a = np.array([0.0, 1.0, 4.0, 2.0, -1.0])
    assert_close(pullback.grad(f, jit=True)(a), pullback.grad(f)(a), rtol=1e-12)
    assert_fd_close(pullback.grad(f, jit=True)(a), fd_estimate(f, (a,)))
