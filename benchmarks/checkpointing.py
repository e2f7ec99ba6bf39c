"""A long loop's gradient in bounded memory: ``checkpointed`` against the whole tape.

Run:  python benchmarks/checkpointing.py [--steps N] [--dim D] [--python]

RK4 on a D-dimensional linear ODE ``y' = A y`` (A skew-symmetric minus a little
damping, so the state neither blows up nor dies out), N steps, loss
``sum(y_N ** 2)``, gradient with respect to ``A`` and ``y0``.  Three
derivatives of the same loop, on the Numba backend (``--python``: the Python
one): the loop taped whole, and marked ``checkpointed(range(n))`` (segments of
``ceil(sqrt(N))`` steps) and ``checkpointed(range(n), every=...)`` with a tenth
of that.  Before timing, the three gradients are checked against each other
(1e-12, relative to the largest entry) on a short run.

Each derivative runs in a fresh process: compiled and warmed on 10 steps, then
timed once on N steps; its peak memory is the rise of the process's peak
resident set during the call (``VmHWM``, reset before it) over its resident set
just before it, so memory Numba allocates outside Python counts too (Linux).  The full tape at the
defaults (10^6 steps of a 100-dimensional state) takes about 4 GB.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

import pullback
from pullback import checkpointed

os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")


def whole(A, y0, h, n, every):
    y = y0.copy()
    for s in range(n):
        k1 = A @ y
        k2 = A @ (y + 0.5 * h * k1)
        k3 = A @ (y + 0.5 * h * k2)
        k4 = A @ (y + h * k3)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(y * y)


def segments(A, y0, h, n, every):
    y = y0.copy()
    for s in checkpointed(range(n), every):
        k1 = A @ y
        k2 = A @ (y + 0.5 * h * k1)
        k3 = A @ (y + 0.5 * h * k2)
        k4 = A @ (y + h * k3)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(y * y)


CANDIDATES = {"whole tape": (whole, None), "checkpointed, sqrt(N)": (segments, None),
              "checkpointed, sqrt(N)/10": (segments, 0.1)}


def problem(dim, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(dim, dim)) / math.sqrt(dim)
    return (m - m.T) / 2.0 - 0.01 * np.eye(dim), rng.normal(size=dim)


def _status_kb(field) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field} (this benchmark needs Linux)")


def _reset_peak() -> None:
    """Start the peak resident set (VmHWM) afresh: the compile's peak is not the call's."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def measure(name, steps, dim, jit) -> dict:
    """One candidate's time and peak memory, in this process (see the docstring)."""
    f, fraction = CANDIDATES[name]
    every = None if fraction is None else max(1, int(math.ceil(math.sqrt(steps)) * fraction))
    A, y0 = problem(dim)
    g = pullback.grad(f, argnums=(0, 1), jit=jit)
    g(A, y0, 0.001, 10, every)
    _reset_peak()
    before = _status_kb("VmRSS")
    t = time.perf_counter()
    g(A, y0, 0.001, steps, every)
    seconds = time.perf_counter() - t
    peak = _status_kb("VmHWM") - before
    return {"seconds": seconds, "peak_mb": max(peak, 0) / 1024.0, "every": every}


def check(jit) -> None:
    A, y0 = problem(6, seed=1)
    ref = pullback.grad(whole, argnums=(0, 1), jit=jit)(A, y0, 0.01, 57, None)
    for every in (None, 2, 5):
        got = pullback.grad(segments, argnums=(0, 1), jit=jit)(A, y0, 0.01, 57, every)
        for a, b in zip(got, ref):
            off = np.max(np.abs(a - b)) / np.max(np.abs(b))
            assert off <= 1e-12, f"checkpointed (every={every}) differs by {off:.3g}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--python", action="store_true", help="the Python backend")
    p.add_argument("--one", help=argparse.SUPPRESS)     # run one candidate, print JSON
    a = p.parse_args(argv)
    jit = not a.python
    if a.one:
        print(json.dumps(measure(a.one, a.steps, a.dim, jit)))
        return
    check(jit)
    print(f"RK4, {a.steps} steps, dimension {a.dim}, {'Python' if a.python else 'Numba'} "
          "backend; gradients agree to 1e-12")
    rows = {}
    for name in CANDIDATES:
        cmd = [sys.executable, __file__, "--one", name, "--steps", str(a.steps),
               "--dim", str(a.dim)] + (["--python"] if a.python else [])
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows[name] = json.loads(out.strip().splitlines()[-1])
    base = rows["whole tape"]
    print(f"{'derivative':26} {'segment':>8} {'time s':>8} {'peak MB':>9} "
          f"{'time / whole':>13} {'memory / whole':>15}")
    for name, r in rows.items():
        print(f"{name:26} {r['every'] or '-':>8} {r['seconds']:8.2f} {r['peak_mb']:9.1f} "
              f"{r['seconds'] / base['seconds']:13.2f} {r['peak_mb'] / base['peak_mb']:15.4f}")


if __name__ == "__main__":
    main()
