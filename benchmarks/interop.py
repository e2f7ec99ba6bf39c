"""pullback inside PyTorch and JAX: a training step with a pullback layer against the
same model written in each framework, and the fixed cost of crossing into pullback.

Run:  python benchmarks/interop.py [--quick] [--steps N]

Every figure is a median of interleaved runs in this one process
(pullback.bench.timing), one thread.  The model: the RK4 Lotka-Volterra trajectory
of ``pullback.examples.lotka_volterra`` (N steps, a Python loop) fitted to
observations by the mean squared error; one training step is the loss, its
gradient and an Adam update of the four parameters.

* PyTorch: the layer as ``pullback.torch.function(lotka_volterra, jit=True)``,
  against the same loop written with torch scalars in eager mode (target: pullback
  at least 5x faster) and against JAX ``jit`` of the model with ``lax.scan``
  (target: within 2x).
* JAX: the layer as ``pullback.jax.function(lotka_volterra, jit=True)`` inside
  ``jax.jit(jax.value_and_grad(loss))``, against the same ``lax.scan`` model.
* Crossing cost: a tiny layer (``2 x`` of four floats), its forward and backward
  through ``pullback.torch.function`` against a hand-written
  ``torch.autograd.Function`` calling the same two compiled kernels (pullback's
  Numba value and gradient programs) directly (target: at most 20 us more).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from pullback.bench.timing import interleaved, once
from pullback.examples import lotka_volterra, lotka_volterra_step

os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")

THETA0 = np.array([1.0, 0.5, 0.2, 0.5])
TRUTH = np.array([1.1, 0.4, 0.1, 0.4])
Y0 = np.array([1.0, 0.5])
H = 0.01


def _medians(funcs, budget):
    for fn in funcs.values():       # warm (and compile)
        fn()
        fn()
    single = {k: once(fn) for k, fn in funcs.items()}
    return interleaved(funcs, single, rounds=30, batch_s=0.05, budget_s=budget)[0]


def torch_rows(steps, budget, jax_step):
    import torch

    import pullback.torch as pt
    torch.set_num_threads(1)
    observed = torch.from_numpy(lotka_volterra(TRUTH, Y0, H, steps))
    y0 = torch.from_numpy(Y0)
    layer = pt.function(lotka_volterra, jit=True)

    def eager(theta, y0, h, n):
        params, x, y, out = tuple(theta), y0[0], y0[1], []   # theta unbound once
        for _ in range(n):
            x, y = lotka_volterra_step(params, x, y, h)
            out.append(torch.stack([x, y]))
        return torch.stack(out)

    def trainer(model):
        theta = torch.tensor(THETA0, requires_grad=True)
        opt = torch.optim.Adam([theta], lr=1e-3)

        def step():
            opt.zero_grad()
            loss = ((model(theta, y0, H, steps) - observed) ** 2).mean()
            loss.backward()
            opt.step()
            return theta.grad
        return step
    ours, theirs = trainer(layer), trainer(eager)
    np.testing.assert_allclose(ours(), theirs(), rtol=1e-10)
    funcs = {"PyTorch + pullback layer (Numba)": ours, "PyTorch eager, same loop": theirs}
    if jax_step is not None:
        funcs["JAX jit, lax.scan"] = jax_step
    m = _medians(funcs, budget)
    base = m["PyTorch + pullback layer (Numba)"]
    return [(k, v, v / base) for k, v in m.items()]


def jax_steps(steps):
    """``(pullback layer step, lax.scan step)`` in JAX, or None without JAX."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    import pullback.jax as pj
    observed = jnp.asarray(lotka_volterra(TRUTH, Y0, H, steps))
    y0 = jnp.asarray(Y0)

    def scanned(theta, y0, h, n):
        def body(state, _):
            x, y = lotka_volterra_step(theta, *state, h)
            return (x, y), jnp.stack([x, y])
        return jax.lax.scan(body, (y0[0], y0[1]), None, length=n)[1]

    def trainer(model):
        loss = lambda t: jnp.mean((model(t, y0, H, steps) - observed) ** 2)  # noqa: E731
        grad = jax.jit(jax.value_and_grad(loss))

        @jax.jit
        def update(theta, m, v, k, g):
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g ** 2
            return theta - 1e-3 * (m / (1 - 0.9 ** k)) / (jnp.sqrt(v / (1 - 0.999 ** k)) + 1e-8), m, v
        state = {"theta": jnp.asarray(THETA0), "m": jnp.zeros(4), "v": jnp.zeros(4), "k": 0}

        def step():
            state["k"] += 1
            _, g = grad(state["theta"])
            state["theta"], state["m"], state["v"] = update(state["theta"], state["m"],
                                                            state["v"], state["k"], g)
            return state["theta"].block_until_ready()
        return step, grad
    ours, g_ours = trainer(pj.function(lotka_volterra, jit=True))
    theirs, g_theirs = trainer(scanned)
    np.testing.assert_allclose(g_ours(jnp.asarray(THETA0))[1], g_theirs(jnp.asarray(THETA0))[1],
                               rtol=1e-10)
    return ours, theirs


def crossing_rows(budget):
    import torch

    import pullback.torch as pt
    from pullback import interop
    torch.set_num_threads(1)
    layer = pt.function(_twice, jit=True)
    x = torch.ones(4, dtype=torch.float64, requires_grad=True)
    layer(x).sum().backward()
    layer(x).sum().backward()
    plain = next(iter(interop._PLAINS[_twice].values()))
    value_kernel, grad_kernel = plain.value_program.fn, plain.gradient_program.fn

    class Glue(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.xn = x.detach().numpy()
            return torch.from_numpy(value_kernel(ctx.xn)[0])

        @staticmethod
        def backward(ctx, g):
            return torch.from_numpy(grad_kernel(ctx.xn, np.ascontiguousarray(g.numpy()))[1][0])

    def through(fn):
        def run():
            x.grad = None
            fn(x).sum().backward()
        return run
    funcs = {"pullback.torch.function": through(layer),
             "hand-written autograd.Function, same kernels": through(Glue.apply),
             "torch ops (2 * x)": through(lambda t: 2.0 * t)}
    return _medians(funcs, budget)


def _twice(x):
    return x * 2.0


def _print(title, rows, against):
    print(f"\n{title}\n")
    print(f"| candidate | time per step | ÷ {against} |")
    print("|---|---|---|")
    for name, t, r in rows:
        print(f"| {name} | {t * 1e3:.3f} ms | {r:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budget")
    parser.add_argument("--steps", type=int, default=500, help="RK4 steps of the layer")
    args = parser.parse_args()
    budget = 3.0 if args.quick else 15.0
    steps = jax_steps(args.steps)
    if steps is not None:
        m = _medians({"JAX + pullback layer (Numba)": steps[0], "JAX jit, lax.scan": steps[1]},
                     budget)
        base = m["JAX jit, lax.scan"]
        _print(f"JAX training step, RK4 layer of {args.steps} steps",
               [(k, v, v / base) for k, v in m.items()], "JAX jit, lax.scan")
    rows = torch_rows(args.steps, budget, None if steps is None else steps[1])
    _print(f"PyTorch training step, RK4 layer of {args.steps} steps", rows,
           "PyTorch + pullback layer")
    m = crossing_rows(budget)
    print("\nCrossing into pullback: a tiny layer's forward and backward\n")
    print("| candidate | time |")
    print("|---|---|")
    for k, v in m.items():
        print(f"| {k} | {v * 1e6:.1f} us |")
    extra = m["pullback.torch.function"] - m["hand-written autograd.Function, same kernels"]
    print(f"\npullback.torch.function over the compiled kernels: {extra * 1e6:.1f} us a call")


if __name__ == "__main__":
    main()
