"""Example functions shared by the demo and the benchmarks (the seeds' workloads)."""
from __future__ import annotations

import numpy as np


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


def seed_matrices():
    """The prod seed's matrices (shared/seeds/prod-gradients-with-zeros.txt):
    M 5x10 and MM 10x1000 random; Z and ZZ the same with the seed's zeros
    (ZZ has a zero in half of its columns)."""
    rng = np.random.default_rng(1903)
    M = rng.random((5, 10))
    MM = rng.random((10, 1000))
    Z = M.copy()
    for i, j in [(0, 0), (2, 2), (3, 3), (2, 4), (4, 4)]:   # the seed's 1-based indices, minus 1
        Z[i, j] = 0.0
    ZZ = MM.copy()
    for i in range(10):
        ZZ[i, i::20] = 0.0
    return {"M": M, "MM": MM, "Z": Z, "ZZ": ZZ}
