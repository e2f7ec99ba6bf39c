"""The strong zero: ``scaled(u, d)`` is ``u * d`` and ``divided(u, d)`` is ``u / d``,
except that both are 0 wherever ``u`` is 0, whatever ``d`` is there (infinite,
zero or NaN).  Their own rules (reverse mode over forward mode) against finite
differences, and the gradients that used to be NaN, on both backends, against
their analytic values.
"""
import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback.rules.strong_zero import divided, powered, scaled

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


@SETTINGS
@given(x=st.floats(0.2, 3.0), e=st.floats(-2.0, 3.0))
def test_rule_of_powered(x, e):
    check_rule(powered, [x, e])


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


LIBRARY = Path(pullback.__file__).resolve().parent


def _ours(caught):
    """The warnings among ``caught`` raised from pullback's own files (not from the
    user's code, nor from the primal's statements in the generated module)."""
    return [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
            if Path(w.filename).resolve().is_relative_to(LIBRARY)]


NUMBERS = [0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("helper, op", [(scaled, np.multiply), (divided, np.divide)],
                         ids=["scaled", "divided"])
def test_numbers_give_numpys_values_and_types_without_a_warning(helper, op):
    for a, b in itertools.product(NUMBERS, NUMBERS):
        for u, d in ((a, b), (np.float64(a), b), (a, np.float64(b)),
                     (np.float64(a), np.float64(b))):
            with np.errstate(all="ignore"):
                want = op(np.float64(u), np.float64(d))
            if u == 0 and not math.isfinite(want):
                want = np.float64(0.0)      # the strong zero
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = helper(u, d)
            both_python = type(u) is float and type(d) is float
            numpy_type = not both_python or (helper is divided and d == 0)
            assert type(got) is (np.float64 if numpy_type else float), (u, d, got)
            assert (got == want and math.copysign(1, got) == math.copysign(1, want)) \
                or (math.isnan(got) and math.isnan(want)), (u, d, got, want)


def where_sqrt_as_written(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0))


def sqrt_of_clamped(x):
    return np.sum(np.sqrt(np.maximum(x, 0)))


def where_power_as_written(x):
    # np.power's partial x ** -0.5 at 0 (strong_zero.powered): it printed "divide
    # by zero encountered in power" on the Python backend.
    return np.sum(np.where(x > 0, x ** 0.5, 0))


def power_of_clamped(x):
    return np.sum(np.power(np.maximum(x, 0), 0.5))


def scalar_sqrt_of_clamped(x):
    total = 0.0
    for k in range(len(x)):
        total += math.sqrt(max(x[k], 0.0)) + np.sqrt(np.maximum(x[k], 0.0))
    return total


@pytest.mark.parametrize("f, expected", [
    (where_sqrt_as_written, [0.0, 0.0, 0.25, 1 / 3]),
    (sqrt_of_clamped, [0.0, np.inf, 0.25, 1 / 3]),
    (scalar_sqrt_of_clamped, [0.0, np.inf, 0.5, 2 / 3]),
    (where_power_as_written, [0.0, 0.0, 0.25, 1 / 3]),
    (power_of_clamped, [0.0, np.inf, 0.25, 1 / 3]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_no_runtime_warning_of_ours_reaches_the_user(f, expected, jit_mode):
    """The strong zero computes 0 * inf and 1 / 0 on its way to the derivative: NumPy's
    RuntimeWarnings about them are ours, and must not reach the user (the primal's
    own np.sqrt of a negative number is the user's, and may)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = pullback.grad(f, jit=jit_mode != "python")(X)
    assert not _ours(caught)
    np.testing.assert_allclose(got, expected, rtol=1e-14)
