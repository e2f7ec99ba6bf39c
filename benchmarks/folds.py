"""Loop primitives: Horner's rule via ``pullback.foldr`` against the plain loop.

Run:  python benchmarks/folds.py [--quick]

The seed's ``foldr((pi, y) -> muladd(x, y, pi), p)`` is written two ways, from
``0.0`` over every coefficient and from ``p[-1]`` over ``p[:-1]``; each is timed
against the plain loop it desugars to, on both backends.  Every figure is a
ratio of medians measured in this one process with the candidates interleaved,
so machine load affects numerator and denominator alike.  Target: gradient
via foldr / gradient of the plain loop <= 1.2 on each backend.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import pullback
from pullback import foldr
from pullback.bench.timing import interleaved, once
from pullback.bench.workloads import HORNER_X

# Timings of compiled code: Numba compiles in the first call, not in the background.
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")


def fold_zero(x, p):
    return foldr(lambda pi, y: x * y + pi, p, 0.0)


def loop_zero(x, p):
    y = 0.0
    for i in range(len(p) - 1, -1, -1):
        y = x * y + p[i]
    return y


def fold_seed(x, p):
    return foldr(lambda pi, y: x * y + pi, p[:-1], p[-1])


def loop_seed(x, p):
    q = p[:-1]
    y = p[-1]
    for i in range(len(q) - 1, -1, -1):
        y = x * y + q[i]
    return y


PAIRS = {"foldr from 0.0": (fold_zero, loop_zero), "foldr from p[-1]": (fold_seed, loop_seed)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N up to 10^4, fewer repeats")
    args = ap.parse_args(argv)
    sizes = [10**3, 10**4] + ([] if args.quick else [10**5])
    rng = np.random.default_rng(0)
    x = HORNER_X
    print("| form | backend | N | grad via foldr | grad of the plain loop | ratio |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for form, (fold, loop) in PAIRS.items():
        for jit in (False, True):
            gf = pullback.grad(fold, argnums=(0, 1), jit=jit)
            gl = pullback.grad(loop, argnums=(0, 1), jit=jit)
            p0 = rng.standard_normal(10)
            (fx, fp), (lx, lp) = gf(x, p0), gl(x, p0)    # compile, and check they agree
            assert np.isclose(fx, lx) and np.allclose(fp, lp), form
            for n in sizes:
                p = rng.standard_normal(n)
                scale = 3e3 if jit else 3e1
                rep = max(7, min(301, int(scale * 1e3 / n)))
                funcs = {"fold": lambda: gf(x, p), "loop": lambda: gl(x, p)}
                t, _, _ = interleaved(funcs, {k: once(f) for k, f in funcs.items()}, rep,
                                      batch_s=0.0, budget_s=30.0)
                ratio = t["fold"] / t["loop"]
                worst = max(worst, ratio)
                print(f"| {form} | {'Numba' if jit else 'Python'} | 10^{len(str(n)) - 1} | "
                      f"{t['fold'] * 1e6:.0f} µs | {t['loop'] * 1e6:.0f} µs | {ratio:.2f} |")
    print(f"\nworst ratio: {worst:.2f} (target <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
