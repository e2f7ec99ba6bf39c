"""Independent references for gradient tests: central finite differences."""
from __future__ import annotations

import numpy as np


def fd_grad(f, args, argnum=0, eps=1e-6):
    """Central finite-difference gradient of scalar f with respect to args[argnum].

    Shares no code with pullback: it only calls f.
    """
    args = list(args)
    x = args[argnum]
    if np.ndim(x) == 0:
        def at(v):
            a = list(args)
            a[argnum] = v
            return float(f(*a))
        h = eps * max(1.0, abs(float(x)))
        return (at(float(x) + h) - at(float(x) - h)) / (2 * h)
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        h = eps * max(1.0, abs(x[idx]))
        xp, xm = x.copy(), x.copy()
        xp[idx] += h
        xm[idx] -= h
        a, b = list(args), list(args)
        a[argnum], b[argnum] = xp, xm
        g[idx] = (float(f(*a)) - float(f(*b))) / (2 * h)
    return g


def assert_close(actual, expected, rtol=1e-5, atol=1e-7):
    np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                               rtol=rtol, atol=atol)


def check_jit(f, args, argnums=0, rtol=1e-6, atol=1e-8):
    """The gradient with ``jit=True`` against ``jit=False`` (to rounding) and against
    central finite differences."""
    import pullback
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    py = pullback.grad(f, argnums=nums, jit=False)(*args)
    nb = pullback.grad(f, argnums=nums, jit=True)(*args)
    for k, a, b in zip(nums, py, nb):
        assert_close(np.asarray(b), np.asarray(a), rtol=1e-9, atol=1e-11)
        assert_fd_close(np.asarray(b), fd_grad(f, args, k), rtol=rtol, atol=atol)


def assert_fd_close(actual, fd, rtol=1e-5, atol=1e-7):
    """``actual`` against a finite-difference gradient ``fd``.

    A central difference's rounding error is relative to the function's scale, not to
    each entry, so ``atol`` is scaled by the largest entry of ``fd`` (at least 1): a small
    entry beside a large one is compared only as finely as the difference resolves it.
    """
    fd = np.asarray(fd, dtype=float)
    scale = max(1.0, float(np.max(np.abs(fd), initial=0.0)))
    np.testing.assert_allclose(np.asarray(actual, dtype=float), fd, rtol=rtol, atol=atol * scale)
