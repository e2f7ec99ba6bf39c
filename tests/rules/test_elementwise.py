import ast

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pullback.rules import (
    cumulative,
    diagonals,
    einsum,
    elementwise,
    extrema,
    indexing,
    linalg,
    norm,
    piecewise,
    reductions,
    shapes,
    solve,
    tensor_products,
    weighted,
)
from pullback.rules.elementwise import unbroadcast, unbroadcast_product
from pullback.rules.indexing import getitem_vjp
from pullback.rules.polynomial import polyval_vjp_p, polyval_vjp_x
from pullback.rules.reductions import sum_vjp
from pullback.rules.registry import _RULES, lookup, method

from .checks import SETTINGS, check_vjp, rule_vjp, seeds, values
from .checks import shapes as shape_st

broadcastable = hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3)

# (function, low, high): a domain away from poles and kinks; None = standard normal.
UNARY = [
    (np.sin, None, None), (np.cos, None, None), (np.tan, -1.2, 1.2), (np.exp, None, None),
    (np.log, 0.3, 3.0), (np.log1p, -0.5, 3.0), (np.expm1, None, None), (np.sqrt, 0.3, 3.0),
    (np.tanh, None, None), (np.sinh, None, None), (np.cosh, None, None),
    (np.arctan, None, None), (np.arcsin, -0.9, 0.9), (np.arccos, -0.9, 0.9),
    (np.abs, None, None), (np.fabs, None, None), (np.negative, None, None),
    (np.square, None, None), (np.reciprocal, 0.3, 3.0),
    (np.log2, 0.3, 3.0), (np.log10, 0.3, 3.0), (np.exp2, None, None), (np.arcsinh, None, None),
    (np.arccosh, 1.2, 3.0), (np.arctanh, -0.8, 0.8), (np.deg2rad, None, None),
    (np.radians, None, None), (np.rad2deg, None, None), (np.degrees, None, None),
    (np.sinc, None, None), (np.nan_to_num, None, None), (np.conjugate, None, None),
]

# (function, domain of x1, domain of x2)
BINARY = [
    (np.add, None, None), (np.subtract, None, None), (np.multiply, None, None),
    (np.divide, None, (0.5, 2.0)), (np.true_divide, None, (0.5, 2.0)),
    (np.power, (0.3, 2.0), (-2.0, 2.0)), (np.maximum, None, None), (np.minimum, None, None),
    (np.remainder, None, (0.5, 2.0)), (np.mod, None, (-2.0, -0.5)), (np.fmod, None, (0.5, 2.0)),
    (np.fmod, None, (-2.0, -0.5)), (np.logaddexp, None, None), (np.logaddexp2, None, None),
    (np.hypot, None, None), (np.arctan2, None, None), (np.fmax, None, None),
    (np.fmin, None, None),
]


def _vals(seed, shape, dom):
    return values(seed, shape) if dom is None else values(seed, shape, *dom)


# ---------------------------------------------------------------------------
# unbroadcast

@SETTINGS
@given(broadcastable, seeds)
def test_unbroadcast_is_the_adjoint_of_broadcasting(shapes_, seed):
    (xshape, _), out = shapes_.input_shapes, shapes_.result_shape
    g = values(seed, out)
    v = values(seed + 1, xshape)
    ct = unbroadcast(g, v)
    assert np.shape(ct) == xshape
    np.testing.assert_allclose(np.sum(ct * v), np.sum(g * np.broadcast_to(v, out)), rtol=1e-10,
                               atol=1e-10)


def test_unbroadcast_scalars_and_identity():
    g = np.arange(6.0).reshape(2, 3)
    assert unbroadcast(g, g) is g
    s = unbroadcast(g, 2.0)
    assert isinstance(s, np.float64) and s == 15.0
    assert isinstance(unbroadcast(np.array(3.0), np.float64(1.0)), np.float64)
    np.testing.assert_array_equal(unbroadcast(g, np.ones((2, 1))), [[3.0], [12.0]])
    np.testing.assert_array_equal(unbroadcast(g, np.ones((1, 1, 3))), [[[3.0, 5.0, 7.0]]])
    # A scalar cotangent for an array argument is broadcast up.
    np.testing.assert_array_equal(unbroadcast(2.0, np.ones((2, 2))), np.full((2, 2), 2.0))


@SETTINGS
@given(broadcastable, seeds)
def test_unbroadcast_product_sums_the_product_onto_a_scalar(shapes_, seed):
    """``c * u``'s cotangent of the scalar c is sum(g * u): one dot product where
    the shapes agree, otherwise (broadcast operands, float32, an array x) the
    plain unbroadcast of the product."""
    (ashape, bshape), _ = shapes_.input_shapes, shapes_.result_shape
    a, b = values(seed, ashape), values(seed + 1, bshape)
    for x in (0.5, np.float64(0.5), np.float32(0.5), np.ones(()), np.ones((1,) * len(ashape))):
        expected = np.sum(a * b) if np.ndim(x) == 0 else unbroadcast(a * b, x)
        got = unbroadcast_product(a, b, x)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
        assert np.shape(got) == np.shape(unbroadcast(a * b, x))
    af = a.astype(np.float32)
    np.testing.assert_allclose(unbroadcast_product(af, b, 0.5), np.sum(af * b), rtol=1e-6)


# ---------------------------------------------------------------------------
# ufunc templates, evaluated as the transform will (wrapped in unbroadcast)

@pytest.mark.parametrize("fn, low, high", UNARY, ids=[f.__name__ for f, _, _ in UNARY])
@SETTINGS
@given(shape=shape_st, seed=seeds)
def test_unary(fn, low, high, shape, seed):
    x = values(seed, shape, low, high) if low is not None else values(seed, shape)
    check_vjp(fn, rule_vjp(fn, "x"), [x], 0)


@pytest.mark.parametrize("fn", [f for f, _, _ in UNARY[:6]], ids=lambda f: f.__name__)
def test_unary_python_scalar(fn):
    check_vjp(fn, rule_vjp(fn, "x"), [0.7], 0)


@pytest.mark.parametrize("fn, d1, d2", BINARY, ids=[f.__name__ for f, _, _ in BINARY])
@SETTINGS
@given(shapes_=broadcastable, seed=seeds)
def test_binary_broadcasting(fn, d1, d2, shapes_, seed):
    s1, s2 = shapes_.input_shapes
    args = [_vals(seed, s1, d1), _vals(seed + 1, s2, d2)]
    check_vjp(fn, rule_vjp(fn, "x1"), args, 0)
    check_vjp(fn, rule_vjp(fn, "x2"), args, 1)


@pytest.mark.parametrize("fn, d1, d2", BINARY, ids=[f.__name__ for f, _, _ in BINARY])
def test_binary_with_python_scalar(fn, d1, d2):
    x = _vals(1, (3,), d1)
    y = float(_vals(2, (), d2))
    check_vjp(fn, rule_vjp(fn, "x2"), [x, y], 1)
    check_vjp(fn, rule_vjp(fn, "x1"), [float(x[0]), _vals(3, (2, 2), d2)], 0)


def test_maximum_minimum_ties_split_evenly():
    x = np.array([1.0, 2.0, 3.0])
    for fn in (np.maximum, np.minimum):
        ans = fn(x, x)
        g = np.ones(3)
        np.testing.assert_array_equal(rule_vjp(fn, "x1")(g, ans, x, x), [0.5] * 3)
        np.testing.assert_array_equal(rule_vjp(fn, "x2")(g, ans, x, x), [0.5] * 3)


def test_abs_at_zero_is_zero():
    x = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(rule_vjp(np.abs, "x")(np.ones(3), np.abs(x), x), [-1.0, 0.0, 1.0])


def test_zero_safe_points():
    with np.errstate(all="raise"):
        assert rule_vjp(np.hypot, "x1")(1.0, 0.0, 0.0, 0.0) == 0.0
        assert rule_vjp(np.sinc, "x")(1.0, 1.0, 0.0) == 0.0
    check_vjp(np.sinc, rule_vjp(np.sinc, "x"), [np.array([-1.5, 1e-3, 0.5, 2.0])], 0)


def test_nan_aware_and_non_finite():
    x = np.array([1.0, np.nan, np.nan, 2.0])
    y = np.array([np.nan, 3.0, np.nan, 1.0])
    g = np.ones(4)
    np.testing.assert_array_equal(rule_vjp(np.fmax, "x1")(g, np.fmax(x, y), x, y), [1, 0, 1, 1])
    np.testing.assert_array_equal(rule_vjp(np.fmax, "x2")(g, np.fmax(x, y), x, y), [0, 1, 0, 0])
    np.testing.assert_array_equal(rule_vjp(np.fmin, "x2")(g, np.fmin(x, y), x, y), [0, 1, 0, 1])
    z = np.array([np.inf, -np.inf, np.nan, 0.5])
    np.testing.assert_array_equal(rule_vjp(np.nan_to_num, "x")(g, np.nan_to_num(z), z),
                                  [0, 0, 0, 1])


@SETTINGS
@given(shape=shape_st, seed=seeds)
def test_complex_parts_of_real_inputs(shape, seed):
    x = values(seed, shape)
    check_vjp(np.real, rule_vjp(np.real, "val"), [x], 0)
    check_vjp(np.real_if_close, rule_vjp(np.real_if_close, "a"), [x], 0)
    for fn in (np.imag, np.angle):
        assert not lookup(fn).differentiable


def test_power_is_zero_safe():
    x = np.array([0.0, 0.0, 0.0, 2.0])
    y = np.array([2.0, 0.0, 1.0, 0.0])
    with np.errstate(all="raise"):   # no 0 * inf, no log(0) on the way
        ans = np.power(x, y)
        gy = rule_vjp(np.power, "x2")(np.ones(4), ans, x, y)
        gx = rule_vjp(np.power, "x1")(np.ones(4), ans, x, y)
    np.testing.assert_array_equal(gy, [0.0, 0.0, 0.0, np.log(2.0)])
    np.testing.assert_array_equal(gx, [0.0, 0.0, 1.0, 0.0])
    # sqrt at 0 is infinite, legitimately.
    with np.errstate(divide="ignore"):
        assert np.isinf(rule_vjp(np.sqrt, "x")(1.0, np.sqrt(0.0), 0.0))


# ---------------------------------------------------------------------------
# where, clip

@SETTINGS
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), seed=seeds)
def test_where(shapes_, seed):
    sc, sx, sy = shapes_.input_shapes
    cond = values(seed, sc) > 0
    args = [cond, values(seed + 1, sx), values(seed + 2, sy)]
    check_vjp(np.where, rule_vjp(np.where, "x"), args, 1)
    check_vjp(np.where, rule_vjp(np.where, "y"), args, 2)


@SETTINGS
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), seed=seeds)
def test_clip_array_bounds(shapes_, seed):
    sa, slo, shi = shapes_.input_shapes
    args = [values(seed, sa) * 2, values(seed + 1, slo) - 0.5, values(seed + 2, shi) + 0.5]
    for argnum, param in enumerate(["a", "a_min", "a_max"]):
        check_vjp(np.clip, rule_vjp(np.clip, param), args, argnum)


def test_clip_scalar_none_and_keyword_bounds():
    a = np.array([-2.0, -0.5, 0.5, 2.0])
    check_vjp(np.clip, rule_vjp(np.clip, "a"), [a, -1.0, 1.0], 0)
    check_vjp(np.clip, rule_vjp(np.clip, "a_min"), [a, -1.0, 1.0], 1)
    check_vjp(lambda a, hi: np.clip(a, None, hi), lambda g, ans, a, hi:
              rule_vjp(np.clip, "a")(g, ans, a, None, hi), [a, 1.0], 0)
    check_vjp(lambda a, hi: np.clip(a, None, hi), lambda g, ans, a, hi:
              rule_vjp(np.clip, "a_max")(g, ans, a, None, hi), [a, 1.0], 1)
    if np.lib.NumpyVersion(np.__version__) >= "2.1.0":
        check_vjp(lambda a, lo: np.clip(a, min=lo), lambda g, ans, a, lo:
                  rule_vjp(np.clip, "min")(g, ans, a, min=lo), [a, 0.0], 1)
        check_vjp(lambda a, lo: np.clip(a, min=lo), lambda g, ans, a, lo:
                  rule_vjp(np.clip, "a")(g, ans, a, min=lo), [a, 0.0], 0)
    # At a bound the derivative goes to a (PyTorch's clamp convention).
    at = np.array([-1.0, 1.0])
    np.testing.assert_array_equal(rule_vjp(np.clip, "a")(np.ones(2), at, at, -1.0, 1.0), [1.0, 1.0])
    assert rule_vjp(np.clip, "a_min")(np.ones(2), at, at, -1.0, 1.0) == 0.0


# ---------------------------------------------------------------------------
# polyval

@SETTINGS
@given(n=st.integers(1, 7), xshape=shape_st, seed=seeds)
def test_polyval(n, xshape, seed):
    p = values(seed, (n,))
    x = values(seed + 1, xshape)
    check_vjp(np.polyval, rule_vjp(np.polyval, "p"), [p, x], 0)
    check_vjp(np.polyval, rule_vjp(np.polyval, "x"), [p, x], 1)


def test_polyval_scalar_x_and_reference():
    p = np.array([3.0, -2.0, 0.5, 1.0])
    check_vjp(np.polyval, polyval_vjp_x_wrapped, [p, 0.7], 1)
    x = np.linspace(-1, 1, 5)
    g = np.ones(5)
    np.testing.assert_allclose(polyval_vjp_x(g, p, x), np.polyval(np.polyder(p), x))
    np.testing.assert_allclose(polyval_vjp_p(g, p, x), np.vander(x, 4).T @ g)


def polyval_vjp_x_wrapped(g, ans, p, x):
    return polyval_vjp_x(g, p, x)


# ---------------------------------------------------------------------------
# scipy.optimize.rosen, written as SciPy writes it, differentiated by chaining the rules by hand

def test_rosen_by_hand_matches_scipy():
    optimize = pytest.importorskip("scipy.optimize")
    d = lambda fn, param: rule_vjp(fn, param)   # noqa: E731
    x = values(7, (9,))
    # Forward, one primitive per line.
    a = x[1:]
    b = x[:-1]
    c = np.power(b, 2.0)
    dd = np.subtract(a, c)
    e = np.power(dd, 2.0)
    f = np.multiply(100.0, e)
    h = np.subtract(1, b)
    k = np.power(h, 2.0)
    m = np.add(f, k)
    s = np.sum(m)
    np.testing.assert_allclose(s, optimize.rosen(x))
    # Reverse.
    gs = 1.0
    gm = sum_vjp(gs, m)
    gf = d(np.add, "x1")(gm, m, f, k)
    gk = d(np.add, "x2")(gm, m, f, k)
    gh = d(np.power, "x1")(gk, k, h, 2.0)
    gb = d(np.subtract, "x2")(gh, h, 1, b)
    ge = d(np.multiply, "x2")(gf, f, 100.0, e)
    gdd = d(np.power, "x1")(ge, e, dd, 2.0)
    ga = d(np.subtract, "x1")(gdd, dd, a, c)
    gc = d(np.subtract, "x2")(gdd, dd, a, c)
    gb = gb + d(np.power, "x1")(gc, c, b, 2.0)
    gx = getitem_vjp(ga, x, slice(1, None)) + getitem_vjp(gb, x, slice(None, -1))
    np.testing.assert_allclose(gx, optimize.rosen_der(x), rtol=1e-12)


# ---------------------------------------------------------------------------
# The registry: every rule of these modules parses and names only defined things

MODULES = (elementwise, reductions, extrema, cumulative, weighted, norm, linalg, solve, einsum,
           tensor_products, diagonals, shapes, indexing)


def _our_rules():
    names = {m.__name__ for m in MODULES}
    for rule in list(_RULES.values()):
        mods = {getattr(h, "__module__", None) for h in rule.helpers.values()}
        if mods & names or rule.fn in ELEMENTWISE_FNS:
            yield rule


ELEMENTWISE_FNS = [f for f, _, _ in UNARY] + [f for f, _, _ in BINARY] + [
    np.where, np.clip, np.polyval, np.real, np.real_if_close]


def test_registered_templates_name_only_defined_things():
    import builtins
    rules = list(_our_rules())
    assert len(rules) >= 60
    for rule in rules:
        params = {p.name for p in rule.params}
        for pname, tree in rule.adjoints.items():
            assert pname.partition("[")[0] in params      # name[k]: the k-th of *name
            free = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            unknown = free - params - {"g", "ans"} - set(rule.helpers) - set(dir(builtins))
            assert not unknown, f"{rule.name}:{pname} uses undefined {unknown}"


def test_every_listed_function_has_a_rule():
    import operator

    fns = ELEMENTWISE_FNS + [
        np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.cumsum, np.var, np.std,
        np.linalg.norm, np.dot, np.matmul, operator.matmul, np.outer, np.inner, np.linalg.solve,
        np.linalg.inv, np.linalg.det, np.linalg.slogdet, np.trace, np.einsum, np.reshape,
        np.transpose, np.concatenate, np.stack, np.squeeze, np.expand_dims, np.broadcast_to,
        np.ravel, np.copy, np.array, np.asarray, operator.getitem]
    missing = [f for f in fns if lookup(f) is None]
    assert not missing
    for name in ("sum", "mean", "prod", "max", "min", "cumsum", "cumprod", "var", "std", "dot",
                 "trace", "clip", "reshape", "transpose", "ravel", "flatten", "squeeze",
                 "swapaxes", "copy", "astype"):
        fn = method(name)
        assert fn is not None and lookup(fn).has_derivative, name


def test_scalar_templates_compile_with_numba():
    """The arithmetic templates inline into Numba code for scalars (one compile for all)."""
    numba = pytest.importorskip("numba")
    lines, n = [], 0
    cases = [(f, ("x",)) for f, _, _ in UNARY] + [(f, ("x1", "x2")) for f, _, _ in BINARY]
    for fn, params in cases:
        rule = _RULES[id(fn)]
        for p in params:
            src = ast.unparse(rule.adjoints[p])
            lines.append(f"    out[{n}] = {src}")
            n += 1
    body = "\n".join(lines)
    source = f"def f(g, ans, x, x1, x2, out):\n{body}\n"
    from pullback.backends import numba_twins
    numba_twins.install()       # the helpers the templates call (the strong zero's)
    ns = {"np": np, **{k: v for fn, _ in cases for k, v in _RULES[id(fn)].helpers.items()}}
    exec(source, ns)
    jitted = numba.njit(ns["f"])
    out_jit, out_py = np.zeros(n), np.zeros(n)
    args = (1.5, 0.8, 0.4, 0.7, 1.3)
    with np.errstate(invalid="ignore"):      # arccosh's template at x < 1 is NaN on both
        jitted(*args, out_jit)
        ns["f"](*args, out_py)
    np.testing.assert_allclose(out_jit, out_py)


# ---------------------------------------------------------------------------
# The same helpers on torch tensors

def test_torch_unbroadcast_clip_polyval(torch_device):
    torch = pytest.importorskip("torch")
    g = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    assert tuple(unbroadcast(g, torch.ones(1, 3, dtype=torch.float64)).shape) == (1, 3)
    assert float(unbroadcast(g, 2.0)) == 15.0
    a = torch.tensor([-2.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    lo = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
    y = torch.clamp(a, min=lo, max=torch.tensor(1.0, dtype=torch.float64))
    y.backward(torch.ones(3, dtype=torch.float64))
    ga = piecewise.clip_vjp_a(torch.ones(3, dtype=torch.float64), a.detach(), lo.detach(), 1.0)
    assert torch.equal(ga, a.grad)
    glo = unbroadcast(piecewise.clip_vjp_min(torch.ones(3, dtype=torch.float64), a.detach(),
                                               lo.detach(), 1.0), lo.detach())
    assert float(glo) == float(lo.grad)
    p = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    x = torch.linspace(-1, 1, 4, dtype=torch.float64, requires_grad=True)
    y = (p[0] * x + p[1]) * x + p[2]
    gy = torch.ones(4, dtype=torch.float64)
    y.backward(gy)
    assert torch.allclose(polyval_vjp_p(gy, p.detach(), x.detach()), p.grad)
    assert torch.allclose(polyval_vjp_x(gy, p.detach(), x.detach()), x.grad)
