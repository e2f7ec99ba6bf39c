"""Example functions shared by the demo and the benchmarks (the seeds' workloads)."""
from __future__ import annotations


def horner(x, p):
    """Evaluate the polynomial with coefficients p (lowest first) at x, by Horner's rule."""
    N = len(p)
    ex = p[N - 1]
    for i in range(N - 2, -1, -1):
        ex = x * ex + p[i]
    return ex


def horner_foldr(x, p):
    """The seed's foldr((pi, y) -> muladd(x, y, pi), p) written as a loop over a closure."""
    step = lambda pi, y: x * y + pi  # noqa: E731
    y = 0.0
    for i in range(len(p) - 1, -1, -1):
        y = step(p[i], y)
    return y
