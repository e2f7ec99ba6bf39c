"""Transforms of transforms (:mod:`pullback.nesting`): ``grad`` of ``grad`` to any
order, and ``grad(f)`` called inside a function that is differentiated again by
``grad``, ``jvp`` and ``hessian``, against analytic derivatives, central
differences of analytic lower derivatives, and PyTorch's double backward."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pullback
from helpers import fd_grad

RNG = np.random.default_rng(2026)


def power_sum(x, c):
    """sum_k c[k] x^(k+1), by a loop that stops at the first zero coefficient."""
    s = 0.0
    for k in range(len(c)):
        if c[k] == 0.0:
            break
        s = s + c[k] * x ** (k + 1)
    return s


def power_sum_derivative(x, c, n):
    """The n-th derivative of power_sum in x, from the formula."""
    total = 0.0
    for k in range(len(c)):
        if c[k] == 0.0:
            break
        p = k + 1
        if p >= n:
            total += c[k] * math.perm(p, n) * x ** (p - n)
    return total


def nested(f, n, **kw):
    for _ in range(n):
        f = pullback.grad(f, **kw)
    return f


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_the_nth_derivative_of_a_loop_with_an_early_exit(n):
    c = np.array([0.5, -1.2, 0.8, 0.3, -0.7, 0.2, 0.0, 9.0])
    for x in (0.8, -1.3):
        assert nested(power_sum, n)(x, c) == pytest.approx(power_sum_derivative(x, c, n),
                                                         rel=1e-12, abs=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=1, max_size=6), st.floats(-1.5, 1.5),
       st.integers(2, 4))
def test_nth_derivatives_of_random_polynomials(coefficients, x, n):
    c = np.array([v if v != 0.0 else 0.5 for v in coefficients])
    scale = 1.0 + sum(abs(v) * math.perm(k + 1, min(n, k + 1)) for k, v in enumerate(c))
    assert nested(power_sum, n)(x, c) == pytest.approx(power_sum_derivative(x, c, n),
                                                     abs=1e-12 * scale)


def wave(x, y):
    return math.sin(x * y) + x ** 3 * y ** 2


def test_mixed_partials_in_any_order():
    x, y = 0.7, -1.1
    # d/dy of d2/dx2 = -y^2 sin(xy) + 6 x y^2.
    dxxy = -2 * y * math.sin(x * y) - x * y * y * math.cos(x * y) + 12 * x * y
    dxx = lambda x, y: -y * y * math.sin(x * y) + 6 * x * y ** 2    # noqa: E731
    expected = fd_grad(lambda y: dxx(x, y), (y,), eps=1e-5)
    got = pullback.grad(pullback.grad(pullback.grad(wave, 0), 0), 1)(x, y)
    assert got == pytest.approx(expected, rel=1e-8)
    assert got == pytest.approx(dxxy, rel=1e-12)
    # The same partial taken in another order (the derivatives commute).
    other = pullback.grad(pullback.grad(pullback.grad(wave, 1), 0), 0)(x, y)
    assert other == pytest.approx(got, rel=1e-12)
    value, both = pullback.value_and_grad(pullback.grad(pullback.grad(wave)), (0, 1))(x, y)
    assert value == pytest.approx(dxx(x, y), rel=1e-13)
    assert both[1] == pytest.approx(got, rel=1e-12)


def test_jvp_of_a_third_derivative_is_the_fourth():
    c = np.array([0.5, -1.2, 0.8, 0.3, -0.7])
    third = nested(power_sum, 3)
    value, tangent = pullback.jvp(third, (0.6, c), (2.0, None))
    assert value == pytest.approx(power_sum_derivative(0.6, c, 3), rel=1e-12)
    assert tangent == pytest.approx(2.0 * power_sum_derivative(0.6, c, 4), rel=1e-12)


def test_higher_derivatives_under_numba():
    c = np.array([0.5, -1.2, 0.8, 0.3])
    got = nested(power_sum, 3, jit=True)(0.9, c)
    assert got == pytest.approx(power_sum_derivative(0.9, c, 3), rel=1e-12)


def test_a_gradient_of_an_array_cannot_be_differentiated_as_a_number():
    with pytest.raises(TypeError, match="needs its value to be a number"):
        nested(lambda x: np.sum(x ** 3), 3)(np.ones(3))
    with pytest.raises(TypeError, match="value_and_grad"):
        pullback.grad(pullback.value_and_grad(wave))(0.5, 0.5)


# ---------------------------------------------------------------------------
# grad(f) called inside differentiated code

def tanh_loss(w, X, y):
    r = np.tanh(X @ w) - y
    return np.sum(r * r)


def tanh_loss_gradient(w, X, y):
    """The formula, sharing nothing with pullback."""
    t = np.tanh(X @ w)
    return 2.0 * X.T @ ((t - y) * (1.0 - t * t))


LOSS_GRAD = pullback.grad(tanh_loss)


def gradient_penalty(w, X, y):
    """A loss plus the squared norm of its gradient (as in gradient-penalised fits)."""
    g = LOSS_GRAD(w, X, y)
    return tanh_loss(w, X, y) + 0.1 * np.sum(g * g)


def gradient_penalty_written_inline(w, X, y):
    g = pullback.grad(tanh_loss)(w, X, y)
    return tanh_loss(w, X, y) + 0.1 * np.sum(g * g)


def gradient_penalty_named_inside(w, X, y):
    loss_grad = pullback.grad(tanh_loss)
    g = loss_grad(w, X, y)
    return tanh_loss(w, X, y) + 0.1 * np.sum(g * g)


def penalty_by_formula(w, X, y):
    g = tanh_loss_gradient(w, X, y)
    return tanh_loss(w, X, y) + 0.1 * np.sum(g * g)


DATA = (RNG.normal(size=(7, 3)), RNG.normal(size=7))


@pytest.mark.parametrize("penalty", [gradient_penalty, gradient_penalty_written_inline,
                                     gradient_penalty_named_inside])
def test_the_gradient_of_a_gradient_penalty(penalty):
    w = RNG.normal(size=3)
    assert penalty(w, *DATA) == pytest.approx(penalty_by_formula(w, *DATA), rel=1e-13)
    expected = fd_grad(lambda w: penalty_by_formula(w, *DATA), (w,), eps=1e-6)
    got = pullback.grad(penalty)(w, *DATA)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-8)
    # Forward mode agrees with reverse mode to rounding: <grad, v> = jvp along v.
    v = RNG.normal(size=3)
    _, tangent = pullback.jvp(penalty, (w, *DATA), (v, None, None))
    assert tangent == pytest.approx(got @ v, rel=1e-12)


def test_the_hessian_of_a_gradient_penalty():
    w = RNG.normal(size=3)
    H = pullback.hessian(gradient_penalty)(w, *DATA)
    grad_formula = pullback.grad(penalty_by_formula)      # first order: checked above
    expected = np.array([fd_grad(lambda w: grad_formula(w, *DATA)[k], (w,), eps=1e-6)
                         for k in range(3)])
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-12)


def test_the_gradient_penalty_against_torch_double_backward():
    torch = pytest.importorskip("torch")
    w = RNG.normal(size=3)
    X, y = (torch.from_numpy(a) for a in DATA)
    wt = torch.tensor(w, requires_grad=True)
    loss = torch.sum((torch.tanh(X @ wt) - y) ** 2)
    g, = torch.autograd.grad(loss, wt, create_graph=True)
    (loss + 0.1 * torch.sum(g * g)).backward()
    np.testing.assert_allclose(pullback.grad(gradient_penalty)(w, *DATA), wt.grad.numpy(),
                               rtol=1e-12)


def scaled_derivative(x):
    return pullback.grad(power_sum)(x, np.array([1.0, 2.0, 3.0])) * x


def test_derivatives_of_a_function_calling_grad_of_a_loop():
    # x * p'(x) with p = x + 2x^2 + 3x^3: its derivatives by the formula.
    x = 0.7
    first = (1 + 4 * x + 9 * x * x) + x * (4 + 18 * x)
    second = 2 * (4 + 18 * x) + 18 * x
    assert pullback.grad(scaled_derivative)(x) == pytest.approx(first, rel=1e-13)
    assert pullback.hessian(scaled_derivative)(x) == pytest.approx(second, rel=1e-13)
    assert pullback.grad(pullback.grad(scaled_derivative))(x) == pytest.approx(second,
                                                                               rel=1e-13)


def network(x, w):
    """A one-hidden-layer network u(x) of a number x."""
    return np.sum(w[2] * np.tanh(w[0] * x + w[1]))


def ode_residual(w, xs):
    """A physics-informed loss: sum over the points of (u'(x) + u(x))^2, u' by jvp."""
    loss = 0.0
    for k in range(len(xs)):
        u, du = pullback.jvp(network, (xs[k], w), (1.0, None))
        loss = loss + (du + u) ** 2
    return loss


def ode_residual_by_formula(w, xs):
    total = 0.0
    for x in xs:
        t = np.tanh(w[0] * x + w[1])
        u, du = np.sum(w[2] * t), np.sum(w[2] * (1 - t * t) * w[0])
        total += (du + u) ** 2
    return total


def test_the_gradient_of_a_loss_that_calls_jvp():
    w, xs = RNG.normal(size=(3, 4)), np.linspace(-1, 1, 5)
    assert ode_residual(w, xs) == pytest.approx(ode_residual_by_formula(w, xs), rel=1e-13)
    expected = fd_grad(lambda w: ode_residual_by_formula(w, xs), (w,), eps=1e-6)
    np.testing.assert_allclose(pullback.grad(ode_residual)(w, xs), expected, rtol=1e-7,
                               atol=1e-8)


def stretched(w):
    return np.sin(w) * w


def tangent_norm(w, v):
    _, t = pullback.jvp(stretched, (w,), (v,))
    return np.sum(t * t)


def test_an_array_tangent_and_its_cotangent():
    w, v = RNG.normal(size=4), RNG.normal(size=4)
    # t = (cos(w) w + sin(w)) v, so d|t|^2/dw = 2 t v (2 cos(w) - w sin(w)), d/dv = 2 t s.
    s = np.cos(w) * w + np.sin(w)
    t = s * v
    gw, gv = pullback.grad(tangent_norm, argnums=(0, 1))(w, v)
    np.testing.assert_allclose(gw, 2 * t * v * (2 * np.cos(w) - w * np.sin(w)), rtol=1e-12)
    np.testing.assert_allclose(gv, 2 * t * s, rtol=1e-12)


def product_of_value_and_slope(x):
    c = np.array([1.0, 1.0, 1.0])
    v, back = pullback.vjp(power_sum, x, c)
    return back(1.0)[0] * v


def test_the_gradient_of_a_function_that_calls_vjp():
    x = 1.5
    # f = x + x^2 + x^3; the function is f'(x) f(x), its derivative f'' f + f'^2.
    f, d1, d2 = x + x * x + x ** 3, 1 + 2 * x + 3 * x * x, 2 + 6 * x
    assert product_of_value_and_slope(x) == pytest.approx(d1 * f, rel=1e-14)
    assert pullback.grad(product_of_value_and_slope)(x) == pytest.approx(d2 * f + d1 * d1,
                                                                         rel=1e-13)


def layer(w, X):
    return np.tanh(X @ w)


def pulled_back_norm(w, X, c):
    """|J_w^T c|^2 plus the layer's sum: the cotangents of a vjp, differentiated."""
    out, back = pullback.vjp(layer, w, X)
    gw, gX = back(c)
    return np.sum(gw ** 2) + np.sum(out)


def pulled_back_norm_by_formula(w, X, c):
    t = np.tanh(X @ w)
    gw = X.T @ (c * (1 - t * t))
    return np.sum(gw ** 2) + np.sum(t)


def test_the_cotangents_of_a_vjp_inside_against_differences():
    w, X, c = RNG.normal(size=3), RNG.normal(size=(4, 3)), RNG.normal(size=4)
    assert pulled_back_norm(w, X, c) == pytest.approx(pulled_back_norm_by_formula(w, X, c),
                                                      rel=1e-13)
    got = pullback.grad(pulled_back_norm, argnums=(0, 1, 2))(w, X, c)
    for k in range(3):
        expected = fd_grad(pulled_back_norm_by_formula, (w, X, c), k, eps=1e-6)
        np.testing.assert_allclose(got[k], expected, rtol=1e-7, atol=1e-8)


def calls_vjp_of_an_expression(x):
    value, back = pullback.vjp(power_sum, x + 1.0, np.ones(2))
    return back(1.0)[0]


def calls_vjp_then_reassigns(x):
    value, back = pullback.vjp(power_sum, x, np.ones(2))
    x = x * 2.0
    return back(1.0)[0] + x


def calls_jvp_with_aux(x):
    value, tangent, aux = pullback.jvp(power_sum, (x, np.ones(2)), (1.0, None), has_aux=True)
    return tangent


def calls_jvp_of_a_tuple(x):
    primals = (x, np.ones(2))
    value, tangent = pullback.jvp(power_sum, primals, (1.0, None))
    return tangent


@pytest.mark.parametrize("f,match", [
    (calls_vjp_of_an_expression, r"(?s)as names.*pullback\.vjp\(power_sum, x \+ 1\.0"),
    (calls_vjp_then_reassigns, r"(?s)not assigned again.*value, back = pullback\.vjp"),
    (calls_jvp_with_aux, r"(?s)without has_aux.*has_aux=True"),
    (calls_jvp_of_a_tuple, r"(?s)two tuples.*pullback\.jvp\(power_sum, primals"),
])
def test_transforms_inside_that_are_not_supported_are_refused_by_line(f, match):
    with pytest.raises(pullback.UnsupportedSyntaxError, match=match):
        pullback.grad(f)(0.5)


def test_forward_mode_of_a_jvp_inside_is_refused_by_name():
    with pytest.raises(pullback.MissingRuleError, match=r"tangent rule for jvp\(network\)"):
        pullback.hessian(ode_residual)(RNG.normal(size=(3, 2)), np.ones(2))


def test_a_grad_call_inside_runs_in_object_mode_under_numba():
    w, v = RNG.normal(size=3), RNG.normal(size=3)
    with pytest.warns(pullback.PerformanceWarning, match=r"grad\(tanh_loss\)"):
        got = pullback.grad(gradient_penalty, jit=True)(w, *DATA)
    np.testing.assert_allclose(got, pullback.grad(gradient_penalty)(w, *DATA), rtol=1e-13)
    _, tangent = pullback.jvp(gradient_penalty, (w, *DATA), (v, None, None), jit=True)
    assert tangent == pytest.approx(got @ v, rel=1e-12)
    H = pullback.hessian(gradient_penalty, jit=True)(w, *DATA)
    np.testing.assert_allclose(H, pullback.hessian(gradient_penalty)(w, *DATA), rtol=1e-12)
    assert pullback.hessian(scaled_derivative, jit=True)(0.7) == pytest.approx(
        2 * (4 + 18 * 0.7) + 18 * 0.7, rel=1e-13)


@pytest.mark.parametrize("power,x", [(1, 0.0), (2, 0.0), (3, 0.0), (1, 3e-193), (2, 1e-200)])
def test_derivatives_past_an_integer_powers_degree_vanish(power, x):
    # Each derivative rule of x ** p passes p - 1 on; past the degree the term is
    # identically zero, not 0 * inf at x = 0 nor an overflow of x ** -2 near it.
    def f(x):
        return 0.5 * x ** power
    for n in range(1, 5):
        expected = 0.5 * math.perm(power, n) * x ** (power - n) if n <= power else 0.0
        assert nested(f, n)(x) == pytest.approx(expected, abs=1e-300)


def scaled_in_place(x, p):
    p[0] = p[0] * x             # p is held fixed, but x is written into it
    return np.sum(p * x)


def test_a_parameter_held_fixed_that_a_differentiated_value_is_written_into():
    # f = p0 x^2 + x (p1 + p2): f_x = 2 p0 x + p1 + p2, f_xx = 2 p0, f_xp = (2x, 1, 1).
    p, x = np.array([1.0, 2.0, 3.0]), 1.5
    value, tangent = pullback.jvp(scaled_in_place, (x, p.copy()), (1.0, None))
    assert tangent == pytest.approx(2 * p[0] * x + p[1] + p[2], rel=1e-14)
    f_xx, f_xp = pullback.grad(pullback.grad(scaled_in_place, 0), argnums=(0, 1))(x, p.copy())
    assert f_xx == pytest.approx(2 * p[0], rel=1e-14)
    np.testing.assert_allclose(f_xp, [2 * x, 1.0, 1.0], rtol=1e-14)
    np.testing.assert_array_equal(p, [1.0, 2.0, 3.0])
