"""The Numba backend keeps each thread's tapes between calls (workspaces): calls of
other sizes, in any order and from several threads at once, still give the right
gradient (checked against finite differences, which share no code with pullback)."""
from __future__ import annotations

import threading

import numpy as np

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate


def horner(x, p):
    ex = p[-1]
    for i in range(len(p) - 2, -1, -1):
        ex = x * ex + p[i]
    return ex


def smooth(u0, c, steps):
    """A float tape (s), a shape-only tape (the temporaries) and a list tape (u's rows)."""
    u = u0.copy()
    s = 0.0
    for k in range(steps):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        s = s * 0.5 + np.sum(u * u)
    return s


def test_workspace_reused_across_calls_of_other_sizes():
    g = pullback.grad(horner, argnums=(0, 1), jit=True)
    r = np.random.default_rng(0)
    for n in (40, 3000, 7, 3000, 1, 500):
        p = r.normal(size=n) / 4
        dx, dp = g(0.9, p)
        assert_fd_close(dx, fd_estimate(horner, (0.9, p), 0), rtol=1e-6)
        assert_close(dp, 0.9 ** np.arange(n), rtol=1e-12)
    assert "_ws" in g.source
    s = pullback.grad(smooth, argnums=(0, 1), jit=True)
    for n, steps in ((12, 5), (30, 40), (5, 2), (30, 40)):
        u0 = np.sin(np.linspace(0.0, 3.0, n))
        du0, dc = s(u0, 0.2, steps)
        assert_fd_close(du0, fd_estimate(smooth, (u0, 0.2, steps), 0), rtol=1e-5, atol=1e-7)
        assert_fd_close(dc, fd_estimate(smooth, (u0, 0.2, steps), 1), rtol=1e-5, atol=1e-7)


def test_workspaces_of_threads_calling_at_once_are_their_own():
    g = pullback.grad(horner, argnums=(0, 1), jit=True)
    g(0.5, np.ones(3))                          # compiled before the threads start
    failures = []
    start = threading.Barrier(4)

    def work(k):
        r = np.random.default_rng(k)
        start.wait()
        for j in range(200):
            n = int(r.integers(1, 400 * (k + 1)))
            p = r.normal(size=n)
            x = 0.5 + 0.1 * k
            dx, dp = g(x, p)
            want = sum(i * x ** (i - 1) * p[i] for i in range(1, n))
            if not (np.allclose(dp, x ** np.arange(n), rtol=1e-12)
                    and np.isclose(dx, want, rtol=1e-9, atol=1e-12)):
                failures.append((k, j, n))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
