"""Control flow and the plain-Python constructs of scientific code, one small function
each, on both backends, against central finite differences; then the errors a user
gets for what is not supported, and the promises about the caller's arrays.

Known failures are ``xfail(strict=True)`` with the reason: they flip to XPASS (a
failure) once fixed, and the mark must then go.
"""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate


# ======================================================================= constructs
def if_elif_else(p):
    s = 0.0
    for i in range(len(p)):
        if p[i] < -1.0:
            s += -p[i]
        elif p[i] < 1.0:
            s += p[i] * p[i]
        else:
            s += 2.0 * math.sqrt(p[i])
    return s


def if_without_else(x, y):
    z = x * y
    if x > y:
        z = z * x
    return z


def conditional_expression(p, c):
    s = 0.0
    for i in range(len(p)):
        s += p[i] * c if p[i] > 0.0 else p[i] * p[i]
    return s


def cond_and(x, y):
    if x > 0.0 and y > 0.0:
        return x * y
    return x + y


def cond_or(x, y):
    if x < 0.0 or y < 0.0:
        return x * y
    return x + y


def cond_not(x):
    if not x > 1.0:
        return x * x
    return 3.0 * x


def loop_cond_and(p):
    s = 0.0
    for i in range(len(p)):
        if p[i] > 0.1 and p[i] < 1.0:
            s += p[i] * p[i]
        else:
            s += 3.0 * p[i]
    return s


def loop_cond_or(p):
    s = 0.0
    for i in range(len(p)):
        if p[i] < -1.0 or p[i] > 1.0:
            s += p[i] * p[i]
        else:
            s += 3.0 * p[i]
    return s


def loop_cond_not(p):
    s = 0.0
    for i in range(len(p)):
        if not p[i] > 0.0:
            s += p[i] * p[i]
        else:
            s += 3.0 * p[i]
    return s


def while_cond_and(xs, q):
    i = 0
    while i < len(xs) - 2 and xs[i + 1] < q:
        i += 1
    return xs[i] * q + xs[i + 1]


def while_and_in_for(xs, qs):
    total = 0.0
    for q in qs:
        i = 0
        while i < len(xs) - 2 and xs[i + 1] < q:
            i += 1
        total += xs[i] * q
    return total


def for_break(p):
    s = 0.0
    for i in range(len(p)):
        s += p[i] * p[i]
        if s > 1.0:
            break
    return s


def while_break(x):
    y = x
    k = 0
    while True:
        y = y * 1.1
        k += 1
        if y > 3.0 or k > 50:
            break
    return y


def for_continue(p):
    s = 0.0
    for i in range(len(p)):
        if p[i] < 0.0:
            continue
        s += p[i] * p[i]
    return s


def return_in_loop(p, limit):
    for i in range(len(p)):
        if p[i] > limit:
            return p[i] * p[i]
    return p[0]


def return_in_branch(x, y):
    if x > y:
        return x * x - y
    elif x > 0.0:
        return x * y
    else:
        return y - x


def nested_depth3(T, a):
    s = 0.0
    for i in range(T.shape[0]):
        for j in range(T.shape[1]):
            for k in range(T.shape[2]):
                s += T[i, j, k] * a[i] * a[j] * a[k]
    return s


def for_zip(p, w):
    s = 0.0
    for a, b in zip(p, w):
        s += a * b * a
    return s


def for_enumerate(p):
    s = 0.0
    for i, v in enumerate(p):
        s += (i + 1.0) * v * v
    return s


def for_enumerate_zip(w, X, y):
    """Least squares over the rows of a matrix and a vector, each row weighted."""
    L = 0.0
    for i, (row, yi) in enumerate(zip(X, y)):
        r = np.dot(row, w) - yi
        L += (i + 1) * r * r
    return L


def for_enumerate_zip_offset(p, w):
    s = 0.0
    for k, (a, b) in enumerate(zip(p, w), 2):
        s += k * a * b * a
    return s


def for_reversed_range(p):
    acc = 0.0
    for i in reversed(range(len(p))):
        acc = acc * 0.5 + p[i]
    return acc


def abs_min_max2(x, y):
    return abs(x - y) + min(x, y) * max(x, 0.5) + max(y, x) * min(-x, y)


def min_max3(x, y, z):
    return max(x, y, z) + 2.0 * min(x, y, z)


def float_and_int(p, x):
    k = int(x)
    s = float(k) * x
    for i in range(len(p)):
        s += float(i) * p[i] + float(p[i]) * x
    return s


def _scale(v, factor=2.0, offset=0.0):
    return factor * v + offset


def kwargs_and_defaults(x, y):
    return _scale(x) + _scale(x, 3.0) + _scale(x, offset=y) + _scale(v=y, factor=x)


def helper_in_loop(p, x):
    s = 0.0
    for i in range(len(p)):
        s += _scale(p[i], factor=x, offset=s * 0.1)
    return s


def out_imul(p, r):
    out = np.ones(len(p))
    for i in range(len(p)):
        out[i] *= 1.0 + r * p[i]
        out[i] *= p[i]
    s = 0.0
    for i in range(len(p)):
        s += out[i]
    return s


def cumsum_into_output(p):
    n = len(p)
    out = np.zeros(n)
    out[0] = p[0]
    for i in range(1, n):
        out[i] = out[i - 1] + p[i]
    s = 0.0
    for i in range(n):
        s += out[i] * out[i]
    return s


def empty_like_copy(p):
    q = np.empty_like(p)
    for i in range(len(p)):
        q[i] = 2.0 * p[i]
    return q[0] * q[1] + q[2]


def np_array_copy(p):
    q = np.array(p)
    q[0] = q[0] * q[1]
    return q[0] + q[1] * q[2]


def dot_copy(p):
    q = p.copy()
    q[1] = q[1] * q[0]
    return q[1] * q[2]


def swap_in_copy(p, w):
    q = p.copy()
    for j in range(len(q) - 1):
        if q[j] > q[j + 1]:
            q[j], q[j + 1] = q[j + 1], q[j]
    s = 0.0
    for i in range(len(q)):
        s += w[i] * q[i]
    return s


def index_2d(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += A[i, j] * x[i] * x[j]
    return s


def index_chained(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += A[i][j] * x[i] * x[j]
    return s


def newton_while(a):
    x = a
    while abs(x * x - a) > 1e-13 * a:
        x = 0.5 * (x + a / x)
    return x


def call_rebinds_argument(x):
    y = x * 2.0
    y = math.sin(y)
    return y


def numpy_constants(x):
    return x * np.pi + min(x, np.inf)


def own_default_parameter(x, c=3.0):
    return c * x * x


def loop_variable_reused_after_empty_loop(p):
    s = 0.0
    for i in range(1, len(p)):
        s = s + p[i]
    for i in range(len(p)):
        s = s + p[i] * p[i]
    return s


def _p(*v):
    return np.array(v, dtype=float)


_NB_NP_ARRAY = "Numba itself does not compile np.array(an array) (the primal fails the same way)"

# (function, args, argnums, python-xfail reason, numba-xfail reason)
CASES = [
    (if_elif_else, (_p(-2.0, -0.3, 0.4, 1.7, 3.0),), (0,), None, None),
    (if_without_else, (1.3, 0.4), (0, 1), None, None),
    (if_without_else, (0.3, 0.4), (0, 1), None, None),
    (conditional_expression, (_p(-2.0, 0.5, -0.1, 1.7), 0.7), (0, 1), None, None),
    (cond_and, (0.7, 0.4), (0, 1), None, None),
    (cond_and, (0.7, -0.4), (0, 1), None, None),
    (cond_or, (-0.7, 0.4), (0, 1), None, None),
    (cond_or, (0.7, 0.4), (0, 1), None, None),
    (cond_not, (0.5,), (0,), None, None),
    (cond_not, (1.5,), (0,), None, None),
    (loop_cond_and, (_p(-2.0, 0.3, 1.7, 0.5, 2.5),), (0,), None, None),
    (loop_cond_or, (_p(0.3, -2.0, 1.7, 0.5, -0.5),), (0,), None, None),
    (loop_cond_not, (_p(-2.0, 0.3, 1.7, -0.5),), (0,), None, None),
    (while_cond_and, (_p(0.0, 1.0, 2.0, 3.0, 4.0), 2.5), (0, 1), None, None),
    (while_and_in_for, (_p(0.0, 1.0, 2.0, 3.0), _p(2.5, 1.5)), (0, 1), None, None),
    (for_break, (_p(0.5, 0.7, 0.2, 0.9),), (0,), None, None),
    (while_break, (0.7,), (0,), None, None),
    (for_continue, (_p(0.5, -0.7, 0.2, 0.9),), (0,), None, None),
    (return_in_loop, (_p(0.3, 0.7, 1.4, 2.0), 1.0), (0,), None, None),
    (return_in_loop, (_p(0.3, 0.7, 0.4), 1.0), (0,), None, None),
    (return_in_branch, (1.3, 0.4), (0, 1), None, None),
    (return_in_branch, (0.3, 0.4), (0, 1), None, None),
    (return_in_branch, (-0.3, 0.4), (0, 1), None, None),
    (nested_depth3, (np.arange(24.0).reshape(2, 3, 4) / 10, _p(0.5, -1.0, 0.3, 0.8)), (0, 1), None, None),
    (for_zip, (_p(0.5, -0.7, 0.2), _p(1.0, 2.0, 3.0)), (0, 1), None, None),
    (for_enumerate, (_p(0.5, -0.7, 0.2),), (0,), None, None),
    (for_enumerate_zip, (_p(0.5, -0.7, 0.2), np.arange(12.0).reshape(4, 3) / 7 - 0.6,
                         _p(1.0, -2.0, 0.3, 0.8)), (0, 1, 2), None, None),
    (for_enumerate_zip_offset, (_p(0.5, -0.7, 0.2), _p(1.0, 2.0, 3.0, 4.0)), (0, 1), None, None),
    (for_reversed_range, (_p(0.5, -0.7, 0.2, 1.1),), (0,), None, None),
    (abs_min_max2, (0.7, 0.2), (0, 1), None, None),
    (abs_min_max2, (0.2, 0.7), (0, 1), None, None),
    (min_max3, (0.7, 0.2, 1.3), (0, 1, 2), None, None),
    (float_and_int, (_p(0.5, -0.7, 0.2), 2.3), (0, 1), None, None),
    (kwargs_and_defaults, (0.7, 0.2), (0, 1), None, None),
    (helper_in_loop, (_p(0.5, -0.7, 0.2), 1.3), (0, 1), None, None),
    (out_imul, (_p(0.5, -0.7, 0.2), 1.3), (0, 1), None, None),
    (cumsum_into_output, (_p(0.5, -0.7, 0.2, 1.0),), (0,), None, None),
    (empty_like_copy, (_p(0.5, -0.7, 0.2),), (0,), None, None),
    (np_array_copy, (_p(0.5, -0.7, 0.2),), (0,), None, _NB_NP_ARRAY),
    (dot_copy, (_p(0.5, -0.7, 0.2),), (0,), None, None),
    (swap_in_copy, (_p(0.5, -0.7, 0.2, 1.4, 0.9), _p(1.0, 2.0, 3.0, 4.0, 5.0)), (0, 1), None, None),
    (index_2d, (np.arange(6.0).reshape(2, 3) / 7, _p(0.5, -0.7, 0.2)), (0, 1), None, None),
    (index_chained, (np.arange(9.0).reshape(3, 3) / 7, _p(0.5, -0.7, 0.2)), (0, 1), None, None),
    (newton_while, (2.7,), (0,), None, None),
    (call_rebinds_argument, (0.7,), (0,), None, None),
    (numpy_constants, (0.7,), (0,), None, None),
    (own_default_parameter, (0.7,), (0,), None, None),
    (loop_variable_reused_after_empty_loop, (_p(0.7),), (0,), None, None),
    (loop_variable_reused_after_empty_loop, (_p(0.7, 0.2),), (0,), None, None),
]


def _case_ids():
    ids, seen = [], {}
    for f, *_ in CASES:
        n = sum(c[0] is f for c in CASES)
        seen[f] = seen.get(f, -1) + 1
        ids.append(f.__name__ if n == 1 else f"{f.__name__}-{seen[f]}")
    return ids


@pytest.mark.parametrize("case", CASES, ids=_case_ids())
def test_construct_matches_finite_differences(case, jit, request):
    f, args, argnums, py_reason, nb_reason = case
    reason = nb_reason if jit else py_reason
    if reason:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))
    value, grads = pullback.value_and_grad(f, argnums=argnums, jit=jit)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12, abs=1e-14)
    for k, g in zip(argnums, grads):
        assert_fd_close(g, fd_estimate(f, args, k), rtol=1e-5, atol=1e-6)


def test_array_factories_are_not_inlined_from_numpy_source():
    def f(p):
        a = np.ones(len(p))
        b = np.full(3, 2.0)
        a[0] = p[0] * b[1]
        return a[0] * p[1]
    g = pullback.grad(f)
    assert_close(g(_p(0.5, -0.7, 0.2)), _p(-1.4, 1.0, 0.0))
    assert "copyto" not in g.source and "_with_like" not in g.source


def test_newton_while_gives_the_analytic_derivative(jit):
    g = pullback.grad(newton_while, jit=jit)
    for a in (0.3, 2.7, 50.0):
        assert g(a) == pytest.approx(0.5 / math.sqrt(a), rel=1e-10)


# ======================================================================= errors
def uses_with(x):
    with open("/dev/null"):  # <- a `with` statement
        y = x * x
    return y


def uses_try(x):
    try:  # <- a `try` statement
        y = x * x
    except ValueError:
        y = x
    return y


def uses_raise(x):
    if x < 0.0:
        raise ValueError("negative")  # <- a `raise` statement
    return x * x


def uses_yield(x):
    yield x * x  # <- `yield`


def uses_class(x):
    class Box:  # <- a class definition
        pass
    return x * x


_G = 0.0


def uses_global_write(x):
    global _G  # <- a `global` statement
    _G = x
    return x * x


def uses_exec(x):
    exec("pass")  # <- a call to exec()
    return x * x


def uses_list_comprehension(p):
    q = [v * v for v in p]  # <- a list comprehension
    return q[0]


def uses_generator_expression(p):
    return max(v * v for v in p)  # <- a generator expression


def uses_loop_else(p):
    s = 0.0
    for i in range(len(p)):  # <- a loop with an `else:` clause
        s += p[i]
    else:
        s += 1.0
    return s


def uses_while_else(x):
    while x < 1.0:  # <- a loop with an `else:` clause
        x = x * 2.0
    else:
        x = x + 1.0
    return x


def uses_star_args(x, *rest):  # <- *args
    return x * x


def _two(a, b):
    return a * b


def uses_starred_call(p):
    return _two(*p)  # <- a starred expression (*args)


UNSUPPORTED = [
    (uses_with, (0.5,)), (uses_try, (0.5,)), (uses_raise, (0.5,)), (uses_yield, (0.5,)),
    (uses_class, (0.5,)), (uses_global_write, (0.5,)), (uses_exec, (0.5,)),
    (uses_list_comprehension, (_p(0.5, 1.0),)), (uses_generator_expression, (_p(0.5, 1.0),)),
    (uses_loop_else, (_p(0.5, 1.0),)), (uses_while_else, (0.5,)), (uses_star_args, (0.5,)),
    (uses_starred_call, (_p(0.5, 1.0),)),
]


def _marked_line(f):
    """(absolute line number, construct named in the `# <-` comment) of f."""
    lines, start = inspect.getsourcelines(f)
    for k, line in enumerate(lines):
        if "# <- " in line:
            return start + k, line.split("# <- ")[1].strip()
    raise AssertionError(f"{f.__name__} has no marked line")


@pytest.mark.parametrize("f, args", UNSUPPORTED, ids=[f.__name__ for f, _ in UNSUPPORTED])
def test_unsupported_construct_is_located(f, args):
    line, construct = _marked_line(f)
    with pytest.raises(pullback.UnsupportedSyntaxError) as info:
        pullback.grad(f)(*args)
    err = info.value
    text = str(err)
    assert err.lineno == line
    assert f"line {line}" in text
    assert __file__ in text and err.filename == __file__
    assert construct in text, f"{construct!r} not named in:\n{text}"


def test_unsupported_construct_is_reported_before_any_numba_compile():
    with pytest.raises(pullback.UnsupportedSyntaxError):
        pullback.grad(uses_try, jit=True)(0.5)


def cbrt_of_x(x):
    return math.cbrt(x) * x


def frexp_of_x(x):
    m = np.frexp(x)
    return m[0] * x


@pytest.mark.parametrize("f, name", [(cbrt_of_x, "cbrt"), (frexp_of_x, "frexp")])
def test_c_function_without_rule_raises_missing_rule(f, name, jit):
    with pytest.raises(pullback.MissingRuleError) as info:
        pullback.grad(f, jit=jit)(1.5)
    text = str(info.value)
    assert name in text
    assert __file__ in text
    line = inspect.getsourcelines(f)[1] + 1
    assert f"line {line}" in text


def test_function_defined_by_exec_has_no_source():
    namespace = {}
    exec("def square(x):\n    return x * x\n", namespace)
    with pytest.raises(pullback.SourceUnavailableError) as info:
        pullback.grad(namespace["square"])(1.5)
    assert "square" in str(info.value)


def test_argnums_out_of_range(jit):
    with pytest.raises(ValueError, match="argnums"):
        pullback.grad(if_without_else, argnums=2, jit=jit)(1.0, 2.0)
    with pytest.raises(ValueError, match="argnums"):
        pullback.grad(if_without_else, argnums=(0, -3), jit=jit)(1.0, 2.0)


def test_differentiating_an_int_is_a_type_error(jit):
    def f(x, n):
        s = 0.0
        for _ in range(n):
            s = s + x
        return s
    with pytest.raises(TypeError, match="argument 1"):
        pullback.grad(f, argnums=1, jit=jit)(1.0, 3)
    with pytest.raises(TypeError):
        pullback.grad(f, argnums=0, jit=jit)(2, 3)
    with pytest.raises(TypeError):
        pullback.grad(np_array_copy, jit=jit)(np.array([1, 2, 3]))


# ======================================================================= caller's arrays
def writes_into_copy(p, x):
    q = p.copy()
    for i in range(len(q)):
        q[i] = q[i] * x + 1.0
    q[0] = q[0] * q[1]
    s = 0.0
    for i in range(len(q)):
        s += q[i] * q[i]
    return s


def writes_into_argument(p, x):
    p[0] = p[0] * x + p[1]
    p[1] = math.sin(p[0])
    s = 0.0
    for i in range(len(p)):
        p[i] = p[i] * p[i]
        s += p[i]
    return s


def test_caller_array_unchanged_when_function_writes_into_a_copy(jit):
    p = _p(0.5, 1.5, -0.7)
    before = p.copy()
    dp, dx = pullback.grad(writes_into_copy, argnums=(0, 1), jit=jit)(p, 0.3)
    np.testing.assert_array_equal(p, before)
    assert_fd_close(dp, fd_estimate(writes_into_copy, (p, 0.3), 0))
    assert_fd_close(dx, fd_estimate(writes_into_copy, (p, 0.3), 1))
    np.testing.assert_array_equal(p, before)


def test_function_writing_into_its_argument(jit):
    p = _p(0.5, 1.5, -0.7)
    before = p.copy()
    value, (dp, dx) = pullback.value_and_grad(writes_into_argument, argnums=(0, 1), jit=jit)(p, 0.3)
    np.testing.assert_array_equal(p, before)         # the caller's array is left alone

    def fresh(p, x):                                 # the reference: a fresh copy per call
        return writes_into_argument(p.copy(), x)
    assert value == pytest.approx(fresh(before, 0.3), rel=1e-12)
    assert_fd_close(dp, fd_estimate(fresh, (before, 0.3), 0))
    assert_fd_close(dx, fd_estimate(fresh, (before, 0.3), 1))
