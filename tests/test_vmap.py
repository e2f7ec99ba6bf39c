"""``pullback.vmap``: JAX's semantics (checked against ``jax.vmap`` in float64 where
JAX is installed, and against a loop over the examples everywhere), nesting with
``grad``, ``jvp`` and ``hessian``, the compiled parallel loop under ``jit=True``
(the numbers of the per-example calls, to the bit), and its refusals."""
import numpy as np
import pytest

import pullback
from helpers import fd_grad
from pullback.examples import series_loss

RNG = np.random.default_rng(3)


def affine(w, x):
    return np.tanh(w @ x) + x[0]




def pair(a, b):
    return {"sum": a + b["u"], "prod": a * b["v"]}


SCALE = 2.0


def scaled(theta, y):
    return SCALE * np.sum(theta * y ** 2)


# ------------------------------------------------------------------- JAX semantics
CASES = [
    # (function, its jax form, arguments, in_axes, out_axes)
    ("affine", affine, lambda jnp: lambda w, x: jnp.tanh(w @ x) + x[0],
     (RNG.normal(size=(3, 4)), RNG.normal(size=(5, 4))), (None, 0), 0),
    ("axis1", affine, lambda jnp: lambda w, x: jnp.tanh(w @ x) + x[0],
     (RNG.normal(size=(3, 4)), RNG.normal(size=(4, 6))), (None, 1), 1),
    ("negative", affine, lambda jnp: lambda w, x: jnp.tanh(w @ x) + x[0],
     (RNG.normal(size=(2, 3, 4)), RNG.normal(size=(4, 2))), (0, -1), -1),
    ("pytree", pair, lambda jnp: lambda a, b: {"sum": a + b["u"], "prod": a * b["v"]},
     (RNG.normal(size=(4, 2)), {"u": RNG.normal(size=(2,)), "v": RNG.normal(size=(4, 2))}),
     (0, {"u": None, "v": 0}), {"sum": 1, "prod": 0}),
]


@pytest.mark.parametrize("name, f, jax_f, args, in_axes, out_axes", CASES,
                         ids=[c[0] for c in CASES])
def test_against_jax_vmap(name, f, jax_f, args, in_axes, out_axes):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    got = pullback.vmap(f, in_axes, out_axes)(*args)
    want = jax.vmap(jax_f(jax.numpy), in_axes, out_axes)(*args)
    if isinstance(got, dict):       # JAX orders a dict's leaves by key
        got, want = [got[k] for k in sorted(got)], [want[k] for k in sorted(want)]
    got_leaves, want_leaves = pullback.tree_flatten(got)[0], jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-13, atol=1e-14)


def test_per_example_gradients_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    w, X = RNG.normal(size=(3, 4)), RNG.normal(size=(6, 4))

    def loss(w, x):
        return np.sum(np.tanh(w @ x) ** 2)
    got = pullback.vmap(pullback.grad(loss), in_axes=(None, 0))(w, X)
    want = jax.vmap(jax.grad(lambda w, x: jax.numpy.sum(jax.numpy.tanh(w @ x) ** 2)),
                    in_axes=(None, 0))(w, X)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------- gradients, backends
def _examples(jit):
    theta = np.array([0.5, 0.3, 0.2])
    Y = RNG.normal(size=(9, 12))
    g = pullback.grad(series_loss, jit=jit)
    return theta, Y, g, np.stack([g(theta, y) for y in Y])


def test_per_example_gradients_match_single_calls(jit_mode):
    theta, Y, g, singles = _examples(jit_mode != "python")
    mapped = pullback.vmap(g, in_axes=(None, 0))
    first = mapped(theta, Y)
    pullback.finish_compiling()
    for got in (first, mapped(theta, Y)):
        np.testing.assert_allclose(got, singles, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(singles[2], fd_grad(series_loss, (theta, Y[2])), rtol=1e-6)


def test_compiled_loop_is_the_single_calls_to_the_bit(monkeypatch):
    from pullback.backends import batch_loop
    ran = []
    real = batch_loop.run
    monkeypatch.setattr(batch_loop, "run", lambda *a: ran.append(real(*a)) or ran[-1])
    theta, Y, g, singles = _examples(True)
    got = pullback.vmap(g, in_axes=(None, 0))(theta, Y)
    assert ran == [True], "the compiled loop ran"
    assert np.array_equal(got, singles)


def test_value_and_grad_and_several_argnums(jit):
    theta, Y = np.array([0.5, 0.3, 0.2]), RNG.normal(size=(5, 7))
    vg = pullback.value_and_grad(series_loss, argnums=(0, 1), jit=jit)
    values, (dtheta, dy) = pullback.vmap(vg, in_axes=(None, 0))(theta, Y)
    for b, y in enumerate(Y):
        v, (a, c) = vg(theta, y)
        assert values[b] == pytest.approx(v, rel=1e-14)
        np.testing.assert_allclose(dtheta[b], a, rtol=1e-13)
        np.testing.assert_allclose(dy[b], c, rtol=1e-13)


def test_gradient_in_the_batched_argument_with_out_axes(jit):
    theta, Y = np.array([0.5, 0.3, 0.2]), RNG.normal(size=(4, 6))
    g = pullback.grad(series_loss, argnums=1, jit=jit)
    got = pullback.vmap(g, in_axes=(None, 0), out_axes=1)(theta, Y)
    assert got.shape == (6, 4)
    np.testing.assert_allclose(got.T, np.stack([g(theta, y) for y in Y]), rtol=1e-13)


def test_globals_are_read_at_call_time(jit_mode):
    global SCALE
    theta, Y = np.array([0.5, 0.3]), RNG.normal(size=(6, 2))
    mapped = pullback.vmap(pullback.grad(scaled, jit=jit_mode != "python"), in_axes=(None, 0))
    try:
        for scale in (2.0, 3.0, 5.0):
            SCALE = scale
            got = mapped(theta, Y)
            pullback.finish_compiling()
            np.testing.assert_allclose(got, scale * Y ** 2, rtol=1e-14)
    finally:
        SCALE = 2.0


def test_float32_gradients_keep_their_dtype():
    theta, Y = np.array([0.5, 0.3], np.float32), RNG.normal(size=(5, 2)).astype(np.float32)
    g = pullback.grad(scaled, jit=True)
    got = pullback.vmap(g, in_axes=(None, 0))(theta, Y)
    assert got.dtype == np.float32
    assert np.array_equal(got, np.stack([g(theta, y) for y in Y]))


def test_the_callers_arrays_are_untouched(jit):
    theta, Y = np.array([0.5, 0.3, 0.2]), RNG.normal(size=(4, 6))
    before = theta.copy(), Y.copy()
    pullback.vmap(pullback.grad(series_loss, jit=jit), in_axes=(None, 0))(theta, Y)
    assert np.array_equal(theta, before[0]) and np.array_equal(Y, before[1])


# ----------------------------------------------------------------------- nesting
def test_vmap_of_jvp_hessian_and_vmap():
    def f(x):
        return np.sum(np.sin(x) * x ** 2)
    X = RNG.normal(size=(4, 3))
    hess = pullback.vmap(pullback.hessian(f))(X)
    for b, x in enumerate(X):
        np.testing.assert_allclose(hess[b], pullback.hessian(f)(x), rtol=1e-13)
    V = RNG.normal(size=(4, 3))
    tangents = pullback.vmap(lambda x, v: pullback.jvp(f, (x,), (v,))[1])(X, V)
    np.testing.assert_allclose(tangents, [pullback.grad(f)(x) @ v for x, v in zip(X, V)],
                               rtol=1e-13)
    M = RNG.normal(size=(2, 5, 3))
    twice = pullback.vmap(pullback.vmap(pullback.grad(f)))(M)
    np.testing.assert_allclose(twice[1, 3], pullback.grad(f)(M[1, 3]), rtol=1e-14)


def test_axis_size_with_nothing_mapped():
    out = pullback.vmap(lambda a: a * 2.0, in_axes=None, axis_size=3)(1.5)
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])


def test_out_axes_none_for_a_result_that_does_not_change():
    out = pullback.vmap(lambda a, b: (a * b, b), in_axes=(0, None),
                        out_axes=(0, None))(np.arange(3.0), 2.0)
    np.testing.assert_array_equal(out[0], [0.0, 2.0, 4.0])
    assert out[1] == 2.0


# ---------------------------------------------------------------------- refusals
@pytest.mark.parametrize("call, message", [
    (lambda: pullback.vmap(affine)(np.ones((3, 4)), np.ones((2, 4))), "different sizes"),
    (lambda: pullback.vmap(affine, in_axes=(0,))(np.ones((3, 4)), np.ones((3, 4))),
     "one entry per argument"),
    (lambda: pullback.vmap(affine, in_axes=(None, 2))(np.ones((3, 4)), np.ones((3, 4))),
     "maps axis 2 of a value of rank 2"),
    (lambda: pullback.vmap(lambda a: a)(1.0), "must be an\narray|must be an array"),
    (lambda: pullback.vmap(lambda a: a)(np.ones((0, 2))), "empty batch"),
    (lambda: pullback.vmap(lambda a: a, in_axes=None)(1.0), "no argument is mapped"),
    (lambda: pullback.vmap(lambda a: a, out_axes=None)(np.arange(3.0)), "differs from example"),
    (lambda: pullback.vmap(lambda a: "x")(np.arange(3.0)), "cannot be stacked"),
    (lambda: pullback.vmap(pair, in_axes=(0, {"u": 0}))(np.ones((2, 2)),
                                                        {"u": np.ones((2, 2)), "v": 1.0}),
     "does not match the structure"),
])
def test_refusals(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_refusals_of_the_options():
    with pytest.raises(TypeError, match="expects a function"):
        pullback.vmap(3.0)
    with pytest.raises(TypeError, match="in_axes must be an int"):
        pullback.vmap(affine, in_axes="0")
    with pytest.raises(TypeError, match="axis_size"):
        pullback.vmap(affine, axis_size=-1)


def test_an_error_in_one_example_names_the_users_line(jit):
    def first_above(x):
        return x[np.argmax(x > 0.5) + 3]
    # Example 0 runs; example 1 indexes past the end (the compiled loop raises, and
    # the loop in Python raises it again at the user's line).
    X = np.array([[0.9, 0.1, 0.1, 0.1, 0.1], [0.1, 0.1, 0.9, 0.1, 0.1]])
    with pytest.raises(IndexError) as info:
        pullback.vmap(pullback.grad(first_above, jit=jit))(X)
    assert "first_above" in "".join(getattr(info.value, "__notes__", []))


def batched_inside(w, X):
    return np.sum(pullback.vmap(scaled, in_axes=(None, 0))(w, X))


def test_vmap_inside_a_differentiated_function_is_refused_with_what_to_write(jit):
    with pytest.raises(pullback.UnsupportedSyntaxError,
                       match=r"(?s)write the batch as a loop.*test_vmap.py"):
        pullback.grad(batched_inside, jit=jit)(np.ones(2), np.ones((3, 2)))
