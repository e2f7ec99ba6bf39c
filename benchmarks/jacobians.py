"""Whole Jacobians and Hessians against JAX ``jit``: a 100 -> 100 residual written
as a loop (``jacfwd``, ``jacrev``) and the Hessian of a logistic-regression
negative log-likelihood (n = 500, d = 50).

Run:  python benchmarks/jacobians.py [--quick]

Ratios of medians measured in this one process, interleaved
(pullback.bench.timing), each result checked against JAX's first.  Targets
(the batching issue): ``jacfwd`` and ``jacrev`` of the residual <= 2x JAX
``jit(jacfwd)``; the logistic Hessian <= 1.5x JAX ``jit(hessian)``.  JAX writes
the residual with ``roll`` (its ``jit`` would unroll the Python loop).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import pullback
from pullback.bench.timing import interleaved, once
from pullback.examples import reaction

os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")




def nll(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z)


def _medians(funcs, budget):
    for fn in funcs.values():
        fn()
    pullback.finish_compiling()
    single = {k: once(fn) for k, fn in funcs.items()}
    return interleaved(funcs, single, rounds=20, batch_s=0.05, budget_s=budget)[0]


def _jax():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def reaction_rows(budget):
    z = np.random.default_rng(0).uniform(0.5, 1.5, 100)
    funcs = {}
    for jit in (False, True):
        name = "Numba" if jit else "Python"
        funcs[f"pullback jacfwd ({name})"] = (lambda J=pullback.jacfwd(reaction, jit=jit): J(z))
        funcs[f"pullback jacrev ({name})"] = (lambda J=pullback.jacrev(reaction, jit=jit): J(z))
    jax = _jax()
    if jax is not None:
        jnp = jax.numpy

        def residual(z):
            u, v = z[0::2], z[1::2]
            lu = jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1)
            lv = jnp.roll(v, 1) - 2.0 * v + jnp.roll(v, -1)
            return jnp.stack([0.1 * lu + u * u * v - 0.5 * u,
                              0.05 * lv - u * u * v + 0.3 * (1.0 - v)], axis=1).ravel()
        jf, jr = jax.jit(jax.jacfwd(residual)), jax.jit(jax.jacrev(residual))
        want = np.asarray(jf(z))
        for k in list(funcs):
            np.testing.assert_allclose(funcs[k](), want, rtol=1e-12, atol=1e-12)
        funcs["JAX jit(jacfwd)"] = lambda: jf(z).block_until_ready()
        funcs["JAX jit(jacrev)"] = lambda: jr(z).block_until_ready()
    return _medians(funcs, budget), "JAX jit(jacfwd)"


def logistic_rows(budget):
    rng = np.random.default_rng(0)
    X, w = rng.normal(size=(500, 50)), 0.1 * rng.normal(size=50)
    y = (rng.random(500) < 0.5).astype(float)
    funcs = {"NumPy primal": lambda: nll(w, X, y)}
    for jit in (False, True):
        H = pullback.hessian(nll, jit=jit)
        funcs[f"pullback hessian ({'Numba' if jit else 'Python'})"] = \
            lambda H=H: H(w, X, y)
    jax = _jax()
    if jax is not None:
        jnp = jax.numpy
        jh = jax.jit(jax.hessian(lambda w, X, y: jnp.sum(jnp.logaddexp(0.0, X @ w)
                                                         - y * (X @ w))))
        want = np.asarray(jh(w, X, y))
        for k in list(funcs)[1:]:
            np.testing.assert_allclose(funcs[k](), want, rtol=1e-10)
        funcs["JAX jit(hessian)"] = lambda: jh(w, X, y).block_until_ready()
    return _medians(funcs, budget), "JAX jit(hessian)"


def _print(title, result):
    medians, against = result
    base = medians.get(against)
    print(f"\n{title}\n")
    print(f"| candidate | time | ÷ {against} |")
    print("|---|---|---|")
    for k, v in medians.items():
        print(f"| {k} | {v * 1e6:.0f} µs | {v / base if base else float('nan'):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budget")
    budget = 2.0 if parser.parse_args().quick else 8.0
    _print("Jacobian of a 100 -> 100 reaction-diffusion residual written as a loop",
           reaction_rows(budget))
    _print("Hessian of a logistic-regression NLL, n = 500, d = 50", logistic_rows(budget))


if __name__ == "__main__":
    main()
