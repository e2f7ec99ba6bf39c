"""pullback.jax.function: a pullback-differentiated function as a JAX custom_vjp,
checked against the same function written in JAX (its autodiff is the reference)
and jax.test_util.check_grads (finite differences), in float64, on both backends and
in background-compile mode, inside jax.jit and jax.vmap."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402
from layer_models import damped, damped_in  # noqa: E402

import pullback.jax as pj  # noqa: E402
from pullback.examples import lotka_volterra, lotka_volterra_step  # noqa: E402

damped_jax = damped_in(jnp.sin, jnp.stack)


def tree_loss(d, s):
    return np.sum(d["w"] * d["x"]) + s[0] * d["x"][0]


def pair(x):
    return x * 2.0, np.sum(x ** 2)


def data_dependent(x, n):
    return np.zeros(int(n))


P = jnp.array([1.0, 2.0, 3.0])
Y0 = jnp.array([0.5, 0.2])


def test_value_and_gradient_match_jax(jit_mode):
    F = pj.function(damped, jit=jit_mode != "python")
    loss = lambda p, y0: jnp.sum(F(p, y0, 7) ** 2)  # noqa: E731
    ref = lambda p, y0: jnp.sum(damped_jax(p, y0, 7) ** 2)  # noqa: E731
    for _ in range(3):      # background mode: the first calls run as Python
        np.testing.assert_allclose(F(P, Y0, 7), damped_jax(P, Y0, 7), rtol=1e-13)
        for a, b in zip(jax.grad(loss, (0, 1))(P, Y0), jax.grad(ref, (0, 1))(P, Y0)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
def test_check_grads_to_second_order(jit):
    F = pj.function(damped, jit=jit)
    check_grads(lambda p, y0: F(p, y0, 5), (P, Y0), order=2, modes=["rev"])


def test_inside_jit_and_vmap(jit):
    F = pj.function(damped, jit=jit)
    loss = lambda p: jnp.sum(F(p, Y0, 5) ** 2)  # noqa: E731
    ref = lambda p: jnp.sum(damped_jax(p, Y0, 5) ** 2)  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.grad(loss))(P), jax.grad(ref)(P), rtol=1e-12)
    batch = jnp.stack([P, P + 0.5, P - 0.25])
    np.testing.assert_allclose(jax.vmap(jax.grad(loss))(batch), jax.vmap(jax.grad(ref))(batch),
                               rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.vmap(loss))(batch), jax.vmap(ref)(batch),
                               rtol=1e-13)


def test_nested_vmap_over_either_argument(jit):
    F = pj.function(damped, jit=jit)
    Ps = jnp.stack([P, P + 0.5, P - 0.25])
    Ys = jnp.stack([Y0, Y0 * 0.5])
    got = jax.vmap(jax.vmap(lambda p, y: F(p, y, 4), (None, 0)), (0, None))(Ps, Ys)
    want = jnp.stack([jnp.stack([damped_jax(p, y, 4) for y in Ys]) for p in Ps])
    assert got.shape == (3, 2, 4)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    g = jax.vmap(jax.grad(lambda y, p: jnp.sum(F(p, y, 4))), (0, None))(Ys, P)
    np.testing.assert_allclose(g, jax.vmap(jax.grad(lambda y: jnp.sum(damped_jax(P, y, 4))))(Ys),
                               rtol=1e-12)


def test_second_derivative_by_reverse_over_reverse(jit):
    F = pj.function(damped, jit=jit)
    H = jax.jacrev(jax.grad(lambda p: jnp.sum(F(p, Y0, 5))))(P)
    np.testing.assert_allclose(H, jax.hessian(lambda p: jnp.sum(damped_jax(p, Y0, 5)))(P),
                               rtol=1e-11, atol=1e-14)


def test_pytrees_and_tuple_results(jit):
    d = {"w": jnp.array([1.0, 2.0, 3.0]), "x": jnp.array([0.5, 1.5, 2.5])}
    s = (jnp.asarray(2.0),)
    g = jax.grad(pj.function(tree_loss, jit=jit), (0, 1))(d, s)
    np.testing.assert_allclose(g[0]["w"], [0.5, 1.5, 2.5])
    np.testing.assert_allclose(g[0]["x"], [3.0, 2.0, 3.0])
    np.testing.assert_allclose(g[1][0], 0.5)
    x = jnp.array([1.0, -2.0])
    F = pj.function(pair, jit=jit)
    g = jax.grad(lambda x: jnp.sum(F(x)[0] * jnp.array([1.0, 3.0])) + F(x)[1])(x)
    np.testing.assert_allclose(g, [2.0 + 2.0, 6.0 - 4.0])


SCALE = 2.0


def scaled(x):
    return np.sum(SCALE * x ** 2)


def test_a_global_changed_between_calls_is_read_at_call_time(jit_mode, monkeypatch):
    F = pj.function(scaled, jit=jit_mode != "python")
    x = jnp.array([1.0, -2.0])
    for scale in (2.0, 3.0, 2.0, 5.0):
        monkeypatch.setitem(globals(), "SCALE", scale)
        v, g = jax.value_and_grad(F)(x)
        assert float(v) == pytest.approx(5.0 * scale)
        np.testing.assert_allclose(g, [2.0 * scale, -4.0 * scale])


def test_float32_follows_jax():
    x = jnp.array([0.3, 0.7], dtype=jnp.float32)
    F = pj.function(lambda_free_cube)
    g = jax.grad(F)(x)
    assert F(x).dtype == jnp.float32 and g.dtype == jnp.float32
    x64 = np.asarray(x, dtype=np.float64)
    np.testing.assert_allclose(g, 3 * x64 ** 2 * np.sin(x64) + x64 ** 3 * np.cos(x64),
                               rtol=1e-5)


def lambda_free_cube(x):
    return np.sum(x ** 3 * np.sin(x))


def test_forward_mode(jit):
    F = pj.function(damped, jit=jit, mode="forward")
    ref = lambda p: damped_jax(p, Y0, 5)  # noqa: E731
    v, t = jax.jvp(lambda p: F(p, Y0, 5), (P,), (jnp.array([0.3, -1.0, 0.5]),))
    rv, rt = jax.jvp(ref, (P,), (jnp.array([0.3, -1.0, 0.5]),))
    np.testing.assert_allclose(v, rv, rtol=1e-13)
    np.testing.assert_allclose(t, rt, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jax.jit(jax.jacfwd(lambda p: F(p, Y0, 5)))(P), jax.jacfwd(ref)(P),
                               rtol=1e-12, atol=1e-15)
    check_grads(lambda p: F(p, Y0, 5), (P,), order=1, modes=["fwd"])


def test_forward_mode_is_refused_by_jax():
    F = pj.function(lambda_free_cube)
    with pytest.raises(TypeError, match="custom_vjp"):
        jax.jvp(F, (P,), (P,))


def test_result_shape_for_a_value_dependent_shape():
    F = pj.function(data_dependent, result_shape=jax.ShapeDtypeStruct((3,), jnp.float64))
    assert jax.jit(F)(P, 3.0).shape == (3,)


def lotka_volterra_jax(theta, y0, h, n):
    def step(state, _):
        x, y = lotka_volterra_step(theta, *state, h)
        return (x, y), jnp.stack([x, y])
    return jax.lax.scan(step, (y0[0], y0[1]), None, length=n)[1]


def test_training_loop_with_adam_updates():
    """An RK4 Lotka-Volterra layer fitted by Adam updates written in JAX: the loss
    goes down, and every step's gradient is JAX's own for the model with lax.scan
    (on the Python backend: the compiled one's values are tested above)."""
    jit = False
    y0 = jnp.array([1.0, 0.5])
    observed = lotka_volterra_jax(jnp.array([1.1, 0.4, 0.1, 0.4]), y0, 0.1, 30)
    layer = pj.function(lotka_volterra, jit=jit)

    def loss(theta, layer):
        return jnp.mean((layer(theta, y0, 0.1, 30) - observed) ** 2)
    step = jax.jit(jax.value_and_grad(lambda t: loss(t, layer)))
    ref = jax.jit(jax.grad(lambda t: loss(t, lotka_volterra_jax)))
    theta = jnp.array([1.0, 0.5, 0.2, 0.5])
    m = v = jnp.zeros(4)
    losses = []
    for k in range(1, 16):
        value, g = step(theta)
        np.testing.assert_allclose(g, ref(theta), rtol=1e-10, atol=1e-14)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g ** 2
        theta = theta - 0.01 * (m / (1 - 0.9 ** k)) / (jnp.sqrt(v / (1 - 0.999 ** k)) + 1e-8)
        losses.append(float(value))
    assert losses[-1] < 0.5 * losses[0]
