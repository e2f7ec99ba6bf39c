"""Gradient ÷ primal for loop-heavy plain-Python workloads, measured in one process.

    /work/venv/bin/python benchmarks/control_flow.py [--repeats R]

Workloads:
  matvec_quadform  nested-loop y = A x and q = x·y, n = 300 (90,000 inner iterations)
  fixed_point      a damped fixed-point iteration, a while loop of 10^5 iterations with a counter
  fill_output      out[i] = f(p[i]) for 10^5 elements, then a weighted sum

Python backend: pullback.grad(f, jit=False) ÷ the plain Python f.
Numba backend:  pullback.grad(f, jit=True) ÷ numba.njit(f); compile times (first call
minus a warm call) are excluded from the ratios and printed separately.
Each figure is the median of R interleaved timeit runs (primal, gradient, primal, ...).
Target: every ratio ≤ 3.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import timeit

import numpy as np

import pullback


# ------------------------------------------------------------------- workloads
def matvec_quadform(A, x):
    n = len(x)
    y = np.zeros(n)
    for i in range(n):
        for j in range(n):
            y[i] += A[i, j] * x[j]
    q = 0.0
    for i in range(n):
        q += x[i] * y[i]
    return q


def fixed_point(a, x0, n):
    x = x0
    k = 0
    while k < n:
        x = x + 0.5 * (math.cos(a * x) - x)
        k += 1
    return x


def fill_output(p, w):
    n = len(p)
    out = np.zeros(n)
    for i in range(n):
        out[i] = math.sin(p[i]) * p[i] + 0.5 * p[i]
    s = 0.0
    for i in range(n):
        s += w[i] * out[i]
    return s


def workloads():
    rng = np.random.default_rng(0)
    n = 300
    A = rng.normal(size=(n, n))
    x = rng.normal(size=n)
    N = 100_000
    p = rng.normal(size=N)
    w = rng.normal(size=N)
    return [
        ("matvec_quadform n=300", matvec_quadform, (A, x), (0, 1)),
        ("fixed_point while 1e5", fixed_point, (0.7, 0.1, N), (0, 1)),
        ("fill_output n=1e5", fill_output, (p, w), (0, 1)),
    ]


# ------------------------------------------------------------------- timing
def _best_number(fn, target=0.05):
    """How many calls make one timeit run last about `target` seconds."""
    t0 = time.perf_counter()
    fn()
    dt = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(target / dt))


def interleaved(primal, grad, repeats):
    """Median seconds per call of primal and grad, timed alternately."""
    np_, ng = _best_number(primal), _best_number(grad)
    tp, tg = [], []
    for _ in range(repeats):
        tp.append(timeit.timeit(primal, number=np_) / np_)
        tg.append(timeit.timeit(grad, number=ng) / ng)
    return statistics.median(tp), statistics.median(tg)


def _fmt(seconds):
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--backend", choices=["python", "numba", "both"], default="both")
    args = ap.parse_args(argv)

    rows = []
    for name, f, fargs, argnums in workloads():
        if args.backend in ("python", "both"):
            try:
                g = pullback.grad(f, argnums=argnums, jit=False)
                t0 = time.perf_counter()
                g(*fargs)
                first = time.perf_counter() - t0
                tp, tg = interleaved(lambda: f(*fargs), lambda: g(*fargs), args.repeats)
                rows.append((name, "python", tp, tg, tg / tp, f"first call {_fmt(first)}"))
            except Exception as e:  # keep the table going; say what broke
                rows.append((name, "python", None, None, None,
                             f"{type(e).__name__}: {str(e).splitlines()[0]}"))
        if args.backend in ("numba", "both"):
            import numba
            try:
                jf = numba.njit(f)
                t0 = time.perf_counter()
                jf(*fargs)
                c_primal = time.perf_counter() - t0
                g = pullback.grad(f, argnums=argnums, jit=True)
                t0 = time.perf_counter()
                g(*fargs)
                pullback.finish_compiling()     # the compile, when it runs in the background
                first_grad = time.perf_counter() - t0
                t0 = time.perf_counter()
                g(*fargs)
                c_grad = first_grad - (time.perf_counter() - t0)
                tp, tg = interleaved(lambda: jf(*fargs), lambda: g(*fargs), args.repeats)
                rows.append((name, "numba", tp, tg, tg / tp,
                             f"compile: primal {_fmt(c_primal)}, gradient {_fmt(c_grad)}"))
            except Exception as e:
                rows.append((name, "numba", None, None, None,
                             f"{type(e).__name__}: {str(e).splitlines()[0]}"))

    head = f"| {'workload':<22} | {'backend':<7} | {'primal':>10} | {'gradient':>10} | {'ratio':>6} | notes"
    print(head)
    print("|" + "-" * 24 + "|" + "-" * 9 + "|" + "-" * 12 + "|" + "-" * 12 + "|" + "-" * 8 + "|------")
    for name, backend, tp, tg, ratio, note in rows:
        if ratio is None:
            print(f"| {name:<22} | {backend:<7} | {'-':>10} | {'-':>10} | {'-':>6} | {note}")
        else:
            flag = "" if ratio <= 3 else "  (target ≤ 3 missed)"
            print(f"| {name:<22} | {backend:<7} | {_fmt(tp):>10} | {_fmt(tg):>10} "
                  f"| {ratio:6.2f} | {note}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
