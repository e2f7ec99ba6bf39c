"""Two peepholes on the reverse sweep of a slice update (reverse/cleanup):
``g = dv[s].copy(); dv[s] = 0.0; ...; dv[s] += g`` keeps the slice instead of
zeroing and re-adding it (and ``g`` is the slice itself when it is read only
before the first addition, by arithmetic), and under Numba ``add_into(v, a * b)``
adds the products without making their array.  Each is checked on source
(what may and may not be rewritten), and the derivatives against finite
differences on both backends."""
from __future__ import annotations

import ast

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate
from pullback.core.runtime import add_into, add_product_into
from pullback.reverse.cleanup import add_in_place, keep_slice_adjoints, products_into


def _kept(src: str, updates=("add_into",)) -> str:
    block = ast.parse(src).body
    keep_slice_adjoints([block], updates)
    return ast.unparse(ast.Module(block, []))


def test_the_zeroing_and_re_adding_go_and_the_copy_becomes_a_view():
    src = ("g = dv[1:-1].copy()\ndv[1:-1] = 0.0\ndc = dc + reduce(g, t, c)\n"
           "h = g * c\nadd_into(dv[:-2], h)\ndv[2:] += h\nadd_into(dv[1:-1], g)")
    assert _kept(src).splitlines() == [
        "g = dv[1:-1]", "dc = dc + reduce(g, t, c)", "h = g * c", "add_into(dv[:-2], h)",
        "dv[2:] += h"]


def test_the_copy_stays_when_the_copy_is_read_after_an_addition():
    src = ("g = dv[1:-1].copy()\ndv[1:-1] = 0.0\nadd_into(dv[:-2], g * c)\n"
           "dv[1:-1] += g")
    assert _kept(src).splitlines() == ["g = dv[1:-1].copy()", "add_into(dv[:-2], g * c)"]


def test_the_copy_stays_when_a_call_may_return_the_view_itself():
    src = "g = dv[1:-1].copy()\ndv[1:-1] = 0.0\nh = unbroadcast(g, x)\ndv[1:-1] += g\nw = h"
    assert _kept(src).splitlines()[0] == "g = dv[1:-1].copy()"


@pytest.mark.parametrize("between", [
    "x = dv[0] * 2.0",              # reads the buffer: it would see the slice not zeroed
    "dv[0] = 1.0",                  # writes it other than by adding
    "dv = other",                   # rebinds it
    "helper(dv[1:], g)",            # a call that is not a known addition
    "for i in range(3):\n    pass",  # a nested block
])
def test_nothing_changes_when_the_buffer_is_used_otherwise_in_between(between):
    src = f"g = dv[1:-1].copy()\ndv[1:-1] = 0.0\n{between}\ndv[1:-1] += g"
    assert _kept(src) == ast.unparse(ast.parse(src))


def test_nothing_changes_when_the_copy_is_read_after_the_re_adding():
    src = "g = dv[1:-1].copy()\ndv[1:-1] = 0.0\ndv[1:-1] += g\ny = g * 2.0"
    assert _kept(src) == ast.unparse(ast.parse(src))


def test_a_product_added_into_a_view_becomes_one_call():
    block = ast.parse("add_into(du[1:-1], d_t7 * -2.0)\nadd_into(du[2:], d_t7)").body
    products_into([block], "add_into", lambda: "add_product_into")
    assert ast.unparse(ast.Module(block, [])).splitlines() == [
        "add_product_into(du[1:-1], d_t7, -2.0)", "add_into(du[2:], d_t7)"]


def _in_place(src, floats=(("u", 1), ("A", 2)), helper=None):
    block = ast.parse(src).body
    add_in_place([block], dict(floats), {"i", "k"}, helper and (lambda: helper))
    return ast.unparse(ast.Module(block, []))


def test_a_slice_plus_something_written_back_becomes_an_addition_in_place():
    src = "u[1:-1] = u[1:-1] + c * t\nfor k in range(3):\n    u[k] = u[k] + 1.0"
    assert _in_place(src).splitlines() == ["u[1:-1] += c * t", "for k in range(3):",
                                           "    u[k] += 1.0"]
    # Numba: a slice or a row through add_into, an element by augmented assignment.
    assert _in_place(src, helper="add_into").splitlines() == [
        "add_into(u[1:-1], c * t)", "for k in range(3):", "    u[k] += 1.0"]
    assert _in_place("A[i] = A[i] + r\nA[i, k] = A[i, k] + 1.0", helper="add_into") \
        .splitlines() == ["add_into(A[i], r)", "A[i, k] += 1.0"]


def test_not_for_an_integer_array_nor_another_slice():
    # ``=`` truncates a float sum into an integer array where ``+=`` refuses it.
    assert _in_place("n[1:] = n[1:] + 0.5", floats=()) == "n[1:] = n[1:] + 0.5"
    assert _in_place("u[1:] = u[:-1] + 0.5") == "u[1:] = u[:-1] + 0.5"
    assert _in_place("u[1:] = 0.5 + u[1:]") == "u[1:] = 0.5 + u[1:]"
    # An index array (a copy under Numba's add_into) or a float index: unchanged.
    assert _in_place("u[idx] = u[idx] + 1.0") == "u[idx] = u[idx] + 1.0"


def _run_twin(out, a, b):
    import numba

    from pullback.backends import numba_twins
    numba_twins.install()

    @numba.njit
    def f(out, a, b):
        add_product_into(out, a, b)
    f(out, a, b)


@pytest.mark.parametrize("a, b", [
    (np.arange(5.0), 1.5), (-0.5, np.arange(5.0)), (np.arange(5.0), np.linspace(1, 2, 5)),
    (np.arange(5.0), np.ones(1)),                    # broadcast: the whole-array form
])
def test_the_compiled_product_into_adds_what_numpy_adds(a, b):
    out = np.linspace(-1, 1, 5)
    expected = out + np.asarray(a) * np.asarray(b)
    _run_twin(out, a, b)
    assert_close(out, expected, rtol=1e-15, atol=0)


def test_the_compiled_product_into_reads_an_overlapping_operand_before_writing():
    buf = np.arange(6.0)
    expected = buf.copy()
    expected[1:] += expected[:-1] * 2.0
    _run_twin(buf[1:], buf[:-1], 2.0)
    assert_close(buf, expected, rtol=1e-15, atol=0)


def test_the_python_product_into_is_numpy():
    out = np.ones(3)
    add_product_into(out, np.arange(3.0), 2.0)
    add_into(out, np.ones(3))
    assert_close(out, np.array([2.0, 4.0, 6.0]), rtol=1e-15, atol=0)


def weighted_smoothing(u0, w, c):
    u = u0.copy()
    for _ in range(4):
        u[1:-1] = u[1:-1] * w + c * (u[2:] - u[:-2])
        u[2:] = u[2:] + 0.5 * u[:-2]          # reads what it overlaps: added in place
        u[:-1] = u[:-1] + c * u[:-1] * u[1:]
    return np.sum(np.sin(u))


@pytest.mark.parametrize("jit", [False, True])
def test_slice_updates_read_by_products_match_finite_differences(jit):
    # The slice's cotangent is read again after an addition (by ``* w``), and a
    # second update overlaps the first: the copy must stay.
    rng = np.random.default_rng(4)
    args = (rng.normal(size=9), rng.uniform(0.5, 1.0, size=7), 0.3)
    g = pullback.grad(weighted_smoothing, argnums=(0, 1, 2), jit=jit)
    for _ in range(2):
        got = g(*args)
        for k in range(3):
            assert_fd_close(np.asarray(got[k]), fd_estimate(weighted_smoothing, args, k),
                         rtol=1e-6, atol=1e-8)
