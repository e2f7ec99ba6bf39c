import math
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pullback.rules import scalar

from .checks import SETTINGS, check_rule, check_vjp, rule_vjp


@pytest.mark.parametrize("fn", [math.gamma, math.lgamma], ids=lambda f: f.__name__)
@SETTINGS
@given(x=st.floats(-3.9, 6.0).filter(lambda x: abs(x - round(x)) > 0.05 or x > 0.05))
def test_gamma_lgamma(fn, x):
    check_vjp(fn, rule_vjp(fn, "x"), [x], 0, rtol=1e-5, atol=1e-5)


def test_digamma_against_scipy():
    special = pytest.importorskip("scipy.special")
    for x in (-2.5, -0.3, 1e-3, 0.5, 1.0, 3.7, 9.99, 12.0, 150.0, 1e6):
        assert scalar.digamma(x) == pytest.approx(float(special.digamma(x)), rel=1e-13, abs=1e-13)
    assert math.isnan(scalar.digamma(0.0)) and math.isnan(scalar.digamma(-3.0))


def test_gamma_compiles_with_numba():
    pytest.importorskip("numba")
    import pullback

    def f(x):
        return math.gamma(x) + math.lgamma(x)
    assert pullback.grad(f, jit=True)(2.5) == pytest.approx(pullback.grad(f, jit=False)(2.5))


# (function, domain): every other scalar rule, on Python floats, away from poles and kinks.
UNARY = [
    (operator.neg, (-2, 2)), (operator.pos, (-2, 2)), (math.sin, (-3, 3)), (math.cos, (-3, 3)),
    (math.tan, (-1.2, 1.2)), (math.exp, (-2, 2)), (math.expm1, (-2, 2)), (math.log, (0.2, 3)),
    (math.log1p, (-0.5, 3)), (math.log2, (0.2, 3)), (math.log10, (0.2, 3)),
    (math.sqrt, (0.2, 3)), (math.tanh, (-2, 2)), (math.sinh, (-2, 2)), (math.cosh, (-2, 2)),
    (math.atan, (-2, 2)), (math.asin, (-0.9, 0.9)), (math.acos, (-0.9, 0.9)),
    (math.asinh, (-2, 2)), (math.acosh, (1.2, 3)), (math.atanh, (-0.8, 0.8)),
    (math.erf, (-2, 2)), (math.erfc, (-2, 2)), (math.fabs, (0.2, 2)), (math.fabs, (-2, -0.2)),
    (abs, (0.2, 2)), (abs, (-2, -0.2)), (float, (-2, 2)),
]
BINARY = [
    (operator.add, (-2, 2), (-2, 2)), (operator.sub, (-2, 2), (-2, 2)),
    (operator.mul, (-2, 2), (-2, 2)), (operator.truediv, (-2, 2), (0.5, 2)),
    (operator.pow, (0.3, 2), (-2, 2)), (operator.mod, (-3, 3), (0.7, 2)),
    (math.pow, (0.3, 2), (-2, 2)), (pow, (0.3, 2), (-2, 2)), (math.atan2, (-2, 2), (-2, 2)),
    (math.hypot, (-2, 2), (-2, 2)), (math.copysign, (-2, 2), (0.2, 2)),
    (math.copysign, (-2, 2), (-2, -0.2)), (max, (-2, 2), (-2, 2)), (min, (-2, 2), (-2, 2)),
]


@pytest.mark.parametrize("fn, dom", UNARY, ids=[f"{f.__name__}{d}" for f, d in UNARY])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unary(fn, dom, seed):
    x = float(np.random.default_rng(seed).uniform(*dom))
    check_rule(fn, [x])


@pytest.mark.parametrize("fn, d1, d2", BINARY, ids=[f"{f.__name__}{d}" for f, _, d in BINARY])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary(fn, d1, d2, seed):
    rng = np.random.default_rng(seed)
    check_rule(fn, [float(rng.uniform(*d1)), float(rng.uniform(*d2))])


def test_pow_at_small_integer_exponents_and_zero():
    for y in (0.0, 1.0, 2.0, 3.0):
        check_rule(operator.pow, [1.3, y], only=("x",))
    assert rule_vjp(operator.pow, "x")(1.0, 0.0, 0.0, 2.0) == 0.0
    assert rule_vjp(operator.pow, "y")(1.0, 0.0, 0.0, 2.0) == 0.0


# The helpers forward mode's tangents call, differentiated again for Hessians.
@pytest.mark.parametrize("helper,args", [
    (scalar.div_dy, [0.7, 1.3, -0.8]), (scalar.sqrt_dx, [0.7, 1.9]),
    (scalar.pow_dx, [0.7, 1.4, 2.5]), (scalar.pow_dx, [0.7, 1.4, 2.0]),
    (scalar.pow_dy, [0.7, 2.1, 1.6])])
def test_forward_helpers_differentiate_again(helper, args):
    check_rule(helper, args)


# A strong zero: a cotangent of exactly zero gives zero, also through an infinite
# partial derivative.  sqrt(max(x, 0.0)) at x < 0 is 0 near x: its derivative is 0,
# not max's weight 0 times sqrt's infinite derivative at 0 (NaN before), and its
# second derivative is 0, not a ZeroDivisionError in the rule of sqrt's helper.
def _sqrt_of_relu(x):
    return math.sqrt(max(x, 0.0)) + x


def _sqrt_of_negative_part(x):
    return math.sqrt(-min(x, 0.0)) * 2.0 + x * x


@pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
def test_max_and_min_send_nothing_through_the_argument_not_taken(jit):
    import pullback
    assert pullback.grad(_sqrt_of_relu, jit=jit)(-1.0) == 1.0
    assert pullback.grad(_sqrt_of_relu, jit=jit)(4.0) == pytest.approx(1.25, rel=1e-15)
    assert pullback.grad(_sqrt_of_negative_part, jit=jit)(1.5) == 3.0
    assert pullback.grad(_sqrt_of_negative_part, jit=jit)(-4.0) == pytest.approx(-8.5, rel=1e-15)


def test_second_derivative_through_a_branch_not_taken():
    import pullback
    assert pullback.hessian(_sqrt_of_relu)(-1.0) == 0.0
    assert pullback.hessian(_sqrt_of_negative_part)(1.5) == 2.0
    # At x = 4: d2/dx2 sqrt(x) = -x**-1.5 / 4.
    assert pullback.hessian(_sqrt_of_relu)(4.0) == pytest.approx(-1 / 32, rel=1e-14)


@pytest.mark.parametrize("helper,args", [(scalar.sqrt_dx, [0.0, 0.0]),
                                         (scalar.div_dy, [0.0, math.inf, 0.0])])
def test_forward_helpers_are_zero_for_a_zero_cotangent(helper, args):
    assert helper(*args) == 0.0
