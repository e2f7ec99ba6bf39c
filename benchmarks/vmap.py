"""Per-example gradients with ``pullback.vmap``: against a hand-written Numba loop,
one thread against two, and against JAX ``jit(vmap(grad))``.

Run:  python benchmarks/vmap.py [--quick]

Every figure is a ratio of medians measured in this one process, the candidates
interleaved (pullback.bench.timing).  Workloads (the batching issue):

* a scalar recurrence per series, 1,000 series of 200 steps:
  ``vmap(grad(loss, jit=True), in_axes=(None, 0))`` against a ``numba.njit`` loop
  that calls the same compiled gradient once per series (target <= 1.2), and with
  two Numba threads against one (target >= 1.7x faster); JAX writes the
  recurrence with ``lax.scan``;
* the per-example gradients of a one-hidden-layer MLP loss (batch 128), against
  JAX ``jit(vmap(grad))`` (target <= 2).
"""
from __future__ import annotations

import argparse
import os

import numba
import numpy as np

import pullback
from pullback.bench.timing import interleaved, once
from pullback.bench.workloads import WORKLOADS
from pullback.examples import series_loss

os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")




def mlp_example(W1, b1, W2, b2, x, y):
    """Softmax cross-entropy of one example (y one-hot)."""
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z)
    return -np.sum(y * (z - np.log(np.sum(np.exp(z)))))


def _medians(funcs, budget):
    for fn in funcs.values():       # warm (and compile)
        fn()
    pullback.finish_compiling()
    for fn in funcs.values():
        fn()
    single = {k: once(fn) for k, fn in funcs.items()}
    return interleaved(funcs, single, rounds=30, batch_s=0.05, budget_s=budget)[0]


def _hand_loop(g, theta, y0):
    """A ``numba.njit`` loop calling ``g``'s compiled gradient once per series."""
    g(theta, y0)
    entry = next(iter(g._fast.values()))
    fn = entry[0].fn
    lazy = getattr(fn, "lazy", fn)
    jitted, ws0 = lazy.jitted, lazy.workspace

    if ws0 is None:
        @numba.njit
        def loop(theta, Y, out):
            for b in range(Y.shape[0]):
                value, grads = jitted(theta, Y[b], 1.0)
                out[b] = grads[0]
        return lambda theta, Y, out: loop(theta, Y, out)

    @numba.njit
    def loop_ws(theta, Y, out, ws0):
        ws = ws0
        for b in range(Y.shape[0]):
            value, grads, ws = jitted(theta, Y[b], 1.0, ws)
            out[b] = grads[0]
    return lambda theta, Y, out: loop_ws(theta, Y, out, ws0)


def recurrence_rows(series, steps, budget):
    rng = np.random.default_rng(0)
    theta, Y = np.array([0.5, 0.3, 0.2]), rng.normal(size=(series, steps))
    g = pullback.grad(series_loss, jit=True)
    mapped = pullback.vmap(g, in_axes=(None, 0))
    hand = _hand_loop(g, theta, Y[0])
    out = np.empty((series, 3))
    hand(theta, Y, out)
    assert np.array_equal(mapped(theta, Y), out)

    def threads(n):
        def run():
            numba.set_num_threads(n)
            mapped(theta, Y)
        return run
    funcs = {"hand-written njit loop": lambda: hand(theta, Y, out),
             "vmap, 1 thread": threads(1), "vmap, 2 threads": threads(2)}
    if numba.config.NUMBA_NUM_THREADS < 2:
        del funcs["vmap, 2 threads"]
    jax_fn = _jax_recurrence()
    if jax_fn is not None:
        import jax
        Yj = jax.numpy.asarray(Y)
        thj = jax.numpy.asarray(theta)
        np.testing.assert_allclose(np.asarray(jax_fn(thj, Yj)), out, rtol=1e-10)
        funcs["JAX jit(vmap(grad)), lax.scan"] = lambda: jax_fn(thj, Yj).block_until_ready()
    m = _medians(funcs, budget)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    base = m["hand-written njit loop"]
    return [(k, v, v / base) for k, v in m.items()]


@numba.njit(nogil=True)
def _busy(a, lo, hi):
    s = 0.0
    for i in range(lo, hi):
        for k in range(200):
            s += np.tanh(a[i] * k)
    return s


def ceiling(budget):
    """What two threads give this machine on pure arithmetic (the same split into
    two halves on two Python threads, no memory traffic): the most vmap can get."""
    from concurrent.futures import ThreadPoolExecutor
    a, pool = np.random.default_rng(1).random(10_000), ThreadPoolExecutor(2)

    def two():
        for job in [pool.submit(_busy, a, 0, 5000), pool.submit(_busy, a, 5000, 10_000)]:
            job.result()
    m = _medians({"one thread": lambda: _busy(a, 0, 10_000), "two threads": two}, budget)
    return m["one thread"] / m["two threads"]


def _jax_recurrence():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def loss(theta, y):
        def step(carry, yt):
            h, s = carry
            h = theta[0] * h + theta[1] * jnp.tanh(yt - theta[2] * h)
            return (h, s + (yt - h) ** 2), None
        (h, s), _ = jax.lax.scan(step, (0.0, 0.0), y)
        return s
    return jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))


def mlp_rows(batch, budget):
    W1, b1, W2, b2, X, Y = WORKLOADS["mlp"].cases(False, [batch])[0].args
    axes = (None, None, None, None, 0, 0)
    rows = {}
    for jit in (False, True):
        g = pullback.grad(mlp_example, argnums=(0, 1, 2, 3), jit=jit)
        mapped = pullback.vmap(g, in_axes=axes)
        rows[f"pullback vmap ({'Numba' if jit else 'Python'})"] = \
            lambda mapped=mapped: mapped(W1, b1, W2, b2, X, Y)
    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy

        def loss(W1, b1, W2, b2, x, y):
            h = jnp.tanh(x @ W1 + b1)
            z = h @ W2 + b2
            z = z - jnp.max(z)
            return -jnp.sum(y * (z - jnp.log(jnp.sum(jnp.exp(z)))))
        jf = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2, 3)), in_axes=axes))
        jargs = [jnp.asarray(a) for a in (W1, b1, W2, b2, X, Y)]
        ours = rows["pullback vmap (Numba)"]()
        for a, b in zip(ours, jf(*jargs)):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-9, atol=1e-12)
        rows["JAX jit(vmap(grad))"] = lambda: [x.block_until_ready() for x in jf(*jargs)]
    m = _medians(rows, budget)
    base = m.get("JAX jit(vmap(grad))")
    return [(k, v, v / base if base else float("nan")) for k, v in m.items()]


def _print(title, rows, against):
    print(f"\n{title}\n")
    print(f"| candidate | time | ÷ {against} |")
    print("|---|---|---|")
    for name, t, r in rows:
        print(f"| {name} | {t * 1e3:.2f} ms | {r:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budget")
    args = parser.parse_args()
    budget = 3.0 if args.quick else 15.0
    rows = recurrence_rows(1000, 200, budget)
    _print("Per-series gradients of a scalar recurrence, 1,000 series x 200 steps", rows,
           "hand-written njit loop")
    by = {k: t for k, t, _ in rows}
    if "vmap, 2 threads" in by:
        print(f"\nvmap, 2 threads against 1: {by['vmap, 1 thread'] / by['vmap, 2 threads']:.2f}x "
              f"faster; pure arithmetic on this machine: {ceiling(budget):.2f}x")
    _print("Per-example gradients of the MLP loss, batch 128", mlp_rows(128, budget),
           "JAX jit(vmap(grad))")


if __name__ == "__main__":
    main()
