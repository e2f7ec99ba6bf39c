"""The loop primitives ``scan``, ``foldl``, ``foldr`` and ``accumulate``.

Eagerly they are plain loops: their values are checked against the loops
written out here.  In differentiated code they are desugared into those loops,
so each gradient is checked against central finite differences, against the
gradient of the same loop written by hand, and (scan) against ``jax.lax.scan``
in float64.  The generated derivative must stay a loop adding into the
cotangent of ``xs`` in place, with no dense array per step.
"""
import contextlib
import io
import re

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, check_jit, fd_estimate
from pullback import UnsupportedSyntaxError, accumulate, foldl, foldr, scan

RNG = np.random.default_rng(7)
XS = RNG.uniform(-1.0, 1.0, 6)
P = np.array([0.5, -1.0, 2.0, 0.25, -0.75])


# ---------------------------------------------------------------- eager values

def test_eager_values_equal_the_loops_written_out():
    f = lambda a, v: a * 0.5 + np.sin(v)           # noqa: E731  (not commutative)
    acc, running = 1.0, []
    for v in XS:
        acc = f(acc, v)
        running.append(acc)
    assert foldl(f, XS, 1.0) == acc
    assert_close(accumulate(f, XS, 1.0), running, rtol=0, atol=0)
    right = 1.0
    for v in XS[::-1]:
        right = f(v, right)
    assert foldr(f, XS, 1.0) == right

    step = lambda c, v: (c * 0.9 + v, c * v)           # noqa: E731
    c, ys = 0.3, []
    for v in XS:
        c, y = step(c, v)
        ys.append(y)
    c_out, ys_out = scan(step, 0.3, XS)
    assert c_out == c and np.array_equal(ys_out, ys)
    c, ys = 0.3, [None] * len(XS)
    for i in range(len(XS) - 1, -1, -1):
        c, ys[i] = step(c, XS[i])
    c_out, ys_out = scan(step, 0.3, XS, reverse=True)
    assert c_out == c and np.array_equal(ys_out, ys)
    c_out, ys_out = scan(lambda c, _: (c * 2.0, c), 1.0, None, length=3)
    assert c_out == 8.0 and np.array_equal(ys_out, [1.0, 2.0, 4.0])


def test_eager_array_carries_and_outputs_stack_along_a_new_axis():
    rows = RNG.standard_normal((4, 3))
    c, ys = scan(lambda c, r: (c + r, np.outer(c, r)), np.zeros(3), rows)
    assert c.shape == (3,) and ys.shape == (4, 3, 3)
    assert_close(c, rows.sum(axis=0), rtol=1e-14, atol=0)
    assert accumulate(lambda a, r: a + r, rows, np.zeros(3)).shape == (4, 3)


def test_eager_bad_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match="f must be a function"):
        foldl(3.0, XS, 0.0)
    with pytest.raises(TypeError, match="xs must be an array"):
        foldr(lambda v, a: a + v, 2.0, 0.0)
    with pytest.raises(TypeError, match="give xs, or xs=None with length"):
        scan(lambda c, v: (c, v), 0.0, None)
    with pytest.raises(TypeError, match="length must be an int"):
        scan(lambda c, v: (c, c), 0.0, None, length=2.0)
    with pytest.raises(ValueError, match="length=3 but xs has 6"):
        scan(lambda c, v: (c, v), 0.0, XS, length=3)
    with pytest.raises(TypeError, match="pair"):
        scan(lambda c, v: c + v, 0.0, XS)
    with pytest.raises(ValueError, match="no steps"):
        accumulate(lambda a, v: a + v, np.zeros(0), 0.0)


# ------------------------------------------------- programs and their plain loops

def horner_fold(x, p):
    return foldr(lambda pi, y: x * y + pi, p, 0.0)


def horner_loop(x, p):
    acc = 0.0
    for i in range(len(p) - 1, -1, -1):
        acc = x * acc + p[i]
    return acc


def damped(acc, v):
    return acc * np.cos(v) + v * v


def foldl_program(x, xs):
    return foldl(damped, xs * x, 1.0)


def foldl_loop(x, xs):
    acc, scaled = 1.0, xs * x
    for v in scaled:
        acc = damped(acc, v)
    return acc


def accumulate_program(x, xs):
    return np.sum(accumulate(lambda a, v: np.tanh(a * x + v), xs, 0.5) ** 2)


def accumulate_loop(x, xs):
    a, s = 0.5, 0.0
    for v in xs:
        a = np.tanh(a * x + v)
        s = s + a ** 2
    return s


def scan_program(x, xs):
    def step(c, v):
        return c * x + v, np.sin(c) * v
    c, ys = scan(step, 0.3, xs)
    return c + np.sum(ys * np.arange(1.0, len(xs) + 1.0))


def scan_loop(x, xs):
    c, s = 0.3, 0.0
    for i in range(len(xs)):
        y = np.sin(c) * xs[i]
        c = c * x + xs[i]
        s = s + y * (i + 1.0)
    return c + s


def scan_reverse_program(x, xs):
    c, ys = scan(lambda c, v: (c * x + v, np.sin(c) * v), 0.3, xs, reverse=True)
    return c + np.sum(ys * np.arange(1.0, len(xs) + 1.0))


def scan_reverse_loop(x, xs):
    c, s = 0.3, 0.0
    for i in range(len(xs) - 1, -1, -1):
        y = np.sin(c) * xs[i]
        c = c * x + xs[i]
        s = s + y * (i + 1.0)
    return c + s


def tuple_carry_program(x, xs):
    pair = foldl(lambda ab, v: (ab[0] * x + v, ab[1] + ab[0] * v), xs, (1.0, 0.0))
    return pair[0] * pair[1]


def tuple_carry_loop(x, xs):
    a, b = 1.0, 0.0
    for v in xs:
        a, b = a * x + v, b + a * v
    return a * b


def nested_program(x, xs):
    return foldl(lambda a, v: a + foldr(lambda u, b: b * x + u, xs, v), xs, 0.0)


def nested_loop(x, xs):
    a = 0.0
    for v in xs:
        b = v
        for i in range(len(xs) - 1, -1, -1):
            b = b * x + xs[i]
        a = a + b
    return a


PAIRS = [(nested_program, nested_loop), (horner_fold, horner_loop), (foldl_program, foldl_loop),
         (accumulate_program, accumulate_loop), (scan_program, scan_loop),
         (scan_reverse_program, scan_reverse_loop), (tuple_carry_program, tuple_carry_loop)]


@pytest.mark.parametrize("program,loop", PAIRS, ids=[p.__name__ for p, _ in PAIRS])
def test_gradient_equals_the_plain_loops_and_finite_differences(program, loop):
    x, xs = 0.7, XS.copy()
    assert_close(program(x, xs), loop(x, xs), rtol=1e-13, atol=0)
    dx, dxs = pullback.grad(program, argnums=(0, 1))(x, xs)
    lx, lxs = pullback.grad(loop, argnums=(0, 1))(x, xs)
    assert_close(dx, lx, rtol=1e-12, atol=1e-14)
    assert_close(dxs, lxs, rtol=1e-12, atol=1e-14)
    assert_fd_close(dx, fd_estimate(program, [x, xs], 0))
    assert_fd_close(dxs, fd_estimate(program, [x, xs], 1))
    assert np.array_equal(xs, XS), "the caller's array was changed"


def test_horner_via_foldr_is_the_polynomial_and_its_derivative():
    x = 0.6
    coeffs = P[::-1]            # numpy's polyval takes the highest power first
    assert_close(horner_fold(x, P), np.polyval(coeffs, x), rtol=1e-14, atol=0)
    dx, dp = pullback.grad(horner_fold, argnums=(0, 1))(x, P)
    assert_close(dx, np.polyval(np.polyder(coeffs), x), rtol=1e-13, atol=0)
    assert_close(dp, x ** np.arange(len(P)), rtol=1e-14, atol=0)


def scan_length_program(x):
    c, ys = scan(lambda c, _: ((c[0] * x, c[1] + c[0]), c[1] * x), (1.0, 0.0), None, length=4)
    return c[0] + c[1] + np.sum(ys)


def test_scan_over_a_length_with_a_tuple_carry():
    x = 0.7
    # c = (x^k, 1 + ... + x^(k-1)); ys[k] = x * (1 + ... + x^(k-1)), k = 0..3.
    value = x ** 4 + (1 + x + x**2 + x**3) + x * (1 + (1 + x) + (1 + x + x**2))
    assert_close(scan_length_program(x), value, rtol=1e-14, atol=0)
    slope = 4 * x**3 + (1 + 2 * x + 3 * x**2) + (3 + 4 * x + 3 * x**2)
    assert_close(pullback.grad(scan_length_program)(x), slope, rtol=1e-13, atol=0)


def array_scan_program(w, xs):
    c, ys = scan(lambda h, r: (np.tanh(w * h + r), h * r), np.ones(3), xs)
    return np.sum(c) + np.sum(ys ** 2)


def test_scan_with_array_carries_against_finite_differences():
    w, xs = RNG.uniform(0.5, 1.0, 3), RNG.standard_normal((5, 3))
    dw, dxs = pullback.grad(array_scan_program, argnums=(0, 1))(w, xs)
    assert_fd_close(dw, fd_estimate(array_scan_program, [w, xs], 0))
    assert_fd_close(dxs, fd_estimate(array_scan_program, [w, xs], 1))


def test_scan_gradients_match_jax_lax_scan():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def with_jax(reverse):
        def f(x, xs):
            c, ys = jax.lax.scan(lambda c, v: (c * x + v, jnp.sin(c) * v), 0.3, xs,
                                 reverse=reverse)
            return c + jnp.sum(ys * jnp.arange(1.0, len(xs) + 1.0))
        return jax.grad(f, argnums=(0, 1))

    x = 0.7
    for program, reverse in ((scan_program, False), (scan_reverse_program, True)):
        ours = pullback.grad(program, argnums=(0, 1))(x, XS)
        theirs = with_jax(reverse)(x, jnp.asarray(XS))
        assert_close(ours[0], float(theirs[0]), rtol=1e-12, atol=1e-14)
        assert_close(ours[1], np.asarray(theirs[1]), rtol=1e-12, atol=1e-14)


def horner_scan(x, p):
    ex, none = scan(lambda ex, pi: (x * ex + pi, None), p[-1], p[:-1], reverse=True)
    return ex


def test_scan_without_outputs_is_horner_as_jax_writes_it():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = 0.6
    assert scan(lambda c, v: (c + v, None), 0.0, P) == (P.sum(), None)
    assert_close(horner_scan(x, P), np.polyval(P[::-1], x), rtol=1e-14, atol=0)

    def with_jax(x, p):
        ex, _ = jax.lax.scan(lambda ex, pi: (x * ex + pi, None), p[-1], p[:-1], reverse=True)
        return ex
    ours = pullback.grad(horner_scan, argnums=(0, 1))(x, P)
    theirs = jax.grad(with_jax, argnums=(0, 1))(x, jax.numpy.asarray(P))
    assert_close(ours[0], float(theirs[0]), rtol=1e-13, atol=0)
    assert_close(ours[1], np.asarray(theirs[1]), rtol=1e-13, atol=1e-15)


# ------------------------------------------------------------ f and its forms

def module_step(acc, v):
    return acc * v + 1.0


def forms_program(x, xs):
    def nested(acc, v):
        return acc + x * v
    a = foldl(nested, xs, 0.0)
    b = foldl(module_step, xs, x)
    c = foldl(np.add, xs * x, 0.0)              # a primitive with a rule
    XS, N, ACC = xs, 2.0, x                     # the template's placeholders' names
    d = foldr(lambda v, acc: acc * N + v * ACC, XS, 0.0)
    return a * b + c + d


def test_f_may_be_a_nested_def_a_module_function_or_a_primitive():
    x = 0.4
    dx, dxs = pullback.grad(forms_program, argnums=(0, 1))(x, XS)
    assert_fd_close(dx, fd_estimate(forms_program, [x, XS], 0))
    assert_fd_close(dxs, fd_estimate(forms_program, [x, XS], 1))


@pytest.mark.parametrize("program", [horner_fold, scan_program])
def test_forward_mode_against_finite_differences(program):
    x, v = 0.6, RNG.standard_normal(len(P))
    value, tangent = pullback.jvp(program, (x, P), (0.5, v))
    assert_close(value, program(x, P), rtol=1e-14, atol=0)
    expected = 0.5 * fd_estimate(program, [x, P], 0).value \
        + fd_estimate(program, [x, P], 1).value @ v
    assert_close(tangent, expected, rtol=1e-7, atol=1e-9)


def test_the_derivative_is_a_loop_adding_into_dp_in_place():
    g = pullback.grad(horner_fold, argnums=(0, 1))
    g(0.6, P)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        pullback.show(g, 0.6, P)
    source = out.getvalue()
    assert len(re.findall(r"^\s+for ", source, re.M)) == 2      # forward and reverse
    assert re.search(r"dp\[\w+\] \+= ", source)
    assert "zeros" not in source.split("for ")[1], "an array allocated per step"


def test_jit_horner_via_foldr_and_via_scan_without_outputs():
    check_jit(horner_fold, [0.6, P], argnums=(0, 1))
    check_jit(horner_scan, [0.6, P], argnums=(0, 1))      # (carry, None) under Numba


# ------------------------------------------------------------------ refusals

def make_step():
    return lambda a, v: a + v


def computed_f(xs):
    return foldl(make_step(), xs, 0.0)


def both_xs_and_length(xs):
    c, ys = scan(lambda c, v: (c + v, c), 0.0, xs, length=3)
    return c


def computed_reverse(xs, flag):
    c, ys = scan(lambda c, v: (c + v, c), 0.0, xs, reverse=flag)
    return c


def missing_init(xs):
    return foldl(lambda a, v: a + v, xs)


def tuple_xs(xs):
    c, ys = scan(lambda c, v: (c + v[0] * v[1], c), 0.0, (xs, xs))
    return c


@pytest.mark.parametrize("program,args,what", [
    (tuple_xs, (XS,), "scan() over a tuple of arrays"),
    (computed_f, (XS,), "f=make_step()"),
    (both_xs_and_length, (XS,), "both xs and length"),
    (computed_reverse, (XS, True), "reverse=flag"),
    (missing_init, (XS,), "missing a required argument: 'init'"),
])
def test_refusals_name_the_construct_and_line(program, args, what):
    with pytest.raises(UnsupportedSyntaxError) as info:
        pullback.grad(program)(*args)
    assert what in str(info.value)
    code = program.__code__
    assert info.value.lineno in range(code.co_firstlineno + 1, code.co_firstlineno + 3)


def test_scan_of_a_def_returning_no_output_is_refused_not_nan():
    """f written as a def returning (carry, None): the transform cannot see the None,
    and stacking it gave an array of NaN; it is a TypeError when it runs."""
    def step(c, x):
        return c * x + 1.0, None

    def f(xs):
        c, ys = pullback.scan(step, 0.5, xs)
        return c + np.sum(ys)
    with pytest.raises(TypeError, match="nothing to stack"):
        pullback.grad(f)(np.array([1.0, 2.0, 3.0]))
