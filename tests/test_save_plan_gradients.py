"""What the forward sweep saves, end to end: an in-place write saves what it
overwrites only when an adjoint read the array since (directly, through a
recomputed element read, or through a view); a local that holds one value for
the whole call (``c = h / 6.0`` in a loop) is never saved; a chain of cheap
temporaries (``d = x - obs[k]``) is recomputed in the reverse sweep instead of
taped.  Each gradient is checked on both backends against finite differences,
and the generated source shows what was (not) saved."""
from __future__ import annotations

import numpy as np
import pytest
from corpus.scientific import newton_sqrt_sum

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate, fd_grad

BACKENDS = [False, True]


def check(f, args, argnums, jit):
    g = pullback.grad(f, argnums=argnums, jit=jit)
    for _ in range(2):                       # the second call reuses Numba's workspace
        got = g(*args)
        for k, a in zip(argnums, got):
            assert_fd_close(np.asarray(a), fd_estimate(f, args, k), rtol=1e-6, atol=1e-8)
    return g.source


def heat(u0, c):
    u = u0.copy()
    for _ in range(20):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u * u)


@pytest.mark.parametrize("jit", BACKENDS)
def test_a_slice_update_that_no_adjoint_reads_saves_nothing(jit):
    # The update is linear in u: no adjoint reads u's contents, so the old rows are
    # never needed (before, every step copied u[1:-1] onto the tape).
    rng = np.random.default_rng(0)
    src = check(heat, (rng.normal(size=12), 0.2), (0, 1), jit)
    assert "_push(u[" not in src and "_tape_u_items" not in src


def squares_in_place(u0, x):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] * u[1:-1] * x + u[:-2]
    return np.sum(u)


@pytest.mark.parametrize("jit", BACKENDS)
def test_a_slice_update_whose_product_reads_the_old_rows_still_saves_them(jit):
    rng = np.random.default_rng(1)
    check(squares_in_place, (rng.uniform(0.5, 1.0, size=7), 0.7), (0, 1), jit)


def running_squares(u0):
    u = u0.copy()
    s = 0.0
    for i in range(len(u)):
        s = s + u[i] * u[i]
        u[i] = s
    for i in range(len(u)):
        s = s + u[i] * u[i]
    return s


@pytest.mark.parametrize("jit", BACKENDS)
def test_an_element_write_after_an_element_read_in_the_same_iteration(jit):
    # Under Numba the product's operands are read again from u in the reverse
    # sweep: the write must be undone first, so it saves the element.
    rng = np.random.default_rng(2)
    check(running_squares, (rng.uniform(0.1, 0.5, size=6),), (0,), jit)


def rk4_decay(y0, k):
    y = y0
    h = 0.01
    for _ in range(50):
        c = h / 6.0
        k1 = -k * y
        k2 = -k * (y + 0.5 * h * k1)
        k3 = -k * (y + 0.5 * h * k2)
        k4 = -k * (y + h * k3)
        y = y + c * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y * y


@pytest.mark.parametrize("jit", BACKENDS)
def test_a_local_with_one_value_for_the_whole_call_is_not_saved(jit):
    src = check(rk4_decay, (1.3, 0.8), (0, 1), jit)
    assert "_push(c)" not in src and "_tape_c_" not in src
    assert_close(np.asarray(pullback.grad(rk4_decay, argnums=1, jit=jit)(1.3, 0.8)),
                 fd_grad(rk4_decay, (1.3, 0.8), 1), rtol=1e-6)


def misfit(theta, observed):
    s = 0.0
    for k in range(observed.shape[0]):
        s = s + theta[1] * (theta[0] - observed[k, 0]) + theta[0] * (observed[k, 1] - theta[1])
    return s


@pytest.mark.parametrize("jit", BACKENDS)
def test_a_chain_of_cheap_temporaries_is_recomputed(jit):
    rng = np.random.default_rng(3)
    src = check(misfit, (np.array([0.4, -0.3]), rng.normal(size=(8, 2))), (0, 1), jit)
    if jit:     # the element reads and the differences are computed again, not taped
        assert "_tape_" not in src


@pytest.mark.parametrize("jit", BACKENDS)
def test_a_while_loops_trip_count_is_saved_for_each_outer_iteration(jit):
    # The trip counter is set to 0 at one site, but the forward sweep counts
    # it up: it is not a value that holds for the whole call (it was taken for one
    # and the reverse sweep replayed the last inner loop's count for every p[i]).
    # (newton_sqrt_sum: s += newton_sqrt(p[i]) * (i + 1.0), a while loop inside.)
    check(newton_sqrt_sum, (np.array([1.2, 2.0, 3.33, 0.9]),), (0,), jit)
