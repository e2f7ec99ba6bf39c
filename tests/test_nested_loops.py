"""Nested loops with early exits: triangular bounds that depend on an outer index,
``break``/``continue``/``return`` at each depth, helpers that return from inside
their loop, called inside loops.

Each program is one a physicist or statistician writes (pair sums with a cutoff,
sums that stop at a threshold).  Their gradients are checked on both backends
against central finite differences, over random values and lengths 0 to 7, so
that inner loops run zero, one and many times, and exits fire at every depth.
Values are kept away from the thresholds the programs branch on, so that the
finite difference never straddles a branch.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import assert_matches_reference

import pullback
from helpers import assert_fd_close, fd_estimate


def pair_sum_with_cutoff(x):
    E = 0.0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if x[j] > 5.0:
                continue
            E += x[i] * x[j]
    return E


def lower_triangle_by_break(x):
    E = 0.0
    for i in range(len(x)):
        for j in range(len(x)):
            if j > i:
                break
            E += x[i] * x[j]
    return E


def for_with_break_inside_while(x):
    E = 0.0
    k = 0
    while k < len(x):
        for j in range(len(x)):
            if x[j] > 5.0:
                break
            E += x[j] * x[k] + 0.5 * x[k]
        k += 1
    return E


def return_from_inner_loop(x):
    E = 0.0
    for i in range(len(x)):
        for j in range(i):
            if x[j] > 5.0:
                return E
            E += x[i] * x[j]
    return E


def _partial_sum(x, k):
    s = 0.0
    for j in range(len(x)):
        if x[j] > 5.0:
            return s
        s += x[j] * x[k]
    return s


def helper_returning_from_its_loop(x):
    E = 0.0
    k = 0
    while k < len(x):
        for i in range(k + 1):
            E += _partial_sum(x, i) * x[k]
        k += 1
    return E


def three_deep_with_continue(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(i):
            if (i + j) % 2 == 0:
                continue
            for k in range(j, i):
                s += x[k] * x[i]
    return s


def value_set_outside_read_inside(x):
    s = 0.0
    for i in range(len(x)):
        w = x[i] * x[i]
        for j in range(i, len(x)):
            if x[j] > 5.0:
                break
            for k in range(j):
                s += w * x[k]
        s += w
    return s


def saved_in_both_loops(x):
    # s is saved by the outer body and by the inner loop: one tape, pushed at two
    # depths (the outer loop's reservation must not count on the inner's slots).
    total = 0.0
    s = 1.0
    for i in range(len(x)):
        s = s * 0.5 + x[i] * s
        for j in range(i):
            s = s * 0.25 + x[j] * s * 0.1
        total += s
    return total


PROGRAMS = [saved_in_both_loops, pair_sum_with_cutoff, lower_triangle_by_break, for_with_break_inside_while,
            return_from_inner_loop, helper_returning_from_its_loop, three_deep_with_continue,
            value_set_outside_read_inside]

# Away from the branch threshold 5.0, so that a finite difference stays on one side.
_values = st.one_of(st.floats(-3.0, 4.5), st.floats(5.5, 12.0))


def _check(f, x, jit):
    g = pullback.grad(f, jit=jit)
    for _ in range(2):         # the second call reuses the tapes (Numba's workspaces)
        assert_fd_close(np.asarray(g(x)), fd_estimate(f, (x,)), rtol=1e-6, atol=1e-8)
    value, _ = pullback.value_and_grad(f, jit=jit)(x)
    assert value == pytest.approx(f(x), rel=1e-12, abs=1e-12)
    assert_matches_reference(f, (x,), 0, jit)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_the_reported_inputs(f, jit):
    # The inputs of the report: pair_sum_with_cutoff's gradient was all zeros,
    # the others raised in generated code or were wrong.
    for x in ([1.0, 2.0, 3.0, 10.0, 0.5], [1.0, 2.0, 3.0], [0.5, 6.0, 1.5, 2.0]):
        _check(f, np.array(x), jit)


@pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@settings(max_examples=15, deadline=None)
@given(x=st.lists(_values, min_size=0, max_size=7).map(np.array))
def test_random_values_and_lengths(f, jit, x):
    _check(f, x.astype(float), jit)


def lennard_jones(pos, eps, sigma):
    n = pos.shape[0]
    E = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 > 9.0:
                continue
            s6 = (sigma * sigma / r2) ** 3
            E += 4.0 * eps * (s6 * s6 - s6)
    return E


def test_lennard_jones_energy_with_a_cutoff(jit):
    rng = np.random.default_rng(7)
    pos = rng.uniform(0.0, 4.0, size=(8, 3))
    r2 = ((pos[:, None] - pos[None]) ** 2).sum(-1)
    assert (np.abs(r2 - 9.0) > 1e-3).all()          # no pair at the cutoff
    assert ((r2 > 9.0) & (r2 > 0)).any() and (r2[np.triu_indices(8, 1)] < 9.0).any()
    args = (pos, 1.5, 1.1)
    grads = pullback.grad(lennard_jones, argnums=(0, 1, 2), jit=jit)(*args)
    for k, g in enumerate(grads):
        assert_fd_close(np.asarray(g), fd_estimate(lennard_jones, args, k), rtol=1e-6, atol=1e-8)
    assert_matches_reference(lennard_jones, args, (0, 1, 2), jit)
