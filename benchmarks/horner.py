"""Horner's rule gradient: pullback against the primal and a hand-written adjoint.

Run:  python benchmarks/horner.py [--quick]

Every figure is a ratio of medians measured in this one process, with the
candidates interleaved, so machine load affects numerator and denominator
alike.  Targets (DESIGN.md): Numba gradient / hand-written Numba adjoint
<= 1.5 and / Numba primal <= 3; Python gradient / Python primal <= 3; time and
peak memory linear in N.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc

import numba
import numpy as np

import pullback
from pullback.bench.tools import TOOLS
from pullback.bench.workloads import HORNER_X, WORKLOADS, Case
from pullback.examples import horner, horner_foldr

# Timings of compiled code: Numba compiles in the first call, not in the background.
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")


@numba.njit
def hand_adjoint(x, p):
    """What a person writes: save ex in a forward loop, then run it backwards."""
    N = len(p)
    saved = np.empty(N)
    ex = p[N - 1]
    for i in range(N - 2, -1, -1):
        saved[i] = ex
        ex = x * ex + p[i]
    dp = np.zeros_like(p)
    dx = 0.0
    dex = 1.0
    for i in range(0, N - 1):
        dx += dex * saved[i]
        dp[i] += dex
        dex = dex * x
    dp[N - 1] += dex
    return ex, dx, dp


def peer_gradients(x, p):
    """Gradients of the same plain loop by the peers that are installed, as zero-argument
    callables returning (dx, dp).  PyTorch and autograd run `pullback bench`'s versions."""
    out = {}
    case = Case(f"N={len(p)}", len(p), (x, p))
    for key, name in [("torch", "PyTorch eager loop"), ("autograd", "HIPS autograd loop")]:
        if TOOLS[key].missing() is None:
            prep = TOOLS[key].prepare(WORKLOADS["horner"], case)
            out[name] = lambda prep=prep: tuple(prep.to_numpy(prep.grad()))
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def scan_horner(x, p):
            def step(ex, pi):
                return x * ex + pi, None
            ex, _ = jax.lax.scan(step, p[-1], p[:-1], reverse=True)
            return ex
        jg = jax.jit(jax.grad(scan_horner, argnums=(0, 1)))
        pj = jnp.asarray(p)

        def jax_scan():
            dx, dp = jg(x, pj)
            dx.block_until_ready()
            return float(dx), np.asarray(dp)
        out["JAX lax.scan + jit (loop rewritten)"] = jax_scan
    except ImportError:
        pass
    return out


def medians(funcs, repeat):
    """Median wall time of each callable, interleaved round-robin."""
    times = {k: [] for k in funcs}
    for _ in range(repeat):
        for k, f in funcs.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def peak_bytes(f):
    tracemalloc.start()
    f()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def fmt(t):
    return f"{t * 1e6:.0f} µs" if t < 1e-2 else f"{t * 1e3:.1f} ms"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N up to 10^5, fewer repeats")
    args = ap.parse_args(argv)
    sizes = [10**3, 10**4, 10**5] + ([] if args.quick else [10**6])
    rng = np.random.default_rng(0)
    x = HORNER_X       # every cotangent x**i a normal number (see its comment)

    g_py = pullback.grad(horner, argnums=(0, 1), jit=False)
    g_nb = pullback.grad(horner, argnums=(0, 1), jit=True)
    f_py = pullback.grad(horner_foldr, argnums=(0, 1), jit=False)
    f_nb = pullback.grad(horner_foldr, argnums=(0, 1), jit=True)
    primal_nb = numba.njit(horner)
    foldr_nb = numba.njit(horner_foldr)

    p0 = rng.standard_normal(10)
    t0 = time.perf_counter()
    g_nb(x, p0)
    compile_nb = time.perf_counter() - t0
    for f in (f_nb, primal_nb, foldr_nb, hand_adjoint):
        f(x, p0)
    # Check before timing: the two backends and the hand-written adjoint agree.
    _, hdx, hdp = hand_adjoint(x, p0)
    for g in (g_py, g_nb, f_py, f_nb):
        dx, dp = g(x, p0)
        assert np.allclose(dp, hdp) and np.isclose(dx, hdx)

    rows, mem = [], []
    for n in sizes:
        p = rng.standard_normal(n)
        rep = max(5, min(200, int(2e5 / n)))
        rep_py = max(3, min(30, int(3e4 / n)))
        nb = medians({"primal": lambda: primal_nb(x, p), "hand": lambda: hand_adjoint(x, p),
                      "grad": lambda: g_nb(x, p), "foldr_primal": lambda: foldr_nb(x, p),
                      "foldr_grad": lambda: f_nb(x, p)}, rep)
        py = medians({"primal": lambda: horner(x, p), "grad": lambda: g_py(x, p),
                      "foldr_primal": lambda: horner_foldr(x, p),
                      "foldr_grad": lambda: f_py(x, p)}, rep_py)
        rows.append((n, py, nb))
        mem.append((n, peak_bytes(lambda: g_py(x, p))))

    print(f"pullback Horner gradient benchmark (Numba compile of the gradient: "
          f"{compile_nb:.2f} s, excluded)\n")
    print("| N | Python primal | Python grad | ÷ primal | Numba primal | hand adjoint | "
          "Numba grad | ÷ hand | ÷ primal | foldr Python ÷ primal | foldr Numba ÷ primal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, py, nb in rows:
        print(f"| 10^{len(str(n)) - 1} | {fmt(py['primal'])} | {fmt(py['grad'])} | "
              f"{py['grad'] / py['primal']:.2f} | {fmt(nb['primal'])} | {fmt(nb['hand'])} | "
              f"{fmt(nb['grad'])} | {nb['grad'] / nb['hand']:.2f} | "
              f"{nb['grad'] / nb['primal']:.2f} | "
              f"{py['foldr_grad'] / py['foldr_primal']:.2f} | "
              f"{nb['foldr_grad'] / nb['foldr_primal']:.2f} |")
    n = 1000
    p = rng.standard_normal(n)
    peers = peer_gradients(x, p)
    if peers:
        _, hdx, hdp = hand_adjoint(x, p)
        # pullback first, then each peer on its own: some peers leave thread pools
        # spinning that would slow whatever runs next to them.
        t = medians({"pullback, Numba": lambda: g_nb(x, p),
                     "pullback, Python": lambda: g_py(x, p)}, 51)
        for name, f in peers.items():
            dx, dp = f()               # warm up (and compile) outside the timing
            assert np.allclose(dp, hdp) and np.isclose(dx, hdx), name
            t.update(medians({name: f}, 5))
        print("\nPeers on the same gradient, N = 10^3 (÷ pullback's Numba gradient):")
        print("| method | time | ÷ pullback Numba |")
        print("|---|---|---|")
        for name, v in t.items():
            print(f"| {name} | {fmt(v)} | {v / t['pullback, Numba']:.0f} |")
    print("\nGrowth per decade of N (linear = 10):")
    print("| N | Python grad time | Numba grad time | Python grad peak memory |")
    print("|---|---|---|---|")
    for (n, py, nb), (_, m), (n0, py0, nb0), (_, m0) in zip(rows[1:], mem[1:], rows, mem):
        print(f"| 10^{len(str(n0)) - 1} → 10^{len(str(n)) - 1} | {py['grad'] / py0['grad']:.1f}× | "
              f"{nb['grad'] / nb0['grad']:.1f}× | {m / m0:.1f}× ({m / 1e6:.1f} MB) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
