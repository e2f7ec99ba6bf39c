"""The peers' own test suites, run through pullback.

The cases live in autograd_cases.py (HIPS autograd's tests/test_numpy.py,
test_systematic.py, test_linalg.py, test_scalar_ops.py and test_binary_ops.py) and
tangent_cases.py (google/tangent's tests/functions.py). Each case is checked

* on the Python backend, against central finite differences of the function
  (Richardson-extrapolated, :func:`richardson_grad`, which only calls the function);
* on the Numba backend (``jit=True``) for the cases marked ``numba=True``: tangent's
  scalar catalogue and the plain loops;
* against HIPS autograd itself, on the very same code with ``np`` rebound to
  ``autograd.numpy`` (skipped when autograd is not installed).

A case passes when the value and every gradient match. The cases that do not pass
today are listed in :data:`PYTHON` and :data:`NUMBA`, one line each, and run as
``xfail(strict=True)``:

* ``missing(rule)``: pullback has no derivative rule yet; the case must raise
  ``MissingRuleError``.
* ``syntax(what)``: the case uses syntax pullback refuses on purpose; it must raise
  ``UnsupportedSyntaxError``.
* ``numba_limit(what)``: a documented limit of the Numba backend (array rules that run
  only on the Python backend); it must raise ``NumbaCompileError``.
* ``wrong(cause)`` and ``crash(cause)``: bugs. A wrong value or gradient, or any other
  exception. When one is fixed its test XPASSes, which fails the run: delete its line.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np
import pytest
from reference import assert_matches_reference

import pullback
from peers import autograd_cases, tangent_cases

ALL = autograd_cases.CASES + tangent_cases.CASES
BY_ID = {c.id: c for c in ALL}


# ------------------------------------------------------------------- expectations
@dataclass(frozen=True)
class Expect:
    kind: str           # "missing", "syntax", "numba", "wrong" or "crash"
    reason: str
    raises: type | None


def missing(rule: str) -> Expect:
    return Expect("missing", f"missing rule: {rule}", pullback.MissingRuleError)


def syntax(what: str) -> Expect:
    return Expect("syntax", f"unsupported syntax: {what}", pullback.UnsupportedSyntaxError)


def numba_limit(what: str) -> Expect:
    return Expect("numba", f"Numba backend limit: {what}", pullback.NumbaCompileError)


def wrong(cause: str) -> Expect:
    return Expect("wrong", f"BUG: {cause}", None)


def crash(cause: str) -> Expect:
    return Expect("crash", f"BUG: {cause}", None)


# Causes shared by several cases.
_R_INDEX = "np.r_[...] / np.c_[...] of differentiated values (use np.concatenate)"

# Python backend (also applies to the autograd cross-check of the same case).
PYTHON: dict[str, Expect] = {
    # ---- autograd tests/test_numpy.py
    "numpy/scalar_array_box_attributes": syntax("assert"),
    "numpy/r_basic": syntax(_R_INDEX),
    "numpy/r_double": syntax(_R_INDEX),
    "numpy/r_node_and_const": syntax(_R_INDEX),
    "numpy/r_mixed": syntax(_R_INDEX),
    "numpy/r_slicing": syntax(_R_INDEX),
    "numpy/c_": syntax(_R_INDEX),
    # ---- autograd tests/test_systematic.py
    # ---- autograd tests/test_linalg.py
    "linalg/eig_real": missing("np.linalg.eig"),
    # ---- autograd tests/test_scalar_ops.py
    # ---- autograd tests/test_binary_ops.py
    # ---- tangent tests/functions.py
    "tangent/dict_wrapper": missing("dict"),
    "tangent/inlining_contextmanager": syntax("with"),
    "tangent/listcomp": syntax("list comprehension outside sum()"),
}

# Numba backend (jit=True), for the cases marked numba=True.
NUMBA: dict[str, Expect] = {
}


def expect(request, table, case_id) -> bool:
    """Mark this test xfail(strict) when its case is listed in ``table``; True if it is."""
    e = table.get(case_id)
    if e is not None:
        request.node.add_marker(pytest.mark.xfail(strict=True, raises=e.raises, reason=e.reason))
    return e is not None


def run_expecting(expected: bool, check, *args) -> None:
    """Run ``check(*args)``. For an expected failure, drop the traceback before pytest
    formats it: pytest re-parses every source file on the stack for each xfail, which
    costs far more than the check itself. The reason in the table names the cause."""
    if not expected:
        check(*args)
        return
    try:
        check(*args)
    except Exception as exc:
        raise exc.with_traceback(None) from None


# ------------------------------------------------------------ finite differences
def richardson_grad(f, args, argnum, rel_step=1e-4):
    """Gradient of scalar ``f`` with respect to ``args[argnum]`` by central differences,
    Richardson-extrapolated: ``(4 D(h/2) - D(h)) / 3`` with ``D(h) = (f(x+h) - f(x-h)) / 2h``,
    which cancels the O(h^2) error term. Shares no code with pullback: it only calls ``f``."""
    args = list(args)
    x = args[argnum]

    def at(v):
        a = list(args)
        a[argnum] = v
        return float(f(*a))

    def d(step_at, h):
        return (at(step_at(h)) - at(step_at(-h))) / (2.0 * h)

    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        h = rel_step * max(1.0, abs(float(x)))
        step = lambda s: float(x) + s
        return (4.0 * d(step, h / 2) - d(step, h)) / 3.0
    x = np.asarray(x)
    out = np.zeros(x.shape)
    xf = x.astype(np.float64)
    for idx in np.ndindex(x.shape):
        h = rel_step * max(1.0, abs(float(xf[idx])))

        def step(s, idx=idx):
            moved = xf.copy()
            moved[idx] += s
            return moved
        out[idx] = (4.0 * d(step, h / 2) - d(step, h)) / 3.0
    return out


def _snapshot(args):
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


def check_case(case, jit: bool) -> None:
    """Value and gradients of ``case`` from pullback against the function, finite
    differences and the reference derivative (every optimisation off), at every
    point of the case. Raises AssertionError on a mismatch."""
    vg = pullback.value_and_grad(case.fn, argnums=case.argnums, jit=jit)
    for args in case.points():
        before = _snapshot(args)
        value, grads = vg(*args)
        expected = case.fn(*_snapshot(args))
        np.testing.assert_allclose(float(value), float(expected), rtol=1e-10, atol=1e-12,
                                   err_msg=f"value at {args!r}")
        for k, g in zip(case.argnums, grads):
            a = args[k]
            if isinstance(a, np.ndarray):
                assert isinstance(g, np.ndarray) and g.shape == a.shape and g.dtype == a.dtype, \
                    f"gradient {type(g).__name__} {np.shape(g)} {getattr(g, 'dtype', '')} " \
                    f"for argument {k} of shape {a.shape} {a.dtype}"
            else:
                assert np.ndim(g) == 0 and not isinstance(g, np.ndarray), \
                    f"gradient {type(g).__name__} for scalar argument {k}"
            fd = richardson_grad(case.fn, _snapshot(args), k)
            np.testing.assert_allclose(np.asarray(g, dtype=float), fd, rtol=case.rtol,
                                       atol=case.atol, err_msg=f"d/darg{k} at {args!r}")
        for a, b in zip(args, before):      # the caller's arrays are never mutated
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b, err_msg="pullback mutated an argument")
        assert_matches_reference(case.fn, args, case.argnums, jit)
        if not jit:
            check_forward_oracle(case, args, grads)


def check_forward_oracle(case, args, grads) -> None:
    """Forward mode against the gradient: the tangent along a random direction equals
    ``<grad, v>`` to 1e-12 of the terms' size.  A primitive without a tangent rule
    is refused (MissingRuleError, located), which is allowed; a wrong tangent is not."""
    rng = np.random.default_rng(7)
    v = [rng.normal(size=np.shape(a)).astype(getattr(a, "dtype", float)) if k in case.argnums
         else None for k, a in enumerate(args)]     # (jvp takes a tangent in its primal's dtype)
    v = [float(t) if t is not None and np.ndim(t) == 0 else t for t in v]
    try:
        _, tangent = pullback.jvp(case.fn, tuple(_snapshot(args)), tuple(v))
    except pullback.MissingRuleError:
        return
    terms = [np.asarray(g, dtype=float) * v[k] for g, k in zip(grads, case.argnums)]
    expected = sum(float(np.sum(t)) for t in terms)
    scale = sum(float(np.sum(np.abs(t))) for t in terms)
    # A float32 argument's gradient is float32 (rounded), as the argument is.
    rtol = 1e-12 if all(np.asarray(args[k]).dtype != np.float32 for k in case.argnums) else 1e-6
    assert abs(float(tangent) - expected) <= rtol * scale + 1e-300, \
        f"jvp's tangent {tangent!r} against the gradient's <grad, v> {expected!r} at {args!r}"


def on_autograd(fn, anp):
    """``fn`` with its global ``np`` rebound to ``autograd.numpy``."""
    g = dict(fn.__globals__)
    g["np"] = anp
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


# ------------------------------------------------------------------------- tests
def test_catalogues():
    assert len(autograd_cases.CASES) >= 250 and len(tangent_cases.CASES) >= 80
    assert len(BY_ID) == len(ALL), "case ids must be unique"
    assert set(PYTHON) <= set(BY_ID), set(PYTHON) - set(BY_ID)
    numba_ids = {c.id for c in ALL if c.numba}
    assert set(NUMBA) <= numba_ids, set(NUMBA) - numba_ids
    assert 10 <= len(numba_ids) <= 20        # Numba compiles are slow: keep this representative


@pytest.mark.parametrize("case_id", list(BY_ID))
def test_python(case_id, request):
    run_expecting(expect(request, PYTHON, case_id), check_case, BY_ID[case_id], False)


@pytest.mark.parametrize("case_id", [c.id for c in ALL if c.numba])
def test_numba(case_id, request):
    run_expecting(expect(request, NUMBA, case_id), check_case, BY_ID[case_id], True)


def check_against_autograd(case, autograd, anp) -> None:
    """pullback's gradients of ``case`` against HIPS autograd's on the same code."""
    ref = on_autograd(case.fn, anp)
    vg = pullback.value_and_grad(case.fn, argnums=case.argnums, jit=False)
    for args in case.points():
        _, grads = vg(*args)
        for k, g in zip(case.argnums, grads):
            expected = autograd.grad(ref, k)(*_snapshot(args))
            np.testing.assert_allclose(np.asarray(g, dtype=float),
                                       np.asarray(expected, dtype=float),
                                       rtol=case.rtol, atol=case.atol,
                                       err_msg=f"d/darg{k} at {args!r}")


@pytest.mark.filterwarnings("ignore:Output seems independent of input")
@pytest.mark.parametrize("case_id", [c.id for c in ALL if c.ref])
def test_autograd_reference(case_id, request):
    anp = pytest.importorskip("autograd.numpy")
    import autograd
    run_expecting(expect(request, PYTHON, case_id), check_against_autograd, BY_ID[case_id],
                  autograd, anp)


# ------------------------------------------------------------- found while porting
# Two bugs met while writing the catalogues, outside any peer's suite.
def _scaled_by(c):
    def scaled(x):
        return c * x
    return scaled


def test_closures_of_one_factory_keep_their_own_values():
    three, two = _scaled_by(3.0), _scaled_by(2.0)
    assert pullback.value_and_grad(three)(1.0) == (3.0, 3.0)
    assert pullback.value_and_grad(two)(1.0) == (2.0, 2.0)


def _tagged(*_):
    return lambda fn: fn


@_tagged([k for k in range(3)])
def _decorated(x):
    return x * x


def test_decorator_expressions_are_not_differentiated():
    assert pullback.grad(_decorated)(3.0) == 6.0
