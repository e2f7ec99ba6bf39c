"""Under ``jit=True`` Numba compiles in the background by default: until it is done
the derivative runs its generated code as plain Python (pullback.core.background).

The Python tier of every corpus program is checked against the Python backend's
gradient (an independent transform) and central finite differences; the switch
to compiled code, a compile that fails, and concurrent first calls are checked
with the default turned on here (the rest of the suite compiles in the call).
"""
from __future__ import annotations

import inspect
import threading
import warnings

import numpy as np
import pytest
from corpus.scientific import CORPUS

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate

pytest.importorskip("numba")


@pytest.fixture
def background(monkeypatch):
    monkeypatch.setenv("PULLBACK_BACKGROUND_COMPILE", "1")
    yield
    assert pullback.finish_compiling(timeout=600)


def _lazy(g, args):
    """The Numba derivative behind ``g`` for these arguments (not compiled)."""
    c, _, _ = g.compiled(*args)
    return c.fn


@pytest.mark.parametrize("e", CORPUS, ids=lambda e: e.fn.__name__)
def test_the_python_tier_of_every_corpus_program_is_its_gradient(e):
    args = e.make_args()
    bound = inspect.signature(e.fn).bind(*args)
    bound.apply_defaults()      # the derivative takes every parameter, as the API passes them
    lazy = _lazy(pullback.value_and_grad(e.fn, argnums=e.argnums, jit=True), bound.args)
    value, grads = lazy.python(*bound.args)
    want_value, want = pullback.value_and_grad(e.fn, argnums=e.argnums, jit=False)(*args)
    assert value == pytest.approx(want_value, rel=1e-12, abs=1e-12)
    for k, got, ref in zip(e.argnums, grads, want):
        assert_close(got, ref, rtol=1e-12, atol=1e-12)
        assert_fd_close(got, fd_estimate(e.fn, args, k), rtol=e.rtol, atol=e.atol)
    assert not lazy.ok      # nothing was compiled


def horner_of(trig):
    """A Horner loop weighted by ``trig(x)``: each test differentiates one of its own
    (the derivatives of one function are shared within the process)."""
    def horner_like(x, p):
        ex = 0.0
        for i in range(len(p)):
            ex = x * ex + p[i] * trig(x)
        return ex
    return horner_like


def test_first_calls_run_as_python_until_the_compiled_code_is_ready(background):
    p, f = np.linspace(-1.0, 1.0, 50), horner_of(np.sin)
    g = pullback.grad(f, argnums=(0, 1), jit=True)
    first = g(0.7, p)
    lazy = g._last.fn
    assert not lazy.ok
    want = pullback.grad(f, argnums=(0, 1), jit=False)(0.7, p)
    assert first[0] == pytest.approx(want[0], rel=1e-12)
    assert_close(first[1], want[1], rtol=1e-12)
    assert pullback.finish_compiling(timeout=600)
    g(0.7, p)                   # runs compiled: the next calls skip the lazy wrapper
    assert lazy.ok and g._last.fn is lazy.dispatcher
    dx, dp = g(0.7, p)
    assert dx == pytest.approx(want[0], rel=1e-12)
    assert_close(dp, want[1], rtol=1e-12)


def test_a_compile_that_fails_warns_once_and_the_gradient_runs_as_python(background):
    e = next(e for e in CORPUS if e.fn.__name__ == "empty_like_and_array_copy")
    args = e.make_args()
    g = pullback.grad(e.fn, argnums=e.argnums, jit=True)
    want = pullback.grad(e.fn, argnums=e.argnums, jit=False)(*args)
    assert_close(g(*args)[0], want[0], rtol=1e-12)
    assert pullback.finish_compiling(timeout=600)
    with pytest.warns(pullback.PerformanceWarning, match="runs as plain Python") as record:
        assert_close(g(*args)[0], want[0], rtol=1e-12)
    assert "could not be compiled with Numba" in str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # once only
        assert_close(g(*args)[0], want[0], rtol=1e-12)


def test_first_calls_from_many_threads_start_one_compile(background):
    p, f = np.linspace(-1.0, 1.0, 50), horner_of(np.cos)
    g = pullback.grad(f, argnums=(0, 1), jit=True)
    want = pullback.grad(f, argnums=(0, 1), jit=False)(0.7, p)
    lazy = _lazy(g, (0.7, p))
    out, errors = [], []

    def work():
        try:
            for _ in range(20):
                out.append(g(0.7, p))
        except Exception as exc:    # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(lazy._jobs) == 1
    for dx, dp in out:
        assert dx == pytest.approx(want[0], rel=1e-12)
        assert_close(dp, want[1], rtol=1e-12)


def test_finish_compiling_with_nothing_to_wait_for():
    assert pullback.finish_compiling(timeout=0)


def pair(a, b):
    return b - a, a * b


def early_exit_before_a_pair(x, p):
    s = x * p[0]
    if p[1] > 0.0:
        return s * 2.0
    u, w = pair(s, x)
    return u + w


def test_a_tuple_an_early_return_skips_has_a_value_in_the_python_tier(background):
    # Numba's derivative makes the zero adjoint of pair's result before the
    # reverse sweep, from the tuple itself: the forward sweep gives it a value of
    # its type first, or Python stops with UnboundLocalError where the early
    # return skipped the call (Numba read an undefined value it never used).
    p = np.array([0.5, 1.0])
    g = pullback.grad(early_exit_before_a_pair, argnums=(0, 1), jit=True)
    lazy = _lazy(g, (0.3, p))
    _, (dx, dp) = lazy.python(0.3, p)
    assert dx == pytest.approx(2.0 * p[0], rel=1e-12)
    assert_close(dp, np.array([0.6, 0.0]), rtol=1e-12)
    dx, dp = g(0.3, p)
    assert dx == pytest.approx(2.0 * p[0], rel=1e-12)
    assert_close(dp, np.array([0.6, 0.0]), rtol=1e-12)
    q = np.array([0.5, -1.0])       # the other path runs as Python or compiled alike
    dx, dp = g(0.3, q)
    assert dx == pytest.approx(2.0 * 0.3 * q[0] - q[0] + 1.0, rel=1e-12)
