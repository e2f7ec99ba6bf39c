"""The fixed cost of a gradient call, and where the prod seed's gradient spends its time.

Run:  python benchmarks/call_cost.py

For each backend it times, in one process with the candidates interleaved:

* the gradient of ``f(x) = x * x`` at a float, and of ``np.sum(a * a)`` at a
  one-entry array: the plain function, the generated derivative called directly
  (``c.fn``, with Numba's dispatch), and the whole ``pullback.grad`` call, whose
  difference from the derivative is the API's fixed cost (argument kinds, the
  derivative's lookup, conversion of the results);
* a pytree argument (a NamedTuple of two arrays and two floats) against the
  same four values passed as flat arguments, ``jit=True``: the pytree's cost per
  call above the flat call (target: at most 10 µs);
* the prod seed's gradient, ``np.sum(np.prod(A, axis=0))`` on MM (10 x 1000,
  no zeros) and ZZ (a zero in half the columns), split into the generated
  derivative called directly (``c.fn``) and the whole ``pullback.grad`` call,
  each as a ratio to ``np.prod(A, axis=0)``.

Medians of timeit batches (pullback.bench.timing.interleaved).
"""
from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

import pullback
from pullback.bench.timing import interleaved, once
from pullback.bench.workloads import prod_sum
from pullback.examples import seed_matrices

# Timings of compiled code: Numba compiles in the first call, not in the background.
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")


def square(x):
    return x * x


def sum_of_squares(a):
    return np.sum(a * a)


class Params(NamedTuple):
    a: np.ndarray
    b: np.ndarray
    c: float
    d: float


def tree_loss(p, x):
    s = 0.0
    for i in range(len(x)):
        s += p.a[i] * x[i] + p.b[i] * p.c + p.d
    return s


def flat_loss(a, b, c, d, x):
    s = 0.0
    for i in range(len(x)):
        s += a[i] * x[i] + b[i] * c + d
    return s


def tree_cost():
    """µs of grad(tree_loss) with a NamedTuple and of grad(flat_loss) with its leaves."""
    rng = np.random.default_rng(0)
    x, p = rng.random(10), Params(rng.random(10), rng.random(10), 0.5, 0.2)
    g_tree = pullback.grad(tree_loss, jit=True)
    g_flat = pullback.grad(flat_loss, argnums=(0, 1, 2, 3), jit=True)
    t = timed({"tree": lambda: g_tree(p, x), "flat": lambda: g_flat(*p, x)})
    return t["tree"] * 1e6, t["flat"] * 1e6


def timed(funcs):
    for f in funcs.values():
        f()
    medians, _, _ = interleaved(funcs, {k: once(f) for k, f in funcs.items()}, rounds=15,
                                batch_s=0.02, budget_s=6.0)
    return medians


def fixed_costs(jit, f, x):
    """µs of f(x), of its generated derivative called directly, and of grad(f)(x)."""
    g = pullback.grad(f, jit=jit)
    g(x)
    c, _, _ = g.compiled(x)
    fn = getattr(c.fn, "dispatcher", c.fn)
    t = timed({"f": lambda: f(x), "derivative": lambda: fn(x, 1.0), "grad": lambda: g(x)})
    return t["f"] * 1e6, t["derivative"] * 1e6, t["grad"] * 1e6


def prod_split(jit, A):
    g = pullback.grad(prod_sum, jit=jit)
    g(A)
    c, _, _ = g.compiled(A)
    fn = getattr(c.fn, "dispatcher", c.fn)
    t = timed({"primal": lambda: np.prod(A, axis=0), "derivative": lambda: fn(A, 1.0),
               "grad": lambda: g(A)})
    return t["derivative"] / t["primal"], t["grad"] / t["primal"], (t["grad"] - t["derivative"]) * 1e6


def main():
    mats = seed_matrices()
    print("| backend | argument | f | its derivative | pullback.grad(f) | the API's share |")
    print("|---|---|---|---|---|---|")
    for jit in (False, True):
        for f, x, what in ((square, 0.7, "float"), (sum_of_squares, np.array([0.7]), "1-entry array")):
            t_f, t_d, t_g = fixed_costs(jit, f, x)
            print(f"| {'Numba' if jit else 'Python'} | {what} | {t_f:.2f} µs | {t_d:.2f} µs | "
                  f"{t_g:.2f} µs | {t_g - t_d:.2f} µs |", flush=True)
    tree, flat = tree_cost()
    print(f"\n| Numba, 4 leaves | pytree argument | flat arguments | the pytree's share |\n"
          f"|---|---|---|---|\n| | {tree:.2f} µs | {flat:.2f} µs | {tree - flat:.2f} µs |",
          flush=True)
    print("\n| backend | matrix | derivative ÷ np.prod | pullback.grad ÷ np.prod | "
          "the API's share |")
    print("|---|---|---|---|---|")
    for jit in (False, True):
        for name in ("MM", "ZZ"):
            d, g, api = prod_split(jit, mats[name])
            print(f"| {'Numba' if jit else 'Python'} | {name} | {d:.2f} | {g:.2f} | {api:.1f} µs |",
                  flush=True)


if __name__ == "__main__":
    main()
