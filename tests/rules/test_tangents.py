"""Forward mode's rules (rules/tangents.py): which primitives have one, which forms
are derived, and the forms' own checks.  Every tangent is also checked where its
derivative rule is (``check_rule`` in tests/rules/checks.py: ``<g, J v>`` against
``<J^T g, v>`` and differences)."""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from scipy import linalg, special

import pullback  # noqa: F401 - registers the rules
from pullback.rules import registry, tangents

from .checks import check_rule, rule_jvp, rule_vjp, values

#: Differentiable primitives forward mode refuses for now (by name, never a zero
#: tangent).  Giving one a tangent rule means deleting it here; a new primitive
#: with a derivative and no tangent must be listed here, deliberately.
WITHOUT_TANGENT: set = set()


def _differentiable():
    return [r for r in registry._RULES.values()
            if r.has_derivative and r.differentiable and r.call_signature is None]


def test_the_primitives_without_a_tangent_are_the_listed_ones():
    missing = {r.name for r in _differentiable() if tangents.tangent_of(r) is None}
    assert missing - WITHOUT_TANGENT == set(), "give these a tangent rule (or list them)"
    assert WITHOUT_TANGENT & {r.name for r in _differentiable()} - missing == set(), \
        "these have a tangent rule now: delete them from WITHOUT_TANGENT"


@pytest.mark.parametrize("fn", [math.sin, operator.mul, np.exp, np.maximum, abs, float])
def test_elementwise_primitives_derive_their_tangent(fn):
    form = tangents.tangent_of(registry.lookup(fn))
    assert form is not None and form.uses_g and form.templates


@pytest.mark.parametrize("fn", [np.matmul, np.cumsum, np.linalg.norm])
def test_array_primitives_are_not_taken_for_elementwise(fn):
    assert not tangents.elementwise(fn)


def test_reductions_derive_a_weighted_sum():
    assert tangents.tangent_of(registry.lookup(np.max)).reduction == "a"
    assert tangents.tangent_of(registry.lookup(np.var)).reduction == "a"
    # prod's is registered (prod_second.prod_jvp): reverse mode differentiates it again
    prod = tangents.tangent_of(registry.lookup(np.prod))
    assert not prod.reduction and set(prod.templates) == {"a"} and prod.shaped


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_prod_tangent_with_zeros(axis, zeros):
    A = values(3, (3, 4), 0.5, 1.5)
    A[:zeros, 1] = 0.0
    check_rule(np.prod, (A,), kwargs={"axis": axis})


@pytest.mark.parametrize("fn", [np.max, np.var, np.linalg.norm])
def test_reduction_tangents(fn):
    check_rule(fn, (values(5, (3, 4)),), kwargs={"axis": 1})


def test_deftangent_refuses_unknown_parameters_and_unregistered_functions():
    with pytest.raises(ValueError, match="no parameter"):
        tangents.deftangent(np.sum, linear="b")
    with pytest.raises(ValueError, match="derivative before its tangent"):
        tangents.deftangent(lambda x: x, linear="x")


# ---------------------------------------------------------------------------
# The tangent rules of issue #23's leftovers: each checked by check_rule, its adjoint
# test against the derivative rule and differences of the primal (see checks.py).

def _triangular(seed, n):
    return values(seed, (n, n)) + n * np.eye(n)


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_and_partition_tangents(axis):
    A = values(21, (3, 5))
    check_rule(np.sort, (A,), kwargs={"axis": axis})
    check_rule(np.partition, (A, 1), kwargs={"axis": axis})


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumprod_tangent_with_zeros(axis):
    A = values(22, (3, 4), 0.5, 1.5)
    A[1, 2] = A[0, 0] = 0.0
    check_rule(np.cumprod, (A,), kwargs={"axis": axis})


def test_polyval_linspace_interp_tangents():
    check_rule(np.polyval, (values(23, (4,)), values(24, (3, 2))))
    check_rule(np.polyval, (values(23, (3,)), 0.7))
    check_rule(np.linspace, (0.5, 2.0), kwargs={"num": 5})
    check_rule(np.linspace, (values(25, (2,)), values(26, (2,))), kwargs={"num": 4, "axis": 1})
    xp, fp = np.array([0.0, 0.7, 1.5, 2.0]), values(27, (4,))
    x = np.array([-0.5, 0.3, 1.1, 1.7, 2.6])
    check_rule(np.interp, (x, xp, fp))
    check_rule(np.interp, (x, xp, fp, 0.4, -0.3), only=("x", "fp", "left", "right"))


@pytest.mark.parametrize("axis", [None, 1])
def test_softmax_tangents(axis):
    check_rule(special.softmax, (values(30, (3, 4)),), kwargs={"axis": axis})
    check_rule(special.log_softmax, (values(31, (3, 4)),), kwargs={"axis": axis})


@pytest.mark.parametrize("trans, lower, unit", [(0, True, False), (1, False, False),
                                                (0, False, True), ("T", True, True)])
@pytest.mark.parametrize("k", [0, 2])
def test_solve_triangular_tangent(trans, lower, unit, k):
    b = values(33, (4,) if k == 0 else (4, k))
    check_rule(linalg.solve_triangular, (_triangular(32, 4), b),
               kwargs={"trans": trans, "lower": lower, "unit_diagonal": unit})


@pytest.mark.parametrize("lower", [True, False])
def test_cho_solve_tangent(lower):
    # check_rule cannot vary a pair: the adjoint test by hand, with differences.
    c, b = _triangular(34, 4), values(35, (4, 2))
    v_c, v_b, g = values(36, (4, 4)), values(37, (4, 2)), values(38, (4, 2))
    ans = linalg.cho_solve((c, lower), b)
    jvp = rule_jvp(linalg.cho_solve)
    ct_c = rule_vjp(linalg.cho_solve, "c_and_lower")(g, ans, (c, lower), b)[0]
    ct_b = rule_vjp(linalg.cho_solve, "b")(g, ans, (c, lower), b)
    for k, v, ct in ((0, (v_c, None), ct_c), (1, v_b, ct_b)):
        tangent = jvp([(c, lower), b], {k: v}, {})
        np.testing.assert_allclose(np.sum(g * tangent), np.sum(ct * (v[0] if k == 0 else v)),
                                   rtol=1e-12)
        eps = 1e-6
        moved = [(lambda s: (c + s * v[0], lower)) if k == 0 else (lambda s: (c, lower)),
                 (lambda s: b) if k == 0 else (lambda s: b + s * v)]
        diff = (linalg.cho_solve(moved[0](eps), moved[1](eps))
                - linalg.cho_solve(moved[0](-eps), moved[1](-eps))) / (2 * eps)
        np.testing.assert_allclose(tangent, diff, rtol=1e-6, atol=1e-8)


def test_getitem_tangent():
    check_rule(operator.getitem, (values(39, (3, 4)), (slice(0, 2), 1)))


def test_gradient_tangent():
    check_rule(np.gradient, (values(42, (5,)),))
    check_rule(np.gradient, (values(43, (4, 5)), 0.5), only=("f",))
    check_rule(np.gradient, (values(44, (4, 5)),), kwargs={"axis": 1, "edge_order": 2})
