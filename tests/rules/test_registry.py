"""The registry holds everything about a primitive, in one record per primitive."""
from __future__ import annotations

import ast
import math

import numpy as np
import pytest

import pullback
from pullback.core.kinds import BOOL, FLOAT, INT, Kind
from pullback.rules import registry, results, templates


@pytest.mark.parametrize("fn", [len, math.floor, np.sign, np.argmax, np.isnan, np.zeros,
                                np.arange, np.any])
def test_non_differentiable_primitives_say_so(fn):
    rule = registry.lookup(fn)
    assert rule is not None and not rule.differentiable and not rule.has_derivative


@pytest.mark.parametrize("fn", [np.reshape, np.ravel, np.transpose, np.squeeze, np.swapaxes,
                                np.expand_dims, np.broadcast_to, np.asarray, np.moveaxis,
                                np.diagonal])
def test_views_are_marked(fn):
    assert registry.lookup(fn).view


@pytest.mark.parametrize("fn", [np.sum, np.copy, np.exp, np.linalg.inv, np.array])
def test_copies_are_not_marked_as_views(fn):
    assert not registry.lookup(fn).view


@pytest.mark.parametrize("name,fn", [("sum", np.sum), ("prod", np.prod), ("copy", np.copy),
                                     ("argmax", np.argmax), ("swapaxes", np.swapaxes)])
def test_methods_map_to_their_primitive(name, fn):
    assert registry.method(name) is fn


def _call(src):
    return ast.parse(src, mode="eval").body


@pytest.mark.parametrize("fn,args,src,expected", [
    (np.sum, [Kind(2, "f")], "f(a)", FLOAT),
    (np.sum, [Kind(2, "f"), INT], "f(a, 0)", Kind(-1, "f")),
    (np.linalg.det, [Kind(2, "f")], "f(a)", FLOAT),
    (np.zeros, [INT], "f(n)", Kind(1, "f")),
    (np.zeros, [Kind(2, "t")], "f((n, m))", Kind(2, "f")),
    (np.exp, [Kind(1, "f")], "f(a)", Kind(1, "f")),
    (np.exp, [Kind(1, "i")], "f(a)", Kind(1, "f")),
    (len, [Kind(1, "f")], "f(a)", INT),
    (np.isnan, [FLOAT], "f(a)", BOOL),
    (np.ravel, [Kind(3, "f")], "f(a)", Kind(1, "f")),
])
def test_result_kinds(fn, args, src, expected):
    rule = registry.lookup(fn)
    assert rule.result(fn, args, {}, _call(src)) == expected


def test_a_primitive_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        registry.defrule(np.sin, "x, /", x="g * np.cos(x)")


def test_a_user_rule_may_replace_a_builtin_one():
    def cube(x):
        return x * x * x

    @pullback.rule(cube)
    def cube_vjp(g, ans, x):
        return g * 3.0 * x * x

    @pullback.rule(cube)
    def cube_vjp_again(g, ans, x):
        return g * 3.0 * x ** 2

    assert registry.lookup(cube).helpers["__vjp__"] is cube_vjp_again
    registry.unregister(cube)


def test_a_primitive_known_only_for_its_kind_asks_for_a_rule():
    def f(x):
        return np.sum((x * 2.0).view(np.float64))
    assert registry.lookup(np.ndarray.view) is not None
    with pytest.raises(pullback.MissingRuleError, match="view"):
        pullback.grad(f)(np.ones(3))


def test_results_by_name_cover_the_documented_names():
    assert set(results.BY_NAME) == {"like", "scalar", "array", "int", "bool", "any"}


def weighted_total(*xs, scale=1.0):
    out = 0.0
    for k, x in enumerate(xs):
        out = out + scale * (k + 1.0) * x
    return out


def test_a_variadic_parameter_takes_any_number_of_arguments():
    """``*name`` in a rule's signature: its template, in which ``k`` is the position
    within ``*name``, is instantiated once per argument the call passes."""
    registry.defrule(weighted_total, "*xs, scale=1.0", xs="g * scale * (k + 1.0)")
    try:
        rule = registry.lookup(weighted_total)
        bound = rule.bind([ast.Name("a"), ast.Name("b")], {"scale": ast.Name("s")})
        assert [bound["xs[0]"].id, bound["xs[1]"].id, bound["scale"].id] == ["a", "b", "s"]
        assert ast.unparse(bound["xs"]) == "(a, b)"
        assert ast.unparse(rule.adjoints["xs[3]"]) == "g * scale * (3 + 1.0)"

        def f(a, b, c, d, e, f):
            return weighted_total(a, b, c, d, e, f, scale=2.0) * 1.5
        grads = pullback.grad(f, argnums=tuple(range(6)))(*[0.5] * 6)
        assert grads == tuple(3.0 * (k + 1.0) for k in range(6))
        with pytest.raises(pullback.MissingRuleError, match="at most 128 positional"):
            rule.bind([ast.Name("a")] * (templates.MAX_VARIADIC + 1), {})
        with pytest.raises(pullback.MissingRuleError, match="unexpected keyword argument 'xs'"):
            rule.bind([], {"xs": ast.Name("a")})
    finally:
        registry.unregister(weighted_total)


@pytest.mark.parametrize("signature,template", [("g, x", "g * x"), ("x, ans", "g * ans")])
def test_a_parameter_named_like_a_template_input_is_refused(signature, template):
    # In a template ``g`` is the cotangent and ``ans`` the result: a parameter of that
    # name would be read as the one or the other.
    with pytest.raises(ValueError, match="rename the parameter"):
        templates.read_templates(signature, {"x": template}, {}, "f")
