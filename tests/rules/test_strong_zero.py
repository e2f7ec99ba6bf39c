"""The strong zero: ``scaled(u, d)`` is ``u * d`` and ``divided(u, d)`` is ``u / d``,
except that both are 0 wherever ``u`` is 0, whatever ``d`` is there (infinite,
zero or NaN).  Their own rules (reverse mode over forward mode) against finite
differences, and the gradients that used to be NaN, on both backends, against
their analytic values.
"""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback.rules.strong_zero import divided, scaled

from .checks import SETTINGS, check_rule


def test_equal_to_the_product_and_quotient_where_those_are_finite():
    u = np.array([0.5, -2.0, 3.0])
    d = np.array([4.0, 0.25, -1.5])
    np.testing.assert_array_equal(scaled(u, d), u * d)
    np.testing.assert_array_equal(divided(u, d), u / d)
    assert scaled(0.5, 4.0) == 2.0 and divided(1.0, 4.0) == 0.25


def test_zero_where_u_is_zero_and_nothing_else_changed():
    u = np.array([0.0, 0.0, 0.0, 2.0, 2.0])
    d = np.array([np.inf, 0.0, np.nan, np.inf, 0.0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(scaled(u, d), [0.0, 0.0, 0.0, np.inf, 0.0])
        np.testing.assert_array_equal(divided(u, d), [0.0, 0.0, 0.0, 0.0, np.inf])
    assert divided(0.0, 0.0) == 0.0 and scaled(0.0, math.inf) == 0.0
    assert divided(np.float32(0.0), np.float32(0.0)).dtype == np.float32
    assert scaled(np.zeros(2, np.float32), np.full(2, np.inf, np.float32)).dtype == np.float32
    # A scalar u against an array d.
    np.testing.assert_array_equal(divided(0.0, np.array([0.0, 2.0])), [0.0, 0.0])


@pytest.mark.parametrize("helper", [scaled, divided], ids=["scaled", "divided"])
@SETTINGS
@given(u=st.floats(-3.0, 3.0), d=st.floats(0.2, 3.0))
def test_rules_of_the_helpers(helper, u, d):
    check_rule(helper, [u, d])


def where_sqrt(x):
    return np.sum(np.where(x > 0, np.sqrt(np.abs(x) * (x > 0)), 0.0) + 0.5 * x)


def sqrt_of_maximum(x):
    return np.sum(np.sqrt(np.maximum(x, 0.0))) + np.sum(np.sqrt(-np.minimum(x, 0.0)))


def where_log(x):
    return np.sum(np.where(x > 0, np.log(np.maximum(x, 0.0)), 0.0))


def coulomb(pos, q):
    diff = pos[:, None, :] - pos[None, :, :]
    D = np.sqrt(np.sum(diff ** 2, axis=-1))
    return 0.5 * q @ np.where(D > 0, 1.0 / D, 0.0) @ q


def fractional_power(x):
    return np.sum(np.where(x > 0, np.maximum(x, 0.0) ** 0.5, x))


X = np.array([-1.0, 0.0, 4.0, 2.25])


@pytest.mark.parametrize("f, expected", [
    (where_sqrt, [0.5, 0.5, 0.75, 0.5 + 1 / 3]),
    (sqrt_of_maximum, [-0.5, np.nan, 0.25, 1 / 3]),      # at 0 a one-sided infinity: NaN
    (where_log, [0.0, 0.0, 0.25, 1 / 2.25]),
    (fractional_power, [1.0, 1.0, 0.25, 1 / 3]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_that_were_nan(f, expected, jit):
    with np.errstate(all="ignore"):
        got = pullback.grad(f, jit=jit)(X)
    keep = ~np.isnan(expected)
    np.testing.assert_allclose(got[keep], np.asarray(expected)[keep], rtol=1e-14)


def test_coulomb_energy_with_its_zero_diagonal(jit):
    pos = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.5, 0.5, 1.0]])
    q = np.array([1.0, -1.0, 2.0, 0.5])
    with np.errstate(all="ignore"):
        got = pullback.grad(coulomb, argnums=(0, 1), jit=jit)(pos, q)
        for g, k in zip(got, (0, 1)):
            assert np.all(np.isfinite(g))
            assert_fd_close(g, fd_estimate(coulomb, (pos, q), k))
