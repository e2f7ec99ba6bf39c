"""custom_vjp, custom_jvp and stop_gradient (pullback.custom), and unregister dropping
the derivatives a user's rule made.

Each gradient is checked against an analytic formula written out here, or against
central finite differences of the primal (fd_grad).
"""
import math

import numba
import numpy as np
import pytest

import pullback
from helpers import assert_close, fd_grad
from pullback import custom_jvp, custom_vjp, stop_gradient
from pullback.core.errors import NumbaCompileError


@pytest.fixture(autouse=True, scope="module")
def _unregistered_afterwards():
    """The module's own custom functions leave no rule behind for later test modules."""
    yield
    pullback.unregister(log1pexp)
    pullback.unregister(softplus2)
    pullback.unregister(clipped)


# ------------------------------------------------------------------ stop_gradient


def test_stop_gradient_scalar():
    assert stop_gradient(2.5) == 2.5
    assert pullback.grad(lambda x: x * stop_gradient(x))(3.0) == 3.0   # d/dx (x * c) = c


def test_stop_gradient_array_and_caller_not_mutated():
    x = np.array([1.0, -2.0, 0.5])
    keep = x.copy()

    def f(x):
        y = stop_gradient(x)
        return np.sum(x * y + np.sin(stop_gradient(x * x)))
    assert_close(pullback.grad(f)(x), keep)       # only x * y's explicit x carries one
    assert np.array_equal(x, keep)


def test_stop_gradient_in_a_loop():
    def f(x, n):
        acc = 0.0
        for _ in range(n):
            acc = acc + x * stop_gradient(acc + 1.0)
        return acc
    # The stopped factor is a constant each iteration: d/dx = sum of the factors.
    x, n = 0.7, 4
    acc, factors = 0.0, []
    for _ in range(n):
        factors.append(acc + 1.0)
        acc = acc + x * (acc + 1.0)
    assert_close(pullback.grad(f)(x, n), sum(factors))


def test_stop_gradient_forward_mode():
    value, tangent = pullback.jvp(lambda x: x * stop_gradient(x) + x, (3.0,), (1.0,))
    assert (value, tangent) == (12.0, 4.0)


def test_stop_gradient_jit():
    g = pullback.grad(lambda x: np.sum(x * stop_gradient(x * 2.0)), jit=True)
    x = np.array([1.0, 2.0])
    assert_close(g(x), 2.0 * x)


# ------------------------------------------------------------------ custom_vjp

def _sigmoid(x):
    """1 / (1 + exp(-x)) without overflow on either side."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _log1pexp_fwd(x):
    return log1pexp(x), (_sigmoid(x),)       # the residual bwd needs


def _log1pexp_bwd(res, g):
    (s,) = res
    return (g * s,)


@custom_vjp
def log1pexp(x):
    """log(1 + exp(x)), stable: the derivative pullback would take of it is not."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


log1pexp.defvjp(_log1pexp_fwd, _log1pexp_bwd)


def test_custom_vjp_stable_where_the_naive_derivative_overflows():
    assert log1pexp(0.0) == math.log(2.0)               # called eagerly: the function
    g = pullback.grad(lambda x: 3.0 * log1pexp(x))
    assert_close(g(0.3), 3.0 / (1.0 + math.exp(-0.3)))
    assert_close(g(-2.0), fd_grad(lambda x: 3.0 * math.log1p(math.exp(x)), [-2.0]))
    # The naive log(1 + exp(x)) overflows at 800; the rule's sigmoid does not.
    with pytest.raises(OverflowError):
        pullback.grad(lambda x: math.log(1.0 + math.exp(x)))(800.0)
    assert g(800.0) == 3.0
    assert pullback.grad(log1pexp)(800.0) == 1.0        # grad of the function itself
    assert_close(g(-800.0), 0.0)


@custom_vjp
def clipped(x, y):
    return x * y


def test_custom_vjp_clipped_gradient_and_residuals_reach_bwd():
    seen = []

    def fwd(x, y):
        return clipped(x, y), (x, y, "tag")

    def bwd(res, g):
        x, y, tag = res
        seen.append(tag)
        return (np.clip(g * y, -1.0, 1.0), None)       # clipped, and no cotangent for y
    clipped.defvjp(fwd, bwd)
    x, y = np.array([0.5, 2.0, -3.0]), np.array([4.0, 0.1, 1.0])
    keep = x.copy(), y.copy()

    def loss(x, y):
        return np.sum(clipped(x, y) * 2.0)
    gx, gy = pullback.grad(loss, argnums=(0, 1))(x, y)
    assert_close(gx, np.clip(2.0 * y, -1.0, 1.0))     # the rule's formula, not the truth
    assert_close(gy, np.zeros(3))
    assert seen == ["tag"]
    assert np.array_equal(x, keep[0]) and np.array_equal(y, keep[1])


def test_redefined_defvjp_reaches_an_existing_grad():
    @custom_vjp
    def scale(x):
        return 2.0 * x
    scale.defvjp(lambda x: (scale(x), None), lambda r, g: (2.0 * g,))
    g = pullback.grad(lambda x: scale(x) * x)
    assert_close(g(3.0), 2.0 * 3.0 + 6.0)                 # d(2x * x) = 4x
    scale.defvjp(lambda x: (scale(x), None), lambda r, g: (10.0 * g,))
    assert_close(g(3.0), 10.0 * 3.0 + 6.0)                # the new rule: 10 x + 2x
    pullback.unregister(scale)
    assert_close(g(3.0), 12.0)                            # from the source again


def test_custom_vjp_in_a_loop_accumulates():
    calls = []

    @custom_vjp
    def cube(x):
        return x ** 3

    def bwd(res, g):
        calls.append(res)
        return (3.0 * res * res * g,)
    cube.defvjp(lambda x: (cube(x), x), bwd)

    def f(x, n):
        acc = 0.0
        for i in range(n):
            acc = acc + cube(x * (i + 1))
        return acc
    x = 0.4
    # sum_i (i+1)^3 x^3, derivative 3 x^2 sum (i+1)^3
    assert_close(pullback.grad(f)(x, 3), 3.0 * x * x * (1 + 8 + 27))
    assert sorted(calls) == pytest.approx([x, 2 * x, 3 * x])


def test_custom_vjp_wrong_usage():
    @custom_vjp
    def h(x, y):
        return x + y
    with pytest.raises(TypeError, match="bwd must be a function"):
        h.defvjp(lambda x, y: (h(x, y), None), 3.0)
    h.defvjp(lambda x, y: (h(x, y), None), lambda r, g: (g,))    # one cotangent for two
    with pytest.raises(TypeError, match=r"custom_vjp bwd of h, must return a tuple of 2"):
        pullback.grad(lambda a: h(a, 1.0))(2.0)
    h.defvjp(lambda x, y: h(x, y), lambda r, g: (g, g))          # fwd without residuals
    with pytest.raises(TypeError, match=r"must return a pair \(value, residuals\)"):
        pullback.grad(lambda a: h(a, 1.0))(2.0)
    pullback.unregister(h)


def test_custom_vjp_refuses_parameters_without_one_cotangent_each():
    with pytest.raises(TypeError, match=r"no \*args, \*\*kwargs or keyword-only"):
        custom_vjp(lambda *xs: sum(xs))
    with pytest.raises(TypeError, match="decorates a function"):
        custom_jvp(2.0)


def test_custom_vjp_of_an_njit_function_uses_the_rule_on_python():
    @custom_vjp
    @numba.njit
    def sq(x):
        return x * x
    sq.defvjp(lambda x: (sq(x), x), lambda x, g: (10.0 * g,))    # deliberately not 2x
    assert sq(3.0) == 9.0
    assert pullback.grad(sq)(3.0) == 10.0
    assert pullback.grad(lambda x: sq(x) + x)(3.0) == 11.0
    pullback.unregister(sq)
    assert pullback.grad(lambda x: sq(x) + x)(3.0) == 7.0          # 2x + 1 from the source


def test_custom_vjp_plain_python_under_jit_runs_in_object_mode():
    # fwd, bwd and the function are plain Python: the compiled derivative calls them
    # through Numba's object mode, and says so once.
    with pytest.warns(pullback.PerformanceWarning, match="log1pexp"):
        g = pullback.grad(lambda x: log1pexp(x) * 2.0, jit=True)(0.5)
    assert_close(g, 2.0 / (1.0 + math.exp(-0.5)))
    assert pullback.grad(lambda x: 3.0 * log1pexp(x), jit=True)(800.0) == 3.0


@numba.njit
def _softsign(x):
    return x / (1.0 + np.abs(x))


@numba.njit
def _softsign_fwd(x):
    d = 1.0 + np.abs(x)
    return x / d, d


@numba.njit
def _softsign_bwd(d, g):
    return (g / (d * d),)


@numba.njit
def _doubled_fwd(x):            # a rule for 2 * softsign: the forward sweep's value too
    d = 1.0 + np.abs(x)
    return 2.0 * x / d, d


@numba.njit
def _doubled_bwd(d, g):
    return (2.0 * g / (d * d),)


def test_custom_vjp_njit_fwd_bwd_under_jit_and_redefined():
    @custom_vjp
    def softsign(x):
        return _softsign(x)
    softsign.defvjp(_softsign_fwd, _softsign_bwd)

    def f(x):
        return math.sin(x) * softsign(x * x)
    x = -1.2       # a number: an array's derivative costs Numba seconds more to compile
    value = math.sin(x) * x * x / (1 + x * x)
    expected = math.cos(x) * x * x / (1 + x * x) + math.sin(x) * 2 * x / (1 + x * x) ** 2
    vg = pullback.value_and_grad(f, jit=True)
    assert_close(vg(x)[0], value)
    assert_close(vg(x)[1], expected)
    # The new fwd computes the value under Numba: both the value and the gradient double.
    softsign.defvjp(_doubled_fwd, _doubled_bwd)
    assert_close(vg(x)[0], 2.0 * value)
    assert_close(vg(x)[1], 2.0 * expected)
    pullback.unregister(softsign)


@numba.njit
def _scaled_fwd(x, c):
    return x * c, c


@numba.njit
def _scaled_bwd(c, g):
    return (g * c, None)           # no cotangent for c


def test_custom_vjp_njit_none_cotangent_under_jit():
    @custom_vjp
    def scaled(x, c):
        return x * c
    scaled.defvjp(_scaled_fwd, _scaled_bwd)
    gx, gc = pullback.grad(lambda x, c: scaled(x, c) * x, argnums=(0, 1), jit=True)(1.5, 4.0)
    assert_close(gx, 4.0 * 1.5 + 1.5 * 4.0)             # d/dx (x c x) through the rule: c x + x c
    assert gc == 0.0                                    # None: nothing flows to c
    pullback.unregister(scaled)


# ------------------------------------------------------------------ custom_jvp

@custom_jvp
def softplus2(x, y):
    return math.log(1.0 + math.exp(x)) * y


@softplus2.defjvp
def _softplus2_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    s = 1.0 / (1.0 + math.exp(-x))
    value = math.log(1.0 + math.exp(x)) * y
    return value, s * y * tx + math.log(1.0 + math.exp(x)) * ty


def test_custom_jvp_forward_mode():
    x, y = 0.3, 2.0
    value, tangent = pullback.jvp(lambda a, b: softplus2(a, b) * a, (x, y), (1.0, 0.5))
    sp, s = math.log1p(math.exp(x)), 1.0 / (1.0 + math.exp(-x))
    assert_close(value, sp * y * x)
    assert_close(tangent, (s * y * 1.0 + sp * 0.5) * x + sp * y * 1.0)


def test_custom_jvp_reverse_mode():
    x, y = -0.7, 1.5
    gx, gy = pullback.grad(lambda a, b: 2.0 * softplus2(a, b), argnums=(0, 1))(x, y)
    assert_close(gx, 2.0 * y / (1.0 + math.exp(-x)))
    assert_close(gy, 2.0 * math.log1p(math.exp(x)))


def test_custom_jvp_in_hessian():
    # Reverse mode over forward mode: the rule's tangent is differentiated again.
    def f(v):
        return softplus2(v[0], v[1]) ** 2
    a, b = 0.4, -1.3
    sp, s = math.log1p(math.exp(a)), 1.0 / (1.0 + math.exp(-a))
    d1 = np.array([s * b, sp])                               # gradient of u = sp(a) * b
    d2 = np.array([[s * (1 - s) * b, s], [s, 0.0]])          # its Hessian
    u = sp * b
    assert_close(pullback.hessian(f)(np.array([a, b])), 2 * np.outer(d1, d1) + 2 * u * d2)


def test_custom_jvp_arrays_in_a_loop_and_caller_not_mutated():
    @custom_jvp
    def sq(x):
        return x * x

    @sq.defjvp
    def sq_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return x * x, 2.0 * x * t

    def f(x, n):
        acc = np.zeros_like(x)
        for _ in range(n):
            acc = acc + sq(x + acc)
        return np.sum(acc)
    x = np.array([0.1, -0.2, 0.05])
    keep = x.copy()
    assert_close(pullback.grad(f)(x, 3), fd_grad(f, [x, 3]), rtol=1e-6)
    assert_close(pullback.jvp(lambda x: f(x, 3), (x,), (np.ones(3),))[1],
                 np.sum(fd_grad(f, [x, 3])), rtol=1e-6)
    assert np.array_equal(x, keep)


def test_custom_jvp_wrong_usage_and_jit():
    @custom_jvp
    def k(x):
        return 2.0 * x
    with pytest.raises(TypeError, match="must be a function"):
        k.defjvp(None)
    k.defjvp(lambda primals, tangents: 2.0 * tangents[0])          # no pair
    with pytest.raises(TypeError, match=r"must return a pair \(value, tangent_out\)"):
        pullback.jvp(k, (1.0,), (1.0,))      # k itself: its call of the primitive
    with pytest.raises(NumbaCompileError, match="custom_jvp"):
        pullback.grad(lambda x: k(x) * x, jit=True)(1.0)
    pullback.unregister(k)
    assert pullback.grad(lambda x: k(x) * x)(1.5) == 6.0            # from the source


# ------------------------------------------------------------------ unregister

def test_unregister_drops_derivatives_made_with_a_rule():
    def wobble(x):
        return x * x

    def wobble_vjp(g, ans, x):
        return g * 100.0                      # deliberately not 2x: visible if used
    pullback.rule(wobble)(wobble_vjp)
    g = pullback.grad(lambda x: wobble(x) + x)
    assert g(3.0) == 101.0
    pullback.unregister(wobble)
    assert g(3.0) == 7.0                                # 2x + 1 from the source
    assert pullback.grad(lambda x: wobble(x) + x)(3.0) == 7.0


@pullback.custom_jvp
def _softplus(x):
    return math.log1p(math.exp(x))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return _softplus(x), t / (1.0 + math.exp(-x))


def _softplus_sum(x):
    s = 0.0
    for i in range(len(x)):
        s += _softplus(x[i])
    return s


def test_reverse_mode_makes_a_custom_jvp_rules_transpose_once():
    # Each call in the reverse sweep runs one derivative of the transposed rule,
    # made on the first call (it was made again at every call: the primals, a
    # tuple of NumPy floats, were taken for an object the derivative depends on).
    from pullback import pipeline
    x = np.linspace(-2.0, 2.0, 50)
    g = pullback.grad(_softplus_sum)
    g(x[:2])
    made = len(pipeline._CACHE)
    got = g(x)
    assert len(pipeline._CACHE) == made
    np.testing.assert_allclose(got, 1.0 / (1.0 + np.exp(-x)), rtol=1e-12)


@pullback.custom_jvp
def _quarter_tanh(v):
    return np.tanh(v) * 0.25


@_quarter_tanh.defjvp
def _quarter_tanh_jvp(primals, tangents):
    v, = primals
    tv, = tangents
    return _quarter_tanh(v), (0.25 * (1.0 - np.tanh(v) ** 2)) * tv


def _sum_quarter_tanh(v):
    return np.sum(_quarter_tanh(v) * 1.0)


def test_an_array_custom_jvp_in_reverse_and_second_order():
    # Reverse mode over forward mode hands the transposed rule a number for the
    # cotangent of an array output (the same at every entry); the array's
    # transposed rule sums g * tangent (it returned an array, which grad refused).
    v = np.array([-1.55, 1.09, -0.17])
    t = np.tanh(v)
    np.testing.assert_allclose(pullback.grad(_sum_quarter_tanh)(v), 0.25 * (1 - t ** 2),
                               rtol=1e-12)
    np.testing.assert_allclose(pullback.hessian(_sum_quarter_tanh)(v),
                               np.diag(-0.5 * t * (1 - t ** 2)), rtol=1e-10, atol=1e-14)
