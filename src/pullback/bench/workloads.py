"""The benchmark's workloads: plain NumPy/Python functions and the inputs they run on.

Each :class:`Workload` holds the primal (the function pullback differentiates
and the baseline every ratio is taken against), which of its arguments are
differentiated, and a builder of its cases (one size, or one matrix, each).
The peers' versions of the same functions live in :mod:`pullback.bench.peers`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from pullback.examples import horner, lotka_volterra_misfit, seed_matrices


def prod_sum(A):
    """The prod seed: sum of the column products (exact gradient with zeros needed)."""
    return np.sum(np.prod(A, axis=0))


def heat(u0, c, steps):
    """Explicit 1-D heat equation with fixed ends, ``steps`` slice updates; returns sum(u**2)."""
    u = u0.copy()
    for k in range(steps):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u * u)


def rnn(W, U, h0, X):
    """A tanh RNN over the rows of ``X`` (one step per row); returns sum(h**2)."""
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(W @ h + U @ X[t])
    return np.sum(h * h)


def mlp_loss(W1, b1, W2, b2, X, Y):
    """Softmax cross-entropy of a one-hidden-layer tanh network (Y one-hot), batch mean."""
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


@dataclass(frozen=True)
class Case:
    """One input of a workload: ``label`` for the table, ``n`` its size (for plots)."""
    label: str
    n: int
    args: tuple


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    primal: Callable
    argnums: tuple
    cases: Callable          # cases(quick: bool, sizes: list[int] | None) -> list[Case]
    sweep: bool = False      # a sweep over N, plotted log-log


def _horner_cases(quick, sizes):
    sizes = sizes or ([10**3, 10**4, 10**5] if quick else [10**3, 10**4, 10**5, 10**6])
    rng = np.random.default_rng(0)
    return [Case(_size_label(n), n, (HORNER_X, rng.standard_normal(n))) for n in sizes]


# x of the Horner sweep.  The cotangents are dp[i] = x**i (from the end): with
# x = 0.999 they fall below 1e-308 after about 7e5 steps and stay at the smallest
# subnormal number (0.999 times it rounds back to it), and arithmetic on subnormal
# numbers is 10-30 times slower on x86.  Any adjoint, hand-written or generated, then
# measures that, unless a library loaded in the process set flush-to-zero.
# 0.9999**1e6 = 4e-44 keeps every cotangent a normal number up to N = 10**6.
HORNER_X = 0.9999


def _size_label(n):
    k = len(str(n)) - 1
    return f"N=10^{k}" if n == 10 ** k else f"N={n}"


def _prod_cases(quick, sizes):
    return [Case(label, A.size, (A,)) for label, A in seed_matrices().items()]


def _rk4_cases(quick, sizes):
    steps = (sizes or [200 if quick else 400])[0]
    rng = np.random.default_rng(7)
    observed = np.abs(rng.normal(1.0, 0.3, size=(steps, 2)))
    return [Case(f"steps={steps}", steps, (np.array([1.1, 0.4, 0.3, 0.8]), observed, 0.01))]


def _heat_cases(quick, sizes):
    """n = 200 with 200 steps (the size the targets name) and n = 1000 with 500."""
    shapes = [(n, n // 2) for n in sizes] if sizes else \
        [(200, 100)] if quick else [(200, 200), (1000, 500)]
    cases = []
    for n, steps in shapes:
        u0 = np.sin(np.linspace(0.0, np.pi, n)) + 0.1 * np.sin(np.linspace(0.0, 7 * np.pi, n))
        cases.append(Case(f"n={n},steps={steps}", n, (u0, 0.25, steps)))
    return cases


def _rnn_cases(quick, sizes):
    n = (sizes or [200])[0]
    steps, d = (20 if quick else 50), 32
    rng = np.random.default_rng(5)
    W = 0.9 * rng.standard_normal((n, n)) / np.sqrt(n)      # spectral radius about 0.9
    U = rng.standard_normal((n, d)) / np.sqrt(d)
    X = rng.standard_normal((steps, d))
    return [Case(f"n={n},steps={steps}", n, (W, U, 0.1 * rng.standard_normal(n), X))]


def _mlp_cases(quick, sizes):
    batch = (sizes or [128 if quick else 512])[0]
    rng = np.random.default_rng(3)
    d, hidden, classes = 32, 64, 10
    X = rng.standard_normal((batch, d))
    Y = np.eye(classes)[rng.integers(0, classes, batch)]
    W1 = rng.standard_normal((d, hidden)) / np.sqrt(d)
    W2 = rng.standard_normal((hidden, classes)) / np.sqrt(hidden)
    return [Case(f"batch={batch}", batch, (W1, np.zeros(hidden), W2, np.zeros(classes), X, Y))]


WORKLOADS = {w.name: w for w in [
    Workload("horner", "Horner's rule loop ex = x*ex + p[i], d/d(x, p), sweep over N",
             horner, (0, 1), _horner_cases, sweep=True),
    Workload("prod", "sum(prod(A, axis=0)) on the seed's M, MM, Z, ZZ (Z, ZZ with zeros)",
             prod_sum, (0,), _prod_cases),
    Workload("rk4", "RK4 Lotka-Volterra trajectory misfit (ODE fit loss), d/d(theta)",
             lotka_volterra_misfit, (0,), _rk4_cases),
    Workload("heat", "1-D heat equation, slice updates u[1:-1] = ... per step, d/d(u0, c)",
             heat, (0, 1), _heat_cases),
    Workload("rnn", "tanh RNN h = tanh(W @ h + U @ x[t]) over the steps, d/d(W, U, h0)",
             rnn, (0, 1, 2), _rnn_cases),
    Workload("mlp", "MLP softmax cross-entropy loss, d/d(W1, b1, W2, b2)",
             mlp_loss, (0, 1, 2, 3), _mlp_cases),
]}
