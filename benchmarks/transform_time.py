"""Time to first gradient of a 50-line function on the Python backend (target < 100 ms).

Run:  python benchmarks/transform_time.py

The first call parses, normalizes, analyses, transforms, emits and compiles
the derivative; later calls reuse it.  Each trial differentiates a fresh copy
of the function (a new code object), so nothing is cached between trials.
"""
from __future__ import annotations

import math
import statistics
import sys
import time
import types

import numpy as np

import pullback


def simulate(theta, y0, obs):
    """A 50-line model fit: RK4 steps of a damped oscillator, a loss, a penalty."""
    k, c, amp = theta[0], theta[1], theta[2]
    h = 0.05
    n = len(obs)
    y = y0
    v = 0.0
    loss = 0.0
    for i in range(n):
        t = i * h
        force = amp * math.sin(1.3 * t)
        a1 = force - k * y - c * v
        y1 = y + 0.5 * h * v
        v1 = v + 0.5 * h * a1
        a2 = force - k * y1 - c * v1
        y2 = y + 0.5 * h * v1
        v2 = v + 0.5 * h * a2
        a3 = force - k * y2 - c * v2
        y3 = y + h * v2
        v3 = v + h * a3
        a4 = force - k * y3 - c * v3
        y = y + h / 6.0 * (v + 2.0 * v1 + 2.0 * v2 + v3)
        v = v + h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        r = y - obs[i]
        if abs(r) < 1.0:
            loss += 0.5 * r * r
        else:
            loss += abs(r) - 0.5
    penalty = 0.0
    for j in range(len(theta)):
        if theta[j] < 0.0:
            penalty += theta[j] * theta[j] * 100.0
        else:
            penalty += 1e-3 * theta[j]
    energy = 0.5 * v * v + 0.5 * k * y * y
    mean_obs = 0.0
    for i in range(n):
        mean_obs += obs[i]
    mean_obs = mean_obs / n
    spread = 0.0
    for i in range(n):
        d = obs[i] - mean_obs
        spread += d * d
    spread = math.sqrt(spread / n + 1e-12)
    scale = spread if spread > 0.1 else 0.1
    total = loss / (scale * scale) + penalty
    if energy > 10.0:
        total += 0.01 * (energy - 10.0)
    while total > 1e6:
        total = total * 0.5
    return total


def fresh_copy(f):
    return types.FunctionType(f.__code__.replace(), f.__globals__, f.__name__,
                              f.__defaults__, f.__closure__)


def main() -> int:
    theta = np.array([2.0, 0.3, 0.8])
    obs = np.sin(np.linspace(0, 5, 100))
    lines = len(__import__("inspect").getsource(simulate).splitlines())
    times = []
    for _ in range(15):
        f = fresh_copy(simulate)
        pullback.pipeline.clear_cache()
        t0 = time.perf_counter()
        pullback.grad(f)(theta, 0.1, obs)
        times.append(time.perf_counter() - t0)
    g = pullback.grad(simulate)
    g(theta, 0.1, obs)
    t0 = time.perf_counter()
    for _ in range(20):
        g(theta, 0.1, obs)
    warm = (time.perf_counter() - t0) / 20
    check = pullback.check_grad(simulate, theta, 0.1, obs)
    print(f"{lines}-line function: time to first gradient (Python backend) "
          f"median {statistics.median(times) * 1e3:.1f} ms, best {min(times) * 1e3:.1f} ms "
          f"(target < 100 ms); later calls {warm * 1e3:.2f} ms; {check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
