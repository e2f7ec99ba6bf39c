"""Infinite inputs of the rules whose textbook derivative is inf - inf or inf / inf
there (logaddexp, logaddexp2, hypot; math.hypot; scipy.special.logsumexp): the limit of the
derivative instead of NaN, checked against the analytic limit, against the
derivative at large finite inputs, against PyTorch float64 where it gives a
limit, and under Numba (the templates inline into compiled code).

(This module imports no rule helper by name: a function differentiated under
Numba in a module whose globals hold both ``unbroadcast`` and ``sum_vjp`` fails
to compile, a problem of the backend and not of these rules.)
"""
import math

import numpy as np
import pytest

import pullback

from .checks import check_vjp, rule_vjp

INF = np.inf
# (x1, x2, d/dx1, d/dx2).  logaddexp's weights are exp(x - ans), the limits of the
# logistic function of x1 - x2; at an infinite tie 1/2 each, as at every finite tie
# (logaddexp(t, t) = t + log 2 has derivative 1).  logaddexp2 has the same weights.
LOGADDEXP_LIMITS = [(INF, 1.0, 1.0, 0.0), (1.0, INF, 0.0, 1.0), (-INF, 1.0, 0.0, 1.0),
                    (1.0, -INF, 1.0, 0.0), (INF, -INF, 1.0, 0.0), (-INF, INF, 0.0, 1.0),
                    (INF, INF, 0.5, 0.5), (-INF, -INF, 0.5, 0.5), (0.3, 0.3, 0.5, 0.5)]
# hypot's derivative x1 / hypot(x1, x2) tends to sign(x1) as |x1| grows against a fixed
# x2, and along |x1| == |x2| (where it is sign(x1) / sqrt(2) at every finite point) to that.
R = 1.0 / np.sqrt(2.0)
HYPOT_LIMITS = [(INF, 1.0, 1.0, 0.0), (-INF, 2.0, -1.0, 0.0), (1.0, -INF, 0.0, -1.0),
                (INF, INF, R, R), (INF, -INF, R, -R), (-INF, -INF, -R, -R), (0.0, 0.0, 0.0, 0.0)]
EDGES = [(np.logaddexp, *c) for c in LOGADDEXP_LIMITS] + \
    [(np.logaddexp2, *c) for c in LOGADDEXP_LIMITS] + [(np.hypot, *c) for c in HYPOT_LIMITS]


def _edge_grads(fn, x1, x2):
    with np.errstate(invalid="ignore"):      # inf - inf inside the template, then replaced
        ans = fn(x1, x2)
        return rule_vjp(fn, "x1")(1.0, ans, x1, x2), rule_vjp(fn, "x2")(1.0, ans, x1, x2)


@pytest.mark.parametrize("fn, x1, x2, d1, d2", EDGES,
                         ids=[f"{e[0].__name__}({e[1]},{e[2]})" for e in EDGES])
def test_infinite_inputs_get_the_limiting_derivative(fn, x1, x2, d1, d2):
    np.testing.assert_allclose(_edge_grads(fn, x1, x2), (d1, d2), rtol=1e-15, atol=0)
    # Elementwise on arrays too, mixed with finite entries that keep their derivative.
    a, b = np.array([x1, 0.25, -1.5]), np.array([x2, 1.0, 0.5])
    g1, g2 = _edge_grads(fn, a, b)
    np.testing.assert_allclose([g1[0], g2[0]], [d1, d2], rtol=1e-15, atol=0)
    for k, argnum in ((1, 0), (2, 1)):
        fd = check_vjp(fn, rule_vjp(fn, f"x{argnum + 1}"), [a[k:k + 1], b[k:k + 1]], argnum,
                       g=np.ones(1))
        np.testing.assert_allclose([g1, g2][argnum][k:k + 1], fd)


@pytest.mark.parametrize("fn", [np.logaddexp, np.logaddexp2, np.hypot], ids=lambda f: f.__name__)
def test_infinite_inputs_limit_of_finite_ones(fn):
    """The limit taken: the derivative at large finite inputs approaches it."""
    big = 1e300 if fn is not np.hypot else 1e150
    for x1, x2, d1, d2 in (LOGADDEXP_LIMITS if fn is not np.hypot else HYPOT_LIMITS):
        near = [np.sign(v) * big if np.isinf(v) else v for v in (x1, x2)]
        if np.isinf(x1) and np.isinf(x2):
            near[1] = np.sign(x2) * big          # the same magnitude: along the diagonal
        np.testing.assert_allclose(_edge_grads(fn, *near), (d1, d2), atol=1e-12)


@pytest.mark.parametrize("fn", [np.logaddexp, np.logaddexp2, np.hypot], ids=lambda f: f.__name__)
def test_a_nan_input_gives_nan(fn):
    for x1, x2 in ((np.nan, 1.0), (1.0, np.nan), (np.nan, -INF)):
        with np.errstate(invalid="ignore"):
            primal = fn(x1, x2)
        if not np.isnan(primal):
            continue            # hypot(NaN, inf) is inf, as IEEE 754 has it
        assert np.all(np.isnan(_edge_grads(fn, x1, x2))), (x1, x2)


def test_infinite_limits_agree_with_torch():
    """torch float64 gives the same limits where it gives one (it has NaN at infinite ties
    and everywhere for hypot)."""
    torch = pytest.importorskip("torch")
    for fn, tfn in ((np.logaddexp, torch.logaddexp), (np.logaddexp2, torch.logaddexp2)):
        for x1, x2, _, _ in LOGADDEXP_LIMITS:
            a = torch.tensor(x1, dtype=torch.float64, requires_grad=True)
            b = torch.tensor(x2, dtype=torch.float64, requires_grad=True)
            tfn(a, b).backward()
            want = (a.grad.item(), b.grad.item())
            if not np.isnan(want).any():
                np.testing.assert_allclose(_edge_grads(fn, x1, x2), want, rtol=1e-15)


def test_math_hypot_limits():
    """math.hypot's rule (rules/scalar.py) takes the same limits, and 0 at (0, 0)."""
    for x1, x2, d1, d2 in HYPOT_LIMITS:
        ans = math.hypot(x1, x2)
        got = rule_vjp(math.hypot, "x")(1.0, ans, x1, x2), rule_vjp(math.hypot, "y")(1.0, ans, x1, x2)
        np.testing.assert_allclose(got, (d1, d2), rtol=1e-15, atol=0)
    assert all(math.isnan(rule_vjp(math.hypot, p)(1.0, math.nan, math.nan, 1.0)) for p in "xy")


def test_infinite_limits_under_numba():
    """The templates inline into Numba code: the same limits there, on arrays and on
    numbers (one compiled derivative each, every rule in it)."""
    pytest.importorskip("numba")
    lae, lae2, hyp = (np.array(c) for c in (LOGADDEXP_LIMITS, LOGADDEXP_LIMITS, HYPOT_LIMITS))
    on_arrays = pullback.grad(_on_arrays, argnums=tuple(range(6)), jit=True)
    got = on_arrays(lae[:, 0], lae[:, 1], lae2[:, 0], lae2[:, 1], hyp[:, 0], hyp[:, 1])
    for k, table in enumerate((lae, lae2, hyp)):
        np.testing.assert_allclose(got[2 * k], table[:, 2], rtol=1e-15, atol=0)
        np.testing.assert_allclose(got[2 * k + 1], table[:, 3], rtol=1e-15, atol=0)
    on_numbers = pullback.grad(_on_numbers, argnums=tuple(range(8)), jit=True)
    for row in range(max(len(lae), len(hyp))):
        a, b = lae[row % len(lae)], hyp[row % len(hyp)]
        got = on_numbers(a[0], a[1], a[0], a[1], b[0], b[1], b[0], b[1])
        np.testing.assert_allclose(got, [a[2], a[3], a[2], a[3], b[2], b[3], b[2], b[3]],
                                   rtol=1e-15, atol=0)


def _on_arrays(a, b, c, d, e, f):
    return np.sum(np.logaddexp(a, b)) + np.sum(np.logaddexp2(c, d)) + np.sum(np.hypot(e, f))


def _on_numbers(a, b, c, d, e, f, p, q):
    return np.logaddexp(a, b) + np.logaddexp2(c, d) + np.hypot(e, f) + math.hypot(p, q)


# ---------------------------------------------------------------------------
# scipy.special.logsumexp: d/da_i = b_i exp(a_i - ans); at an infinite result the
# entries equal to it share it in proportion to b (the limit along a tie), the rest 0.

LOGSUMEXP_LIMITS = [
    ([INF, 1.0], None, [1.0, 0.0]),
    ([-INF, 1.0], None, [0.0, 1.0]),
    ([INF, INF, 2.0], None, [0.5, 0.5, 0.0]),
    ([-INF, -INF, -INF], None, [1 / 3, 1 / 3, 1 / 3]),
    ([INF, -INF], None, [1.0, 0.0]),
    ([INF, INF, 1.0], [1.0, 3.0, 2.0], [0.25, 0.75, 0.0]),
    ([-INF, -INF], [1.0, 3.0], [0.25, 0.75]),
]


@pytest.mark.parametrize("a, b, want", LOGSUMEXP_LIMITS)
def test_logsumexp_limits(a, b, want):
    special = pytest.importorskip("scipy.special")
    a = np.array(a)
    kw = {} if b is None else {"b": np.array(b)}
    with np.errstate(invalid="ignore"):
        ans = special.logsumexp(a, **kw)
        got = rule_vjp(special.logsumexp, "a")(1.0, ans, a, **kw)
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
        if b is not None:      # d/db_i = exp(a_i - ans): the share of a_i divided by b_i
            got_b = rule_vjp(special.logsumexp, "b")(1.0, ans, a, **kw)
            np.testing.assert_allclose(got_b, np.array(want) / np.array(b), rtol=1e-15, atol=0)


def test_logsumexp_limits_along_an_axis_and_nan():
    special = pytest.importorskip("scipy.special")
    a = np.array([[INF, 1.0, INF], [0.0, 1.0, 2.0], [-INF, -INF, -INF]])
    with np.errstate(invalid="ignore"):
        ans = special.logsumexp(a, axis=1)
        got = rule_vjp(special.logsumexp, "a")(np.ones(3), ans, a, axis=1)
    np.testing.assert_allclose(got[0], [0.5, 0.0, 0.5], rtol=1e-15)
    np.testing.assert_allclose(got[2], [1 / 3] * 3, rtol=1e-15)
    finite = a[1:2]            # a finite row keeps the ordinary derivative
    fd = check_vjp(lambda x: special.logsumexp(x, axis=1),
                   lambda g, ans, x: rule_vjp(special.logsumexp, "a")(g, ans, x, axis=1),
                   [finite], 0, g=np.ones(1))
    np.testing.assert_allclose(got[1:2], fd, rtol=1e-12)
    nan = np.array([np.nan, 1.0])
    assert np.isnan(rule_vjp(special.logsumexp, "a")(1.0, special.logsumexp(nan), nan)).all()
