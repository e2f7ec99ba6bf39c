"""Values a function reads from its globals and closure cells are the values at call
time, on both backends and in both compile modes: Numba would freeze them into the
compiled code, so the derivative takes them as arguments (emit.live_values).

The references are the analytic derivatives at the values the globals hold when
each call is made.
"""
import numpy as np
import pytest

import pullback

C = 2.0
TABLE = np.array([1.0, 2.0, 3.0])
SHIFT = (0.5, 1.5)


def uses_globals(x):
    return C * x * x + TABLE[0] * x + SHIFT[1] * x


def helper(x):
    return C * x


def calls_a_helper(x):
    return helper(x) * x


def _grads(f, mode):
    """f's gradient function on the backend of ``mode``."""
    return pullback.grad(f, jit=mode != "python")


@pytest.fixture
def restore_globals():
    saved = (C, TABLE.copy(), SHIFT)
    yield
    g = globals()
    g["C"], g["SHIFT"] = saved[0], saved[2]
    TABLE[:] = saved[1]


def _expected(x):
    return 2 * C * x + TABLE[0] + SHIFT[1]


def test_globals_rebound_and_mutated_between_calls(jit_mode, restore_globals):
    global C, SHIFT
    g = _grads(uses_globals, jit_mode)
    x = 1.5
    for step in range(4):
        assert g(x) == pytest.approx(_expected(x), rel=1e-14)
        pullback.finish_compiling()
        C = C + 1.0             # rebound
        TABLE[0] += 10.0        # changed in place
        SHIFT = (SHIFT[0], SHIFT[1] * 2)
    # A new gradient function of the same function reads them too.
    assert _grads(uses_globals, jit_mode)(x) == pytest.approx(_expected(x), rel=1e-14)


def test_a_global_read_by_an_inlined_helper(jit_mode, restore_globals):
    global C
    g = _grads(calls_a_helper, jit_mode)
    for c in (2.0, 5.0, -1.0):
        C = c
        assert g(3.0) == pytest.approx(2 * c * 3.0, rel=1e-14)
        pullback.finish_compiling()


def test_closure_cells_rebound_and_mutated(jit_mode):
    def make():
        k = 2.0
        w = np.array([1.0, -1.0])

        def f(x):
            return k * np.sum(w * x * x)

        def set_k(v):
            nonlocal k
            k = v
        return f, set_k, w

    f, set_k, w = make()
    g = _grads(f, jit_mode)
    x = np.array([0.5, 2.0])
    for k in (2.0, 3.0, 0.25):
        set_k(k)
        w[1] = k
        np.testing.assert_allclose(g(x), 2 * k * w * x, rtol=1e-14)
        pullback.finish_compiling()


def test_forward_mode_reads_globals_at_call_time(jit_mode, restore_globals):
    global C
    for c in (2.0, 7.0):
        C = c
        value, tangent = pullback.jvp(uses_globals, (1.5,), (1.0,), jit=jit_mode != "python")
        assert tangent == pytest.approx(_expected(1.5), rel=1e-14)
        pullback.finish_compiling()


def test_a_global_that_changes_kind_gets_a_new_derivative(jit_mode, restore_globals):
    global C
    g = _grads(uses_globals, jit_mode)
    assert g(1.0) == pytest.approx(_expected(1.0))
    pullback.finish_compiling()
    C = 3          # an int now: same value kind family changes (float -> int)
    assert g(1.0) == pytest.approx(_expected(1.0))
    C = np.float64(4.0)
    assert g(1.0) == pytest.approx(_expected(1.0))


def test_the_source_says_what_is_read_at_call_time():
    src = pullback.grad(uses_globals, jit=True).source
    first = src.splitlines()[0]
    assert first.endswith("C=None, SHIFT=None, TABLE=None):"), first
    assert "read when called" in src.splitlines()[1]


STEPS = 2
AXIS = 0


def uses_int_globals(A):
    s = 0.0
    for i in range(STEPS):
        s += np.sum(np.sum(A * A, axis=AXIS, keepdims=True) ** 2) * (i + 1)
    return s


def test_int_globals_stay_constants_of_the_compiled_code_and_a_new_value_recompiles(jit_mode):
    # Ints (loop bounds, axis=) are constants Numba's typing may need: a new value
    # makes a new derivative instead of a stale one.
    global STEPS, AXIS
    A = np.array([[1.0, -3.0, 2.0], [0.5, 4.0, -1.0]])
    g = _grads(uses_int_globals, jit_mode)
    try:
        for steps, axis in ((2, 0), (3, 0), (3, 1), (1, 1)):
            STEPS, AXIS = steps, axis
            S = np.sum(A * A, axis=axis, keepdims=True)
            want = 2 * S * 2 * A * sum(range(1, steps + 1))
            np.testing.assert_allclose(g(A), want, rtol=1e-14)
            pullback.finish_compiling()
    finally:
        STEPS, AXIS = 2, 0


def _closure_over_a_tuple(c):
    def f(x):
        return x * c[0] + c[1] * x * x
    return f


def test_closures_over_tuples_of_numbers_share_one_derivative(jit_mode):
    # A tuple of NumPy floats in a closure cell is read when the derivative runs,
    # like a number: a new closure over new values reuses the derivative (it was
    # made again for each closure).
    from pullback import pipeline
    jit = jit_mode != "python"
    pullback.grad(_closure_over_a_tuple((np.float64(0.5), np.float64(1.0))), jit=jit)(1.0)
    made = len(pipeline._CACHE)
    for k in range(4):
        c = (np.float64(k), np.float64(2.0 + k))
        got = pullback.grad(_closure_over_a_tuple(c), jit=jit)(1.5)
        assert abs(got - (c[0] + 2.0 * c[1] * 1.5)) < 1e-12
    assert len(pipeline._CACHE) == made
