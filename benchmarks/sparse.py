"""The sparse Jacobian of the 1-D Bratu residual (tridiagonal) against the
residual's own cost, and what JAX's dense ``jacfwd`` costs at that size.

Run:  python benchmarks/sparse.py [--n N] [--quick]

Ratios of medians measured in this one process, interleaved
(pullback.bench.timing).  Targets (the batching issue): at n = 10,000, at most
5 sweeps and at most 20x the residual's own cost.  The residual is
``numba.njit`` of the same function for the Numba rows and the function itself
for the Python rows.  The pattern is traced once, on the first call (its time
is shown apart); every call checks its matrix with one extra sweep.
"""
from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

import pullback
from pullback.bench.timing import interleaved, once
from pullback.examples import bratu

os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")




def rows(n, budget):
    u = np.sin(np.linspace(0.0, np.pi, n))
    t0 = time.perf_counter()
    pullback.sparsity(bratu)(u, 1.0)
    trace = time.perf_counter() - t0
    out = []
    for jit in (False, True):
        primal = numba.njit(bratu) if jit else bratu
        J = pullback.jacfwd(bratu, sparse=True, jit=jit)
        J(u, 1.0)
        dense_check = pullback.jacfwd(bratu, jit=jit)(u[:50], 1.0)
        np.testing.assert_allclose(pullback.jacfwd(bratu, sparse=True, jit=jit)(
            u[:50], 1.0).toarray(), dense_check, rtol=1e-13)
        funcs = {"residual": lambda: primal(u, 1.0), "sparse Jacobian": lambda: J(u, 1.0)}
        for fn in funcs.values():
            fn()
        single = {k: once(fn) for k, fn in funcs.items()}
        m = interleaved(funcs, single, rounds=20, batch_s=0.05, budget_s=budget)[0]
        before = J.sweeps
        J(u, 1.0)
        out.append(("Numba" if jit else "Python", m["residual"], m["sparse Jacobian"],
                    J.sweeps - before))
    return out, trace


def jax_dense(n):
    """Seconds of one call of JAX's jit(jacfwd) of the residual (sliced form) at n,
    compiled first; None without JAX or when it fails (memory)."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def residual(u):
        h = 1.0 / (u.shape[0] + 1)
        up = jnp.concatenate((jnp.zeros(1), u, jnp.zeros(1)))
        return (up[:-2] - 2.0 * u + up[2:]) / h ** 2 + jnp.exp(u)
    f = jax.jit(jax.jacfwd(residual))
    u = jnp.asarray(np.sin(np.linspace(0.0, np.pi, n)))
    try:
        f(u).block_until_ready()
        t0 = time.perf_counter()
        f(u).block_until_ready()
        return time.perf_counter() - t0
    except Exception:       # noqa: BLE001 - out of memory: reported as such
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="smaller budget")
    args = parser.parse_args()
    out, trace = rows(args.n, 2.0 if args.quick else 8.0)
    print(f"\nSparse Jacobian of the Bratu residual, n = {args.n:,} (tridiagonal)\n")
    print("| backend | residual | sparse Jacobian | ÷ residual | sweeps per call |")
    print("|---|---|---|---|---|")
    for backend, r, j, sweeps in out:
        print(f"| {backend} | {r * 1e6:.0f} µs | {j * 1e6:.0f} µs | {j / r:.1f} | {sweeps} |")
    print(f"\nThe pattern's trace (once, Python): {trace * 1e3:.0f} ms")
    dense = jax_dense(args.n)
    if dense is not None:
        print(f"JAX jit(jacfwd), dense {args.n:,} x {args.n:,}: {dense * 1e3:.0f} ms a call")
    else:
        print("JAX jit(jacfwd), dense: not run (JAX missing, or out of memory)")


if __name__ == "__main__":
    main()
