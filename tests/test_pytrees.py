"""Pytrees (dicts, lists, tuples, NamedTuples, dataclasses of arrays) as arguments
and results of grad, value_and_grad and vjp: gradients in the argument's
structure, checked against JAX in float64 and central finite differences;
refusals of what a structure resolved when transforming cannot be."""
from __future__ import annotations

import dataclasses
import inspect
from typing import NamedTuple

import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate

RNG = np.random.default_rng(7)


def mlp_params(sizes=(3, 4, 2)):
    return {"layers": [{"W": RNG.standard_normal((m, n)), "b": RNG.standard_normal(m)}
                       for n, m in zip(sizes[:-1], sizes[1:])],
            "scale": 0.7, "name": "mlp", "depth": len(sizes) - 1}


def mlp_loss(params, x):
    for layer in params["layers"]:
        x = np.tanh(layer["W"] @ x + layer["b"])
    return params["scale"] * np.sum(x ** 2)


@pytest.fixture(scope="module")
def jnp():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax.numpy


def jax_mlp_grad(params, x):
    import jax
    import jax.numpy as jnp

    def loss(layers, scale):
        h = jnp.asarray(x)
        for layer in layers:
            h = jnp.tanh(layer["W"] @ h + layer["b"])
        return scale * jnp.sum(h ** 2)
    return jax.grad(loss, argnums=(0, 1))(params["layers"], params["scale"])


def test_dict_mlp_matches_jax(jnp):
    params, x = mlp_params(), RNG.standard_normal(3)
    before = [layer["W"].copy() for layer in params["layers"]]
    g = pullback.grad(mlp_loss)(params, x)
    jl, js = jax_mlp_grad(params, x)
    assert list(g) == ["layers", "scale", "name", "depth"]          # key order kept
    assert g["name"] is None and g["depth"] is None                 # pass-through leaves
    assert type(g["layers"]) is list and len(g["layers"]) == 2
    for mine, ref in zip(g["layers"], jl):
        assert list(mine) == ["W", "b"]
        for k in "Wb":
            assert mine[k].dtype == np.float64 and mine[k].shape == ref[k].shape
            np.testing.assert_allclose(mine[k], np.asarray(ref[k]), rtol=1e-10, atol=1e-12)
    assert type(g["scale"]) is float and g["scale"] == pytest.approx(float(js), rel=1e-10)
    for w, b in zip(before, params["layers"]):
        np.testing.assert_array_equal(w, b["W"])                    # not mutated


def test_a_new_structure_is_a_new_derivative(jnp):
    x = RNG.standard_normal(3)
    grad = pullback.grad(mlp_loss)
    for sizes in [(3, 2), (3, 4, 5, 2)]:
        params = mlp_params(sizes)
        g = grad(params, x)
        jl, _ = jax_mlp_grad(params, x)
        assert len(g["layers"]) == len(sizes) - 1
        for mine, ref in zip(g["layers"], jl):
            np.testing.assert_allclose(mine["W"], np.asarray(ref["W"]), rtol=1e-10, atol=1e-12)


# ---- an equinox-style model: a dataclass of a list of dataclass layers -----------
@dataclasses.dataclass(frozen=True)
class Linear:
    weight: np.ndarray
    bias: np.ndarray


@dataclasses.dataclass
class Model:
    layers: list
    temperature: float
    activation: str = "tanh"


def predict(model, x):
    for i, layer in enumerate(model.layers):
        x = layer.weight @ x + layer.bias
        if i < len(model.layers) - 1:
            x = np.tanh(x)
    return x / model.temperature


def model_loss(model, x, y):
    return np.sum((predict(model, x) - y) ** 2)


def test_dataclass_model_with_a_helper_matches_jax(jnp):
    import jax
    layers = [Linear(RNG.standard_normal((4, 3)), RNG.standard_normal(4)),
              Linear(RNG.standard_normal((2, 4)), RNG.standard_normal(2))]
    model = Model(layers, 1.3)
    x, y = RNG.standard_normal(3), RNG.standard_normal(2)
    loss, g = pullback.value_and_grad(model_loss)(model, x, y)

    def ref(ws, bs, t):
        h = jnp.asarray(x)
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = w @ h + b
            h = jnp.tanh(h) if i < len(ws) - 1 else h
        return jnp.sum((h / t - y) ** 2)
    args = ([m.weight for m in layers], [m.bias for m in layers], model.temperature)
    rw, rb, rt = jax.grad(ref, argnums=(0, 1, 2))(*args)
    assert loss == pytest.approx(float(ref(*args)), rel=1e-12)
    assert type(g) is Model and type(g.layers) is list and type(g.layers[0]) is Linear
    assert g.activation is None
    for k, layer in enumerate(g.layers):
        np.testing.assert_allclose(layer.weight, np.asarray(rw[k]), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(layer.bias, np.asarray(rb[k]), rtol=1e-10, atol=1e-12)
    assert g.temperature == pytest.approx(float(rt), rel=1e-10)


# ---- NamedTuples, nested tuples and lists, finite differences -------------------
class Params(NamedTuple):
    w: np.ndarray
    pair: tuple
    k: int


def nt_loss(p, x):
    a, b = p.pair
    w = p[0]
    return np.sum(np.sin(w * x) * a[1]) + b * np.sum(a[0] ** 2) + p.k * b


def test_namedtuple_and_nested_tuples_against_finite_differences():
    p = Params(np.array([0.3, -1.2, 0.8]), ([np.array([1.5, -0.5]), 0.4], 2.0), 3)
    x = np.array([1.0, 0.5, -2.0])
    g = pullback.grad(nt_loss)(p, x)
    assert type(g) is Params and type(g.pair) is tuple and type(g.pair[0]) is list
    assert g.k is None

    def along(v, path):
        def f(t):
            q = pullback.tree_unflatten(tree, [t if i == path else leaf
                                               for i, leaf in enumerate(leaves)])
            return nt_loss(q, x)
        return f
    leaves, tree = pullback.tree_flatten(p)
    mine, _ = pullback.tree_flatten(g)
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, int):
            assert mine[i] is None
            continue
        est = fd_estimate(along(leaf, i), [np.asarray(leaf, dtype=float)], 0)
        assert_fd_close(np.asarray(mine[i]), est)


def test_tree_functions_round_trip():
    p = {"z": [1.0, (2.0, np.ones(2))], "a": Params(np.zeros(1), (3.0,), 4)}
    leaves, tree = pullback.tree_flatten(p)
    assert len(leaves) == 6 and hash(tree) == hash(pullback.tree_flatten(p)[1])
    back = pullback.tree_unflatten(tree, leaves)
    assert list(back) == ["z", "a"] and type(back["a"]) is Params
    doubled = pullback.tree_map(lambda v: v * 2, p)
    assert doubled["z"][1][0] == 4.0 and doubled["a"].k == 8
    assert pullback.tree_flatten((2, 3))[1] is None         # a tuple of ints is a shape


def affine_loss(p, x):
    return np.sum(np.sin(p["w"] * x)) + p["b"] ** 2


def test_numba_backend_on_a_dict():
    p, x = {"w": np.array([0.5, -1.0, 2.0]), "b": 0.3}, np.array([1.0, 2.0, -0.5])
    g = pullback.grad(affine_loss, jit=True)(p, x)
    np.testing.assert_allclose(g["w"], np.cos(p["w"] * x) * x, rtol=1e-14)   # analytic
    assert g["b"] == pytest.approx(2 * p["b"], rel=1e-14)


def dict_result(p, x):
    h = np.tanh(p["W"] @ x)
    return {"h": h, "total": np.sum(h) * p["c"]}


def test_vjp_with_a_dict_result_and_a_dict_cotangent(jnp):
    import jax
    p = {"W": RNG.standard_normal((2, 3)), "c": 1.7}
    x = RNG.standard_normal(3)
    value, back = pullback.vjp(dict_result, p, x)
    assert list(value) == ["h", "total"]
    ct = {"h": np.array([0.3, -1.1]), "total": 0.6}
    gp, gx = back(ct)

    def ref(W, c, xx):
        h = jnp.tanh(W @ xx)
        return {"h": h, "total": jnp.sum(h) * c}
    _, ref_back = jax.vjp(ref, p["W"], p["c"], x)
    rW, rc, rx = ref_back(ct)
    np.testing.assert_allclose(gp["W"], np.asarray(rW), rtol=1e-10)
    assert gp["c"] == pytest.approx(float(rc), rel=1e-10)
    np.testing.assert_allclose(gx, np.asarray(rx), rtol=1e-10)
    with pytest.raises(TypeError, match="same structure"):
        back({"h": ct["h"]})


# ---- refusals and bad input ----------------------------------------------------
def dynamic_index(params, x):
    s = 0.0
    for i in range(len(params["layers"])):
        s = s + np.sum(params["layers"][i]["W"] * x)
    return s


def dict_arithmetic(params, x):
    return np.sum(params * x)


def break_in_unrolled(params, x):
    for layer in params["layers"]:
        if np.sum(x) > 100.0:
            break
        x = layer["W"] @ x
    return np.sum(x)


def bound_in_a_loop_after_a_read(params, x):
    q = 1.0
    for i in range(3):
        x = x * q
        q = params
    return np.sum(x)


def bound_in_a_branch(params, x):
    if x[0] > 0.0:
        layer = params["layers"][0]
    else:
        layer = params["layers"][-1]
    return np.sum(layer["W"])


def assign_into(params, x):
    params["layers"] = x
    return np.sum(x)


@pytest.mark.parametrize("f, words, marker", [
    (bound_in_a_loop_after_a_read, "reading 'q' in a loop before", "x = x * q"),
    (bound_in_a_branch, "reading 'layer' after the branch", "if x[0]"),
    (assign_into, "assignment into a pytree", "params["),
    (dynamic_index, "not a constant", "[i]"), (dict_arithmetic, "used as a value", "params *"),
    (break_in_unrolled, "`break` in a loop over a list of pytrees", "    break")])
def test_refused_constructs_name_the_line(f, words, marker):
    params = {"layers": [{"W": np.eye(2)}]}
    with pytest.raises(pullback.UnsupportedSyntaxError) as err:
        pullback.grad(f)(params, np.ones(2))
    msg = str(err.value)
    assert words in msg and __file__ in msg
    lines, start = inspect.getsourcelines(f)
    bad = next(k for k, line in enumerate(lines) if marker in line)
    assert err.value.lineno == start + bad


def test_a_complex_leaf_is_refused_with_its_path():
    params = {"layers": [{"W": np.eye(2)}, {"W": np.eye(2) * 1j}]}
    with pytest.raises(TypeError, match=r"params\['layers'\]\[1\]\['W'\]"):
        pullback.grad(dynamic_index)(params, np.ones(2))


def test_grad_refuses_a_pytree_result():
    with pytest.raises(TypeError, match=r"returns a pytree \(dict with keys 'h', 'total'\)"):
        pullback.grad(dict_result)({"W": np.eye(2), "c": 1.0}, np.ones(2))


def test_loops_over_zipped_and_enumerated_lists_and_slices():
    def f(p, x):
        tot = 0.0
        for i, (a, b) in enumerate(zip(p["ls"], p["ls"][1:])):
            tot = tot + (i + 1) * np.sum(a * b * x)
        for a in reversed(p["ls"]):
            tot = tot * 0.5 + np.sum(a) * len(p["ls"])
        return tot + p["ls"][-1][0]
    p = {"ls": [np.array([1.0, 2.0]), np.array([3.0, -4.0]), np.array([0.5, 6.0])]}
    x = np.array([0.5, 0.25])
    g = pullback.grad(f)(p, x)
    for k, leaf in enumerate(p["ls"]):
        def along(v, k=k):
            ls = list(p["ls"])
            ls[k] = v
            return f({"ls": ls}, x)
        assert_fd_close(g["ls"][k], fd_estimate(along, [leaf], 0))


def sine_loss(p, x):
    return np.sum(np.sin(p["w"] * x)) * p["c"] ** 2


def analytic_grad(p, x):
    return {"w": p["c"] ** 2 * x * np.cos(p["w"] * x), "c": 2 * p["c"] * np.sum(np.sin(p["w"] * x))}


def test_jvp_and_hvp_take_pytrees():
    p, x = {"w": np.array([0.5, -1.0]), "c": 1.5, "n": 3}, np.array([1.0, 2.0])
    t = {"w": np.array([1.0, -0.5]), "c": 0.5, "n": None}
    value, tangent = pullback.jvp(sine_loss, (p, x), (t, None))
    g = analytic_grad(p, x)
    assert value == pytest.approx(sine_loss(p, x), rel=1e-14)
    assert tangent == pytest.approx(np.sum(g["w"] * t["w"]) + g["c"] * t["c"], rel=1e-12)
    hp, hx = pullback.hvp(sine_loss, (p, x), (t, None))
    eps = 1e-6
    up = analytic_grad({"w": p["w"] + eps * t["w"], "c": p["c"] + eps * t["c"]}, x)
    dn = analytic_grad({"w": p["w"] - eps * t["w"], "c": p["c"] - eps * t["c"]}, x)
    np.testing.assert_allclose(hp["w"], (up["w"] - dn["w"]) / (2 * eps), rtol=1e-7)
    assert hp["c"] == pytest.approx((up["c"] - dn["c"]) / (2 * eps), rel=1e-7)
    assert hp["n"] is None and hx.shape == x.shape
    value, tangent = pullback.jvp(dict_result, ({"W": np.eye(2), "c": 2.0}, np.ones(2)),
                                  ({"W": np.zeros((2, 2)), "c": 1.0}, None))
    assert list(tangent) == ["h", "total"] and tangent["total"] == pytest.approx(2 * np.tanh(1))


def test_jacrev_of_a_pytree_argument():
    def f(p, x):
        return np.tanh(p["W"] @ x) * p["c"]
    p, x = {"W": RNG.standard_normal((2, 3)), "c": 1.3, "tag": "t"}, RNG.standard_normal(3)
    jac = pullback.jacrev(f)(p, x)
    h = np.tanh(p["W"] @ x)
    expected_W = np.zeros((2, 2, 3))                 # analytic: d out_i / d W_jk
    for i in range(2):
        expected_W[i, i] = p["c"] * (1 - h[i] ** 2) * x
    np.testing.assert_allclose(jac["W"], expected_W, rtol=1e-12)
    np.testing.assert_allclose(jac["c"], h, rtol=1e-14)
    assert jac["tag"] is None


def test_returns_of_different_structures_are_refused():
    def f(p, x):
        if x[0] > 0.0:
            return {"a": p["w"] * x}
        return {"b": p["w"]}
    with pytest.raises(pullback.UnsupportedSyntaxError, match="different structures") as err:
        pullback.vjp(f, {"w": np.ones(2)}, np.ones(2))
    assert err.value.lineno == inspect.getsourcelines(f)[1] + 3


SCALE = 2.0


def _scaled_tree_loss(p, x):
    s = 0.0
    for k in range(len(x)):
        s += p["a"][k] * x[k] * p["c"] * SCALE
    return s


def test_repeated_calls_keep_one_derivative_per_structure_and_leaf_kinds(jit_mode):
    # A call with pytree arguments reuses the derivative of an earlier call of the
    # same structure and leaf kinds: alternating structures, a leaf that turns from
    # an int into a float, and a global changed between calls all give the gradient
    # of the call itself.
    global SCALE
    jit = jit_mode != "python"
    g = pullback.grad(_scaled_tree_loss, jit=jit)
    x = RNG.standard_normal(4)
    a = RNG.standard_normal(4)
    for c, extra in [(0.5, {}), (0.5, {"z": 1.0}), (3, {}), (0.25, {"z": 2.0}), (0.75, {})]:
        p = {"a": a, "c": c, **extra}
        got = g(p, x)
        assert set(got) == set(p)
        assert_fd_close(got["a"], fd_estimate(lambda a: _scaled_tree_loss({**p, "a": a}, x),
                                              (a,)))
        want_c = float(np.sum(a * x) * SCALE)
        assert got["c"] is None if isinstance(c, int) else abs(got["c"] - want_c) < 1e-9
    try:
        SCALE = 5.0
        got = g({"a": a, "c": 0.5}, x)
        assert abs(got["c"] - float(np.sum(a * x)) * 5.0) < 1e-9
    finally:
        SCALE = 2.0
