"""User rules (``pullback.rule``) for any callable: the VJP receives exactly the
arguments the call site passed, positional and keyword, with no defaults filled in.

Every gradient is checked against central finite differences of the primal.
"""
import math
import warnings

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate, fd_grad
from pullback.pipeline import clear_cache
from pullback.rules import registry


@pytest.fixture
def registered():
    """Register rules for a test; afterwards remove them (a built-in rule that one
    replaced comes back)."""
    fns = []

    def register(fn, vjp, **kw):
        pullback.rule(fn, **kw)(vjp)
        fns.append(fn)
        return vjp
    yield register
    for fn in fns:
        registry.unregister(fn)
    clear_cache()


# ---------------------------------------------------------------- a NumPy ufunc without a rule

def test_a_ufunc_without_a_library_rule(registered):
    assert registry.lookup(np.cbrt) is None     # no library rule: the user's is the only one
    # The ufunc's signature has out=, where=, ... defaults: none is passed to the rule.
    registered(np.cbrt, lambda g, ans, x: g / (3.0 * ans * ans))

    def f(x):
        return np.sum(np.cbrt(x) * x)
    x = np.array([0.5, 1.7, 8.0, 27.5])
    assert_fd_close(pullback.grad(f)(x), fd_estimate(f, (x,)), rtol=1e-7)

    def h(s):
        return np.cbrt(s * s + 1.0)
    assert pullback.grad(h)(0.8) == pytest.approx(fd_grad(h, (0.8,)), rel=1e-7)


def test_a_user_rule_replaces_a_library_rule_until_unregistered():
    special = pytest.importorskip("scipy.special")
    builtin = registry.lookup(special.gammaln)

    # The call in issue #12: a three-parameter rule for the ufunc gammaln.
    @pullback.rule(special.gammaln)
    def gammaln_vjp(g, ans, x):
        return g * special.digamma(x)
    try:
        def f(x):
            return special.gammaln(x) * x
        assert pullback.grad(f)(2.5) == pytest.approx(fd_grad(f, (2.5,)), rel=1e-7)
        assert "gammaln_vjp(" in pullback.grad(f).source
    finally:
        registry.unregister(special.gammaln)
        clear_cache()
    assert registry.lookup(special.gammaln) is builtin


# ---------------------------------------------------------------- a SciPy function without a rule

def test_a_scipy_function_without_a_rule(registered):
    special = pytest.importorskip("scipy.special")
    assert registry.lookup(special.dawsn) is None
    registered(special.dawsn, lambda g, ans, x: g * (1.0 - 2.0 * x * ans))   # Dawson's integral

    def f(x):
        return np.sum(special.dawsn(x) ** 2)
    x = np.array([-1.5, 0.0, 0.3, 2.0])
    assert_fd_close(pullback.grad(f)(x), fd_estimate(f, (x,)), rtol=1e-7)


def test_a_rule_wins_over_inlining_a_scipy_python_function(registered):
    optimize = pytest.importorskip("scipy.optimize")
    calls = []

    def rosen_vjp(g, ans, x):
        calls.append(1)
        return g * optimize.rosen_der(x)
    registered(optimize.rosen, rosen_vjp)

    def f(x):
        return optimize.rosen(x) * 3.0
    x = np.array([0.3, -1.1, 0.8])
    assert_close(pullback.grad(f)(x), 3.0 * optimize.rosen_der(x), rtol=1e-12)
    assert calls


# ---------------------------------------------------------------- a Python function

def scaled(x, y, scale=2.0, *, power=1):
    return scale * x * y ** power


def scaled_vjp(g, ans, x, y, scale=2.0, *, power=1):
    return (g * scale * y ** power, g * scale * x * power * y ** (power - 1),
            g * x * y ** power)


def uses_scaled(a, b):
    return (scaled(a, b)                     # defaults not passed
            + scaled(a, b, 3.0)              # a defaulted parameter, by position
            + scaled(a, y=b, power=2)        # by keyword, and a keyword-only one
            + scaled(a, b, scale=a * b))     # a differentiated keyword argument


def test_defaulted_and_keyword_parameters(registered):
    seen = []

    def spy(g, ans, x, y, scale=2.0, *, power=1):
        seen.append((scale, power))
        return scaled_vjp(g, ans, x, y, scale, power=power)
    registered(scaled, spy)
    g = pullback.grad(uses_scaled, argnums=(0, 1))
    da, db = g(1.5, 0.7)
    assert da == pytest.approx(fd_grad(uses_scaled, (1.5, 0.7), 0), rel=1e-7)
    assert db == pytest.approx(fd_grad(uses_scaled, (1.5, 0.7), 1), rel=1e-7)
    # Each call's own arguments, as written; the rule's own defaults for the rest.
    assert sorted(seen) == sorted([(2.0, 1), (3.0, 1), (2.0, 2), (1.5 * 0.7, 1)])
    src = g.source
    assert "spy(" in src and "power=2" in src and "scale=" in src


def test_a_rule_under_numba():
    numba = pytest.importorskip("numba")

    @numba.njit
    def softplus(x, beta=1.0):
        return math.log1p(math.exp(beta * x)) / beta

    @numba.njit
    def softplus_vjp(g, ans, x, beta=1.0):
        return g / (1.0 + math.exp(-beta * x)), 0.0

    @numba.njit
    def f(x):
        return softplus(x) + softplus(x, 2.0)
    pullback.rule(softplus, argnums=0)(softplus_vjp)
    try:
        assert pullback.grad(f)(0.4) == pytest.approx(fd_grad(f, (0.4,)), rel=1e-7)
    finally:
        registry.unregister(softplus)


def test_a_rule_on_a_plain_python_function_under_numba(registered):
    """A rule on a plain Python function (Lambert W by Newton's iteration, with its
    implicit derivative): under jit=True the function and its VJP are compiled with
    Numba, called from the loop that uses them."""
    pytest.importorskip("numba")

    def lambert_w(z):
        w = 0.5
        for _ in range(40):
            w = w - (w * math.exp(w) - z) / (math.exp(w) * (w + 1.0))
        return w

    registered(lambert_w, lambda g, ans, z: g * ans / (z * (1.0 + ans)))

    def f(z):
        s = 0.0
        for i in range(3):
            s += lambert_w(z * (i + 1.0))
        return s
    z = 1.3
    want = sum((i + 1) * lambert_w(z * (i + 1)) / (z * (i + 1) * (1 + lambert_w(z * (i + 1))))
               for i in range(3))       # W'(u) = W / (u (1 + W)), by the chain rule
    assert pullback.grad(f, jit=True)(z) == pytest.approx(want, rel=1e-12)
    assert pullback.grad(f, jit=False)(z) == pytest.approx(fd_grad(f, (z,)), rel=1e-7)


def test_a_rule_on_a_function_numba_cannot_compile_runs_in_object_mode(registered):
    """A rule on a plain Python function that calls SciPy (Numba compiles neither
    it nor its VJP): under jit=True both are called through object mode, with a
    PerformanceWarning, and the gradient is the Python backend's."""
    pytest.importorskip("numba")
    special = pytest.importorskip("scipy.special")

    def lambert_w(z):
        return float(np.real(special.lambertw(z)))

    def lambert_w_vjp(g, ans, z):
        w = float(np.real(special.lambertw(z)))       # SciPy again: no Numba either
        return g * w / (z * (1.0 + w))

    def scaled(v):
        return np.asarray(special.expit(v)) * 2.0      # an array in, an array out

    registered(lambert_w, lambert_w_vjp)
    registered(scaled, lambda g, ans, v: g * ans * (1.0 - ans / 2.0))

    def f(z, v):
        s = np.sum(scaled(v * z))
        for i in range(3):
            s += lambert_w(z * (i + 1.0))
        return s
    z, v = 1.3, np.array([0.5, -1.0, 2.0])
    want = sum((i + 1) * lambert_w(z * (i + 1)) / (z * (i + 1) * (1 + lambert_w(z * (i + 1))))
               for i in range(3))
    e = special.expit(v * z)
    want_z, want_v = want + np.sum(2 * e * (1 - e) * v), 2 * e * (1 - e) * z
    with pytest.warns(pullback.PerformanceWarning, match="lambert_w"):
        gz, gv = pullback.grad(f, argnums=(0, 1), jit=True)(z, v)
    assert gz == pytest.approx(want_z, rel=1e-12)
    assert_close(gv, want_v, rtol=1e-12)
    assert_close(pullback.grad(f, argnums=1)(z, v), want_v, rtol=1e-12)


def test_a_rule_numba_compiles_gives_no_object_mode(registered):
    pytest.importorskip("numba")

    def cube(x):
        return x * x * x

    registered(cube, lambda g, ans, x: 3.0 * g * x * x)

    def f(x):
        return cube(x) + cube(2.0 * x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pullback.PerformanceWarning)
        assert pullback.grad(f, jit=True)(0.7) == pytest.approx(27 * 0.49, rel=1e-14)


def test_none_from_a_vjp_is_a_zero_cotangent(registered):
    """A VJP returning None for an argument that is differentiated says it has no
    derivative there: a zero gradient (it came out as NaN for an array and a
    TypeError for a number)."""
    def scale(x, y):
        return x * y

    registered(scale, lambda g, ans, x, y: (g * y, None))

    def f(x, y):
        return np.sum(scale(x, y)) + np.sum(y * y)
    x, y = np.ones(3), np.arange(3.0)
    dx, dy = pullback.grad(f, argnums=(0, 1))(x, y)
    assert_close(dx, y, rtol=1e-15)
    assert_close(dy, 2 * y, rtol=1e-15)            # only the y * y term
    assert pullback.grad(lambda a, b: scale(a, b), argnums=(0, 1))(1.0, 2.0) == (2.0, 0.0)


def test_none_from_an_njit_vjp_under_numba(registered):
    numba = pytest.importorskip("numba")

    @numba.njit
    def scale(x, y):
        return x * y

    @numba.njit
    def scale_vjp(g, ans, x, y):
        return g * y, None
    registered(scale, scale_vjp)

    def f(x, y):
        return np.sum(scale(x, y)) + np.sum(y * y)
    x, y = np.ones(3), np.arange(3.0)
    dx, dy = pullback.grad(f, argnums=(0, 1), jit=True)(x, y)
    assert_close(dx, y, rtol=1e-15)
    assert_close(dy, 2 * y, rtol=1e-15)


def test_argnums_and_a_parameter_without_a_derivative(registered):
    def power(x, n=2):
        return x ** n

    registered(power, lambda g, ans, x, n=2: (g * n * x ** (n - 1), None), argnums=0)

    def f(x):
        return power(x) + power(x, 3)
    assert pullback.grad(f)(1.3) == pytest.approx(fd_grad(f, (1.3,)), rel=1e-7)

    def g(x):
        return power(2.0, x)            # n carries a derivative: argnums=0 says it may not
    with pytest.raises(pullback.MissingRuleError, match="'n'"):
        pullback.grad(g)(1.3)


# ---------------------------------------------------------------- wrong rules: clear errors

def test_a_rule_that_cannot_take_the_call_names_the_rule_and_the_line(registered):
    def area(w, h=1.0):
        return w * h

    def area_vjp(g, ans, w):           # forgot h
        return g
    registered(area, area_vjp)

    def f(x):
        return area(x, 2.0)
    with pytest.raises(pullback.MissingRuleError) as info:
        pullback.grad(f)(1.5)
    msg = str(info.value)
    assert "area_vjp" in msg and "area" in msg and "return area(x, 2.0)" in msg
    assert "test_user_rules.py" in msg and "positional argument" in msg

    def k(x):
        return area(x, h=3.0)
    with pytest.raises(pullback.MissingRuleError, match="area_vjp.*keyword argument 'h'"):
        pullback.grad(k)(1.5)


def test_a_rule_that_returns_the_wrong_number_of_cotangents(registered):
    registered(scaled, lambda g, ans, x, y, scale=2.0, *, power=1: g * scale * y)

    def f(a):
        return scaled(a, 0.5)
    with pytest.raises(TypeError, match="did not return a tuple of 3 cotangents") as info:
        pullback.grad(f)(1.5)
    assert "return scaled(a, 0.5)" in str(info.value)


def test_a_rule_must_take_g_and_ans_first():
    with pytest.raises(TypeError, match=r"g.*ans"):
        pullback.rule(scaled)(lambda g: g)
    with pytest.raises(TypeError, match="no positional parameter"):
        pullback.rule(scaled)(lambda g, ans, **kw: g)
    assert registry.lookup(scaled) is None


# ---------------------------------------------------------------- removing a rule

def _cube(x):
    return x * x * x


def _uses_cube(x):
    return _cube(x) + x


def test_unregister_drops_the_derivatives_made_with_the_rule():
    """A gradient function made while the rule was registered, and already called,
    uses the rule no more once it is removed: it differentiates ``_cube``'s source."""
    @pullback.rule(_cube)
    def cube_vjp(g, ans, x):
        return 2.0 * g * x * x                  # deliberately not 3 g x²
    try:
        df = pullback.grad(_uses_cube)
        assert df(1.5) == pytest.approx(2.0 * 1.5 ** 2 + 1.0)
        assert "cube_vjp(" in df.source
        v = np.array([0.5, 2.0])
        dv = pullback.grad(lambda x: np.sum(_cube(x)))
        assert_close(dv(v), 2.0 * v * v)
    finally:
        pullback.unregister(_cube)
    assert registry.lookup(_cube) is None
    assert df(1.5) == pytest.approx(fd_grad(_uses_cube, (1.5,)), rel=1e-7)    # 3 x² + 1
    assert "cube_vjp(" not in df.source
    assert_close(dv(v), 3.0 * v * v)
    assert pullback.grad(_uses_cube)(1.5) == pytest.approx(3.0 * 1.5 ** 2 + 1.0)


def test_unregister_gives_the_library_rule_back_to_existing_gradients():
    special = pytest.importorskip("scipy.special")
    builtin = registry.lookup(special.gammaln)

    def f(x):
        return special.gammaln(x) * x
    df = pullback.grad(f)
    right = df(2.5)
    assert right == pytest.approx(fd_grad(f, (2.5,)), rel=1e-7)

    @pullback.rule(special.gammaln)
    def gammaln_vjp(g, ans, x):
        return 0.0 * g
    try:
        assert df(2.5) == pytest.approx(special.gammaln(2.5))    # the new rule, at once
    finally:
        registry.unregister(special.gammaln)    # the registry's own removal clears too
    assert registry.lookup(special.gammaln) is builtin
    assert df(2.5) == pytest.approx(right)


def test_unregister_refuses_a_library_rule_and_ignores_a_function_without_one():
    with pytest.raises(ValueError, match="pullback's own.*pullback.rule"):
        pullback.unregister(np.sin)
    assert registry.lookup(np.sin) is not None
    pullback.unregister(_uses_cube)         # no rule: nothing to do
