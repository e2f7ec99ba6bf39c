"""Shape facts: an elementwise statement is marked ``uniform`` (no operand was
broadcast) and a slice write ``fits`` only when the code proves it, whatever
the arguments' lengths."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pullback.analysis import shapes
from pullback.core import ir
from pullback.core.kinds import FLOAT, INT, Kind

from .programs import lower

VEC, MAT = Kind(1, "f"), Kind(2, "f")


def _facts(f, **arg_kinds):
    fn_ir, kinds, _ = lower(f, **arg_kinds)
    ir.number(fn_ir.body)
    sites, in_loop = {p: 1 for p in fn_ir.params}, set()

    def count(block, looped):
        for s in block:
            if isinstance(s, ir.Assign):
                sites[s.target] = sites.get(s.target, 0) + 1
                if looped:
                    in_loop.add(s.target)
            for sub in s.blocks():
                count(sub, looped or isinstance(s, (ir.For, ir.While)))
    count(fn_ir.body, False)
    return shapes.find(fn_ir.body, fn_ir.params, kinds, sites, in_loop), fn_ir


def _claims_anything(f, **kinds) -> bool:
    facts, _ = _facts(f, **kinds)
    return bool(facts.uniform or facts.fits)


def test_the_heat_step_is_proven_uniform_and_its_write_fits():
    def heat(u0, c, steps):
        u = u0.copy()
        for k in range(steps):
            u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        return np.sum(u * u)
    facts, fn_ir = _facts(heat, u0=VEC, c=FLOAT, steps=INT)
    (write,) = [s for s in ir.walk(fn_ir.body) if isinstance(s, ir.SetItem)]
    assert write.sid in facts.fits
    arithmetic = [s for s in ir.walk(fn_ir.body) if isinstance(s, ir.Assign)
                  and type(s.expr).__name__ == "BinOp"]
    assert len(arithmetic) == 6 and all(s.sid in facts.uniform for s in arithmetic)


def test_slices_of_different_lengths_are_not_claimed():
    def f(u):
        return np.sum(u[1:] * u[:-2])
    assert not _claims_anything(f, u=VEC)


def test_a_row_broadcast_over_a_matrix_is_not_claimed():
    def f(A, b):
        return np.sum(A * b)
    assert not _claims_anything(f, A=MAT, b=VEC)


def test_a_transpose_does_not_keep_its_argument_s_shape():
    def f(A):
        B = np.transpose(A)
        C = np.swapaxes(A, 0, 1)
        return np.sum(B * A + C * A + A.T * A)
    assert not _claims_anything(f, A=MAT)


def test_two_arguments_of_unknown_relation_are_not_claimed():
    def f(a, b):
        return np.sum(a * b)
    assert not _claims_anything(f, a=VEC, b=VEC)


def test_one_array_with_numbers_is_uniform_even_when_reassigned():
    def f(h, c):
        for k in range(3):
            h = np.tanh(c * h) * h
        return np.sum(h)
    facts, fn_ir = _facts(f, h=VEC, c=FLOAT)
    ops = [s for s in ir.walk(fn_ir.body) if isinstance(s, ir.Assign) and s.target != "h"
           and s.target.startswith("_t") and s.sid in facts.uniform]
    assert len(ops) >= 2        # c * h and np.tanh(...): one array operand each


def test_a_value_from_the_previous_iteration_is_not_taken_for_the_current_one():
    # y holds the previous iteration's t, one shorter: y + t is never uniform.
    def f(x, n):
        z = x[:1]
        for i in range(1, n):
            t = x[:i]
            if i > 1:
                z = y + t       # noqa: F821 (assigned below, in the previous iteration)
            y = t * 2.0     # noqa: F841 (read above, in the next iteration)
        return np.sum(z)
    facts, fn_ir = _facts(f, x=VEC, n=INT)
    (add,) = [s for s in ir.walk(fn_ir.body) if isinstance(s, ir.Assign) and s.target == "z"
                and type(s.expr).__name__ == "BinOp"]
    assert add.sid not in facts.uniform


def test_a_scalar_written_into_a_slice_does_not_fit():
    def f(u, c):
        v = u.copy()
        v[1:-1] = c
        w = u.copy()
        w[1:3] = u[0:1]
        return np.sum(v * w)
    facts, fn_ir = _facts(f, u=VEC, c=FLOAT)
    assert not facts.fits


_bound = st.one_of(st.none(), st.integers(-6, 6))
_chain = st.lists(st.tuples(_bound, _bound), max_size=3)


@settings(max_examples=300, deadline=None)
@given(_chain, _chain)
def test_equal_dimensions_are_exactly_those_of_equal_lengths_for_every_length(a, b):
    # Brute force over lengths far past every constant, with Python's own slicing.
    def length(n, chain):
        r = range(n)
        for lo, hi in chain:
            r = range(len(r))[lo:hi]
        return len(r)
    equal = all(length(n, a) == length(n, b) for n in range(200))
    assert shapes.same_dim(("root", tuple(a)), ("root", tuple(b))) == equal
