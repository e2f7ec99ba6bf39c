"""One product, six spellings: an RNN's gradient with ``W @ h``, ``np.matmul``,
``np.dot``, ``W.dot``, ``np.inner`` and ``np.einsum('ij,j->i', ...)``, each as a
ratio to the NumPy primal written with ``@``, on both backends.

Run:  OPENBLAS_NUM_THREADS=1 python benchmarks/spellings.py [--quick]

The spellings that compute ``a @ b`` are written ``a @ b`` when the primal is
lowered (``backends/primal.py``), so they share one rule, its summed form over the
loop and the Numba path: the ratios should agree to within the noise (the target
is 10%).  Ratios of medians in one process, interleaved (pullback.bench.timing).
One BLAS thread: on a loaded two-core machine OpenBLAS's threads make one large
product (the summed form) ten times slower and the comparison meaningless.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import pullback
from pullback.bench.timing import interleaved, once

# Timings of compiled code: Numba compiles in the first call, not in the background.
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")

STEPS = 50


def rnn_at(W, h0):
    h = h0
    for _ in range(STEPS):
        h = np.tanh(W @ h)
    return np.sum(h)


def rnn_matmul(W, h0):
    h = h0
    for _ in range(STEPS):
        h = np.tanh(np.matmul(W, h))
    return np.sum(h)


def rnn_dot(W, h0):
    h = h0
    for _ in range(STEPS):
        h = np.tanh(np.dot(W, h))
    return np.sum(h)


def rnn_method_dot(W, h0):
    h = h0
    for _ in range(STEPS):
        h = np.tanh(W.dot(h))
    return np.sum(h)


def rnn_inner(W, h0):
    h = h0
    for _ in range(STEPS):
        h = np.tanh(np.inner(W, h))
    return np.sum(h)


def rnn_einsum(W, h0):
    h = h0
    for _ in range(STEPS):
        h = np.tanh(np.einsum("ij,j->i", W, h))
    return np.sum(h)


SPELLINGS = {"W @ h": rnn_at, "np.matmul": rnn_matmul, "np.dot": rnn_dot,
             "W.dot": rnn_method_dot, "np.inner": rnn_inner, "np.einsum": rnn_einsum}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--n", type=int, default=200, help="the hidden size")
    opts = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(opts.n, opts.n)) / np.sqrt(opts.n)
    h0 = rng.normal(size=opts.n)
    funcs = {"primal": lambda: rnn_at(W, h0)}
    want = pullback.grad(rnn_at, argnums=(0, 1))(W, h0)
    for jit in (False, True):
        for name, f in SPELLINGS.items():
            g = pullback.grad(f, argnums=(0, 1), jit=jit)
            got = g(W, h0)
            assert all(np.allclose(a, b, rtol=1e-10) for a, b in zip(got, want)), name
            funcs[(name, jit)] = lambda g=g: g(W, h0)
    single = {k: once(fn) for k, fn in funcs.items()}
    medians, _, rounds = interleaved(funcs, single, rounds=5 if opts.quick else 25,
                                     batch_s=0.02, budget_s=15 if opts.quick else 60)
    print(f"RNN n={opts.n}, {STEPS} steps: gradient ÷ NumPy primal ({rounds} rounds)")
    print(f"{'spelling':12s} {'Python':>8s} {'Numba':>8s}")
    for name in SPELLINGS:
        print(f"{name:12s} {medians[(name, False)] / medians['primal']:8.2f} "
              f"{medians[(name, True)] / medians['primal']:8.2f}")


if __name__ == "__main__":
    main()
