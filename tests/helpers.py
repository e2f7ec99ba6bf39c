"""Independent references for gradient tests: central finite differences."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_ULP = np.finfo(float).eps


@dataclass(frozen=True)
class FiniteDifference:
    """A central-difference gradient and a bound on its own error, entry by entry.

    ``error`` is the change when the step is doubled (truncation, and the rounding noise
    of ``f`` as it shows) plus the rounding of the difference itself, relative to the
    function's value rather than to the entry: a small entry of the gradient of a large
    function is only resolved that finely.  Comparing within ``error`` keeps a test from
    failing on the difference's own noise, while a wrong gradient of a smooth function
    still stands far outside it.
    """
    value: np.ndarray
    error: np.ndarray

    def __getitem__(self, index) -> FiniteDifference:
        """The entries at ``index`` (of the value and of the error alike)."""
        return FiniteDifference(self.value[index], self.error[index])


def _central(f, args, argnum, eps, scale=1.0):
    """The central difference of f at step ``scale * h`` per entry, the steps
    ``h = eps * max(1, |x|)``, and the largest |f| it evaluated."""
    args = list(args)
    x = np.array(args[argnum], dtype=float)
    h = eps * np.maximum(1.0, np.abs(x))
    g = np.zeros_like(x)
    size = 0.0
    for idx in np.ndindex(x.shape):
        step = scale * h[idx]
        xp, xm = x.copy(), x.copy()
        xp[idx] += step
        xm[idx] -= step
        a, b = list(args), list(args)
        a[argnum], b[argnum] = (xp, xm) if x.ndim else (float(xp), float(xm))
        fp, fm = float(f(*a)), float(f(*b))
        g[idx] = (fp - fm) / (2 * step)
        size = max(size, abs(fp), abs(fm))
    return g, h, size


def fd_grad(f, args, argnum=0, eps=1e-6):
    """Central finite-difference gradient of scalar f with respect to args[argnum]:
    a float for a number, an array of its shape for an array.

    Shares no code with pullback: it only calls f.
    """
    g, _, _ = _central(f, args, argnum, eps)
    return float(g) if g.ndim == 0 else g


def fd_estimate(f, args, argnum=0, eps=1e-6) -> FiniteDifference:
    """``fd_grad`` with its error bound (see FiniteDifference), for ``assert_fd_close``."""
    g, h, size = _central(f, args, argnum, eps)
    g2, _, _ = _central(f, args, argnum, eps, scale=2.0)
    return FiniteDifference(g, np.abs(g - g2) + 8 * _ULP * size / h)


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
        assert_fd_close(np.asarray(b), fd_estimate(f, args, k), rtol=rtol, atol=atol)


def assert_fd_close(actual, fd, rtol=1e-5, atol=1e-7):
    """``actual`` against a finite-difference gradient: a ``FiniteDifference`` (from
    ``fd_estimate``), or a plain array.

    A central difference's rounding error is relative to the function's scale, not to
    each entry, so ``atol`` is scaled by the largest entry of ``fd`` (at least 1), and
    twice the estimate's own error bound is allowed on top.
    """
    error = 0.0
    if isinstance(fd, FiniteDifference):
        fd, error = fd.value, fd.error
    fd = np.asarray(fd, dtype=float)
    actual = np.asarray(actual, dtype=float)
    scale = max(1.0, float(np.max(np.abs(fd), initial=0.0)))
    allowed = rtol * np.abs(fd) + atol * scale + 2 * error
    assert actual.shape == fd.shape, f"shape {actual.shape} against finite differences' {fd.shape}"
    off = np.abs(actual - fd)
    bad = np.argwhere(~(off <= allowed))
    assert not bad.size, (
        f"{len(bad)} of {fd.size} entries differ from central finite differences beyond "
        f"rtol={rtol}, atol={atol * scale:.3g} and the differences' own error:\n"
        + "\n".join(f"  at {tuple(int(i) for i in at)}: {actual[tuple(at)]!r} against "
                    f"{fd[tuple(at)]!r} (allowed {allowed[tuple(at)]:.3g})"
                    for at in bad[:10]))
