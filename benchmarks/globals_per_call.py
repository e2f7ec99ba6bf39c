"""What reading a global at call time costs a compiled gradient, per call.

Run:  python benchmarks/globals_per_call.py

Under ``jit=True`` the floats and arrays a function reads from its globals are
arguments of the compiled derivative, read at each call (Numba would otherwise
freeze them into the code; see docs/differentiates.md, "Globals, closure
variables and attributes").  This times, in one process with the candidates
interleaved, the compiled gradient of a 100-term Horner loop whose coefficient
is a global against the same loop taking it as an argument, and the cost of the
other way to follow a changed global, a new derivative and compile.
"""
from __future__ import annotations

import os
import time

import numpy as np

import pullback
from pullback.bench.timing import interleaved

os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")
C = 0.5


def horner_global(p):
    ex = 0.0
    for i in range(len(p)):
        ex = C * ex + p[i]
    return ex


def horner_argument(p, c):
    ex = 0.0
    for i in range(len(p)):
        ex = c * ex + p[i]
    return ex


def main():
    p = np.linspace(0.0, 1.0, 100)
    read, passed = pullback.grad(horner_global, jit=True), pullback.grad(horner_argument, jit=True)
    read(p), passed(p, C)
    funcs = {"global read at call time": lambda: read(p),
             "coefficient as an argument": lambda: passed(p, C)}
    medians, spread, rounds = interleaved(funcs, {k: 1e-5 for k in funcs}, rounds=21,
                                          batch_s=0.02, budget_s=10.0)
    for k, v in medians.items():
        print(f"{k:28s} {v * 1e6:7.2f} us  (spread {spread[k]:.0%})")
    extra = medians["global read at call time"] - medians["coefficient as an argument"]
    print(f"per call, reading the global costs {extra * 1e6:+.2f} us")
    t0 = time.perf_counter()
    pullback.grad(lambda q: horner_global(q) * 1.0, jit=True)(p)    # a new derivative: compiled
    print(f"a new compile instead (what a frozen global would need): {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
