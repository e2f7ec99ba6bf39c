"""Loops whose iterations share nothing but sums, differentiated without a tape
(pullback.analysis.independent): each program's gradient against the reference
derivative (every loop taped) to 1e-12 and against finite differences, on the
Python backend, on Numba, and in Numba's background mode; which loops the
analysis takes; and where the generated source runs a pair's adjoint.

The programs are written as a physicist or statistician would: pair energies
with cutoffs, sums over data, nested loops, and the variations that must not be
re-run (a value carried between iterations, a local read after the loop)."""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from reference import assert_matches_reference

import pullback
from helpers import assert_fd_close, fd_estimate


def lj(pos, rc2):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                inv2 = 1.0 / r2
                inv6 = inv2 * inv2 * inv2
                e += 4.0 * (inv6 * inv6 - inv6)
    return e


def lj_continue(pos, rc2):
    # The cutoff written as `continue`: the rest of the body is guarded by a flag.
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 > rc2:
                continue
            inv6 = 1.0 / (r2 * r2 * r2)
            e += 4.0 * (inv6 * inv6 - inv6)
    return e


def morse_periodic(pos, box, d, a, r0):
    n = pos.shape[0]
    e = 0.0
    half = 0.5 * box
    for i in range(n - 1):
        xi = pos[i, 0]
        yi = pos[i, 1]
        for j in range(i + 1, n):
            dx = xi - pos[j, 0]
            if dx > half:
                dx -= box
            elif dx < -half:
                dx += box
            dy = yi - pos[j, 1]
            dy -= box * round(dy / box)
            r = math.sqrt(dx * dx + dy * dy)
            if r < 2.5:
                t = 1.0 - math.exp(-a * (r - r0))
                e += d * t * t
    return e


def two_sums(x, w):
    s = 0.0
    q = 0.0
    for i in range(len(x)):
        u = w * x[i]
        s += math.tanh(u)
        q -= u * u
    return s * q


def gaussian_nll(mu, sigma, y):
    nll = 0.0
    for t in range(len(y)):
        z = (y[t] - mu) / sigma
        nll += 0.5 * z * z + math.log(sigma)
    return nll


def sum_in_both_branches(x, c):
    s = 0.0
    for i in range(len(x)):
        v = x[i] * c
        if v > 0.0:
            s += v * v
        else:
            s -= math.sin(v)
    return s


def inner_sum_outer_value(x):
    total = 0.0
    for i in range(len(x)):
        xi = x[i] * x[i]
        for j in range(len(x)):
            total += xi * math.cos(x[j])
    return total


def carried(x):
    # prev carries a value from one iteration to the next: taped as usual.
    s = 0.0
    prev = 0.0
    for i in range(len(x)):
        s += x[i] * prev
        prev = x[i] * x[i]
    return s


def local_read_after(x):
    # d is read after the loop: taped as usual.
    s = 0.0
    d = 0.0
    for i in range(len(x)):
        d = x[i] * 2.0
        s += d * d
    return s + d


def sum_read_in_loop(x):
    # s is read by another statement of the loop: not a sum, taped.
    s = 0.0
    for i in range(len(x)):
        s += x[i] * s + x[i]
    return s


def written_after(x):
    # The array the loop reads is written after it: restored before the re-run.
    y = x.copy()
    s = 0.0
    for i in range(len(y)):
        s += y[i] * y[i] * y[i]
    y[0] = 5.0
    return s + y[0] * s


def in_a_time_loop(x, c):
    # Re-run inner loops inside an outer loop that is taped.
    u = x.copy()
    e = 0.0
    for t in range(3):
        for i in range(len(u)):
            e += math.sin(u[i] * c)
        u[1:] = u[1:] + 0.1 * u[:-1]
    return e


def inner_sum_read_after_the_inner_loop(W, x):
    # a sums over j and is read after that loop: the loop over j carries it from
    # one iteration to the next, so the loop over i is taped, the one over j not
    # (a wrong gradient, zero, when the loop over i was taken as independent).
    out = 0.0
    for i in range(W.shape[0]):
        a = 0.1
        for j in range(len(x)):
            a += W[i, j] * x[j]
        out += a * a
    return out


def sum_read_before(x):
    # The loop's sum is read by an adjoint before the loop (a product): its
    # earlier value must be kept, so the loop is taped.
    s = x[0] * x[1]
    y = s * s
    for i in range(len(x)):
        s += x[i] * x[i]
    return y + s


def lj_energy_and_virial(pos, rc2):
    n = pos.shape[0]
    e = 0.0
    w = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            r2 = dx * dx + dy * dy
            if r2 < rc2:
                inv6 = 1.0 / (r2 * r2 * r2)
                e += inv6 * inv6 - inv6
                w += 12.0 * inv6 * inv6 - 6.0 * inv6
    return e * w


def pair_energy_with_a_tuple(pos, eps, sig):
    # The loop reads a tuple of active numbers: it is re-run in the reverse sweep
    # (a tuple's adjoint has no buffer the forward sweep could add into).
    p = (eps, sig * sig)
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            r2 = dx * dx + 0.5
            e += p[0] * p[1] / r2
    return e


RNG = np.random.default_rng(3)
POS = RNG.uniform(0.0, 3.0, (14, 3))
POS2 = RNG.uniform(0.0, 4.0, (12, 2))
X = RNG.normal(size=9)
W = RNG.normal(size=(4, 9))

CASES = [
    ("lj", lj, (POS, 2.2), (0,)),
    ("lj_continue", lj_continue, (POS, 2.2), (0,)),
    ("morse", morse_periodic, (POS2, 4.0, 0.7, 1.3, 1.1), (0, 2, 3, 4)),
    ("two_sums", two_sums, (X, 0.8), (0, 1)),
    ("gaussian_nll", gaussian_nll, (0.3, 1.4, X), (0, 1)),
    ("both_branches", sum_in_both_branches, (X, 1.3), (0, 1)),
    ("inner_sum", inner_sum_outer_value, (X,), (0,)),
    ("carried", carried, (X,), (0,)),
    ("local_read_after", local_read_after, (X,), (0,)),
    ("sum_read_in_loop", sum_read_in_loop, (X,), (0,)),
    ("written_after", written_after, (X,), (0,)),
    ("in_a_time_loop", in_a_time_loop, (X, 0.7), (0, 1)),
    ("sum_read_before", sum_read_before, (X,), (0,)),
    ("inner_sum_read_after", inner_sum_read_after_the_inner_loop, (W, X), (0, 1)),
    ("energy_and_virial", lj_energy_and_virial, (POS[:, :2], 2.2), (0,)),
    ("tuple", pair_energy_with_a_tuple, (POS, 0.8, 1.1), (0, 1, 2)),
]


@pytest.mark.parametrize("name, f, args, argnums", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_the_taped_reference_and_finite_differences(name, f, args, argnums,
                                                                     jit_mode):
    jit = jit_mode != "python"
    assert_matches_reference(f, args, argnums, jit=jit)
    got = pullback.grad(f, argnums=argnums, jit=jit)(*args)
    for k, g in zip(argnums, got):
        assert_fd_close(np.asarray(g), fd_estimate(f, args, k), rtol=1e-6, atol=1e-8)


def _indent(line):
    return len(line) - len(line.lstrip())


def test_an_adjoint_in_the_forward_sweep_runs_only_inside_the_cutoff():
    # One sum at the top level: each pair's adjoint runs right after the pair,
    # under its `if r2 < rc2:`; the reverse sweep only scales the buffer.
    g = pullback.grad(lj, jit=True)
    g(POS, 2.2)
    forward, reverse = g.source.split("# ---- reverse sweep")
    updates = [k for k, line in enumerate(forward.splitlines()) if "_adj_pos" in line
               and "+=" in line]
    lines = forward.splitlines()
    assert updates
    for k in updates:
        guard = max(j for j in range(k) if _indent(lines[j]) < _indent(lines[k]))
        assert lines[guard].strip().startswith("if _t"), lines[guard]
    assert "    for " not in reverse and "_tape" not in g.source


def test_a_re_run_iteration_outside_the_cutoff_runs_no_adjoint():
    # Two sums: the reverse sweep re-runs each pair, and its adjoint sits under
    # the cutoff's test.
    g = pullback.grad(lj_energy_and_virial, jit=True)
    g(POS[:, :2], 2.2)
    reverse = g.source.split("# ---- reverse sweep")[1].splitlines()
    updates = [k for k, line in enumerate(reverse) if line.strip().startswith("dpos[")]
    assert updates and "_tape" not in g.source
    for k in updates:
        guard = max(j for j in range(k) if _indent(reverse[j]) < _indent(reverse[k]))
        assert reverse[guard].strip().startswith("if _t"), reverse[guard]


def test_the_taped_reference_still_tapes_the_loop():
    from pullback.core.optimise import reference
    with reference():
        g = pullback.grad(lj, jit=True)
        g(POS, 2.2)
    assert "_tape" in g.source


def with_break(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 2.0:
            break
        s += x[i] * x[i]
    return s


def writes_an_array(x):
    y = np.zeros_like(x)
    s = 0.0
    for i in range(len(x)):
        y[i] = x[i] * x[i]
        s += y[i]
    return s


def name_reused_by_two_loops(x):
    s = 0.0
    for i in range(len(x)):
        d = x[i] * 3.0
        s += d * d
    for j in range(len(x)):
        d = math.sin(x[j])
        s += d
    return s


def _roots(f, args, argnums, jit=True):
    """{root loop's variable: (its sums, run in the forward sweep)} as the
    transform found them."""
    from pullback.core.kinds import kind_of_value
    from pullback.pipeline import NUMBA, PYTHON, prepare
    from pullback.reverse.transform import ReverseTransform
    backend = NUMBA if jit else PYTHON
    p = prepare(f, tuple(argnums), tuple(kind_of_value(a) for a in args), backend)
    tr = ReverseTransform(p.fn, p.kinds, p.active, p.wrt, backend, p.parsed.at_line,
                          p.lookup, helpers=p.helpers)
    tr.run()
    from pullback.core import ir
    loops = {s.sid: s.var for s in ir.walk(p.fn.body) if isinstance(s, ir.For)}
    return {loops[sid]: (set(r.sums), r.in_forward) for sid, r in tr.independent.roots.items()}


@pytest.mark.parametrize("f, args, argnums, expected", [
    (lj, (POS, 2.2), (0,), {"i": ({"e"}, True)}),
    (lj_continue, (POS, 2.2), (0,), {"i": ({"e"}, True)}),
    (morse_periodic, (POS2, 4.0, 0.7, 1.3, 1.1), (0, 2), {"i": ({"e"}, True)}),
    (two_sums, (X, 0.8), (0, 1), {"i": ({"s", "q"}, False)}),        # two sums: re-run
    (in_a_time_loop, (X, 0.7), (0, 1), {"i": ({"e"}, False)}),       # inside a taped loop
    (carried, (X,), (0,), {}),
    (local_read_after, (X,), (0,), {}),
    (sum_read_in_loop, (X,), (0,), {}),
    (sum_read_before, (X,), (0,), {}),        # the save plan keeps the sum: taped
    # a sums over j and is read after that loop: the loop over j is a root itself.
    (inner_sum_read_after_the_inner_loop, (W, X), (0, 1), {"j": ({"a"}, False)}),
    (with_break, (X,), (0,), {}),
    (writes_an_array, (X,), (0,), {}),
    (name_reused_by_two_loops, (X,), (0,), {}),    # d lives in both loops: conservative
    (pair_energy_with_a_tuple, (POS, 0.8, 1.1), (0, 1, 2), {"i": ({"e"}, False)}),
], ids=lambda v: getattr(v, "__name__", None))
def test_which_loops_are_differentiated_without_a_tape(f, args, argnums, expected):
    assert _roots(f, args, argnums) == expected


def test_the_python_backend_tapes_them():
    # In CPython popping a saved float is cheaper than running statements again.
    assert _roots(lj, (POS, 2.2), (0,), jit=False) == {}


def density(pos, w):
    # An array summed into element by element in a pair loop (rho[i] += g).
    n = pos.shape[0]
    rho = np.zeros(n)
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            r2 = dx * dx + dy * dy
            if r2 < 4.0:
                g = math.exp(-r2 * w)
                rho[i] += g
                rho[j] -= 0.5 * g
    return np.sum(rho * rho)


def forces_in_a_time_loop(x0, v0, dt):
    # Velocity Verlet: the pair loop sums into a fresh acceleration array each step.
    n = x0.shape[0]
    x = x0.copy()
    v = v0.copy()
    for s in range(3):
        a = np.zeros(n)
        for i in range(n):
            for j in range(n):
                if i != j:
                    d = x[j] - x[i]
                    a[i] += d / (d * d + 0.5) ** 1.5
        for i in range(n):
            v[i] += dt * a[i]
            x[i] += dt * v[i]
    return np.sum(x * x) + np.sum(v * v)


def element_sums_written_both_ways(x, w):
    # g + acc[k] sums as acc[k] + g does; acc[k] = w - acc[k] is no sum: taped.
    acc = np.zeros(3)
    out = np.zeros(3)
    for i in range(len(x)):
        g = math.sin(x[i] * w)
        k = i % 3
        acc[k] = g + acc[k]
    for j in range(len(x)):
        m = j % 3
        out[m] = w * x[j] - out[m]
    return np.sum(acc * acc) + np.sum(out * out)


def element_sum_read_in_loop(x):
    # acc is read by another statement of the loop: not a sum.
    acc = np.zeros(3)
    s = 0.0
    for i in range(len(x)):
        acc[i % 3] += x[i]
        s += acc[0] * x[i]
    return s


ARRAY_SUM_CASES = [
    ("density", density, (POS2, 0.7), (0, 1), {"i": ({"rho"}, False)}),
    ("forces", forces_in_a_time_loop, (X[:5], X[4:9], 0.1), (0, 1, 2), {"i": ({"a"}, False)}),
    ("read_in_loop", element_sum_read_in_loop, (X,), (0,), {}),
    ("both_ways", element_sums_written_both_ways, (X, 0.7), (0, 1), {"i": ({"acc"}, False)}),
]


@pytest.mark.parametrize("name, f, args, argnums, roots", ARRAY_SUM_CASES,
                         ids=[c[0] for c in ARRAY_SUM_CASES])
def test_element_sums(name, f, args, argnums, roots, jit_mode):
    jit = jit_mode != "python"
    assert_matches_reference(f, args, argnums, jit=jit)
    got = pullback.grad(f, argnums=argnums, jit=jit)(*args)
    for k, g in zip(argnums, got):
        assert_fd_close(np.asarray(g), fd_estimate(f, args, k), rtol=1e-6, atol=1e-8)
    if jit_mode == "numba":
        assert _roots(f, args, argnums) == roots


def kalman_like(q, y):
    a = y[0]
    P = 1.0
    nll = 0.0
    for t in range(1, len(y)):
        F = P + q
        v = y[t] - a
        nll += math.log(F) + v * v / F
        K = P / F
        a = a + K * v
        P = P * (1.0 - K) + q
    return nll


@pytest.mark.parametrize("f, args, note", [
    (lj, (POS, 2.2), "keeps no tape: each iteration's adjoint runs right after it"),
    (two_sums, (X, 0.8), "keeps no tape: the reverse sweep runs each iteration again"),
    (kalman_like, (0.3, X), "saves per iteration: F, K, P, v and 1 intermediate value"),
], ids=["with its adjoint", "re-run", "taped"])
def test_the_docstring_says_what_each_loop_saves(f, args, note):
    g = pullback.grad(f, jit=True)
    g(*args)
    header = g.source.split("# ---- forward sweep")[0]
    loop_line = next(k for k, line in enumerate(inspect.getsource(f).splitlines())
                     if line.strip().startswith("for ")) + f.__code__.co_firstlineno
    assert f"The loop on line {loop_line} {note}." in header, header
