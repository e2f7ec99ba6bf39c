"""Python's builtins and NumPy's rounding functions as scientists call them on arrays.

``abs(a)`` of an array is ``np.abs(a)``; ``max(a)``, ``min(a)`` and ``sum(a)`` of
one 1-D array reduce it as ``np.max``/``np.min``/``np.sum`` do; ``x // c`` and
``np.trunc``/``np.rint``/``np.fix``/``np.around`` are piecewise constant (zero
derivative); ``math.fsum([a, b])`` of a list written out adds its items.  Before,
``abs`` of an array failed inside the generated code (a raw ValueError, or a raw
Numba typing error), ``max(a)`` raised "missing required argument 'y'", the rest
had no rule, and under Numba ``np.round``'s result had no known type.

Gradients against central finite differences on both backends, and ``jvp``
against the gradient.
"""
import math

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate


def abs_of_an_array(x):
    return np.sum(abs(x) * x)


def extremes_of_an_array(x):
    return max(x) + 2.0 * min(x) + sum(x ** 2)


def builtins_in_a_loop(x):
    s = 0.0
    for i in range(3):
        s += max(x * i) + sum(abs(x - i))
    return s


def floor_division(x):
    return np.sum((x // 0.5) * x) + x[0] // 0.3


def rounding(x):
    return np.sum(np.trunc(x) * x + np.rint(x) + np.fix(x) * x + np.around(x) * x)


def minimum_image(x):
    # A periodic box of side 2: the separation folded into [-1, 1].
    d = x - 2.0 * np.round(x / 2.0)
    if d @ d < 4.0:
        return d @ d
    return 0.0


def minimum_image_in_a_loop(x):
    s = 0.0
    for i in range(len(x)):
        r = x[i] - np.round(x[i] / 2.0) * 2.0
        r2 = r * r
        if r2 < 4.0:
            s += r2
    return s


def exact_sum_of_a_list(x):
    return math.fsum([x[0] * x[1], 2.0 * x[2], x[1]])


CASES = [abs_of_an_array, extremes_of_an_array, builtins_in_a_loop, floor_division, rounding,
         minimum_image, minimum_image_in_a_loop, exact_sum_of_a_list]
X = np.array([0.7, 1.6, -2.2])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_builtins_and_rounding_on_arrays(f, jit, recwarn):
    assert_fd_close(pullback.grad(f, jit=jit)(X), fd_estimate(f, (X,)))


@pytest.mark.parametrize("f", [abs_of_an_array, extremes_of_an_array, builtins_in_a_loop],
                         ids=lambda f: f.__name__)
def test_forward_mode_agrees(f):
    v = np.array([0.3, -1.0, 0.5])
    _, tangent = pullback.jvp(f, (X,), (v,))
    assert_close(tangent, pullback.grad(f)(X) @ v, rtol=1e-12, atol=1e-12)
