"""An adjoint buffer reset in every iteration of a loop is zeroed in its own memory
(reverse/cleanup.py: zeros_in_place) only when no other name can hold that memory;
the gradients stay the reference derivative's."""
from __future__ import annotations

import ast

import numpy as np
import pytest
from reference import assert_matches_reference

from pullback.reverse import cleanup
from pullback.reverse.ops import ZeroAdjoint


def _loop(*lines):
    """A reverse loop whose statements are ``lines``, the reset a ZeroAdjoint."""
    body = []
    for line in lines:
        st = ast.parse(line).body[0]
        if line.startswith("dv = np.zeros_like"):
            st = ZeroAdjoint(st.targets, st.value)
        body.append(st)
    return [ast.For(ast.Name("t", ast.Store()), ast.parse("range(3)").body[0].value, body, [])]


def _refilled(block, scalars=("d_t",)) -> bool:
    cleanup.zeros_in_place([block], set(scalars), lambda: "refill_zeros")
    return "refill_zeros(dv, v)" in ast.unparse(ast.fix_missing_locations(ast.Module(block, [])))


@pytest.mark.parametrize("lines", [
    ("dv[i] += g", "du += f(dv, u)", "d_t = dv[i]", "dv[i] = 0.0", "add_into(dv[1:], g)",
     "dv = np.zeros_like(v)"),
    ("dv += g", "dv = np.zeros_like(v)"),
], ids=["updates, reads of elements, sums into others", "a whole-array update"])
def test_a_buffer_held_by_no_other_name_is_zeroed_in_place(lines):
    assert _refilled(_loop(*lines))


@pytest.mark.parametrize("line", [
    "d_w = dv",                  # a second name for the memory
    "d_w = f(dv)",               # a helper may return dv itself, or a view of it
    "d_w = dv[1:]",              # a view, held by d_w (not one of the scalars)
    "keep.append(dv)",           # a call made for its effect may keep it
    "add_into(du, dv)",          # ... unless dv is what it adds into
    "du = du + dv",              # du may be dv (when du is a reset absorbed)
], ids=["copy", "helper", "view", "kept", "added", "rebound sum"])
def test_a_buffer_another_name_may_hold_keeps_a_new_array_per_iteration(line):
    assert not _refilled(_loop("dv[i] += g", line, "dv = np.zeros_like(v)"))


def heat_steps(u0, k, c):
    u = u0.copy()
    for s in range(6):
        un = u.copy()
        for i in range(1, len(u) - 1):
            u[i] = un[i] + c * (k[i] * (un[i + 1] - un[i]) - k[i - 1] * (un[i] - un[i - 1]))
    return np.sum(u * u)


def rows_reset(x, w):
    # A row of a 2-D local read in every step: its adjoint is reset per iteration.
    s = 0.0
    for t in range(4):
        r = np.tanh(x * w + t)
        s = s + np.sum(r * r) * w
    return s


@pytest.mark.parametrize("f, args, argnums", [
    (heat_steps, (np.linspace(0.1, 1.0, 9), np.linspace(0.5, 1.5, 8), 0.2), (0, 1)),
    (rows_reset, (np.linspace(-1.0, 1.0, 5), 0.7), (0, 1)),
], ids=["heat", "rows"])
def test_gradients_match_the_reference(f, args, argnums, jit_mode):
    assert_matches_reference(f, args, argnums, jit=jit_mode != "python")
