"""Loops marked ``checkpointed`` (pullback.analysis.checkpoints): run in segments,
each program's gradient equals the reference derivative's (the loop taped whole)
to 1e-12 and finite differences, for segments of 1, 2, 3 and 7 iterations, the
square-root default and one segment longer than the loop, on the Python backend,
on Numba and in Numba's background mode; the tape the generated code keeps; and
the refusals, each at the user's line."""
from __future__ import annotations

import math

import numpy as np
import pytest
from reference import assert_matches_reference

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback import checkpointed


def rk4(A, y0, h, n, every):
    # Arrays rebound each step: the tape holds references.
    y = y0.copy()
    for s in checkpointed(range(n), every):
        k1 = A @ y
        k2 = A @ (y + 0.5 * h * k1)
        k3 = A @ (y + 0.5 * h * k2)
        k4 = A @ (y + h * k3)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(y * y)


def heat(u0, k, c, n, every):
    # An array written element by element in a nested loop, copied each step.
    m = u0.shape[0]
    u = u0.copy()
    for s in checkpointed(range(n), every=every):
        un = u.copy()
        for i in range(1, m - 1):
            u[i] = un[i] + c * (k[i] * (un[i + 1] - un[i]) - k[i - 1] * (un[i] - un[i - 1]))
    loss = 0.0
    for i in range(m):
        loss += u[i] ** 3
    return loss


def garch(params, r, every):
    # Scalars carried between steps, a branch, and the loop variable read.
    omega, alpha, beta = params[0], params[1], params[2]
    s2 = 0.1
    nll = 0.0
    for t in checkpointed(range(1, r.shape[0]), every):
        e = r[t - 1]
        if e > 0.0:
            s2 = omega + alpha * e * e + beta * s2
        else:
            s2 = omega + 0.5 * alpha * e * e + beta * s2
        nll += 0.5 * (math.log(s2) + r[t] * r[t] / s2)
    return nll


def strided(x, every):
    # A range with a start and a step, walked backwards.
    acc = 1.0
    for i in checkpointed(range(x.shape[0] - 1, 0, -2), every):
        acc = acc * math.sin(x[i] + acc) + x[i - 1]
    return acc


def entry_value(x, every):
    # `t` has a value before the loop that the reverse sweep reads there; the loop
    # assigns it without carrying it.  `c`, read in the loop, is assigned again after.
    t = math.sin(x[0])
    z = t * t
    c = x[1]
    acc = 0.0
    for i in checkpointed(range(x.shape[0]), every):
        t = x[i] * acc + 1.0
        acc = acc + math.cos(t) + c
    c = 5.0
    return acc * c + z


def param_written(x, w, every):
    # A parameter written in place in the loop (copied first: never the caller's).
    for s in checkpointed(range(6), every):
        for i in range(1, x.shape[0]):
            x[i] = x[i] + w * math.tanh(x[i - 1])
    return np.sum(x * x)


def nested_while(x, every):
    y = 0.5
    for s in checkpointed(range(5), every):
        j = 0
        while j < x.shape[0]:
            y = 0.5 * y + 0.3 * x[j] * math.sin(y) + x[j]
            j += 1
    return y


def leaves_early(x, every):
    # break at data-dependent iterations, continue elsewhere.
    y = 0.3
    for i in checkpointed(range(x.shape[0]), every):
        if x[i] > 0.7:
            break
        if x[i] < -0.6:
            continue
        y = y * math.cos(x[i]) + x[i] * y * y
    return y


def returns_inside(x, every):
    y = 0.1
    for i in checkpointed(range(x.shape[0]), every):
        y = math.sin(y + x[i])
        if y > 0.6:
            return y * y
    return y


def row_views(x, every):
    # A view of the array written in place, made afresh in every iteration.
    h = np.zeros((2, x.shape[0]))
    h[0] = x
    for i in checkpointed(range(1, x.shape[0]), every):
        row = h[0, :]
        h[1, i] = h[1, i - 1] * 0.5 + np.sum(row * row) * x[i]
        h[0, i] = math.sin(h[1, i])
    return np.sum(h * h)


RNG = np.random.default_rng(3)
A = RNG.normal(size=(4, 4)) * 0.3
Y0 = RNG.normal(size=4)
U0 = np.exp(-30.0 * (np.linspace(0, 1, 9) - 0.4) ** 2)
K = RNG.uniform(0.5, 1.5, 8)
R = RNG.normal(size=23) * 0.3
X = RNG.uniform(-1.0, 1.0, 11)

CASES = [
    ("rk4", rk4, lambda e: (A, Y0, 0.1, 13, e), (0, 1)),
    ("heat", heat, lambda e: (U0, K, 0.2, 9, e), (0, 1)),
    ("garch", garch, lambda e: (np.array([0.05, 0.1, 0.8]), R, e), (0,)),
    ("strided", strided, lambda e: (X, e), (0,)),
    ("entry_value", entry_value, lambda e: (X, e), (0,)),
    ("param_written", param_written, lambda e: (X, 0.3, e), (0, 1)),
    ("nested_while", nested_while, lambda e: (X, e), (0,)),
    ("leaves_early", leaves_early, lambda e: (X, e), (0,)),
    ("leaves_early_late", leaves_early, lambda e: (X[::-1].copy(), e), (0,)),
    ("returns_inside", returns_inside, lambda e: (X, e), (0,)),
    ("row_views", row_views, lambda e: (X * 0.3, e), (0,)),
    ("returns_at_once", returns_inside, lambda e: (X[::-1] * 1.4, e), (0,)),
]


@pytest.mark.parametrize("every", [1, 2, 3, 7, None, 1000])
@pytest.mark.parametrize("name, f, args, argnums", CASES, ids=[c[0] for c in CASES])
def test_segments_give_the_gradient_of_the_whole_tape(name, f, args, argnums, every, jit_mode):
    jit = jit_mode != "python"
    if jit and every not in (2, None):
        pytest.skip("Numba compiles each program once; the segment length is a run-time value")
    assert_matches_reference(f, args(every), argnums, jit=jit)


@pytest.mark.parametrize("name, f, args, argnums", CASES, ids=[c[0] for c in CASES])
def test_segments_agree_with_finite_differences(name, f, args, argnums):
    got = pullback.grad(f, argnums=argnums)(*args(3))
    for k, g in zip(argnums, got):
        assert_fd_close(np.asarray(g), fd_estimate(f, args(3), k), rtol=1e-6, atol=1e-8)


def test_the_caller_s_arrays_are_not_changed():
    x = X.copy()
    pullback.grad(param_written, jit=False)(x, 0.3, 2)
    assert np.array_equal(x, X)


def test_no_iterations_and_one():
    for n in (0, 1):
        assert_matches_reference(rk4, (A, Y0, 0.1, n, None), (0, 1))


def test_the_forward_sweep_keeps_no_tape_and_the_reverse_one_segment():
    g = pullback.grad(rk4, jit=True)
    g(A, Y0, 0.1, 13, None)
    forward, reverse = g.source.split("# ---- reverse sweep")
    assert ".append(y)" not in forward and "_snapshots" in forward
    assert ".append(y)" in reverse
    assert "segments" in g.source.split('"""')[1]


def test_the_reference_tapes_the_loop_whole():
    from pullback.core.optimise import reference
    with reference():
        g = pullback.grad(rk4)
        g(A, Y0, 0.1, 5, None)
    assert "_snapshots" not in g.source


def test_forward_mode_and_a_hessian_ignore_the_mark():
    h = pullback.hessian(garch)(np.array([0.05, 0.1, 0.8]), R, 3)

    def plain(p):
        return garch(p, R, 3)
    eps = 1e-5
    p0 = np.array([0.05, 0.1, 0.8])
    g = pullback.grad(plain)
    fd = np.array([(g(p0 + eps * e) - g(p0 - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)


def test_every_must_be_a_positive_int():
    with pytest.raises(ValueError, match="positive int"):
        checkpointed(range(3), every=0)
    with pytest.raises(ValueError, match="positive int"):
        pullback.grad(rk4)(A, Y0, 0.1, 4, -1)


def inside_a_loop(x):
    s = 0.0
    for i in range(3):
        for j in checkpointed(range(x.shape[0])):
            s = s + x[j] * i
    return s


def carried_without_value(x):
    for j in checkpointed(range(x.shape[0])):
        if j > 0:
            s = s * x[j]  # noqa: F821  (carried, with no value before the loop)
        else:
            s = x[j]
    return s


def viewed_before(x):
    u = x.copy()
    row = u[1:]
    z = np.sum(row * row)
    for j in checkpointed(range(x.shape[0])):
        u[j] = math.sin(u[j]) * z
    return np.sum(u * u) + z


def written_while_held(x):
    u = x.copy()
    pair = (u, 2.0)
    for j in checkpointed(range(x.shape[0])):
        u[j] = u[j] * pair[1]
    return np.sum(pair[0] * u)


@pytest.mark.parametrize("f, says", [
    (inside_a_loop, "inside another loop"),
    (carried_without_value, "carries `s`"),
    (written_while_held, "writes into `u`"),
    (viewed_before, "writes into `u`"),
])
def test_refusals_name_the_loop(f, says):
    with pytest.raises(pullback.UnsupportedSyntaxError, match=says) as err:
        pullback.grad(f)(X.copy())
    assert "test_checkpointed.py" in str(err.value)
