"""jacfwd and hessian of pytree arguments, and has_aux on jvp and jacfwd, against
JAX float64 (the same layout: a pytree of the argument's structure; a pytree of
pytrees for the Hessian) and against pullback's own reverse mode."""
from dataclasses import dataclass

import numpy as np
import pytest

import pullback
from helpers import assert_close

RNG = np.random.default_rng(12)


def loss(params, x):
    h = np.tanh(params["W"] @ x + params["b"])
    return np.sum(h * h) * params["scale"]


def predict(params, x):
    return np.tanh(params["W"] @ x + params["b"]) * params["scale"]


PARAMS = {"W": RNG.normal(size=(3, 2)), "b": RNG.normal(size=3), "scale": 1.3}
X = RNG.normal(size=2)


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def _tree_close(got, want, rtol=1e-10):
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want)
        for k in want:
            _tree_close(got[k], want[k], rtol)
        return
    assert_close(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-12)


def test_jacfwd_of_a_dict_against_jax_and_jacrev():
    jax = _jax()
    jnp = jax.numpy

    def jpredict(p, x):
        return jnp.tanh(p["W"] @ x + p["b"]) * p["scale"]
    got = pullback.jacfwd(predict)(PARAMS, X)
    _tree_close(got, jax.jacfwd(jpredict)(PARAMS, X))
    _tree_close(got, pullback.jacrev(predict)(PARAMS, X))


def test_hessian_of_a_dict_against_jax():
    jax = _jax()
    jnp = jax.numpy

    def jloss(p, x):
        h = jnp.tanh(p["W"] @ x + p["b"])
        return jnp.sum(h * h) * p["scale"]
    got = pullback.hessian(loss)(PARAMS, X)
    want = jax.hessian(jloss)(PARAMS, X)
    for a in PARAMS:
        _tree_close(got[a], want[a])


def test_hessian_blocks_of_a_pytree_and_an_array():
    """argnums=(0, 1), JAX's nesting: H[0] has params' structure, each leaf a pair
    (params' structure of blocks, the block with x); H[1] = (blocks with params, x's)."""
    jax = _jax()
    jnp = jax.numpy

    def jloss(p, x):
        h = jnp.tanh(p["W"] @ x + p["b"])
        return jnp.sum(h * h) * p["scale"]
    got = pullback.hessian(loss, argnums=(0, 1))(PARAMS, X)
    want = jax.hessian(jloss, argnums=(0, 1))(PARAMS, X)
    for a in PARAMS:
        _tree_close(got[0][a][1], want[0][a][1])        # leaf a of params, then x
        for b in PARAMS:
            _tree_close(got[0][a][0][b], want[0][a][0][b])
    for b in PARAMS:
        _tree_close(got[1][0][b], want[1][0][b])        # x is one leaf: a tuple over j
    _tree_close(got[1][1], want[1][1])


@dataclass
class Model:
    w: np.ndarray
    c: float


def test_hessian_of_a_dataclass_against_the_analytic_form():
    def energy(m):
        return np.sum(m.w ** 2) * m.c + m.c ** 3
    m = Model(np.array([1.0, -2.0]), 0.5)
    H = pullback.hessian(energy)(m)
    assert isinstance(H, Model) and isinstance(H.w, Model)
    assert_close(H.w.w, 2 * m.c * np.eye(2), rtol=1e-14)
    assert_close(H.w.c, 2 * m.w, rtol=1e-14)
    assert_close(np.asarray(H.c.w), 2 * m.w, rtol=1e-14)
    assert H.c.c == pytest.approx(6 * m.c, rel=1e-14)


def test_jvp_and_jacfwd_with_aux():
    def f(x):
        y = np.sin(x) * 2.0
        return y, {"norm": np.sum(x * x), "label": "run"}
    x = RNG.normal(size=3)
    v = RNG.normal(size=3)
    value, tangent, aux = pullback.jvp(f, (x,), (v,), has_aux=True)
    assert_close(value, np.sin(x) * 2.0, rtol=1e-15)
    assert_close(tangent, 2.0 * np.cos(x) * v, rtol=1e-14)
    assert aux["label"] == "run" and aux["norm"] == np.sum(x * x)
    J, aux2 = pullback.jacfwd(f, has_aux=True)(x)
    assert_close(J, np.diag(2.0 * np.cos(x)), rtol=1e-14)
    assert aux2["label"] == "run"
    with pytest.raises(TypeError, match="pair"):
        pullback.jvp(lambda x: x * 2.0, (1.0,), (1.0,), has_aux=True)
