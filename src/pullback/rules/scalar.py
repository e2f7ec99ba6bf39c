"""Derivatives of Python's scalar operators, ``math`` functions and builtins.

These templates inline into the generated code, so under Numba they compile
to the same machine code as a hand-written adjoint.  The few helpers handle
the points where the textbook formula would divide by zero.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from . import results
from .forms import numba_plain, numba_twin
from .registry import defnondiff, defprimitive, defrule
from .tangents import deftangent
from .twins import is_array


def pow_dx(g, x, y):
    """d(x**y)/dx * g, exact at y == 0, 1, 2 and at x == 0.  A zero ``g`` gives
    zero: the derivative rule of pow_dx passes ``g * y`` and ``y - 1`` on, so a
    higher derivative of an integer power reaches ``pow_dx(0, x, -1)``, a term
    that is identically zero (a derivative of a constant), not 0 * inf at x == 0
    nor an overflow of ``x ** -2`` near it."""
    if y == 0 or g == 0:
        return 0.0 * g
    if y == 1:
        return g * 1.0
    if y == 2:
        return 2.0 * g * x
    if x == 0:
        return 0.0 * g if y > 1 else g * y * math.inf
    return g * y * x ** (y - 1)


def pow_dy(g, ans, x):
    """d(x**y)/dy * g = g * x**y * log(x); 0 where x == 0 (and y > 0)."""
    if x > 0:
        return g * ans * math.log(x)
    if x == 0:
        return 0.0 * g
    return math.nan * g


def sqrt_dx(g, ans):
    """d(sqrt x)/dx * g, +inf (times g's sign) at x == 0 instead of ZeroDivisionError;
    0 for a zero ``g`` (a strong zero: ``sqrt(max(x, 0.0))`` at x < 0 sends no
    cotangent through the branch max did not take, not 0 * inf)."""
    if g == 0:
        return 0.0
    if ans == 0:
        return g * math.inf
    return 0.5 * g / ans


def div_dy(g, ans, y):
    """d(x / y)/dy * g; 0 for a zero ``g`` (a strong zero, as sqrt_dx's)."""
    if g == 0:
        return 0.0
    return -g * ans / y


def digamma(x):
    """The digamma function psi = d log(gamma) / dx, for a float (NaN at the poles).

    Reflection below 1/2, recurrence up to 10, then the asymptotic series: about
    1e-14 relative error.  Plain Python arithmetic, so it compiles under Numba.
    """
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    result = 0.0
    if x < 0.5:     # psi(x) = psi(1 - x) - pi / tan(pi x)
        result = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return result + math.log(x) - 0.5 / x - series


def sign(x):
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


# Operators (the AST's BinOp/UnaryOp map to these).
# Plain scalar code: Numba compiles these as they are.
numba_plain(pow_dx, pow_dy, sqrt_dx, div_dy, digamma, sign)

defrule(operator.add, "x, y", x="g", y="g")
defrule(operator.sub, "x, y", x="g", y="-g")
defrule(operator.mul, "x, y", x="g * y", y="g * x")
defrule(operator.truediv, "x, y", x="g / y", y="div_dy(g, ans, y)")
defrule(operator.pow, "x, y", x="pow_dx(g, x, y)", y="pow_dy(g, ans, x)")
defrule(operator.neg, "x", x="-g")
defrule(operator.pos, "x", x="g")
defrule(operator.mod, "x, y", x="g", y="-g * math.floor(x / y)")

# math
defrule(math.sin, "x", x="g * math.cos(x)")
defrule(math.cos, "x", x="-g * math.sin(x)")
defrule(math.tan, "x", x="g * (1.0 + ans * ans)")
defrule(math.exp, "x", x="g * ans")
defrule(math.expm1, "x", x="g * (ans + 1.0)")
defrule(math.log, "x", x="g / x")
defrule(math.log1p, "x", x="g / (1.0 + x)")
defrule(math.log2, "x", x="g / (x * math.log(2.0))")
defrule(math.log10, "x", x="g / (x * math.log(10.0))")
defrule(math.sqrt, "x", x="sqrt_dx(g, ans)")
defrule(math.tanh, "x", x="g * (1.0 - ans * ans)")
defrule(math.sinh, "x", x="g * math.cosh(x)")
defrule(math.cosh, "x", x="g * math.sinh(x)")
defrule(math.atan, "x", x="g / (1.0 + x * x)")
defrule(math.asin, "x", x="g / math.sqrt(1.0 - x * x)")
defrule(math.acos, "x", x="-g / math.sqrt(1.0 - x * x)")
defrule(math.asinh, "x", x="g / math.sqrt(x * x + 1.0)")
defrule(math.acosh, "x", x="g / math.sqrt(x * x - 1.0)")
defrule(math.atanh, "x", x="g / (1.0 - x * x)")
defrule(math.atan2, "y, x", y="g * x / (x * x + y * y)", x="-g * y / (x * x + y * y)")
# hypot at (0, 0): 0; at an infinite input the limit, as np.hypot (rules/elementwise.py).
defrule(math.hypot, "x, y",
        x="g * (math.copysign(1.0 - 0.2928932188134524 * math.isinf(y), x) if math.isinf(x) "
          "else (x / ans if ans != 0.0 else 0.0))",
        y="g * (math.copysign(1.0 - 0.2928932188134524 * math.isinf(x), y) if math.isinf(y) "
          "else (y / ans if ans != 0.0 else 0.0))")
defrule(math.erf, "x", x="g * 1.1283791670955126 * math.exp(-x * x)")
defrule(math.erfc, "x", x="-g * 1.1283791670955126 * math.exp(-x * x)")
defrule(math.gamma, "x", x="g * ans * digamma(x)")
defrule(math.lgamma, "x", x="g * digamma(x)")
defrule(math.pow, "x, y", x="pow_dx(g, x, y)", y="pow_dy(g, ans, x)")
defrule(math.fabs, "x", x="g * sign(x)")
defrule(math.copysign, "x, y", x="g * sign(x) * sign(ans)")

# The helpers above are what forward mode's tangents call (the templates with ``t``
# for ``g``): differentiable again, so that reverse mode over forward gives Hessians.
defnondiff(sign)
# (Their parameters are named for the rule: ``ans`` in a template is the result.)
# A zero u (the cotangent they scaled) gives zero, as the helpers themselves: Python
# floats raise ZeroDivisionError where y or r is 0.
defrule(div_dy, "u, r, y", u="-g * r / y", r="(0.0 if u == 0 else -g * u / y)",
        y="(0.0 if u == 0 else g * u * r / (y * y))")
defrule(sqrt_dx, "u, r", u="sqrt_dx(g, r)", r="(0.0 if u == 0 else -0.5 * g * u / (r * r))")
defrule(pow_dx, "u, x, y", u="pow_dx(g, x, y)", x="pow_dx(g * u * y, x, y - 1)",
        y="g * u * (x ** (y - 1.0) + y * pow_dy(1.0, x ** (y - 1.0), x))")
defrule(pow_dy, "u, r, x", u="pow_dy(g, r, x)", r="pow_dy(g * u, 1.0, x)", x="g * u * r / x")
for _helper in (div_dy, sqrt_dx, pow_dx, pow_dy):
    deftangent(_helper, elementwise=True)       # scalar functions: entry by entry

# builtins
defrule(abs, "x", result=results.joined, x="g * sign(x)")


@numba_twin(abs, arrays=True)
def _abs_of_an_array(x):
    """Numba has no ``abs`` of an array; NumPy's ``abs(a)`` is ``np.abs(a)``."""
    return (lambda x: np.abs(x)) if is_array(x) else None


defrule(pow, "base, exp, mod=None", base="pow_dx(g, base, exp)", exp="pow_dy(g, ans, base)")
defrule(float, "x", result=results.scalar, x="g")
# max and min select: the argument not taken gets 0, never 0 * g (NaN for an
# infinite g: sqrt(max(x, 0.0)) at x < 0).  Ties split evenly.
defrule(max, "x, y", result=results.builtin_reduction,
        x="(g if x > y else (0.5 * g if x == y else 0.0))",
        y="(g if y > x else (0.5 * g if x == y else 0.0))")
defrule(min, "x, y", result=results.builtin_reduction,
        x="(g if x < y else (0.5 * g if x == y else 0.0))",
        y="(g if y < x else (0.5 * g if x == y else 0.0))")
defprimitive(sum, result=results.builtin_reduction)     # its derivative: np.sum's, below

OPERATORS = {
    "Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
    "Pow": operator.pow, "USub": operator.neg, "UAdd": operator.pos, "Mod": operator.mod,
    "MatMult": operator.matmul, "FloorDiv": operator.floordiv,
}

# Operators (and abs) applied to arrays use the NumPy ufunc's rule (it knows
# broadcasting).
ARRAY_OPERATORS = {
    operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
    operator.truediv: np.true_divide, operator.pow: np.power, operator.neg: np.negative,
    operator.matmul: np.matmul, operator.mod: np.mod, operator.floordiv: np.floor_divide,
    abs: np.absolute,
}

# A builtin given one 1-D array reduces it as the NumPy function does: max(a) is
# np.max(a), sum(a) is np.sum(a).
ONE_ARRAY_BUILTINS = {max: np.max, min: np.min, sum: np.sum}


def numpy_form(fn, arg_kinds: list, keywords: int, array: bool):
    """The function whose rule differentiates a call of ``fn`` with positional
    arguments of ``arg_kinds`` (and ``keywords`` keyword arguments): an operator or
    ``abs`` of arrays (``array``: an argument or the result is one) its ufunc, a
    builtin reduction of one 1-D array the NumPy reduction, else ``fn``."""
    if fn in ARRAY_OPERATORS and array:
        return ARRAY_OPERATORS[fn]
    if fn in ONE_ARRAY_BUILTINS and len(arg_kinds) == 1 and not keywords \
            and arg_kinds[0].ndim == 1:
        return ONE_ARRAY_BUILTINS[fn]
    return fn
