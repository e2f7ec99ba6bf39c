"""The loops scientists write: pullback against expert hand-written Numba adjoints.

Run:  python benchmarks/adjoints.py [--quick] [--only NAME] [--show NAME] [--no-jax]

Nine kernels written the plain way a physicist or statistician writes them
(loops, branches, in-place updates, scalar indexing of NumPy arrays): pair
potentials, an N-body integrator, Gauss-Seidel sweeps, likelihood recursions,
RK4, explicit diffusion, a Kalman filter and a pair density.  Each has a
hand-written ``numba.njit`` adjoint written as an expert would: the pair loops'
gradients in one fused pass with no storage (a force loop), the scalar
likelihood recursions in forward mode with a tangent per parameter (one pass,
no storage), the time-stepping ones storing only the per-step state and
recomputing the rest, the linear sweeps (Gauss-Seidel) storing nothing.  Each
also has a JAX version written as a JAX user would (vectorised pair terms with
masks, ``lax.scan``/``fori_loop`` for time steps, x64), timed where JAX is
installed.

Before any timing every invocation checks that pullback's two backends and the
hand-written adjoint agree to 1e-10 (relative to the largest gradient entry),
that they match central finite differences (fourth order) along three random
directions to 1e-5, that JAX's gradient agrees (1e-8), and that pullback's
gradients of other spellings of the kernels (SPELLINGS: row slices, whole-array
kicks, branches for the minimum image, while loops, helpers returning tuples)
are the same adjoints' on small inputs.  ``--show NAME`` prints the derivative
pullback generates for NAME (Numba backend).

Every figure is a ratio of medians measured in this one process, with the
candidates interleaved, so machine load affects numerator and denominator
alike; each candidate cycles through 8 different inputs (see INPUTS).  JAX runs
in a group of its own with the Numba primal, since its thread pool would slow
whatever runs beside it.  The Python backend runs the same sizes.  Targets (those
of benchmarks/horner.py): pullback's Numba gradient / hand-written Numba adjoint <= 1.5;
Python gradient / Python primal <= 3.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import os
import sys
import time
import types
from typing import Callable

import numba
import numpy as np

import pullback
from pullback.bench.timing import interleaved, once

# Timings of compiled code: Numba compiles in the first call, not in the background.
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")


# ---------------------------------------------------------------------------
# 1. Lennard-Jones energy, triangular pair loop with a cutoff
# ---------------------------------------------------------------------------

def lj_energy(pos, rc2):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                inv2 = 1.0 / r2
                inv6 = inv2 * inv2 * inv2
                e += 4.0 * (inv6 * inv6 - inv6)
    return e


@numba.njit
def lj_hand(pos, rc2):
    """The force loop: energy and gradient in one pass, nothing stored."""
    n = pos.shape[0]
    g = np.zeros_like(pos)
    e = 0.0
    for i in range(n):
        xi, yi, zi = pos[i, 0], pos[i, 1], pos[i, 2]
        gx = 0.0
        gy = 0.0
        gz = 0.0
        for j in range(i + 1, n):
            dx = xi - pos[j, 0]
            dy = yi - pos[j, 1]
            dz = zi - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                inv2 = 1.0 / r2
                inv6 = inv2 * inv2 * inv2
                e += 4.0 * (inv6 * inv6 - inv6)
                s = 24.0 * inv2 * inv6 * (1.0 - 2.0 * inv6)     # 2 dE/dr2
                gx += s * dx
                gy += s * dy
                gz += s * dz
                g[j, 0] -= s * dx
                g[j, 1] -= s * dy
                g[j, 2] -= s * dz
        g[i, 0] += gx
        g[i, 1] += gy
        g[i, 2] += gz
    return e, g


def lj_jax(jnp):
    def f(pos, rc2):
        d = pos[:, None, :] - pos[None, :, :]
        r2 = jnp.sum(d * d, axis=-1)
        n = pos.shape[0]
        mask = jnp.triu(jnp.ones((n, n), dtype=bool), k=1) & (r2 < rc2)
        inv2 = 1.0 / jnp.where(mask, r2, 1.0)
        inv6 = inv2 * inv2 * inv2
        return jnp.sum(jnp.where(mask, 4.0 * (inv6 * inv6 - inv6), 0.0))
    return f


def lj_args(size, rng):
    n = {"full": 300, "python": 300, "small": 24}[size]
    side = 6.0 * (n / 300) ** (1 / 3)        # the same density at every size
    return (rng.uniform(0.0, side, (n, 3)), 6.25)


# ---------------------------------------------------------------------------
# 2. Morse potential, periodic minimum image, cutoff; gradient in positions and
#    the three parameters
# ---------------------------------------------------------------------------

def morse_energy(pos, D, a, r0, L, rc):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dx -= L * np.round(dx / L)
            dy = pos[i, 1] - pos[j, 1]
            dy -= L * np.round(dy / L)
            dz = pos[i, 2] - pos[j, 2]
            dz -= L * np.round(dz / L)
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            if r < rc:
                t = 1.0 - math.exp(-a * (r - r0))
                e += D * (t * t - 1.0)
    return e


@numba.njit
def morse_hand(pos, D, a, r0, L, rc):
    n = pos.shape[0]
    g = np.zeros_like(pos)
    gD = 0.0
    ga = 0.0
    gr0 = 0.0
    e = 0.0
    for i in range(n):
        xi, yi, zi = pos[i, 0], pos[i, 1], pos[i, 2]
        gx = 0.0
        gy = 0.0
        gz = 0.0
        for j in range(i + 1, n):
            dx = xi - pos[j, 0]
            dx -= L * np.round(dx / L)
            dy = yi - pos[j, 1]
            dy -= L * np.round(dy / L)
            dz = zi - pos[j, 2]
            dz -= L * np.round(dz / L)
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            if r < rc:
                ex = math.exp(-a * (r - r0))
                t = 1.0 - ex
                e += D * (t * t - 1.0)
                gD += t * t - 1.0
                dt = 2.0 * D * t * ex                   # dE/dt * dt/d(a (r - r0))
                ga += dt * (r - r0)
                gr0 -= dt * a
                s = dt * a / r                          # dE/dr / r
                gx += s * dx
                gy += s * dy
                gz += s * dz
                g[j, 0] -= s * dx
                g[j, 1] -= s * dy
                g[j, 2] -= s * dz
        g[i, 0] += gx
        g[i, 1] += gy
        g[i, 2] += gz
    return e, g, gD, ga, gr0


def morse_jax(jnp):
    def f(pos, D, a, r0, L, rc):
        d = pos[:, None, :] - pos[None, :, :]
        d = d - L * jnp.round(d / L)
        r2 = jnp.sum(d * d, axis=-1)
        n = pos.shape[0]
        tri = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
        r = jnp.sqrt(jnp.where(tri, r2, 1.0))           # no sqrt(0) on the diagonal
        mask = tri & (r < rc)
        t = 1.0 - jnp.exp(-a * (r - r0))
        return jnp.sum(jnp.where(mask, D * (t * t - 1.0), 0.0))
    return f


def morse_args(size, rng):
    n = {"full": 300, "python": 300, "small": 24}[size]
    L = 6.0 * (n / 300) ** (1 / 3)
    rc = min(2.5, 0.49 * L)
    return (rng.uniform(0.0, L, (n, 3)), 1.0, 1.5, 1.2, L, rc)


# ---------------------------------------------------------------------------
# 3. N-body velocity Verlet, softened gravity, arrays updated in place
# ---------------------------------------------------------------------------

@numba.njit
def nbody_accel(x, m, eps2):
    n = x.shape[0]
    a = np.zeros((n, 3))
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[j, 0] - x[i, 0]
            dy = x[j, 1] - x[i, 1]
            dz = x[j, 2] - x[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + eps2
            inv3 = 1.0 / (r2 * math.sqrt(r2))
            a[i, 0] += m[j] * dx * inv3
            a[i, 1] += m[j] * dy * inv3
            a[i, 2] += m[j] * dz * inv3
            a[j, 0] -= m[i] * dx * inv3
            a[j, 1] -= m[i] * dy * inv3
            a[j, 2] -= m[i] * dz * inv3
    return a


def nbody_loss(x0, v0, m, dt, nsteps, eps2):
    n = x0.shape[0]
    x = x0.copy()
    v = v0.copy()
    a = nbody_accel(x, m, eps2)
    for s in range(nsteps):
        for i in range(n):
            for k in range(3):
                v[i, k] += 0.5 * dt * a[i, k]
                x[i, k] += dt * v[i, k]
        a = nbody_accel(x, m, eps2)
        for i in range(n):
            for k in range(3):
                v[i, k] += 0.5 * dt * a[i, k]
    loss = 0.0
    for i in range(n):
        for k in range(3):
            loss += x[i, k] ** 2
    return loss


@numba.njit
def _nbody_accel_vjp(x, m, eps2, ab, xb, mb):
    """xb += (da/dx)^T ab, mb += (da/dm)^T ab, recomputing the pair terms."""
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[j, 0] - x[i, 0]
            dy = x[j, 1] - x[i, 1]
            dz = x[j, 2] - x[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + eps2
            inv3 = 1.0 / (r2 * math.sqrt(r2))
            inv5 = inv3 / r2
            cx = m[j] * ab[i, 0] - m[i] * ab[j, 0]
            cy = m[j] * ab[i, 1] - m[i] * ab[j, 1]
            cz = m[j] * ab[i, 2] - m[i] * ab[j, 2]
            cd = 3.0 * (cx * dx + cy * dy + cz * dz) * inv5
            gx = cx * inv3 - cd * dx
            gy = cy * inv3 - cd * dy
            gz = cz * inv3 - cd * dz
            xb[j, 0] += gx
            xb[j, 1] += gy
            xb[j, 2] += gz
            xb[i, 0] -= gx
            xb[i, 1] -= gy
            xb[i, 2] -= gz
            mb[j] += (ab[i, 0] * dx + ab[i, 1] * dy + ab[i, 2] * dz) * inv3
            mb[i] -= (ab[j, 0] * dx + ab[j, 1] * dy + ab[j, 2] * dz) * inv3


@numba.njit
def nbody_hand(x0, v0, m, dt, nsteps, eps2):
    """Store the positions of every step (the accelerations' VJP needs only them),
    recompute the pair terms in the reverse sweep: one VJP per stored position."""
    n = x0.shape[0]
    xs = np.empty((nsteps + 1, n, 3))
    x = x0.copy()
    v = v0.copy()
    xs[0] = x
    a = nbody_accel(x, m, eps2)
    for s in range(nsteps):
        for i in range(n):
            for k in range(3):
                v[i, k] += 0.5 * dt * a[i, k]
                x[i, k] += dt * v[i, k]
        xs[s + 1] = x
        a = nbody_accel(x, m, eps2)
        for i in range(n):
            for k in range(3):
                v[i, k] += 0.5 * dt * a[i, k]
    loss = 0.0
    for i in range(n):
        for k in range(3):
            loss += x[i, k] ** 2
    # vb: the cotangent of v_s, complete when step s is reached.  a(x_s) is read by
    # the second kick of step s-1 and the first kick of step s, both through v_s's
    # cotangent: h vb each (only one of them at s = 0 and s = nsteps).
    xb = 2.0 * x
    vb = np.zeros_like(v)
    ab = np.empty_like(x)
    mb = np.zeros_like(m)
    h = 0.5 * dt
    for s in range(nsteps, -1, -1):
        c = h if (s == 0 or s == nsteps) else 2.0 * h
        for i in range(n):
            for k in range(3):
                ab[i, k] = c * vb[i, k]
        _nbody_accel_vjp(xs[s], m, eps2, ab, xb, mb)
        if s > 0:                               # x_s = x_{s-1} + dt vh_{s-1}
            for i in range(n):
                for k in range(3):
                    vb[i, k] += dt * xb[i, k]
    return loss, xb, vb, mb


def nbody_jax(jnp):
    import jax

    def f(x0, v0, m, dt, nsteps, eps2):
        def accel(x):
            d = x[None, :, :] - x[:, None, :]          # d[i, j] = x[j] - x[i]
            r2 = jnp.sum(d * d, axis=-1) + eps2
            return jnp.einsum("ij,ijk->ik", m[None, :] * r2 ** -1.5, d)

        def step(carry, _):
            x, v, a = carry
            v = v + 0.5 * dt * a
            x = x + dt * v
            a = accel(x)
            v = v + 0.5 * dt * a
            return (x, v, a), None
        (x, v, a), _ = jax.lax.scan(step, (x0, v0, accel(x0)), None, length=nsteps)
        return jnp.sum(x * x)
    return f


def nbody_args(size, rng):
    n, steps = {"full": (16, 200), "python": (16, 200), "small": (5, 12)}[size]
    return (rng.normal(size=(n, 3)), 0.3 * rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n),
            0.01, steps, 0.01)


# ---------------------------------------------------------------------------
# 4. Gauss-Seidel sweeps in place on a 2-D grid
# ---------------------------------------------------------------------------

def gauss_seidel(u0, f, h2, sweeps):
    u = u0.copy()
    n, m = u.shape
    for s in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                  - h2 * f[i, j])
    return np.sum(u ** 2)


@numba.njit
def gauss_seidel_hand(u0, f, h2, sweeps):
    """The sweeps are linear in (u, f): the reverse sweep runs the updates backwards
    and needs no stored state, only the final u for the loss."""
    u = u0.copy()
    n, m = u.shape
    for s in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                  - h2 * f[i, j])
    loss = np.sum(u ** 2)
    ub = 2.0 * u
    fb = np.zeros_like(f)
    for s in range(sweeps):
        for i in range(n - 2, 0, -1):
            for j in range(m - 2, 0, -1):
                b = 0.25 * ub[i, j]
                ub[i, j] = 0.0
                ub[i - 1, j] += b
                ub[i + 1, j] += b
                ub[i, j - 1] += b
                ub[i, j + 1] += b
                fb[i, j] -= h2 * b
    return loss, ub, fb


def gauss_seidel_jax(jnp):
    import jax

    def f(u0, fr, h2, sweeps):
        n, m = u0.shape

        def point(idx, u):
            i = 1 + idx // (m - 2)
            j = 1 + idx % (m - 2)
            return u.at[i, j].set(0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                          - h2 * fr[i, j]))

        def sweep(s, u):
            return jax.lax.fori_loop(0, (n - 2) * (m - 2), point, u)
        u = jax.lax.fori_loop(0, sweeps, sweep, u0)
        return jnp.sum(u ** 2)
    return f


def gauss_seidel_args(size, rng):
    n, sweeps = {"full": (64, 20), "python": (64, 20), "small": (8, 3)}[size]
    return (rng.normal(size=(n, n)), rng.normal(size=(n, n)), (1.0 / (n - 1)) ** 2, sweeps)


# ---------------------------------------------------------------------------
# 5. GARCH(1,1) negative log-likelihood
# ---------------------------------------------------------------------------

def garch_nll(w, a, b, r):
    T = r.shape[0]
    s2 = 0.0
    for t in range(T):
        s2 += r[t] * r[t]
    s2 /= T
    nll = 0.0
    for t in range(1, T):
        s2 = w + a * r[t - 1] ** 2 + b * s2
        nll += 0.5 * (math.log(s2) + r[t] ** 2 / s2)
    return nll


@numba.njit
def garch_hand(w, a, b, r):
    """Three parameters: forward mode, one tangent each, in the primal's loop."""
    T = r.shape[0]
    s2 = 0.0
    for t in range(T):
        s2 += r[t] * r[t]
    s2 /= T
    dw = 0.0
    da = 0.0
    db = 0.0
    nll = 0.0
    gw = 0.0
    ga = 0.0
    gb = 0.0
    for t in range(1, T):
        rp2 = r[t - 1] * r[t - 1]
        dw = 1.0 + b * dw
        da = rp2 + b * da
        db = s2 + b * db
        s2 = w + a * rp2 + b * s2
        inv = 1.0 / s2
        r2 = r[t] * r[t]
        nll += 0.5 * (math.log(s2) + r2 * inv)
        c = 0.5 * inv * (1.0 - r2 * inv)
        gw += c * dw
        ga += c * da
        gb += c * db
    return nll, gw, ga, gb


def garch_jax(jnp):
    import jax

    def f(w, a, b, r):
        def step(s2, rr):
            rp, rt = rr
            s2 = w + a * rp ** 2 + b * s2
            return s2, 0.5 * (jnp.log(s2) + rt ** 2 / s2)
        _, terms = jax.lax.scan(step, jnp.mean(r * r), (r[:-1], r[1:]))
        return jnp.sum(terms)
    return f


def garch_args(size, rng):
    T = {"full": 5000, "python": 5000, "small": 60}[size]
    w0, a0, b0 = 0.05, 0.1, 0.85
    r = np.empty(T)
    s2 = w0 / (1 - a0 - b0)
    for t in range(T):
        r[t] = math.sqrt(s2) * rng.standard_normal()
        s2 = w0 + a0 * r[t] ** 2 + b0 * s2
    return (0.04, 0.12, 0.8, r)


# ---------------------------------------------------------------------------
# 6. RK4 of Lotka-Volterra, fitted to observations along the trajectory
# ---------------------------------------------------------------------------

def lotka_volterra_loss(theta, z0, obs, dt):
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    x = z0[0]
    y = z0[1]
    loss = 0.0
    for t in range(obs.shape[0]):
        k1x = a * x - b * x * y
        k1y = c * x * y - d * y
        x2 = x + 0.5 * dt * k1x
        y2 = y + 0.5 * dt * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = c * x2 * y2 - d * y2
        x3 = x + 0.5 * dt * k2x
        y3 = y + 0.5 * dt * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = c * x3 * y3 - d * y3
        x4 = x + dt * k3x
        y4 = y + dt * k3y
        k4x = a * x4 - b * x4 * y4
        k4y = c * x4 * y4 - d * y4
        x = x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        loss += (x - obs[t, 0]) ** 2 + (y - obs[t, 1]) ** 2
    return loss


@numba.njit
def _lv_vjp(a, b, c, d, x, y, u, w, th):
    """(u, w) . d f(x, y) / d(x, y), with the parameters' part added into th."""
    th[0] += u * x
    th[1] -= u * x * y
    th[2] += w * x * y
    th[3] -= w * y
    return u * (a - b * y) + w * c * y, -u * b * x + w * (c * x - d)


@numba.njit
def lotka_volterra_hand(theta, z0, obs, dt):
    """Store the state at each step; recompute the stages in the reverse sweep."""
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    T = obs.shape[0]
    zs = np.empty((T + 1, 2))
    x = z0[0]
    y = z0[1]
    loss = 0.0
    for t in range(T):
        zs[t, 0] = x
        zs[t, 1] = y
        k1x = a * x - b * x * y
        k1y = c * x * y - d * y
        x2 = x + 0.5 * dt * k1x
        y2 = y + 0.5 * dt * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = c * x2 * y2 - d * y2
        x3 = x + 0.5 * dt * k2x
        y3 = y + 0.5 * dt * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = c * x3 * y3 - d * y3
        x4 = x + dt * k3x
        y4 = y + dt * k3y
        k4x = a * x4 - b * x4 * y4
        k4y = c * x4 * y4 - d * y4
        x = x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        loss += (x - obs[t, 0]) ** 2 + (y - obs[t, 1]) ** 2
    th = np.zeros(4)
    xb = 0.0
    yb = 0.0
    for t in range(T - 1, -1, -1):
        # the state after step t: its loss term, then the step backwards
        if t == T - 1:
            xn, yn = x, y
        else:
            xn, yn = zs[t + 1, 0], zs[t + 1, 1]
        xb += 2.0 * (xn - obs[t, 0])
        yb += 2.0 * (yn - obs[t, 1])
        x = zs[t, 0]
        y = zs[t, 1]
        k1x = a * x - b * x * y
        k1y = c * x * y - d * y
        x2 = x + 0.5 * dt * k1x
        y2 = y + 0.5 * dt * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = c * x2 * y2 - d * y2
        x3 = x + 0.5 * dt * k2x
        y3 = y + 0.5 * dt * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = c * x3 * y3 - d * y3
        x4 = x + dt * k3x
        y4 = y + dt * k3y
        # k4 = f(z4), z4 = z + dt k3
        z4x, z4y = _lv_vjp(a, b, c, d, x4, y4, dt / 6.0 * xb, dt / 6.0 * yb, th)
        k3bx = dt / 3.0 * xb + dt * z4x
        k3by = dt / 3.0 * yb + dt * z4y
        z3x, z3y = _lv_vjp(a, b, c, d, x3, y3, k3bx, k3by, th)
        k2bx = dt / 3.0 * xb + 0.5 * dt * z3x
        k2by = dt / 3.0 * yb + 0.5 * dt * z3y
        z2x, z2y = _lv_vjp(a, b, c, d, x2, y2, k2bx, k2by, th)
        k1bx = dt / 6.0 * xb + 0.5 * dt * z2x
        k1by = dt / 6.0 * yb + 0.5 * dt * z2y
        z1x, z1y = _lv_vjp(a, b, c, d, x, y, k1bx, k1by, th)
        xb = xb + z4x + z3x + z2x + z1x
        yb = yb + z4y + z3y + z2y + z1y
    zb = np.empty(2)
    zb[0] = xb
    zb[1] = yb
    return loss, th, zb


def lotka_volterra_jax(jnp):
    import jax

    def f(theta, z0, obs, dt):
        a, b, c, d = theta[0], theta[1], theta[2], theta[3]

        def rhs(z):
            x, y = z[0], z[1]
            return jnp.stack([a * x - b * x * y, c * x * y - d * y])

        def step(z, o):
            k1 = rhs(z)
            k2 = rhs(z + 0.5 * dt * k1)
            k3 = rhs(z + 0.5 * dt * k2)
            k4 = rhs(z + dt * k3)
            z = z + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            return z, jnp.sum((z - o) ** 2)
        _, terms = jax.lax.scan(step, z0, obs)
        return jnp.sum(terms)
    return f


def lotka_volterra_args(size, rng):
    T = {"full": 2000, "python": 2000, "small": 40}[size]
    dt = 0.01
    true = np.array([1.0, 0.4, 0.3, 0.8])
    obs = np.empty((T, 2))
    x, y = 2.0, 1.0
    a, b, c, d = true
    for t in range(T):               # Euler with small substeps: data, not the model
        for _ in range(10):
            x, y = x + dt / 10 * (a * x - b * x * y), y + dt / 10 * (c * x * y - d * y)
        obs[t] = x, y
    obs += 0.05 * rng.standard_normal(obs.shape)
    return (np.array([1.1, 0.35, 0.33, 0.75]), np.array([1.8, 1.1]), obs, dt)


# ---------------------------------------------------------------------------
# 7. Explicit 1-D heat equation with a conductivity per interface
# ---------------------------------------------------------------------------

def heat_loss(u0, k, target, c, nsteps):
    n = u0.shape[0]
    u = u0.copy()
    for s in range(nsteps):
        un = u.copy()
        for i in range(1, n - 1):
            u[i] = un[i] + c * (k[i] * (un[i + 1] - un[i]) - k[i - 1] * (un[i] - un[i - 1]))
    loss = 0.0
    for i in range(n):
        loss += (u[i] - target[i]) ** 2
    return loss


@numba.njit
def heat_hand(u0, k, target, c, nsteps):
    """Store u at each step (the k-gradient reads it).  The stencil is symmetric: the
    adjoint step is the same stencil on the cotangent, with the boundary entries held
    at zero (their cotangents reach only u0, which is not differentiated); written as
    gathers, both loops vectorise like the primal's."""
    n = u0.shape[0]
    us = np.empty((nsteps, n))
    u = u0.copy()
    for s in range(nsteps):
        us[s] = u
        un = us[s]
        for i in range(1, n - 1):
            u[i] = un[i] + c * (k[i] * (un[i + 1] - un[i]) - k[i - 1] * (un[i] - un[i - 1]))
    loss = 0.0
    w = np.empty(n)
    for i in range(n):
        loss += (u[i] - target[i]) ** 2
        w[i] = 2.0 * (u[i] - target[i])
    w[0] = 0.0
    w[n - 1] = 0.0
    kb = np.zeros_like(k)
    wn = np.zeros(n)
    for s in range(nsteps - 1, -1, -1):
        un = us[s]
        for m in range(n - 1):
            kb[m] += c * (un[m + 1] - un[m]) * (w[m] - w[m + 1])
        for i in range(1, n - 1):
            wn[i] = w[i] + c * (k[i] * (w[i + 1] - w[i]) - k[i - 1] * (w[i] - w[i - 1]))
        w, wn = wn, w
    return loss, kb


def heat_jax(jnp):
    import jax

    def f(u0, k, target, c, nsteps):
        def step(u, _):
            mid = u[1:-1] + c * (k[1:] * (u[2:] - u[1:-1]) - k[:-1] * (u[1:-1] - u[:-2]))
            return u.at[1:-1].set(mid), None
        u, _ = jax.lax.scan(step, u0, None, length=nsteps)
        return jnp.sum((u - target) ** 2)
    return f


def heat_args(size, rng):
    n, steps = {"full": (200, 500), "python": (200, 500), "small": (12, 10)}[size]
    xg = np.linspace(0.0, 1.0, n)
    u0 = np.exp(-50.0 * (xg - 0.3) ** 2)
    target = 0.5 * np.exp(-20.0 * (xg - 0.6) ** 2)
    return (u0, rng.uniform(0.5, 1.5, n - 1), target, 0.2, steps)


# ---------------------------------------------------------------------------
# 8. Kalman filter log-likelihood of the local-level model
# ---------------------------------------------------------------------------

def kalman_nll(q, h, y):
    a = y[0]
    P = 1.0
    nll = 0.0
    for t in range(1, y.shape[0]):
        F = P + h
        v = y[t] - a
        nll += 0.5 * (math.log(2.0 * math.pi * F) + v * v / F)
        K = P / F
        a = a + K * v
        P = P * (1.0 - K) + q
    return nll


@numba.njit
def kalman_hand(q, h, y):
    """Two parameters: forward mode, a tangent of (a, P) for each, in one pass."""
    a = y[0]
    P = 1.0
    nll = 0.0
    aq = 0.0
    ah = 0.0
    Pq = 0.0
    Ph = 0.0
    gq = 0.0
    gh = 0.0
    for t in range(1, y.shape[0]):
        F = P + h
        Fq = Pq
        Fh = Ph + 1.0
        v = y[t] - a
        iF = 1.0 / F
        nll += 0.5 * (math.log(2.0 * math.pi * F) + v * v * iF)
        # d nll = 0.5 (dF / F - v^2 dF / F^2) + v dv / F, dv = -da
        cF = 0.5 * iF * (1.0 - v * v * iF)
        gq += cF * Fq - v * iF * aq
        gh += cF * Fh - v * iF * ah
        K = P * iF
        Kq = (Pq - K * Fq) * iF
        Kh = (Ph - K * Fh) * iF
        a = a + K * v
        aq = aq + Kq * v - K * aq
        ah = ah + Kh * v - K * ah
        Pq = Pq * (1.0 - K) - P * Kq + 1.0
        Ph = Ph * (1.0 - K) - P * Kh
        P = P * (1.0 - K) + q
    return nll, gq, gh


def kalman_jax(jnp):
    import jax

    def f(q, h, y):
        def step(carry, yt):
            a, P = carry
            F = P + h
            v = yt - a
            K = P / F
            return (a + K * v, P * (1.0 - K) + q), 0.5 * (jnp.log(2.0 * jnp.pi * F) + v * v / F)
        _, terms = jax.lax.scan(step, (y[0], 1.0), y[1:])
        return jnp.sum(terms)
    return f


def kalman_args(size, rng):
    T = {"full": 5000, "python": 5000, "small": 60}[size]
    level = np.cumsum(np.sqrt(0.1) * rng.standard_normal(T))
    return (0.15, 0.8, level + rng.standard_normal(T))


# ---------------------------------------------------------------------------
# 9. Gaussian-kernel density, accumulated into an array by a pair loop
# ---------------------------------------------------------------------------

def density_loss(pos, h2, rc2):
    n = pos.shape[0]
    rho = np.zeros(n)
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                w = math.exp(-r2 / h2)
                rho[i] += w
                rho[j] += w
    return np.sum(rho ** 2)


@numba.njit
def density_hand(pos, h2, rc2):
    """Two pair loops: the densities, then the gradient with the weights recomputed."""
    n = pos.shape[0]
    rho = np.zeros(n)
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                w = math.exp(-r2 / h2)
                rho[i] += w
                rho[j] += w
    loss = np.sum(rho ** 2)
    g = np.zeros_like(pos)
    for i in range(n):
        xi, yi, zi = pos[i, 0], pos[i, 1], pos[i, 2]
        gx = 0.0
        gy = 0.0
        gz = 0.0
        for j in range(i + 1, n):
            dx = xi - pos[j, 0]
            dy = yi - pos[j, 1]
            dz = zi - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                # d loss / d w = 2 (rho_i + rho_j); d w / d r2 = -w / h2; d r2 / d dx = 2 dx
                s = -4.0 * (rho[i] + rho[j]) * math.exp(-r2 / h2) / h2
                gx += s * dx
                gy += s * dy
                gz += s * dz
                g[j, 0] -= s * dx
                g[j, 1] -= s * dy
                g[j, 2] -= s * dz
        g[i, 0] += gx
        g[i, 1] += gy
        g[i, 2] += gz
    return loss, g


def density_jax(jnp):
    def f(pos, h2, rc2):
        d = pos[:, None, :] - pos[None, :, :]
        r2 = jnp.sum(d * d, axis=-1)
        n = pos.shape[0]
        mask = ~jnp.eye(n, dtype=bool) & (r2 < rc2)
        rho = jnp.sum(jnp.where(mask, jnp.exp(-r2 / h2), 0.0), axis=1)
        return jnp.sum(rho ** 2)
    return f


def density_args(size, rng):
    n = {"full": 300, "python": 300, "small": 24}[size]
    side = 6.0 * (n / 300) ** (1 / 3)
    return (rng.uniform(0.0, side, (n, 3)), 1.0, 4.0)


# ---------------------------------------------------------------------------
# Other spellings of the same kernels: checked against the same hand-written
# adjoints (on small inputs), not timed
# ---------------------------------------------------------------------------

def lj_energy_rows(pos, rc2):
    """Row differences, np.dot, powers, and a while loop with continue."""
    n = pos.shape[0]
    e = 0.0
    for i in range(n - 1):
        j = i + 1
        while j < n:
            d = pos[i] - pos[j]
            r2 = np.dot(d, d)
            j += 1
            if r2 >= rc2:
                continue
            inv6 = (1.0 / r2) ** 3
            e += 4 * (inv6 ** 2 - inv6)
    return e


def morse_energy_branches(pos, D, a, r0, L, rc):
    """The minimum image by branches instead of np.round."""
    n = pos.shape[0]
    e = 0.0
    half = 0.5 * L
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            if dx > half:
                dx -= L
            elif dx < -half:
                dx += L
            dy = pos[i, 1] - pos[j, 1]
            if dy > half:
                dy -= L
            elif dy < -half:
                dy += L
            dz = pos[i, 2] - pos[j, 2]
            if dz > half:
                dz -= L
            elif dz < -half:
                dz += L
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            if r < rc:
                t = 1.0 - math.exp(-a * (r - r0))
                e += D * (t * t - 1.0)
    return e


def nbody_loss_arrays(x0, v0, m, dt, nsteps, eps2):
    """Whole-array kicks and drifts."""
    x = x0.copy()
    v = v0.copy()
    a = nbody_accel(x, m, eps2)
    for s in range(nsteps):
        v += 0.5 * dt * a
        x += dt * v
        a = nbody_accel(x, m, eps2)
        v += 0.5 * dt * a
    return np.sum(x ** 2)


def nbody_loss_merged(x0, v0, m, dt, nsteps, eps2):
    """One force loop (row updates) per step, the two half kicks merged by branches."""
    n = x0.shape[0]
    x = x0.copy()
    v = v0.copy()
    a = np.zeros_like(x)
    for s in range(nsteps + 1):
        a[:, :] = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                d = x[j] - x[i]
                r2 = d[0] ** 2 + d[1] ** 2 + d[2] ** 2 + eps2
                f = d / r2 ** 1.5
                a[i] += m[j] * f
                a[j] -= m[i] * f
        if s > 0:
            v[:] += 0.5 * dt * a
        if s < nsteps:
            v[:] += 0.5 * dt * a
            x[:] += dt * v
    return np.sum(x ** 2)


def gauss_seidel_loops(u0, f, h2, sweeps):
    """The loss summed by a loop."""
    u = u0.copy()
    n, m = u.shape
    for s in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                nb = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                u[i, j] = 0.25 * (nb - h2 * f[i, j])
    tot = 0.0
    for i in range(n):
        for j in range(m):
            tot += u[i, j] * u[i, j]
    return tot


def garch_nll_guarded(w, a, b, r):
    """np.mean for the start, and an early return where the variance is not positive."""
    T = len(r)
    s2 = np.mean(r ** 2)
    nll = 0.0
    for t in range(1, T):
        s2 = w + a * r[t - 1] ** 2 + b * s2
        if s2 <= 0.0:
            return 1e100
        nll += 0.5 * (math.log(s2) + r[t] ** 2 / s2)
    return nll


def _lv_rhs(x, y, a, b, c, d):
    return a * x - b * x * y, c * x * y - d * y


def lotka_volterra_loss_helper(theta, z0, obs, dt):
    """A right-hand-side helper returning a tuple; the trajectory stored, the loss after."""
    a, b, c, d = theta
    T = obs.shape[0]
    traj = np.empty((T, 2))
    x, y = z0[0], z0[1]
    for t in range(T):
        k1x, k1y = _lv_rhs(x, y, a, b, c, d)
        k2x, k2y = _lv_rhs(x + 0.5 * dt * k1x, y + 0.5 * dt * k1y, a, b, c, d)
        k3x, k3y = _lv_rhs(x + 0.5 * dt * k2x, y + 0.5 * dt * k2y, a, b, c, d)
        k4x, k4y = _lv_rhs(x + dt * k3x, y + dt * k3y, a, b, c, d)
        x, y = (x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x),
                y + dt / 6 * (k1y + 2 * k2y + 2 * k3y + k4y))
        traj[t, 0] = x
        traj[t, 1] = y
    return np.sum((traj - obs) ** 2)


def heat_loss_slices(u0, k, target, c, nsteps):
    """The step as one slice expression."""
    u = u0.copy()
    for s in range(nsteps):
        un = u.copy()
        u[1:-1] = un[1:-1] + c * (k[1:] * (un[2:] - un[1:-1]) - k[:-1] * (un[1:-1] - un[:-2]))
    return np.sum((u - target) ** 2)


def heat_loss_buffer(u0, k, target, c, nsteps):
    """One scratch buffer refilled in place each step (un[:] = u)."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.empty_like(u)
    for s in range(nsteps):
        un[:] = u
        for i in range(1, n - 1):
            u[i] = un[i] + c * (k[i] * (un[i + 1] - un[i]) - k[i - 1] * (un[i] - un[i - 1]))
    return np.sum((u - target) ** 2)


def kalman_nll_while(q, h, y):
    """A while loop, tuple assignment, NumPy's log."""
    a, P = y[0], 1.0
    nll = 0.0
    t = 1
    while t < len(y):
        F = P + h
        v = y[t] - a
        nll += 0.5 * (np.log(2 * np.pi * F) + v ** 2 / F)
        K = P / F
        a, P = a + K * v, P * (1 - K) + q
        t += 1
    return nll


def density_loss_full(pos, h2, rc2):
    """Every ordered pair, row differences, the @ operator."""
    n = pos.shape[0]
    rho = np.zeros(n)
    for i in range(n):
        for j in range(n):
            if i != j:
                d = pos[i] - pos[j]
                r2 = d @ d
                if r2 < rc2:
                    rho[i] += math.exp(-r2 / h2)
    return rho @ rho


SPELLINGS = [("lennard-jones", lj_energy_rows), ("morse", morse_energy_branches),
             ("nbody", nbody_loss_arrays), ("nbody", nbody_loss_merged),
             ("gauss-seidel", gauss_seidel_loops), ("garch", garch_nll_guarded),
             ("rk4", lotka_volterra_loss_helper), ("heat", heat_loss_slices),
             ("heat", heat_loss_buffer), ("kalman", kalman_nll_while),
             ("density", density_loss_full)]
# Refused (documented: a write through a name that may share memory): the heat step
# with two buffers swapped, `u, un = un, u`.


# ---------------------------------------------------------------------------
# The harness
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Kernel:
    name: str
    title: str
    primal: Callable            # the plain Python function pullback differentiates
    argnums: tuple
    hand: Callable              # numba.njit: (value, *gradients in argnums' order)
    args: Callable              # args(size, rng), size in "full", "python", "small"
    jax: Callable               # jax(jnp) -> the JAX user's function of the same arguments
    python_primal: Callable = None   # the primal as pure Python, where `primal` calls njit code

    def __post_init__(self):
        self.python_primal = self.python_primal or self.primal


def _pure_python(f, **helpers):
    """``f`` with the njit helpers it calls replaced by their Python functions: the
    Python primal must not run compiled code that pullback's Python backend runs as Python."""
    g = dict(f.__globals__)
    g.update({k: v.py_func for k, v in helpers.items()})
    return types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)


KERNELS = {k.name: k for k in [
    Kernel("lennard-jones", "Lennard-Jones energy, pair loop (n=300)", lj_energy, (0,), lj_hand,
           lj_args, lj_jax),
    Kernel("morse", "Morse, minimum image + cutoff (n=300; pos, D, a, r0)", morse_energy,
           (0, 1, 2, 3), morse_hand, morse_args, morse_jax),
    Kernel("nbody", "N-body velocity Verlet (16 bodies x 200 steps; x0, v0, m)", nbody_loss,
           (0, 1, 2), nbody_hand, nbody_args, nbody_jax,
           _pure_python(nbody_loss, nbody_accel=nbody_accel)),
    Kernel("gauss-seidel", "Gauss-Seidel in place (64x64, 20 sweeps; u0, f)", gauss_seidel, (0, 1),
           gauss_seidel_hand, gauss_seidel_args, gauss_seidel_jax),
    Kernel("garch", "GARCH(1,1) NLL (T=5000; w, a, b)", garch_nll, (0, 1, 2), garch_hand,
           garch_args, garch_jax),
    Kernel("rk4", "RK4 Lotka-Volterra fit (2000 steps; theta, z0)", lotka_volterra_loss, (0, 1),
           lotka_volterra_hand, lotka_volterra_args, lotka_volterra_jax),
    Kernel("heat", "Explicit heat 1-D (N=200, 500 steps; k)", heat_loss, (1,), heat_hand,
           heat_args, heat_jax),
    Kernel("kalman", "Kalman local-level NLL (T=5000; q, h)", kalman_nll, (0, 1), kalman_hand,
           kalman_args, kalman_jax),
    Kernel("density", "Gaussian density into rho[i], rho[j] (n=300)", density_loss, (0,),
           density_hand, density_args, density_jax),
]}


class CheckFailed(AssertionError):
    pass


def _as_tuple(g):
    return g if isinstance(g, tuple) else (g,)


def _flat(grads):
    return np.concatenate([np.ravel(np.asarray(g, dtype=float)) for g in grads])


def _agree(name, what, got, ref, rtol):
    got, ref = _flat(got), _flat(ref)
    scale = max(np.max(np.abs(ref)), 1e-300)
    err = np.max(np.abs(got - ref)) / scale
    if not err <= rtol:
        k = int(np.argmax(np.abs(got - ref)))
        raise CheckFailed(f"{name}: {what} disagrees: max |difference| / max |reference| = "
                          f"{err:.3g} > {rtol:g} (worst at flat index {k}: {got[k]!r} vs "
                          f"{ref[k]!r})")
    return err


def fd_check(name, f, args, argnums, grads, rng, directions=3, rtol=1e-5):
    """Central differences (fourth order) of ``f`` along random directions in the
    differentiated arguments, against the gradients' dot products.

    The step is chosen per direction: the quotients at h = 1e-4 ... 1e-8 (times the
    arguments' scale) are compared in consecutive pairs and the closest pair is used.
    Close encounters (N-body) need small steps; cutoffs and minimum images make the
    value jump where a pair crosses one, and a direction whose best pair still
    disagrees by more than ``rtol`` is drawn again (at most 20 draws)."""
    worst, drawn = 0.0, 0
    scale = max(1e-3, max(np.max(np.abs(args[k])) for k in argnums))
    flat_g = _flat(grads)
    done = 0
    while done < directions:
        drawn += 1
        if drawn > 20:
            raise CheckFailed(f"{name}: finite differences: only {done} of 20 random "
                              f"directions gave difference quotients that converge")
        vs = [rng.standard_normal(np.shape(args[k])) for k in argnums]

        def at(t):
            call = list(args)
            for k, v in zip(argnums, vs):
                x = np.asarray(args[k], dtype=float) + t * v
                call[k] = float(x) if np.ndim(args[k]) == 0 else x
            return float(f(*call))

        def quotient(h):
            return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)
        qs = [quotient(scale * 10.0 ** -e) for e in range(4, 9)]
        gap, fd = min((abs(a - b), b) for a, b in zip(qs, qs[1:]))
        ad = sum(float(np.sum(np.asarray(g) * v)) for g, v in zip(grads, vs))
        # relative to |ad|, floored at 1e-6 of |grad| |v| for a direction nearly orthogonal
        floor = max(1e-6 * np.linalg.norm(flat_g) * np.linalg.norm(_flat(vs)), 1e-300)
        if gap > rtol * max(abs(fd), floor):
            continue                                # no step converges: a jump nearby
        done += 1
        err = abs(fd - ad) / max(abs(ad), floor)
        if not err <= rtol:
            raise CheckFailed(f"{name}: gradient . v = {ad!r} but finite differences give "
                              f"{fd!r} (relative error {err:.3g} > {rtol:g})")
        worst = max(worst, err)
    return worst


def check_kernel(kernel, size="full", backends=("python", "jit"), grads=None, hand=None,
                 primal=None, jax_grad=None, seed=0, rtol=1e-10):
    """Raise CheckFailed unless the hand-written adjoint, pullback on each of
    ``backends`` and (when given) JAX agree with each other and with finite
    differences of ``primal``.  ``grads``: {backend: pullback gradient function},
    made here when not given; ``hand``: the adjoint to call (default kernel.hand;
    ``kernel.hand.py_func`` skips its compilation).  Returns the worst errors."""
    rng = np.random.default_rng(seed)
    args = kernel.args(size, rng)
    hand = hand or kernel.hand
    primal = primal or kernel.python_primal
    value, *ref = hand(*args)
    pvalue = primal(*args)
    if not abs(value - pvalue) <= 1e-10 * max(abs(pvalue), 1e-300):
        raise CheckFailed(f"{kernel.name}: the hand-written adjoint's value {value!r} is not "
                          f"the primal's {pvalue!r}")
    errors = {}
    for b in backends:
        g = (grads or {}).get(b) or pullback.grad(kernel.primal, argnums=kernel.argnums,
                                                   jit=(b == "jit"))
        errors[f"pullback {b}"] = _agree(kernel.name, f"pullback's {b} gradient vs the "
                                         f"hand-written adjoint", _as_tuple(g(*args)), ref, rtol)
    if jax_grad is not None:
        errors["jax"] = _agree(kernel.name, "JAX's gradient vs the hand-written adjoint",
                               jax_grad(*args)(), ref, 1e-8)
    errors["finite differences"] = fd_check(kernel.name, primal, args, kernel.argnums, ref, rng)
    return errors


def check_spellings(backends=("python", "jit"), hand_py=False, only=None):
    """Each of SPELLINGS on small inputs: its value is the kernel's, and pullback's
    gradient of it on each of ``backends`` is the hand-written adjoint's (1e-10).
    Returns how many were checked."""
    count = 0
    for kname, f in SPELLINGS:
        if only and kname != only:
            continue
        k = KERNELS[kname]
        args = k.args("small", np.random.default_rng(0))
        hand = k.hand.py_func if hand_py else k.hand
        value, *ref = hand(*args)
        v = (_pure_python(f, nbody_accel=nbody_accel) if kname == "nbody" else f)(*args)
        if not abs(v - value) <= 1e-10 * abs(value):
            raise CheckFailed(f"{f.__name__}: value {v!r}, but {kname}'s is {value!r}")
        for b in backends:
            g = pullback.grad(f, argnums=k.argnums, jit=(b == "jit"))
            _agree(f.__name__, f"pullback's {b} gradient vs {kname}'s hand-written adjoint",
                   _as_tuple(g(*args)), ref, 1e-10)
        count += 1
    return count


def jax_version(kernel):
    """``make(*args)``: a zero-argument callable running the JAX user's jitted gradient
    on those arguments, returning NumPy gradients (None when JAX is not installed)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    f = kernel.jax(jnp)

    def make(*args):
        # Integers (step counts, sweeps) shape the loops: static.  Everything else traced.
        static = tuple(i for i, a in enumerate(args) if isinstance(a, int))
        g = _JAX_CACHE.get((kernel.name, static, tuple(args[i] for i in static)))
        if g is None:
            g = jax.jit(jax.grad(f, argnums=kernel.argnums), static_argnums=static)
            _JAX_CACHE[(kernel.name, static, tuple(args[i] for i in static))] = g
        jargs = [a if isinstance(a, int) else jnp.asarray(a) for a in args]

        def run():
            out = g(*jargs)
            jax.block_until_ready(out)
            return tuple(np.asarray(o) for o in out)
        return run
    return make


_JAX_CACHE: dict = {}


def fmt(t):
    return f"{t * 1e6:.0f} µs" if t < 1e-2 else f"{t * 1e3:.1f} ms"


_NUMBA_PRIMALS: dict = {}


def numba_primal(kernel):
    """``numba.njit(kernel.primal)``, compiled once."""
    if kernel.name not in _NUMBA_PRIMALS:
        _NUMBA_PRIMALS[kernel.name] = numba.njit(kernel.primal)
    return _NUMBA_PRIMALS[kernel.name]


def _cycling(f, sets):
    """A zero-argument call of ``f`` on the next of ``sets``, in turn."""
    it = itertools.cycle(sets)
    return lambda: f(*next(it))


# Each candidate cycles through this many different inputs.  With one input repeated
# the CPU's branch predictor learns a pair loop's cutoff branch (45,000 outcomes) and
# the Numba Lennard-Jones energy ran in 53 µs instead of 195 µs, unevenly across
# candidates (which branch history survives depends on what ran in between); from
# about four inputs on the times stop changing.
INPUTS = 8


def bench_kernel(kernel, quick, use_jax):
    """Timings of one kernel: {label: median seconds}."""
    budget = 0.6 if quick else 2.5
    rng = np.random.default_rng(1)
    sets = [kernel.args("full", rng) for _ in range(INPUTS)]
    primal_nb = numba_primal(kernel)
    g_nb = pullback.grad(kernel.primal, argnums=kernel.argnums, jit=True)
    nb = {"numba primal": _cycling(primal_nb, sets), "hand": _cycling(kernel.hand, sets),
          "pullback jit": _cycling(g_nb, sets)}
    single = {k: min(once(f) for _ in range(INPUTS)) for k, f in nb.items()}   # warm
    t, _, _ = interleaved(nb, single, 1000, batch_s=0.02, budget_s=budget, min_rounds=5)
    out = dict(t)
    if use_jax is not None:
        runs = [use_jax(*a) for a in sets]
        jx = {"numba primal": nb["numba primal"], "jax": _cycling(lambda r: r(), [(r,) for r in runs])}
        single = {k: min(once(f) for _ in range(INPUTS)) for k, f in jx.items()}
        tj, _, _ = interleaved(jx, single, 1000, batch_s=0.02, budget_s=budget / 2, min_rounds=5)
        out["jax ÷ numba"] = tj["jax"] / tj["numba primal"]
    psets = [kernel.args("python", rng) for _ in range(3)]
    g_py = pullback.grad(kernel.primal, argnums=kernel.argnums, jit=False)
    py = {"python primal": _cycling(kernel.python_primal, psets),
          "pullback python": _cycling(g_py, psets)}
    single = {k: once(f) for k, f in py.items()}
    tp, _, _ = interleaved(py, single, 1000, batch_s=0.0, budget_s=(2.0 if quick else 8.0),
                           min_rounds=3)
    out.update(tp)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke test)")
    ap.add_argument("--only", choices=list(KERNELS), help="one kernel")
    ap.add_argument("--show", choices=list(KERNELS), metavar="NAME",
                    help="print pullback's generated source (Numba backend) for NAME and stop")
    ap.add_argument("--no-jax", action="store_true", help="leave JAX out")
    args = ap.parse_args(argv)
    if args.show:
        k = KERNELS[args.show]
        g = pullback.grad(k.primal, argnums=k.argnums, jit=True)
        g(*k.args("small", np.random.default_rng(0)))
        print(g.source)
        return 0
    kernels = [KERNELS[args.only]] if args.only else list(KERNELS.values())
    start = time.perf_counter()

    # Compile everything, then check every kernel before any timing.
    t0 = time.perf_counter()
    grads, jaxes = {}, {}
    for k in kernels:
        small = k.args("small", np.random.default_rng(0))
        grads[k.name] = {"python": pullback.grad(k.primal, argnums=k.argnums, jit=False),
                         "jit": pullback.grad(k.primal, argnums=k.argnums, jit=True)}
        grads[k.name]["jit"](*small)
        k.hand(*small)
        numba_primal(k)(*small)
        jaxes[k.name] = None if args.no_jax else jax_version(k)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for k in kernels:
        check_kernel(k, "small", grads=grads[k.name], jax_grad=jaxes[k.name])
        check_kernel(k, "full", grads=grads[k.name], primal=numba_primal(k),
                     jax_grad=jaxes[k.name])
    check_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    # --quick: the other spellings on the Python backend only (each Numba compile takes seconds)
    spell_backends = ("python",) if args.quick else ("python", "jit")
    nspell = check_spellings(spell_backends, only=args.only)
    spell_s = time.perf_counter() - t0
    print(f"Checked {len(kernels)} kernel(s) in {check_s:.1f} s after {compile_s:.1f} s of "
          f"compiling: pullback jit, pullback Python and the hand-written adjoint"
          f"{' and JAX' if any(jaxes.values()) else ''} agree (1e-10"
          f"{'; JAX 1e-8' if any(jaxes.values()) else ''}) and match "
          f"finite differences (1e-5); {nspell} other spelling(s): pullback "
          f"({', '.join(spell_backends)}) gives the same adjoints ({spell_s:.1f} s).\n",
          flush=True)

    rows = []
    for k in kernels:
        t = bench_kernel(k, args.quick, jaxes[k.name])
        rows.append((k, t))
        print(f"  {k.name}: numba primal {fmt(t['numba primal'])}, hand {fmt(t['hand'])}, "
              f"pullback jit {fmt(t['pullback jit'])}; python primal {fmt(t['python primal'])}, "
              f"pullback python {fmt(t['pullback python'])}", file=sys.stderr, flush=True)

    print("| kernel | Numba primal | hand-written ÷ Numba primal | pullback jit ÷ hand-written | "
          "pullback Python ÷ Python primal | JAX jit ÷ Numba primal |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for k, t in rows:
        r = t["pullback jit"] / t["hand"]
        ratios.append((r, k.name))
        jx = f"{t['jax ÷ numba']:.2f}" if "jax ÷ numba" in t else "—"
        print(f"| {k.title} | {fmt(t['numba primal'])} | {t['hand'] / t['numba primal']:.2f} | "
              f"{r:.2f} | {t['pullback python'] / t['python primal']:.2f} | {jx} |")
    geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    worst, wname = max(ratios)
    print(f"| **geometric mean** (worst: {wname}, {worst:.2f}) | | | **{geo:.2f}** | | |")
    print("\nSizes as in the first column, the same for the Python backend"
          + ("; JAX with x64." if any(jaxes.values()) else "; JAX not installed."))
    print(f"\nTotal {time.perf_counter() - start:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
