"""The derivatives of the reductions' derivative helpers (rules/reductions_second.py and
the registrations beside max_vjp, norm_vjp, logsumexp_vjp, nansum_vjp, nanmean_vjp and
average_vjp_a), which Hessians of reductions taken reverse over forward need.

References: central finite differences of each helper in each argument it is smooth in
(``check_rule``, with its tangent rule's adjoint test), the Hessian of a small function
of each reduction against central differences of pullback's gradient, and, at ties of
``max``, the analytic Hessian of the shared-tie convention (JAX's too, when installed).
"""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from scipy import special

import pullback
from pullback.rules.extrema import max_vjp
from pullback.rules.norm import norm_vjp
from pullback.rules.reductions import std_vjp, var_vjp
from pullback.rules.scipy_special import logsumexp_vjp
from pullback.rules.weighted import average_vjp_a, nanmean_vjp, nansum_vjp

from .checks import check_rule, check_vjp, rule_vjp, values

A = values(7, (3, 4), 0.5, 1.5)


def _c(primal, **kw):
    ans = primal(A, **kw)
    return ans, values(8, np.shape(ans))


@pytest.mark.parametrize("axis", [None, 1])
@pytest.mark.parametrize("primal", [np.max, np.min])
def test_max_vjp_is_linear_in_its_cotangent_and_constant_in_a(primal, axis):
    ans, c = _c(primal, axis=axis)
    # In r alone it jumps (the hits change); in a tangent program r moves with a.
    check_rule(max_vjp, (c, ans, A), kwargs={"axis": axis}, only=("c", "a"))


@pytest.mark.parametrize("axis", [None, 1])
def test_var_and_std_vjp(axis):
    ans, c = _c(np.var, axis=axis)
    check_rule(var_vjp, (c, A), kwargs={"axis": axis, "ddof": 1})
    ans, c = _c(np.std, axis=axis)
    check_rule(std_vjp, (c, ans, A), kwargs={"axis": axis})


@pytest.mark.parametrize("ord_axis", [(None, 1), (3, 1), (None, None), ("fro", None), (1, 0)])
def test_norm_vjp(ord_axis):
    ord, axis = ord_axis
    ans = np.linalg.norm(A, ord, axis)
    check_rule(norm_vjp, (values(8, np.shape(ans)), ans, A), kwargs={"ord": ord, "axis": axis})


def test_norm_vjp_of_a_matrix_through_the_svd_is_refused():
    ans = np.linalg.norm(A, 2)
    with pytest.raises(NotImplementedError, match="through the SVD"):
        pullback.rules.norm.norm_vjp_vjp_x(1.0, 1.0, ans, A, 2)


@pytest.mark.parametrize("axis", [None, 0])
def test_logsumexp_vjp(axis):
    ans, c = _c(special.logsumexp, axis=axis)
    check_rule(logsumexp_vjp, (c, ans, A), kwargs={"axis": axis})


@pytest.mark.parametrize("helper, primal", [(nansum_vjp, np.nansum), (nanmean_vjp, np.nanmean)])
def test_nan_reductions_vjp(helper, primal):
    ans, c = _c(primal, axis=1)
    check_rule(helper, (c, A), kwargs={"axis": 1})


def test_average_vjp_a():
    w = values(9, (4,), 0.5, 1.5)
    ans, c = _c(np.average, axis=1, weights=w)
    check_rule(average_vjp_a, (c, A), kwargs={"axis": 1, "weights": w})


# ---------------------------------------------------------------------------
# Hessians of each reduction whose tangent is derived, against differences of the gradient

REDUCTIONS = {"var": np.var, "std": np.std, "max": np.max, "min": np.min,
              "norm": np.linalg.norm, "logsumexp": special.logsumexp, "nansum": np.nansum,
              "nanmean": np.nanmean, "average": np.average}
_SOURCE = "import numpy as np\n" + "".join(
    f"def all_{n}(a):\n    return np.sum(F_{n}(a * a) ** 2)\n"
    f"def rows_{n}(a):\n    return np.sum(np.sin(F_{n}(a * a, axis=1)))\n" for n in REDUCTIONS)


def _module(tmp_path_factory):
    path = tmp_path_factory.mktemp("second") / "reductions_second_cases.py"
    path.write_text(_SOURCE)     # pullback reads a function's source from its file
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for n, fn in REDUCTIONS.items():
        setattr(module, f"F_{n}", fn)
    sys.modules.pop(path.stem, None)
    return module


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return _module(tmp_path_factory)


def _fd_hessian(f, x, eps=1e-5):
    grad = pullback.grad(f)
    H = np.empty(x.shape + x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = eps
        H[(...,) + i] = (grad(x + e) - grad(x - e)) / (2 * eps)
    return H


@pytest.mark.parametrize("kind", ["all", "rows"])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_hessian_of_a_reduction_against_differences_of_the_gradient(cases, name, kind):
    f = getattr(cases, f"{kind}_{name}")
    x = values(11, (3, 4), 0.5, 1.5)
    H = pullback.hessian(f)(x)
    expected = _fd_hessian(f, x)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-7 * np.max(np.abs(expected)))


def max_squared(a):
    return np.max(a) ** 2


def test_hessian_at_a_tie_of_max_follows_the_shared_tie_convention():
    a = np.array([1.0, 0.5, 1.0])
    share = np.array([0.5, 0.0, 0.5])      # the first-order rule's split of the tie
    np.testing.assert_allclose(pullback.grad(max_squared)(a), 2.0 * share, rtol=1e-15)
    # d/da (2 max(a) share) with the shares held: the derivative of the same convention
    np.testing.assert_allclose(pullback.hessian(max_squared)(a), 2.0 * np.outer(share, share),
                               rtol=1e-15)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    expected = jax.hessian(lambda a: jax.numpy.max(a) ** 2)(a)
    np.testing.assert_allclose(pullback.hessian(max_squared)(a), np.asarray(expected), rtol=1e-15)


# ---------------------------------------------------------------------------
# Their other float arguments: a Hessian in a alone still differentiates every float
# argument of the tangent program (b, weights, mean= held constant by the caller).

def test_the_helpers_other_float_arguments():
    c3, w, b = values(12, (3,)), values(13, (4,), 0.5, 1.5), values(14, (4,), 0.5, 1.5)
    m = values(15, (3, 1))
    var_mean = rule_vjp(var_vjp, "mean")
    check_vjp(lambda c, a, m: var_vjp(c, a, 1, mean=m),
              lambda g, ans, c, a, m: var_mean(g, ans, c, a, axis=1, mean=m), [c3, A, m], 2)
    sd = np.sqrt(np.mean((A - m) ** 2, axis=1))
    std_mean = rule_vjp(std_vjp, "mean")
    check_vjp(lambda c, a, m: std_vjp(c, sd, a, 1, mean=m),
              lambda g, ans, c, a, m: std_mean(g, ans, c, sd, a, axis=1, mean=m), [c3, A, m], 2)
    avg_w = rule_vjp(average_vjp_a, "weights")
    check_vjp(lambda c, a, w: average_vjp_a(c, a, 1, w),
              lambda g, ans, c, a, w: avg_w(g, ans, c, a, axis=1, weights=w), [c3, A, w], 2)
    r = special.logsumexp(A, axis=1, b=b)
    lse_b = rule_vjp(logsumexp_vjp, "b")
    check_vjp(lambda c, a, b: logsumexp_vjp(c, r, a, 1, b),
              lambda g, ans, c, a, b: lse_b(g, ans, c, r, a, axis=1, b=b), [c3, A, b], 2)


def weighted_lse(a, b):
    return special.logsumexp(a * a, b=b) ** 2 + np.average(a, weights=b) ** 2 \
        + np.var(a, mean=0.4) ** 2 + np.std(a, mean=0.2)


def test_hessian_with_constant_float_arguments_against_differences():
    a, b = values(16, (4,), 0.5, 1.5), values(17, (4,), 0.5, 1.5)
    H = pullback.hessian(weighted_lse, argnums=0)(a, b)
    grad, eps = pullback.grad(weighted_lse, argnums=0), 1e-5
    expected = np.array([(grad(a + eps * e, b) - grad(a - eps * e, b)) / (2 * eps)
                         for e in np.eye(4)])
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-7 * np.max(np.abs(H)))
