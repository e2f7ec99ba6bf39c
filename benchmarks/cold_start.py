"""Time to the first gradient under ``jit=True`` in a new process, and to compiled code.

Run:  python benchmarks/cold_start.py [--repeats R] [--only NAME ...]

For each workload (the MLP, RNN and heat equation of ``pullback bench``, and a
Gaussian-process negative log-likelihood) it starts fresh Python processes: with
an empty compile cache, then with the cache that process filled.  Each process
reports the seconds to ``import pullback``, to the first gradient (the transform,
and the generated code run as Python while Numba compiles in the background), and
until the compiled code is ready (``pullback.finish_compiling()``), then the
median seconds of a call of each tier.  Medians over the repeats are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import pullback
t1 = time.perf_counter()
from pullback.bench.workloads import WORKLOADS
sys.path.insert(0, {here!r})
from cold_start import gp_case
name = {name!r}
if name == "gp":
    f, argnums, args = gp_case()
else:
    w = WORKLOADS[name]
    f, argnums, args = w.primal, w.argnums, w.cases(True, None)[0].args
g = pullback.grad(f, argnums=argnums, jit=True)
t2 = time.perf_counter()
g(*args)
t3 = time.perf_counter()
python_call = []
for _ in range(5):
    a = time.perf_counter(); g(*args); python_call.append(time.perf_counter() - a)
pullback.finish_compiling()
t4 = time.perf_counter()
g(*args)
compiled_call = []
for _ in range(20):
    a = time.perf_counter(); g(*args); compiled_call.append(time.perf_counter() - a)
print(json.dumps(dict(imp=t1 - t0, first=t3 - t2, compiled=t4 - t2,
                      python_call=sorted(python_call)[2], compiled_call=sorted(compiled_call)[10])))
'''


def gp_nll(log_ell, log_sf, log_sn, X, y):
    """Negative log marginal likelihood of a GP with a squared-exponential kernel."""
    d = X[:, None, :] - X[None, :, :]
    r2 = np.sum(d * d, axis=2)
    K = np.exp(2.0 * log_sf) * np.exp(-0.5 * r2 / np.exp(2.0 * log_ell)) \
        + np.exp(2.0 * log_sn) * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(K, y)
    return 0.5 * np.dot(y, alpha) + np.sum(np.log(np.diag(L))) + 0.5 * X.shape[0] * np.log(2 * np.pi)


def gp_case():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    return gp_nll, (0, 1, 2), (0.1, 0.2, -1.0, X, y)


def run(name, cache):
    env = dict(os.environ, PULLBACK_CACHE_DIR=cache, OPENBLAS_NUM_THREADS="1")
    env.pop("PULLBACK_BACKGROUND_COMPILE", None)
    code = CHILD.format(here=os.path.dirname(os.path.abspath(__file__)), name=name)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", nargs="*", default=["mlp", "gp", "heat", "rnn"])
    a = p.parse_args(argv)
    print("| workload | cache | import | first gradient | compiled code ready | call as Python | "
          "compiled call |")
    print("|---|---|---|---|---|---|---|")
    for name in a.only:
        rows = {"empty": [], "filled": []}
        for _ in range(a.repeats):
            with tempfile.TemporaryDirectory() as cache:
                rows["empty"].append(run(name, cache))
                rows["filled"].append(run(name, cache))
        for state, rs in rows.items():
            m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            print(f"| {name} | {state} | {m['imp']:.2f} s | {m['first']:.2f} s | "
                  f"{m['compiled']:.2f} s | {m['python_call'] * 1e3:.2f} ms | "
                  f"{m['compiled_call'] * 1e3:.3f} ms |", flush=True)


if __name__ == "__main__":
    main()
