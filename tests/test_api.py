"""User rules, check_grad and argument handling."""
import math

import numpy as np
import pytest

import pullback
from helpers import assert_close, fd_grad


def softplus(x):
    return math.log1p(math.exp(x))


def _softplus_vjp(g, ans, x):
    return g / (1.0 + math.exp(-x))


pullback.rule(softplus)(_softplus_vjp)


def two_args(a, b):
    return math.sqrt(a * a + b * b)


@pullback.rule(two_args)
def two_args_vjp(g, ans, a, b):
    return g * a / ans, g * b / ans


def uses_rules(x, y):
    s = 0.0
    for k in range(3):
        s = s + softplus(x * y + k) + two_args(x, y + k)
    return s


def test_user_rules_are_used_and_correct(jit):
    g = pullback.grad(uses_rules, argnums=(0, 1), jit=False)
    dx, dy = g(0.3, 0.7)
    assert dx == pytest.approx(fd_grad(uses_rules, (0.3, 0.7), 0), rel=1e-7)
    assert dy == pytest.approx(fd_grad(uses_rules, (0.3, 0.7), 1), rel=1e-7)
    src = g.source
    assert "_softplus_vjp(" in src and "two_args_vjp(" in src
    # The rule is called, the source of softplus is not inlined.
    assert "log1p" not in src


def test_rule_wins_over_source_for_a_wrong_rule():
    """A registered rule is what the transform uses: a deliberately wrong one shows."""
    def cube(x):
        return x * x * x

    pullback.rule(cube)(lambda g, ans, x: 0.0 * g)
    try:
        def f(x):
            return cube(x) + x
        assert pullback.grad(f)(2.0) == pytest.approx(1.0)
    finally:
        from pullback.rules import registry
        registry.unregister(cube)


def test_check_grad_reports_worst_relative_error():
    def f(x, p):
        return np.sum(np.sin(p) * x) + x ** 3
    res = pullback.check_grad(f, 0.4, np.array([0.1, 0.5, 1.0]), argnums=(0, 1))
    assert res.ok and res.max_rel_error < 1e-7
    assert "worst relative error" in str(res)


def test_check_grad_catches_a_wrong_rule():
    def square(x):
        return x * x

    pullback.rule(square)(lambda g, ans, x: g * x)   # wrong: missing the factor 2
    try:
        def f(x):
            return square(x)
        res = pullback.check_grad(f, 1.5)
        assert not res.ok
        assert res.analytic == pytest.approx(1.5) and res.numeric == pytest.approx(3.0)
    finally:
        from pullback.rules import registry
        registry.unregister(square)


def plain(x, n):
    s = 0.0
    for i in range(n):
        s = s + x * i
    return s


def test_argnums_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="out of range"):
        pullback.grad(plain, argnums=2)(1.0, 3)


def test_differentiating_an_int_is_a_type_error():
    with pytest.raises(TypeError, match="argument 1: it is an int"):
        pullback.grad(plain, argnums=1)(1.0, 3)
    with pytest.raises(TypeError, match="float"):
        pullback.grad(lambda v: np.sum(v))(np.arange(3))


def test_bad_argnums_type():
    with pytest.raises(TypeError, match="argnums"):
        pullback.grad(plain, argnums="x")(1.0, 3)


def test_grad_of_non_scalar_output_says_use_vjp():
    with pytest.raises(TypeError, match="vjp"):
        pullback.grad(lambda v: v * 2.0)(np.ones(3))


def test_missing_rule_names_the_function_and_how_to_register():
    def f(x):
        return math.cbrt(x) * x
    with pytest.raises(pullback.MissingRuleError) as err:
        pullback.grad(f)(2.5)
    msg = str(err.value)
    assert "cbrt" in msg and "pullback.rule" in msg and "line" in msg


def test_missing_rule_is_fine_when_the_value_is_not_differentiated():
    def f(x, n):
        k = math.gamma(n)            # a constant: no derivative needed
        return x * k
    assert pullback.grad(f)(2.0, 4.0) == pytest.approx(6.0)


def test_value_and_grad_and_vjp_agree_with_reference():
    def f(p):
        s = 0.0
        for i in range(len(p)):
            s = s + math.exp(p[i]) * (i + 1)
        return s
    p = np.array([0.1, -0.3, 0.7])
    v, g = pullback.value_and_grad(f)(p)
    assert v == pytest.approx(f(p))
    assert_close(g, np.exp(p) * np.arange(1, 4))
    v2, back = pullback.vjp(f, p)
    assert_close(back(2.0)[0], 2 * g)


def test_writes_through_an_alias_are_refused_not_miscomputed():
    def via_alias(x, p):
        q = p
        q[0] = x * 2.0
        return np.sum(q * p)

    def via_view(x):
        a = np.zeros(3)
        b = a[1:]
        b[0] = x
        return a[1] * 3.0
    p = np.ones(3)
    with pytest.raises(pullback.UnsupportedSyntaxError, match="shares memory") as err:
        pullback.grad(via_alias)(1.0, p)
    assert "q = p.copy()" in str(err.value) and err.value.lineno is not None
    np.testing.assert_array_equal(p, np.ones(3))      # the caller's array is untouched
    with pytest.raises(pullback.UnsupportedSyntaxError, match="view"):
        pullback.grad(via_view)(1.0)
