"""Refusal messages speak of the user's code: its lines and names, never the
transform's own temporaries (``_t1``, ``_i2``, an inlined helper's renamed locals).
A loop over an array that writes into it follows Python, checked against finite
differences on both backends."""
import re

import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate

GENERATED = re.compile(r"(?<![\w.])_\w*\d+\b")


def enumerate_write(x, j):
    vv = x * 1.0
    s = 0.0
    for kk, a in enumerate(vv):
        vv[j] = a * 2.0
        s += a * vv[0]
    return s


def for_write(x, j):
    vv = x * 1.0
    s = 0.0
    for a in vv:
        vv[j] = a * 2.0
        s += a
    return s


def zip_write(x, j):
    vv = x * 1.0
    s = 0.0
    for a, b in zip(vv, x):
        vv[j] = a * b
        s += a
    return s


def double_in_loop(v, j):
    for a in v:
        v[j] = a * 2.0
    return v


def helper_write(x, j):
    w = x * 1.0
    u = double_in_loop(w, j)
    return np.sum(u * x)


def first_half(p):
    return p[: len(p) // 2]


def view_from_helper(x, j):
    p = x * 1.0
    h = first_half(p)
    p[j] = 3.0 * x[0]
    return np.sum(h * x[: len(h)])


@pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
def test_a_refusal_names_no_generated_variable(jit):
    with pytest.raises(pullback.UnsupportedSyntaxError) as err:
        pullback.grad(view_from_helper, jit=jit)(np.array([0.5, -1.0, 2.0, 0.3]), 1)
    msg = str(err.value)
    assert not GENERATED.search(msg), msg


@pytest.mark.parametrize("f", [enumerate_write, for_write, zip_write, helper_write],
                         ids=lambda f: f.__name__)
def test_a_loop_over_an_array_it_writes_into_follows_python(f, jit):
    # Each iteration reads the element as it is then (these were refused before).
    x = np.array([0.5, -1.0, 2.0, 0.3])
    for j in (0, 2):
        assert_fd_close(pullback.grad(f, jit=jit)(x, j), fd_estimate(f, [x, j]))


def enumerate_copy(x, j):
    vv = x * 1.0
    s = 0.0
    for kk, a in enumerate(vv.copy()):
        vv[j] = a * 2.0
        s += a * vv[0] * (kk + 1)
    return s


def test_iterating_over_a_copy_is_differentiated(jit):
    x = np.array([0.5, -1.0, 2.0, 0.3])
    for j in (0, 2):
        assert_fd_close(pullback.grad(enumerate_copy, jit=jit)(x, j),
                        fd_estimate(enumerate_copy, [x, j]))
