"""Regression tests for API-level bugs: printing of negative constants, closures sharing
a cached derivative, vjp mutating its arguments, complex inputs, check_grad's truth
value, bound methods and keyword-only parameters.

Every expected gradient is analytic or from central finite differences (helpers.fd_grad),
never pullback's own output."""
import ast
import math

import numpy as np
import pytest

import pullback
from helpers import assert_close, fd_grad


# ---------------------------------------------------------------- negative constants

def neg_base_square(x):
    return x * (-1.5) ** 2


def neg_base_cube(x):
    return (-2.0) ** 3 * x + x * x


def neg_int_base(x):
    return x ** 2 * (-3) ** 2


def neg_base_under_sqrt(x):
    return math.sqrt((-2.0) ** 2 * x)


def alternating_series(x):
    s = 0.0
    for k in range(4):
        s = s + (-1.0) ** k * x ** k
    return s


@pytest.mark.parametrize("f, value, slope", [
    (neg_base_square, lambda x: 2.25 * x, lambda x: 2.25),
    (neg_base_cube, lambda x: -8.0 * x + x * x, lambda x: -8.0 + 2 * x),
    (neg_int_base, lambda x: 9.0 * x * x, lambda x: 18.0 * x),
    (neg_base_under_sqrt, lambda x: 2.0 * math.sqrt(x), lambda x: 1.0 / math.sqrt(x)),
    (alternating_series, lambda x: 1 - x + x * x - x ** 3, lambda x: -1 + 2 * x - 3 * x * x),
], ids=["square", "cube", "int", "sqrt", "alternating"])
def test_negative_constant_as_base_of_power(f, value, slope, jit):
    v, g = pullback.value_and_grad(f, jit=jit)(0.3)
    assert v == pytest.approx(value(0.3), rel=1e-12)
    assert g == pytest.approx(slope(0.3), rel=1e-12)


@pytest.mark.parametrize("v", [-1.5, -0.0, -3, float("-inf"), complex(0.0, -2.0), -2j,
                               complex(-1.0, -2.0), 2.5, 0.0])
def test_printed_source_keeps_the_sign_of_every_constant(v):
    """Constants in any position (base of **, receiver of an attribute, operand of a
    unary operator) print so that they read back as the same value."""
    from pullback.emit import _unparse
    forms = [
        (ast.BinOp(ast.Constant(v), ast.Pow(), ast.Constant(2)), lambda: v ** 2),
        (ast.Attribute(ast.Constant(v), "real", ast.Load()), lambda: v.real),
        (ast.UnaryOp(ast.USub(), ast.Constant(v)), lambda: -v),
        (ast.BinOp(ast.Constant(2), ast.Pow(), ast.Constant(v)), lambda: 2 ** v),
    ]
    for node, expected in forms:
        text = _unparse(node)
        got = eval(text)
        want = expected()
        assert got == want or (got != got and want != want), (text, got, want)
        if not isinstance(v, complex):
            assert math.copysign(1.0, got) == math.copysign(1.0, want), text   # -0.0 stays -0.0
