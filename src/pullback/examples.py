"""Example functions shared by the demo, the benchmarks and the tests (the seeds' workloads)."""
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


def lotka_volterra_misfit(theta, observed, h):
    """Squared misfit of an RK4 Lotka–Volterra trajectory (prey x, predator y) to
    observations taken every step: the loss of one fit in an ensemble."""
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    x, y = 1.0, 0.5
    loss = 0.0
    for k in range(observed.shape[0]):
        k1x = a * x - b * x * y
        k1y = c * x * y - d * y
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = c * x2 * y2 - d * y2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = c * x3 * y3 - d * y3
        x4 = x + h * k3x
        y4 = y + h * k3y
        k4x = a * x4 - b * x4 * y4
        k4y = c * x4 * y4 - d * y4
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        loss += (x - observed[k, 0]) ** 2 + (y - observed[k, 1]) ** 2
    return loss


def lotka_volterra(theta, y0, h, n):
    """The RK4 Lotka–Volterra trajectory from ``y0`` (prey, predator), ``n`` steps of
    ``h``, as an ``(n, 2)`` array: a layer of a model that PyTorch or JAX trains."""
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    x, y = y0[0], y0[1]
    out = np.empty((n, 2))
    for k in range(n):
        k1x = a * x - b * x * y
        k1y = c * x * y - d * y
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = c * x2 * y2 - d * y2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = c * x3 * y3 - d * y3
        x4 = x + h * k3x
        y4 = y + h * k3y
        k4x = a * x4 - b * x4 * y4
        k4y = c * x4 * y4 - d * y4
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        out[k, 0] = x
        out[k, 1] = y
    return out


def lotka_volterra_step(theta, x, y, h):
    """One RK4 step of :func:`lotka_volterra` on scalars of any framework (floats,
    torch tensors, JAX arrays): that model written for another framework's own
    autodiff, the reference its layer is compared with."""
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]

    def f(x, y):
        return a * x - b * x * y, c * x * y - d * y
    k1 = f(x, y)
    k2 = f(x + 0.5 * h * k1[0], y + 0.5 * h * k1[1])
    k3 = f(x + 0.5 * h * k2[0], y + 0.5 * h * k2[1])
    k4 = f(x + h * k3[0], y + h * k3[1])
    return (x + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]),
            y + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]))


def series_loss(theta, y):
    """A scalar recurrence over one series, and its squared one-step errors: the
    per-example loss of the batching benchmarks."""
    h = 0.0
    s = 0.0
    for t in range(y.shape[0]):
        h = theta[0] * h + theta[1] * np.tanh(y[t] - theta[2] * h)
        s += (y[t] - h) ** 2
    return s


def bratu(u, lam):
    """The 1-D Bratu residual u'' + lam exp(u), zero at both ends, written as a
    loop: its Jacobian is tridiagonal."""
    n = u.shape[0]
    h = 1.0 / (n + 1)
    r = np.empty(n)
    for i in range(n):
        left = u[i - 1] if i > 0 else 0.0
        right = u[i + 1] if i < n - 1 else 0.0
        r[i] = (left - 2.0 * u[i] + right) / (h * h) + lam * np.exp(u[i])
    return r


def reaction(z):
    """Two species interleaved (u0, v0, u1, v1, ...) on a periodic grid, diffusion
    and a reaction between them, written as a loop over the points."""
    n = z.shape[0] // 2
    out = np.empty(2 * n)
    for i in range(n):
        u, v = z[2 * i], z[2 * i + 1]
        ul, vl = z[2 * ((i - 1) % n)], z[2 * ((i - 1) % n) + 1]
        ur, vr = z[2 * ((i + 1) % n)], z[2 * ((i + 1) % n) + 1]
        out[2 * i] = 0.1 * (ul - 2.0 * u + ur) + u * u * v - 0.5 * u
        out[2 * i + 1] = 0.05 * (vl - 2.0 * v + vr) - u * u * v + 0.3 * (1.0 - v)
    return out
