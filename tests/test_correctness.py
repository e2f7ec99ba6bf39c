"""Silently wrong gradients and crashes found by the fuzzer (issue 10), one test per
cause, on both backends, each checked against an independent reference: the
analytic gradient or central finite differences (:func:`helpers.fd_grad`)."""
from __future__ import annotations

import ast

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate
from pullback.core.errors import InternalError
from pullback.emit import check_bound


def check_against_fd(f, args, argnums, jit):
    """pullback's gradients of ``f`` at ``args`` (twice: a cached second call must
    agree) against central finite differences."""
    g = pullback.grad(f, argnums=argnums, jit=jit)
    for _ in range(2):
        got = g(*args)
        for k, i in enumerate(argnums):
            assert_fd_close(got[k], fd_estimate(f, args, i), rtol=1e-5, atol=1e-6)


# ------------------------------------------------- cause 3: no derivative flows into x
def _sign(x):
    return 3.0 * np.sign(x)


def _constant(x):
    return 1.0


def _comparison(x):
    return x > 0.5


def _floor_ceil(x):
    return np.floor(x) + np.ceil(x)


def _array_sign(x, y):
    return np.sum(np.sign(x)) + y


@pytest.mark.parametrize("f", [_sign, _constant, _comparison, _floor_ceil])
def test_gradient_is_zero_when_nothing_differentiable_reaches_the_argument(f, jit):
    assert pullback.grad(f, jit=jit)(0.3) == 0.0
    value, dx = pullback.value_and_grad(f, jit=jit)(0.7)
    assert value == f(0.7) and dx == 0.0


def test_zero_gradient_of_an_array_argument_has_its_shape(jit):
    x = np.array([0.3, -0.2, 0.5])
    dx, dy = pullback.grad(_array_sign, argnums=(0, 1), jit=jit)(x, 0.5)
    assert isinstance(dx, np.ndarray) and dx.shape == x.shape and not dx.any()
    assert dy == 1.0


def test_generated_code_that_reads_an_unbound_name_is_an_internal_error():
    src = "def f_grad(x, _seed=1.0):\n    y = x * helper\n    return y, (dx,)\n"
    check_bound("def g(x):\n    y = x * helper\n    return y, (x,)\n", {"helper"})
    with pytest.raises(InternalError, match="'dx'"):
        check_bound(src, {"helper"})
    ast.parse(src)      # the source itself is valid Python


# -------------------------------------------- cause 2: assignment to a float parameter
def _rebinds_parameter(p, y, x, A):
    x = np.sum(A)
    return y + x + np.sum(p)


def test_rebound_parameter_has_zero_gradient(jit):
    args = (np.array([0.3, 0.7, 0.9, 0.2]), 0.5, 0.25, np.array([0.75, 0.75]))
    g = pullback.grad(_rebinds_parameter, argnums=(0, 1, 2), jit=jit)
    for _ in range(2):
        dp, dy, dx = g(*args)
        assert_close(dp, np.ones(4))
        assert dy == 1.0 and dx == 0.0
    check_against_fd(_rebinds_parameter, args, (0, 1, 2, 3), jit)


# ------------------------------- cause 6: reversed(range(...)) whose trip count is unused
def _reversed_loop_that_continues(x, A):
    for kk in reversed(range(A.shape[0])):
        continue
    return x * x


def _reversed_loop_that_breaks(x, p):
    s = x
    for k in reversed(range(1, len(p), 2)):
        if p[k] > 0.5:
            break
        s = s * p[k]
    return s


def test_reversed_range_with_only_control_flow_in_the_body(jit):
    assert pullback.grad(_reversed_loop_that_continues, jit=jit)(0.3, np.ones((3, 2))) == 0.6
    p = np.array([0.3, 0.4, 0.9, 0.2, 0.1, 0.7])
    check_against_fd(_reversed_loop_that_breaks, (0.7, p), (0, 1), jit)


# ------------------------------------------ cause 8: an int index on a 2-D array is a row
def _row_write(p):
    h = np.zeros((2, 2))
    h[1] = p
    return h[1, 0] + h[1, 1]


def _scalar_into_row(x):
    h = np.zeros((2, 2))
    h[1] = x[0]
    return h[1, 0] + 2.0 * h[1, 1]


def _row_recurrence(inputs, w):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = inputs[t] * w + h[t] * h[t]
    return np.sum(h[1:])


def _overwritten_rows(p):
    h = np.ones((3, 2))
    for t in range(2):
        h[t + 1] = h[t] * p + 1.0
        h[t] = h[t + 1] * h[t]          # the old row is needed by the reverse sweep
    return np.sum(h * h)


def test_row_write_into_a_2d_array(jit):
    assert_close(pullback.grad(_row_write, jit=jit)(np.array([0.3, 0.4])), [1.0, 1.0])
    assert_close(pullback.grad(_scalar_into_row, jit=jit)(np.array([0.3, 0.4])), [3.0, 0.0])


def test_rows_written_in_a_loop(jit):
    r = np.random.default_rng(0)
    check_against_fd(_row_recurrence, (0.5 * r.standard_normal((3, 3)), r.standard_normal(3)),
                     (0, 1), jit)
    check_against_fd(_overwritten_rows, (np.array([0.3, 0.6]),), (0,), jit)


# ------------------------------ cause 13: what the Numba backend saves for the reverse sweep
def _fills_local_array(x, p):
    out = np.zeros(3)
    for k in range(3):
        out[k] = x * p[k]
    return np.sum(out * out)


def _pair(a, b):
    return a * b, a + b


def _tuple_helper_in_loop(x, p):
    s = 0.0
    for k in range(3):
        u, v = _pair(x, p[k])
        s = s + u * v
    return s


def _scaled(a, v):
    return a * 2.0, v * a


def _mixed_tuple_helper_in_loop(x, p):
    s = 0.0
    for k in range(3):
        u, w = _scaled(x * p[k], p)
        s = s + u * np.sum(w)
    return s


def _early_tuple_return(a, b):
    if a > b:
        return a, b
    return b * a, a


def _early_tuple_helper_in_loop(x, p):
    s = 0.0
    for k in range(len(p)):
        u, v = _early_tuple_return(x, p[k])
        s = s + u * v
    return s


def _boolean_temporaries(x, p):
    s = 0.0
    for k in range(len(p)):
        big = np.sum(p * x) > x
        mask = p > x * k
        if big:
            s = s + x * p[k]
        s = s + np.sum(p * mask) * x
    return s


def _reassigned_reshape(x):
    z = x.reshape(2, 2) * 1.0
    z = z - 1.0
    return np.sum(z * z)


_P4 = np.array([0.3, 0.7, 0.9, 0.2])


@pytest.mark.parametrize("f, args", [
    (_fills_local_array, (0.5, _P4)),
    (_tuple_helper_in_loop, (0.5, _P4)),
    (_mixed_tuple_helper_in_loop, (0.5, _P4)),
    (_early_tuple_helper_in_loop, (0.5, _P4)),
    (_boolean_temporaries, (0.5, _P4)),
    (_reassigned_reshape, (np.array([0.1, 0.2, 0.3, 0.4]),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_saved_values_of_every_kind(f, args, jit):
    check_against_fd(f, args, tuple(range(len(args))), jit)


def _untyped_in_loop(x, p):
    s = 0.0
    for k in range(len(p)):
        g = np.sum(p, axis=k - k) * x    # a number or an array: not known before it runs
        if g < 1.0:
            s = s + g
    return s


def test_a_saved_value_of_unknown_type_is_refused_under_numba():
    check_against_fd(_untyped_in_loop, (0.5, _P4), (0, 1), jit=False)
    with pytest.raises(pullback.NumbaCompileError, match="np.sum.*\n.*line") as info:
        pullback.grad(_untyped_in_loop, argnums=(0, 1), jit=True)(0.5, _P4)
    assert "g = np.sum(p, axis=k - k) * x" in str(info.value)


# ---------------- cause 12: an element written into an array whose adjoint is still 0.0
def _write_then_early_return(x):
    B = np.zeros(2)
    B[0] = x
    if x > 0.6:
        return x
    B *= x
    return np.sum(B)


def _rebound_array_written_in_a_loop(x, p):
    B = np.zeros(3)
    s = 0.0
    for k in range(3):
        B[k] = x * p[k]
        if p[k] > 0.5:
            s = s + np.sum(B)
        B = B * 0.5
    return s


@pytest.mark.parametrize("x", [0.5, 0.7])
def test_element_write_into_an_array_rebound_later(x, jit):
    check_against_fd(_write_then_early_return, (x,), (0,), jit)
    check_against_fd(_rebound_array_written_in_a_loop, (x, np.array([0.3, 0.7, 0.9])), (0, 1),
                     jit)


def _rebinds_to_its_own_view_then_writes(x):
    B = x * 1.0
    C = B
    B = B[1:]
    B[0] = 1.0          # changes C[1]
    return C[1] * x[0]


def test_x_equals_f_of_x_hands_the_array_over_unless_it_is_a_view(jit):
    with pytest.raises(pullback.UnsupportedSyntaxError, match=r"B = B\[1:\] is a view"):
        pullback.grad(_rebinds_to_its_own_view_then_writes, jit=jit)(np.array([1.0, 2.0, 3.0]))


# ----------------------------------------------- cause 11: a tuple indexed by an int variable
def _tuple_item_by_argument(a, b, c, i):
    t = a, b, c
    return t[i]


def _tuple_items_in_a_loop(a, b, c, p):
    s = 0.0
    for i in range(3):
        t = a * p[i], b, c
        s = s + t[i] * t[(i + 1) % 3]
    return s


@pytest.mark.parametrize("i", [0, 1, 2])
def test_tuple_indexed_by_an_int_variable(i, jit):
    grads = pullback.grad(_tuple_item_by_argument, argnums=(0, 1, 2), jit=jit)(0.1, 0.2, 0.3, i)
    assert grads == tuple(1.0 if k == i else 0.0 for k in range(3))
    check_against_fd(_tuple_items_in_a_loop, (0.1, 0.2, 0.3, np.array([0.5, -1.5, 2.0])),
                     (0, 1, 2, 3), jit)


# ------------------------------------- cause 4: a loop body that rebinds the loop variable
def _inner_loop_reuses_the_variable(p):
    s = 0.0
    for kk in range(4):
        for kk in range(len(p), 0, -1):
            pass
        s = p[kk]
    return s


def _inner_enumerate_reuses_the_variable(p, n):
    c = 0.0
    for m in range(n, -1, -1):
        for m, acc in enumerate(p):
            pass
        c = p[m]
    return c


def _inner_loop_with_work_reuses_the_variable(x, p):
    s = 0.0
    for k in range(3):
        s = s + x * p[k]
        for k in range(k, len(p)):
            s = s * p[k]
        s = s + p[k] * x
    return s


def _assigns_the_loop_variable(x, p):
    s = 0.0
    for i in range(3):
        t = x * p[i]
        i = 3 - i
        s = s + t * p[i]
    return s


def test_loop_body_that_rebinds_the_loop_variable(jit):
    p = np.array([0.3, 0.7, 0.9, 0.2])
    assert_close(pullback.grad(_inner_loop_reuses_the_variable, jit=jit)(p), [0, 1, 0, 0])
    assert_close(pullback.grad(_inner_enumerate_reuses_the_variable, jit=jit)(p, 2),
                 [0, 0, 0, 1])
    check_against_fd(_inner_loop_with_work_reuses_the_variable, (0.5, p), (0, 1), jit)
    check_against_fd(_assigns_the_loop_variable, (0.5, p), (0, 1), jit)


# ------------------------------------- cause 5: a while loop left by break or return
def _while_with_break(p):
    it = 2
    g2 = 0.0
    t = 0.0
    while it >= 0 and g2 < 10.0:
        if it == 0:
            break
        t = p[it]
        it -= 1
    return t


def _while_with_break_in_a_loop(x, p):
    s = 0.0
    for k in range(3):
        y = x * p[k]
        n = 0
        while y * y < 4.0 and n < 5:
            y = y * 1.5 + p[n]
            n += 1
            if y > 1.5:
                break
        s = s + y * p[k]
    return s


def _while_with_return(x, p):
    y = x
    i = 0
    while i < len(p) and y < 3.0:
        y = y * p[i] + x
        if y > 2.0:
            return y * y
        i += 1
    return y


def test_while_loop_left_by_break_or_return(jit):
    assert_close(pullback.grad(_while_with_break, jit=jit)(np.array([0.1, 0.2, 0.3])),
                 [0.0, 1.0, 0.0])
    p = np.array([0.9, 1.2, 0.8, 1.1, 1.3])
    for x in (0.3, 0.9):
        check_against_fd(_while_with_break_in_a_loop, (x, p), (0, 1), jit)
        check_against_fd(_while_with_return, (x, p), (0, 1), jit)


# ------------------------------- cause 9: a view read after a write through the original
def _view_read_after_write(p):
    q = p.copy()
    r = q[1:]
    q[1] = 2 * q[0]
    return r[0]


def _view_of_a_view_read_after_write(p):
    q = p * 1.0
    r = q.reshape(2, 2)
    s = r[1]
    for k in range(2):
        q[k + 2] = q[k] * p[k]
    return np.sum(s * s)


def _alias_read_after_write(p):
    q = p * 1.0
    r = q
    q[0] = q[1] * q[2]
    return np.sum(r * p)


@pytest.mark.parametrize("f", [_view_read_after_write, _view_of_a_view_read_after_write,
                               _alias_read_after_write])
def test_view_read_after_a_write_through_the_original_is_refused(f, jit):
    with pytest.raises(pullback.UnsupportedSyntaxError, match="a view of it") as info:
        pullback.grad(f, jit=jit)(np.array([0.3, 0.7, 0.9, 0.2]))
    assert "test_correctness.py" in str(info.value) and "line" in str(info.value)


def _view_read_before_write(p):
    q = p * 1.0
    r = q[1:]
    t = np.sum(r * r)
    q[1] = 2 * q[0]
    return t + np.sum(q)


def _double_buffered(p):
    h = p * 1.0
    for t in range(3):
        hn = np.zeros(4)
        for i in range(4):
            hn[i] = np.sin(h[i]) * p[i]
        h = hn
    return np.sum(h)


def test_views_that_never_see_a_later_write_are_fine(jit):
    p = np.array([0.3, 0.7, 0.9, 0.2])
    check_against_fd(_view_read_before_write, (p,), (0,), jit)
    check_against_fd(_double_buffered, (p,), (0,), jit)


# ------------------------------------------------- cause 10: lists changed in place
class _MyList(list):
    pass


def _list_as_stack(x):
    st = []
    st.append(x)
    a = st.pop()
    return x * a


def _list_subclass_as_stack(x):
    st = _MyList()
    st.append(x)
    a = st.pop()
    return x * a


def _list_accumulated(x):
    out = []
    for i in range(3):
        out.append(x * i)
    return sum(out)


def _array_sorted_in_place(x):
    q = np.array([x, 2.0 * x, 0.5])
    q.sort()
    return q[0]


@pytest.mark.parametrize("f", [_list_as_stack, _list_subclass_as_stack, _list_accumulated,
                               _array_sorted_in_place])
def test_a_container_changed_in_place_is_refused_at_its_line(f, jit):
    # Once: a crash in generated code, or (a list subclass) the gradient x instead of 2x.
    with pytest.raises(pullback.UnsupportedSyntaxError, match="in place") as info:
        pullback.grad(f, jit=jit)(0.3)
    assert "test_correctness.py" in str(info.value)
    assert "np.zeros" in str(info.value)          # says what to write instead


def _list_literal(x):
    st = [x, 2.0 * x]
    return st[0] * st[1]


def test_a_list_literal_read_by_index_still_works():
    assert_close(pullback.grad(_list_literal)(0.3), 4.0 * 0.3)


# ------------------------------------- arrays whose shape changes from one iteration to the next
def _reassigned_with_a_new_shape(u, w, b):
    s = 0.0
    for k in range(2, 7):
        y = w * u[:k] + b[:1]
        s = s + np.sum(y * y)
    return s


def _slice_of_growing_length(u, w, b):
    u = u.copy()
    for k in range(2, 7):
        u[1:k] = u[1:k] + 0.5 * (u[:k - 1] - 2.0 * w * u[1:k]) + b[:1]
    return np.sum(u * u)


@pytest.mark.parametrize("f", [_reassigned_with_a_new_shape, _slice_of_growing_length])
def test_arrays_whose_shape_changes_every_iteration(f, jit):
    # Once: under Numba, y's adjoint was zeroed with the shape of the newer y (a
    # wrong gradient for b); on Python, the value written into u[1:k] was not saved
    # for its shape (a ValueError in the reverse sweep).
    rng = np.random.default_rng(0)
    check_against_fd(f, (rng.normal(size=8), 0.7, rng.normal(size=3)), (0, 1, 2), jit)


# ------------------------------------- the factors of a decomposition, unpacked
# Their kinds were unknown, and an elementwise call on an unknown value was taken
# for a scalar: the product below lost the sum of its cotangent onto np.max(s)
# (a wrong gradient once max's cotangent took any shape), u[0] gave a list
# cotangent (TypeError).  Found while adding the Numba twins of svd and eigh.
_SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])


def _svd_factor_times_max(A):
    u, s, vh = np.linalg.svd(A)
    return np.sum(np.abs(u[:, 0]) * np.max(s))


def _svd_row_cubed(A):
    u, s, vh = np.linalg.svd(A)
    v2 = u[0]
    return np.sum(v2 ** 3) + np.max(s)


def _eigh_row(A):
    w, v = np.linalg.eigh(A)
    v2 = v * 1.0
    return np.sum(v2[0] ** 2 * w) + w[0]


def _slogdet_parts(A):
    sign, logdet = np.linalg.slogdet(A)
    return sign * logdet * np.sum(A)


def _unknown_times_array(A):
    parts = np.linalg.svd(A)
    return np.sum(np.sin(parts[1]) * A[0])


@pytest.mark.parametrize("f", [_svd_factor_times_max, _svd_row_cubed, _eigh_row, _slogdet_parts,
                               _unknown_times_array], ids=lambda f: f.__name__)
def test_unpacked_factors_of_decompositions(f, jit):
    check_against_fd(f, (_SPD,), (0,), jit)


def test_an_elementwise_call_on_an_unknown_value_is_not_a_scalar():
    from pullback.core.kinds import OTHER, Kind
    from pullback.rules import results
    call = ast.parse("f(t[0], 2.0)").body[0].value
    assert results.like(None, [OTHER, Kind(0, "f")], {}, call) == Kind(-1, "f")
    none_call = ast.parse("f(x, None)").body[0].value      # a literal None stays out
    assert results.like(None, [Kind(0, "f"), OTHER], {}, none_call) == Kind(0, "f")
