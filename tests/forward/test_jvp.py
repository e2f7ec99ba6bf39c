"""Forward mode (``jvp``) and whole Jacobians (``jacfwd``, ``jacrev``) against
references that share no code with pullback: analytic derivatives, central
differences along the tangent, and PyTorch's forward mode in float64."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pullback

from . import tangent_cases

RNG = np.random.default_rng(23)


def directional(f, args, tangents, h=1e-6):
    """Central difference of ``f`` along ``tangents`` (None: the argument is held)."""
    def at(s):
        return np.asarray(f(*[a if t is None else a + s * h * np.asarray(t)
                              for a, t in zip(args, tangents)]), dtype=float)
    return (at(1.0) - at(-1.0)) / (2 * h)


def assert_tangent(f, args, tangents, rtol=1e-6, atol=1e-8):
    value, tangent = pullback.jvp(f, tuple(args), tuple(tangents))
    np.testing.assert_allclose(value, f(*args), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tangent, directional(f, args, tangents), rtol=rtol, atol=atol)
    assert np.shape(tangent) == np.shape(value)
    return tangent


# ------------------------------------------------------------------ scalar loops
def horner(x, p):
    ex = 0.0
    for i in range(len(p)):
        ex = x * ex + p[i]
    return ex


def test_horner_tangent_is_the_analytic_derivative():
    p = RNG.normal(size=7)
    x = 0.8
    n = len(p)
    dx = sum((n - 1 - i) * p[i] * x ** (n - 2 - i) for i in range(n - 1))
    _, t = pullback.jvp(horner, (x, p), (1.0, np.zeros(n)))
    assert t == pytest.approx(dx, rel=1e-13)
    v = RNG.normal(size=n)
    _, t = pullback.jvp(horner, (x, p), (0.0, v))
    assert t == pytest.approx(sum(v[i] * x ** (n - 1 - i) for i in range(n)), rel=1e-13)


def lennard_jones(x, y, cut):
    E = 0.0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i] - x[j]
            dy = y[i] - y[j]
            r2 = dx * dx + dy * dy
            if r2 > cut:
                continue
            s6 = 1.0 / (r2 * r2 * r2)
            E += 4.0 * (s6 * s6 - s6)
    return E


def first_crossing(x, level):
    """A likelihood-style early exit: the loop leaves at the first crossing."""
    total = 0.0
    for i in range(len(x)):
        if x[i] > level:
            return total + math.log(x[i])
        total += x[i] * x[i]
    return total


def test_pair_loop_with_a_cutoff_matches_the_gradient_and_differences():
    x, y = RNG.uniform(0, 3, 7), RNG.uniform(0, 3, 7)
    u, v = RNG.normal(size=7), RNG.normal(size=7)
    t = assert_tangent(lennard_jones, (x, y, 2.5), (u, v, None), rtol=1e-5)
    gx, gy = pullback.grad(lennard_jones, argnums=(0, 1))(x, y, 2.5)
    assert t == pytest.approx(gx @ u + gy @ v, rel=1e-12)


def test_early_return_inside_a_loop():
    x = np.array([0.3, 0.5, 1.7, 0.2])
    assert_tangent(first_crossing, (x, 1.0), (RNG.normal(size=4), None))


# ------------------------------------------------------------------ array code
def rnn(W, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h * h) + np.mean(np.exp(-h))


def writes(A, v):
    w = np.zeros(len(v))
    for i in range(len(v)):
        w[i] = np.dot(A[i], v) + math.sin(v[i])
    B = np.reshape(A, (-1,)).copy()
    B[0] = B[0] * w[0]
    return np.concatenate([w ** 2, B[:3]]) * 2.0


def test_rnn_tangent_against_differences_and_the_gradient():
    W, h0, xs = RNG.normal(size=(4, 4)) * 0.5, RNG.normal(size=4), RNG.normal(size=(6, 4))
    tW, th = RNG.normal(size=(4, 4)), RNG.normal(size=4)
    t = assert_tangent(rnn, (W, h0, xs), (tW, th, np.zeros_like(xs)))
    gW, gh = pullback.grad(rnn, argnums=(0, 1))(W, h0, xs)
    assert t == pytest.approx(np.sum(gW * tW) + gh @ th, rel=1e-12)


def test_element_writes_joins_and_a_vector_result():
    A, v = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    assert_tangent(writes, (A, v), (RNG.normal(size=(3, 3)), RNG.normal(size=3)))


def prod_columns(A):
    return np.sum(np.prod(A, axis=0))


@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_prod_with_zeros_has_the_exact_tangent(zeros):
    """d/dA sum(prod(A, axis=0)) along V: sum over columns and rows of V[i, j] times
    the product of the column's other entries, brute force."""
    A = RNG.uniform(0.5, 1.5, size=(4, 3))
    A[:zeros, 1] = 0.0
    V = RNG.normal(size=A.shape)
    expected = sum(V[i, j] * np.prod(np.delete(A[:, j], i)) for i in range(4) for j in range(3))
    value, t = pullback.jvp(prod_columns, (A,), (V,))
    assert t == pytest.approx(expected, rel=1e-13, abs=1e-15)
    assert np.isfinite(t)


def linear_algebra(A, b):
    x = np.linalg.solve(A, b)
    return np.sum(np.linalg.inv(A) * x) + np.linalg.det(A)


def test_solve_inv_and_det():
    A = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
    b = RNG.normal(size=3)
    assert_tangent(linear_algebra, (A, b), (RNG.normal(size=(3, 3)), RNG.normal(size=3)))


def test_against_torch_forward_mode():
    torch = pytest.importorskip("torch")
    W, h0, xs = RNG.normal(size=(4, 4)) * 0.5, RNG.normal(size=4), RNG.normal(size=(5, 4))
    tW, th = RNG.normal(size=(4, 4)), RNG.normal(size=4)

    def rnn_torch(W, h0):
        h = h0
        for t in range(xs.shape[0]):
            h = torch.tanh(W @ h + torch.from_numpy(xs[t]))
        return torch.sum(h * h) + torch.mean(torch.exp(-h))
    as_t = torch.from_numpy
    _, expected = torch.func.jvp(rnn_torch, (as_t(W), as_t(h0)), (as_t(tW), as_t(th)))
    _, t = pullback.jvp(rnn, (W, h0, xs), (tW, th, np.zeros_like(xs)))
    assert t == pytest.approx(float(expected), rel=1e-12)


# ------------------------------------------------------------------ Jacobians
def vector_field(x, s):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = np.sin(x[i]) * s + x[(i + 1) % len(x)] ** 2
    return out * np.sum(x)


def test_jacfwd_equals_jacrev_and_differences():
    x = RNG.normal(size=4)
    jf = pullback.jacfwd(vector_field, argnums=(0, 1))(x, 0.7)
    jr = pullback.jacrev(vector_field, argnums=(0, 1))(x, 0.7)
    assert jf[0].shape == (4, 4) and jf[1].shape == (4,)
    for a, b in zip(jf, jr):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for k in range(4):
        e = np.zeros(4)
        e[k] = 1.0
        np.testing.assert_allclose(jf[0][:, k], directional(vector_field, (x, 0.7), (e, None)),
                                   rtol=1e-6, atol=1e-8)
    assert pullback.jacobian is pullback.jacrev


def test_jacobian_of_a_scalar_function_is_its_gradient():
    W, h0, xs = RNG.normal(size=(3, 3)), RNG.normal(size=3), RNG.normal(size=(2, 3))
    np.testing.assert_allclose(pullback.jacfwd(rnn)(W, h0, xs), pullback.grad(rnn)(W, h0, xs),
                               rtol=1e-12)


# ------------------------------------------------------------------ refusals
def doubled(x):
    return 2.0 * x


def doubled_sum(x):
    return np.sum(doubled(x))


def test_a_primitive_without_a_tangent_rule_is_refused_by_name_and_line():
    # A user's rule is reverse mode only (every built-in differentiable primitive has one).
    pullback.rule(doubled)(lambda g, ans, x: 2.0 * g)
    try:
        with pytest.raises(pullback.MissingRuleError, match=r"(?s)tangent rule for .*doubled"
                           r".*test_jvp\.py.*doubled\(x\)"):
            pullback.jvp(doubled_sum, (np.ones(2),), (np.ones(2),))
    finally:
        pullback.unregister(doubled)


def test_tangents_are_checked():
    with pytest.raises(ValueError, match="shape"):
        pullback.jvp(horner, (0.5, np.ones(3)), (1.0, np.ones(4)))
    with pytest.raises(ValueError, match="one tangent per primal"):
        pullback.jvp(horner, (0.5, np.ones(3)), (1.0,))
    with pytest.raises(TypeError, match="two tuples"):
        pullback.jvp(horner, 0.5, 1.0)


def test_the_callers_arrays_are_not_changed():
    A, v = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    tA, tv = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    before = [a.copy() for a in (A, v, tA, tv)]
    pullback.jvp(writes, (A, v), (tA, tv))
    for a, b in zip((A, v, tA, tv), before):
        np.testing.assert_array_equal(a, b)


CONDITIONS = [np.array([True, False, False]), np.array([False, True, False])]


def select_with_a_default(x, y):
    return np.sum(np.sin(np.select(CONDITIONS, [x, y], default=1.1)))


def test_a_constant_argument_of_a_linear_primitive_has_a_zero_tangent():
    # np.select is linear in its choices and its default: the default 1.1 is a number,
    # whose tangent is 0 (found by the peers' cases against the gradient).
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    assert_tangent(select_with_a_default, (x, y), (RNG.normal(size=3), RNG.normal(size=3)))


@pytest.mark.parametrize("f", [tangent_cases.sorted_and_partitioned,
                               tangent_cases.cumulative_product,
                               tangent_cases.polynomial_and_interpolation,
                               tangent_cases.factorizations, tangent_cases.softmaxes,
                               tangent_cases.spectra])
def test_jvp_through_the_newer_tangent_rules(f):
    # The generated tangent program (templates substituted into code) against the
    # gradient's inner product and central differences.
    x = np.array([0.3, -0.8, 1.1, 0.5, -0.2, 0.9])
    v = np.random.default_rng(0).standard_normal(6)
    value, tangent = pullback.jvp(f, (x,), (v,))
    assert value == pytest.approx(f(x), rel=1e-14)
    assert tangent == pytest.approx(float(pullback.grad(f)(x) @ v), rel=1e-12)
    eps = 1e-6
    assert tangent == pytest.approx((f(x + eps * v) - f(x - eps * v)) / (2 * eps), rel=1e-7)


def test_hessian_through_a_tangent_helper_without_a_rule_is_refused_by_line():
    with pytest.raises(pullback.MissingRuleError, match="cumprod_jvp") as info:
        pullback.hessian(tangent_cases.cumulative_product)(np.array([0.3, -0.8, 1.1]))
    assert "line" in str(info.value)


@pytest.mark.parametrize("f", [tangent_cases.sorted_and_partitioned, tangent_cases.softmaxes,
                               tangent_cases.log_determinant, tangent_cases.polynomial])
def test_hessian_through_sort_partition_the_softmaxes_and_slogdet(f):
    # Their tangent helpers have derivative rules: against differences of the gradient.
    x = np.array([0.3, -0.8, 1.1, 0.5, -0.2, 0.9])
    H = pullback.hessian(f)(x)
    grad, eps = pullback.grad(f), 1e-5
    expected = np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(H, expected, rtol=1e-7, atol=1e-8 * np.max(np.abs(H)))


def _scaled(x, p):
    return x * np.sum(p * p) * SCALE


SCALE = 2.0


def test_the_fast_path_of_a_repeated_call_checks_what_the_first_call_checked():
    """A second call with the same kinds skips the argument checks and the lookup; it
    still checks each tangent, keys on which tangents are None, and reads a global
    number as it is now."""
    global SCALE
    p, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    for _ in range(2):          # the first call fills the fast path, the second uses it
        value, tangent = pullback.jvp(_scaled, (3.0, p), (1.0, v))
        assert value == 30.0 and tangent == pytest.approx(10.0 + 3.0 * 2.0 * 2.0 * np.dot(p, v))
    _, t = pullback.jvp(_scaled, (3.0, p), (None, v))        # another set of tangents
    assert t == pytest.approx(3.0 * 2.0 * 2.0 * np.dot(p, v))
    with pytest.raises(ValueError, match="shape"):
        pullback.jvp(_scaled, (3.0, p), (1.0, np.ones(3)))
    SCALE = 3.0
    try:
        assert pullback.jvp(_scaled, (3.0, p), (1.0, v))[0] == 45.0
    finally:
        SCALE = 2.0


def whole_array_reductions(p):
    return np.max(p) * np.mean(p) + np.min(p ** 2)


@pytest.mark.parametrize("jit", [False, True])
def test_tangents_of_whole_array_reductions_on_both_backends(jit):
    # Their tangent is sum(t * w) of the whole array (Numba's np.sum takes no
    # axis= or keepdims= keyword: a random program found the refusal).
    p, v = np.array([0.3, -1.2, 2.0, 0.7]), np.array([1.0, 0.5, -0.3, 2.0])
    # max at 2.0 (index 2), mean 0.45, min of the squares at 0.3 (index 0).
    expected = (v[2] * 0.45 + 2.0 * np.mean(v)) + 2 * 0.3 * v[0]
    value, tangent = pullback.jvp(whole_array_reductions, (p,), (v,), jit=jit)
    assert tangent == pytest.approx(expected, rel=1e-14)
