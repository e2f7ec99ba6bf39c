import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pullback.rules import scalar

from .checks import SETTINGS, check_vjp, rule_vjp


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
