"""Forward mode's rules (rules/tangents.py): which primitives have one, which forms
are derived, and the forms' own checks.  Every tangent is also checked where its
derivative rule is (``check_rule`` in tests/rules/checks.py: ``<g, J v>`` against
``<J^T g, v>`` and differences)."""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import pullback  # noqa: F401 - registers the rules
from pullback.rules import registry, tangents

from .checks import check_rule, values

#: Differentiable primitives forward mode refuses for now (by name, never a zero
#: tangent).  Giving one a tangent rule means deleting it here; a new primitive
#: with a derivative and no tangent must be listed here, deliberately.
WITHOUT_TANGENT = {
    "_operator.getitem", "numpy.cumprod", "numpy.gradient", "numpy.interp",
    "numpy.linalg.cholesky", "numpy.linalg.eigh", "numpy.linalg.pinv", "numpy.linalg.slogdet",
    "numpy.linalg.svd", "numpy.linspace", "numpy.partition", "numpy.polyval", "numpy.sort",
    "scipy.linalg._basic.solve_triangular",
    "scipy.linalg._decomp_cholesky.cho_solve", "scipy.special._logsumexp.log_softmax",
    "scipy.special._logsumexp.softmax",
}


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
