"""Gradient of sum(prod(A, axis=0)) with and without zeros: pullback's rule against peers.

Run:  python benchmarks/prod.py [--quick] [--floor]

Matrices from shared/seeds/prod-gradients-with-zeros.txt: M 5x10 and MM
10x1000 uniform in [0, 1); Z and ZZ the same with zeros (Z: five entries; ZZ:
a zero in half the columns).  Every figure is a median of timeit batches
measured in this one process with the candidates interleaved round-robin, so
machine load affects numerator and denominator alike; ratios are to the NumPy
primal ``np.prod(A, axis=0)``.

* rule: ``ans = np.prod(A, 0); prod_vjp(g, ans, A, 0)`` with ``g`` the ones
  (the forward and the rule); "+ ones_like(g)" also makes ``g`` in the loop;
* pullback.grad: the whole generated gradient of ``f(A) = np.sum(np.prod(A, axis=0))``
  (when the transform is importable);
* PyTorch: ``torch.prod(x, 0).sum()`` and ``torch.autograd.grad``, float64 CPU;
* JAX: ``jax.jit(jax.grad(lambda A: jnp.sum(jnp.prod(A, axis=0))))``, float64;
* autograd (HIPS): ``autograd.grad`` of the same; NaN with zeros.

Targets (DESIGN.md): rule / primal <= 3 without zeros, <= 6 with zeros (ZZ).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit

import numpy as np

from pullback.bench.tools import TOOLS, as_arrays
from pullback.bench.workloads import WORKLOADS, Case
from pullback.bench.workloads import prod_sum as f
from pullback.examples import seed_matrices
from pullback.rules.prod import prod_vjp

# Timings of compiled code: Numba compiles in the first call, not in the background.
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")


def reference(A):
    """The exact gradient, column by column (independent of the rule)."""
    return np.stack([np.prod(np.delete(A, i, axis=0), axis=0) for i in range(A.shape[0])])


def rule_grad(A, g):
    """The forward and the rule, as the generated gradient runs them (g: the ones of sum's VJP)."""
    ans = np.prod(A, axis=0)
    return prod_vjp(g, ans, A, 0)


def rule_grad_ones(A):
    """The same, making the cotangent of sum too."""
    ans = np.prod(A, axis=0)
    return prod_vjp(np.ones_like(ans), ans, A, 0)


def peers():
    """name -> factory(A) returning a zero-argument gradient callable, for what is importable."""
    out = {}
    try:
        import pullback
        import pullback.rules.prod  # noqa: F401  (registers the rule if the package does not yet)
        g = pullback.grad(f)
        g(np.ones((2, 2)))
        out["pullback.grad"] = lambda A: (lambda: g(A))
    except Exception as e:                                   # the transform is work in progress
        print(f"(pullback.grad unavailable: {type(e).__name__}: {e})", file=sys.stderr)
    # The peers as `pullback bench` runs them (float64; JAX with x64 and jit).
    for key, name in [("torch", "PyTorch"), ("jax-jit", "JAX jit"), ("autograd", "autograd")]:
        if TOOLS[key].missing() is None:
            out[name] = lambda A, key=key: _peer(key, A)
    return out


def _peer(key, A):
    prep = TOOLS[key].prepare(WORKLOADS["prod"], Case("", A.size, (A,)))
    prep.grad()                                              # compile outside the timing
    return prep.grad


def medians(funcs, rounds, batch_seconds=2e-3):
    """Median time per call of each callable: timeit batches, interleaved round-robin."""
    timers, numbers = {}, {}
    for k, fn in funcs.items():
        timers[k] = timeit.Timer(fn)
        once = min(timers[k].repeat(3, 1))
        numbers[k] = max(1, int(batch_seconds / max(once, 1e-7)))
    samples = {k: [] for k in funcs}
    for _ in range(rounds):
        for k, t in timers.items():
            samples[k].append(t.timeit(numbers[k]) / numbers[k])
    return {k: statistics.median(v) for k, v in samples.items()}


def fmt(t):
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def _first(A):
    return A[0, 0]


def floor(rounds):
    """The whole gradient ``grad(f)(A)`` against its floor: ``np.prod`` (the forward
    sweep), one division pass ``g * ans / A`` (what the rule must write at least) and
    the fixed cost of a gradient call that returns an array of A's shape
    (``grad(lambda A: A[0, 0])``), on both backends, MM and ZZ and 100 x 10,000
    without and with zeros (a zero in half the columns)."""
    import pullback
    rng = np.random.default_rng(0)
    big = rng.uniform(0.5, 1.5, (100, 10_000))
    big_z = big.copy()
    cols = rng.choice(10_000, 5_000, replace=False)
    big_z[rng.integers(0, 100, cols.size), cols] = 0.0
    mats = {**{k: v for k, v in seed_matrices().items() if k in ("MM", "ZZ")},
            "100×10⁴": big, "100×10⁴ with zeros": big_z}
    print("| A | backend | np.prod | division pass | call's fixed cost | floor | gradient | "
          "gradient ÷ floor | gradient ÷ np.prod |")
    print("|---|---|---|---|---|---|---|---|---|")
    for jit in (False, True):
        for label, A in mats.items():
            g, first = pullback.grad(f, jit=jit), pullback.grad(_first, jit=jit)
            g(A), first(A)
            pullback.finish_compiling()
            ans = np.prod(A, axis=0, keepdims=True)
            gk = np.ones_like(ans)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = medians({"prod": lambda: np.prod(A, axis=0), "div": lambda: gk * ans / A,
                             "fixed": lambda: first(A), "grad": lambda: g(A)}, rounds)
            low = t["prod"] + t["div"] + t["fixed"]
            print(f"| {label} | {'Numba' if jit else 'Python'} | {fmt(t['prod'])} | "
                  f"{fmt(t['div'])} | {fmt(t['fixed'])} | {fmt(low)} | {fmt(t['grad'])} | "
                  f"**{t['grad'] / low:.2f}** | {t['grad'] / t['prod']:.2f} |")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--floor", action="store_true",
                    help="the whole gradient against its floor (see floor())")
    args = ap.parse_args(argv)
    rounds = 15 if args.quick else 61
    if args.floor:
        return floor(rounds)
    others = peers()
    names = list(others)
    rows = []
    for label, A in seed_matrices().items():
        want = reference(A)
        g = np.ones(A.shape[1])
        for got in (rule_grad(A, g), rule_grad_ones(A)):
            assert np.isfinite(got).all() and np.allclose(got, want, rtol=1e-12, atol=0), label
        funcs = {"primal": lambda: np.prod(A, axis=0), "rule": lambda: rule_grad(A, g),
                 "rule+g": lambda: rule_grad_ones(A)}
        nan = {}
        for name in names:
            run = others[name](A)
            value = as_arrays(run())[0]
            nan[name] = bool(np.isnan(value).any())
            if not nan[name]:
                assert np.allclose(value, want, rtol=1e-10, atol=0), (name, label)
            funcs[name] = run
        rows.append((label, A.shape, medians(funcs, rounds), nan))

    print("Gradient of sum(prod(A, axis=0)); ratios to the NumPy primal np.prod(A, axis=0), "
          "same process, interleaved medians.\n")
    head = ["A", "shape", "np.prod primal", "rule (fwd + prod_vjp)", "rule ÷ primal",
            "rule + ones_like(g) ÷ primal"]
    head += [f"{n} ÷ primal" for n in names]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, shape, t, nan in rows:
        cells = [label, "×".join(map(str, shape)), fmt(t["primal"]), fmt(t["rule"]),
                 f"**{t['rule'] / t['primal']:.2f}**", f"{t['rule+g'] / t['primal']:.2f}"]
        cells += [f"{t[n] / t['primal']:.1f}" + (" (NaN)" if nan[n] else "") for n in names]
        print("| " + " | ".join(cells) + " |")
    print("\nTargets: rule ÷ primal ≤ 3 without zeros (M, MM), ≤ 6 with zeros (Z, ZZ).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
