"""SciPy's own Python functions are inlined (the policy in pullback.frontend.resolve):
``scipy.optimize.rosen`` and friends differentiate, with their array-namespace
plumbing (``array_namespace``, ``xp_promote``, ``atleast_nd``...) understood, and
what cannot be inlined is refused with a located error, never a wrong number.

References are SciPy's own analytic derivatives (``rosen_der``, ``rosen_hess_prod``)
and central finite differences.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate
from pullback.frontend.resolve import inlined_library, is_library

optimize = pytest.importorskip("scipy.optimize")
special = pytest.importorskip("scipy.special")

points = hnp.arrays(np.float64, st.integers(2, 9), elements=st.floats(-2, 2))


@settings(max_examples=30, deadline=None)
@given(points)
def test_grad_of_rosen_is_rosen_der(x):
    assert_close(pullback.grad(optimize.rosen)(x), optimize.rosen_der(x), rtol=1e-12, atol=1e-9)


def rosen_plus(x, c):
    """A user function calling SciPy's rosen (which is inlined into it)."""
    return c * optimize.rosen(x) + np.sum(np.sin(x))


@settings(max_examples=20, deadline=None)
@given(points, st.floats(0.5, 3.0))
def test_grad_of_a_user_function_calling_rosen(x, c):
    gx, gc = pullback.grad(rosen_plus, argnums=(0, 1))(x, c)
    assert_close(gx, c * optimize.rosen_der(x) + np.cos(x), rtol=1e-12, atol=1e-9)
    assert gc == pytest.approx(optimize.rosen(x), rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(points, st.integers(0, 2 ** 31))
def test_hessian_vector_products_from_rosen_der_and_rosen_hess_prod(x, seed):
    v = np.random.default_rng(seed).normal(size=x.shape)
    # d/dx <rosen_der(x), v> = H v  (H is symmetric)
    hv = pullback.grad(lambda x, v: np.sum(optimize.rosen_der(x) * v))(x, v)
    assert_close(hv, optimize.rosen_hess_prod(x, v), rtol=1e-10, atol=1e-8)
    # d/dp <rosen_hess_prod(x, p), v> = H v: through atleast_nd, xp.asarray, xp.zeros
    hp = pullback.grad(lambda p, x: np.sum(optimize.rosen_hess_prod(x, p) * v))(v * 0.0, x)
    assert_close(hp, optimize.rosen_hess_prod(x, v), rtol=1e-10, atol=1e-8)


def test_scipy_functions_with_rules_keep_them():
    # logsumexp, softmax and log_softmax have rules: they are never inlined.
    x = np.array([0.3, -1.2, 2.0, 0.5])
    w = np.array([1.0, 2.0, -1.0, 0.5])

    def f(x):
        return special.logsumexp(x) + np.sum(special.softmax(x) * w) \
            + np.sum(special.log_softmax(x) * w)
    g = pullback.grad(f)
    assert_fd_close(g(x), fd_estimate(f, (x,)), rtol=1e-7)
    assert "logsumexp_vjp" in g.source and "softmax_vjp" in g.source


def test_the_policy_is_what_the_docstring_says():
    # SciPy's Python functions are inlined (a rule, where there is one, wins first) ...
    assert not is_library(optimize.rosen) and inlined_library(optimize.rosen)
    # ... but not scipy._lib's, nor NumPy's, nor compiled functions (ufuncs).
    from scipy._lib import _array_api
    assert is_library(_array_api.xp_promote) and not inlined_library(_array_api.xp_promote)
    assert is_library(np.linalg.norm) and not inlined_library(np.linalg.norm)
    assert not inlined_library(special.gammaln)


def test_a_user_array_namespace_picker():
    array_api_compat = pytest.importorskip("array_api_compat")

    def f(x):
        xp = array_api_compat.array_namespace(x)
        return xp.sum(xp.exp(x) * x)
    x = np.array([0.1, 0.7, -0.4])
    assert_fd_close(pullback.grad(f)(x), fd_estimate(f, (x,)), rtol=1e-7)


# ---------------------------------------------------------------- scipy._lib's plumbing

def _plumbing():
    from scipy._lib import array_api_extra as xpx
    from scipy._lib._array_api import _asarray, array_namespace, xp_copy, xp_promote, xp_ravel

    def chained(x):
        return array_namespace(x).sum(x * x)

    def helper(x, xp):
        return xp.sum(xp.exp(x))

    def passes_a_module(x):
        return helper(x, np)

    def promotes_two(x, y):
        xp = array_namespace(x, y)
        x, y = xp_promote(x, y, force_floating=True, xp=xp)
        return xp.sum(x * y * y)

    def broadcasts(x, s):
        xp = array_namespace(x, s)
        x, s = xp_promote(x, s, broadcast=True, xp=xp)
        return xp.sum(x * s * s)

    def converts(x):
        xp = array_namespace(x)
        a = _asarray(x, dtype=xp.float64, xp=xp)
        b = xp_copy(a, xp=xp)
        c = xp_ravel(b, xp=xp)
        d = xpx.atleast_nd(c, ndim=2, xp=xp)
        return xp.sum(d * d * c)
    return [chained, passes_a_module, promotes_two, broadcasts, converts]


@pytest.mark.parametrize("name", ["chained", "passes_a_module", "promotes_two", "broadcasts",
                                  "converts"])
def test_namespace_pickers_and_conversions(name):
    f = {f.__name__: f for f in _plumbing()}[name]
    x = np.array([[0.3, 0.5], [1.2, -0.7]])
    second = {"promotes_two": x + 1.0, "broadcasts": 0.7}.get(name)
    args = (x,) if second is None else (x, second)
    nums = tuple(range(len(args)))
    grads = pullback.grad(f, argnums=nums)(*args)
    for k, g in zip(nums, grads):
        assert_fd_close(g, fd_estimate(f, args, k), rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------- refusals

def test_a_scipy_function_that_cannot_be_inlined_is_refused_at_the_users_call():
    # euclidean's source (through minkowski) validates with `raise`, which pullback
    # does not differentiate: a located refusal naming it, never a number.
    distance = pytest.importorskip("scipy.spatial.distance")

    def f(x):
        return distance.euclidean(x, np.ones(3)) * 2.0
    with pytest.raises(pullback.MissingRuleError) as info:
        pullback.grad(f)(np.array([0.3, 0.4, 0.5]))
    msg = str(info.value)
    assert "euclidean" in msg and "@pullback.rule(euclidean)" in msg
    assert "test_scipy_functions.py" in msg and "distance.euclidean(x, np.ones(3))" in msg


def test_a_primitive_without_a_rule_inside_scipy_code_is_refused_at_the_users_line():
    # rosen_hess inlines, but builds its matrix with array_api_extra's
    # create_diagonal (scipy._lib, no rule): refused where the user called it.
    def f(x):
        return np.sum(optimize.rosen_hess(x))
    with pytest.raises(pullback.MissingRuleError) as info:
        pullback.grad(f)(np.array([0.3, 0.4, 0.5]))
    msg = str(info.value)
    assert "test_scipy_functions.py" in msg and "return np.sum(optimize.rosen_hess(x))" in msg
    assert "pullback.rule" in msg


def test_a_namespace_reassigned_to_another_value_is_refused():
    from scipy._lib._array_api import array_namespace

    def f(x):
        xp = array_namespace(x)
        y = xp.sum(x)
        xp = y
        return xp
    with pytest.raises(pullback.UnsupportedSyntaxError, match="array namespace 'xp'"):
        pullback.grad(f)(np.array([1.0, 2.0]))
