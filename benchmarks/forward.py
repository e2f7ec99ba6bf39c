"""Forward mode and Hessians: jvp against the primal, hvp against the gradient, and
the Hessian of Rosenbrock's function against JAX and PyTorch.

Run:  python benchmarks/forward.py [--quick]

Every figure is a ratio of medians measured in this one process, the candidates
interleaved (pullback.bench.timing), so machine load affects numerator and
denominator alike.  Targets (the forward-mode issue): jvp / primal <= 2 on Numba
and <= 3 on Python for Horner (N = 10^4) and RK4 (2,000 steps); hvp / grad <= 3.
``jvp`` is the public call (argument checks and the derivative's lookup each
call); ``tangent program`` calls the compiled forward function directly.  ``hvp``
gives an entry of H v for every float argument, so ``grad`` there is the
gradient with respect to every float argument too.
"""
from __future__ import annotations

import argparse
import os

import numba
import numpy as np

import pullback
from pullback.bench.timing import interleaved, once
from pullback.bench.workloads import WORKLOADS, mlp_loss
from pullback.core.kinds import kind_of_value
from pullback.examples import horner, lotka_volterra_misfit
from pullback.pipeline import choose_backend, derivative

# Timings of compiled code: Numba compiles in the first call, not in the background.
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


def _program(f, args, nums, jit, dots):
    """The compiled tangent program (Numba's dispatcher itself once it compiled)."""
    kinds = tuple(kind_of_value(a) for a in args)
    fn = derivative(f, nums, kinds, choose_backend(f, jit), mode="forward").fn
    fn(*args, *dots)
    return getattr(fn, "dispatcher", fn)


def _median_ratios(funcs, budget):
    single = {k: once(fn) for k, fn in funcs.items()}
    for fn in funcs.values():      # warm
        fn()
    medians, _, _ = interleaved(funcs, single, rounds=30, batch_s=0.02, budget_s=budget)
    return medians


def workload_rows(name, f, args, tangents, nums, budget):
    """jvp and hvp against the primal and the gradient, on both backends."""
    rows = []
    for jit in (False, True):
        primal = numba.njit(f) if jit else f
        dots = tuple(tangents[i] for i in nums)
        program = _program(f, args, nums, jit, dots)
        # hvp gives an entry of H v for every float argument (a None tangent is a zero
        # one, as in JAX's jvp of grad): the gradient it is measured against, too.
        floats = tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")
        grad = pullback.grad(f, argnums=floats, jit=jit)
        funcs = {
            "primal": lambda: primal(*args),
            "jvp": lambda: pullback.jvp(f, args, tangents, jit=jit),
            "tangent program": lambda: program(*args, *dots),
            "grad": lambda: grad(*args),
            "hvp": lambda: pullback.hvp(f, args, tangents, jit=jit),
        }
        m = _median_ratios(funcs, budget)
        backend = "Numba" if jit else "Python"
        rows.append(f"| {name} | {backend} | {m['jvp'] / m['primal']:.2f} | "
                    f"{m['tangent program'] / m['primal']:.2f} | {m['hvp'] / m['grad']:.2f} | "
                    f"{m['primal'] * 1e6:.0f} µs |")
    return rows


def hessian_rows(n, budget):
    x = np.random.default_rng(1).uniform(-1.5, 1.5, n)
    funcs = {"pullback (Python)": lambda: pullback.hessian(rosen)(x),
             "pullback (Numba)": lambda: pullback.hessian(rosen, jit=True)(x)}
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        jh = jax.jit(jax.hessian(lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0
                                                   + (1 - x[:-1]) ** 2.0)))
        xj = jnp.asarray(x)
        funcs["JAX jit(hessian)"] = lambda: jh(xj).block_until_ready()
    except ImportError:
        pass
    try:
        import torch
        xt = torch.from_numpy(x)
        th = torch.func.hessian(lambda x: torch.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0
                                                    + (1 - x[:-1]) ** 2.0))
        funcs["torch.func.hessian"] = lambda: th(xt)
    except ImportError:
        pass
    m = _median_ratios(funcs, budget)
    base = m["pullback (Python)"]
    return [f"| {k} | {v * 1e3:.2f} ms | {v / base:.2f} |" for k, v in m.items()]


def mlp_rows(batch, budget):
    """The Hessian of the MLP loss in its output layer's weights W2 (64 x 10: 640
    entries, so 640 hvp) against JAX and PyTorch."""
    W1, b1, W2, b2, X, Y = WORKLOADS["mlp"].cases(False, [batch])[0].args
    funcs = {"pullback (Python)": lambda: pullback.hessian(mlp_loss, argnums=2)(W1, b1, W2, b2, X, Y)}
    try:    # the first call compiles (about a minute on a loaded machine), outside the timing
        numba_hessian = pullback.hessian(mlp_loss, argnums=2, jit=True)
        numba_hessian(W1, b1, W2, b2, X, Y)
        funcs["pullback (Numba)"] = lambda: numba_hessian(W1, b1, W2, b2, X, Y)
    except pullback.PullbackError as exc:
        print(f"| pullback (Numba) | refused: {str(exc).splitlines()[0]} | |")
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def loss(W2):
            h = jnp.tanh(X @ W1 + b1)
            z = h @ W2 + b2
            z = z - jnp.max(z, axis=1, keepdims=True)
            return -jnp.sum(Y * (z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True)))) / X.shape[0]
        jh = jax.jit(jax.hessian(loss))
        funcs["JAX jit(hessian)"] = lambda: jh(jnp.asarray(W2)).block_until_ready()
    except ImportError:
        pass
    try:
        import torch
        t = {k: torch.from_numpy(v) for k, v in dict(W1=W1, b1=b1, b2=b2, X=X, Y=Y).items()}

        def tloss(W2):
            h = torch.tanh(t["X"] @ t["W1"] + t["b1"])
            z = h @ W2 + t["b2"]
            z = z - torch.max(z, dim=1, keepdim=True).values
            logp = z - torch.log(torch.sum(torch.exp(z), dim=1, keepdim=True))
            return -torch.sum(t["Y"] * logp) / X.shape[0]
        th = torch.func.hessian(tloss)
        funcs["torch.func.hessian"] = lambda: th(torch.from_numpy(W2))
    except ImportError:
        pass
    reference = np.asarray(funcs.get("JAX jit(hessian)", funcs["pullback (Python)"])())
    for name, fn in funcs.items():     # every tool computes the same Hessian
        got = np.asarray(fn()).reshape(reference.shape)
        assert np.allclose(got, reference, rtol=1e-10, atol=1e-13), name
    m = _median_ratios(funcs, budget)
    base = m["pullback (Python)"]
    return [f"| {k} | {v * 1e3:.1f} ms | {v / base:.2f} |" for k, v in m.items()]


def rk4_hessian_rows(steps):
    """The RK4 fit's 4 x 4 Hessian in absolute time, warm, on both backends."""
    rng = np.random.default_rng(0)
    observed = np.abs(rng.normal(1.0, 0.3, size=(steps, 2)))
    theta = np.array([1.1, 0.4, 0.3, 0.8])
    rows = []
    for jit in (False, True):
        h = pullback.hessian(lotka_volterra_misfit, jit=jit)
        h(theta, observed, 0.01)
        rows.append(f"| {'Numba' if jit else 'Python'} | "
                    f"{min(once(lambda: h(theta, observed, 0.01)) for _ in range(5)) * 1e3:.2f} ms |")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter runs")
    args = parser.parse_args(argv)
    budget = 2.0 if args.quick else 8.0
    rng = np.random.default_rng(0)
    n = 10 ** 3 if args.quick else 10 ** 4
    p = rng.standard_normal(n)
    steps = 400 if args.quick else 2000
    observed = np.abs(rng.normal(1.0, 0.3, size=(steps, 2)))
    theta = np.array([1.1, 0.4, 0.3, 0.8])
    print("| workload | backend | jvp ÷ primal | tangent program ÷ primal | hvp ÷ grad | primal |")
    print("|---|---|---|---|---|---|")
    for row in workload_rows(f"Horner N={n}", horner, (0.9999, p), (1.0, np.zeros(n)),
                             (0, 1), budget):
        print(row)
    for row in workload_rows(f"RK4 steps={steps}", lotka_volterra_misfit,
                             (theta, observed, 0.01), (np.ones(4), None, None), (0,), budget):
        print(row)
    size = 30 if args.quick else 100
    print(f"\nHessian of Rosenbrock's function, n = {size}\n")
    print("| tool | time | ÷ pullback (Python) |")
    print("|---|---|---|")
    for row in hessian_rows(size, budget):
        print(row)
    print("\nHessian of the MLP loss in W2 (64 x 10), batch 128\n")
    print("| tool | time | ÷ pullback (Python) |")
    print("|---|---|---|")
    try:
        for row in mlp_rows(128, budget):
            print(row)
    except pullback.PullbackError as exc:       # a primitive whose tangent has no rule yet
        print(f"| pullback | refused: {str(exc).splitlines()[0]} | |")
    print(f"\nHessian of the RK4 fit (4 x 4), steps = {steps}\n")
    print("| backend | time |")
    print("|---|---|")
    for row in rk4_hessian_rows(steps):
        print(row)


if __name__ == "__main__":
    main()
