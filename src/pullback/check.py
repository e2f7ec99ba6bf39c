"""``check_grad``: a gradient against central finite differences."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .api import grad
from .user_errors import cut_for_user


@dataclass(frozen=True)
class GradCheck:
    """The outcome of :func:`check_grad`: the worst relative error over all
    checked components, and where it occurred."""

    max_rel_error: float
    argnum: int
    index: tuple
    analytic: float
    numeric: float
    rtol: float

    @property
    def ok(self) -> bool:
        return bool(self.max_rel_error <= self.rtol)     # a Python bool, never numpy.bool_

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        where = f"argument {self.argnum}" + (f"[{', '.join(map(str, self.index))}]"
                                             if self.index else "")
        verdict = "ok" if self.ok else "MISMATCH"
        return (f"check_grad {verdict}: worst relative error {self.max_rel_error:.2e} at {where} "
                f"(pullback {self.analytic:.10g}, finite differences {self.numeric:.10g})")


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(a), abs(b))


def check_grad(f, *args, argnums=0, eps=1e-6, rtol=1e-5, jit=None) -> GradCheck:
    """Compare ``grad(f, argnums)(*args)`` with central finite differences.

    Every component of every differentiated argument is perturbed by
    ``eps * max(1, |x|)``.  Returns a :class:`GradCheck` (truthy when the worst
    relative error, ``|a - n| / max(1, |a|, |n|)``, is within ``rtol``).
    """
    try:
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        grads = grad(f, argnums=nums, jit=jit)(*args)
        worst = None
        for k, g in zip(nums, grads):
            x = args[k]
            xa = np.array(x, dtype=float)
            ga = np.asarray(g, dtype=float)
            for idx in np.ndindex(xa.shape):
                h = eps * max(1.0, abs(xa[idx]))

                def at(v):
                    xs = xa.copy()
                    xs[idx] = v
                    call = list(args)
                    call[k] = float(xs) if np.ndim(x) == 0 else xs
                    return float(f(*call))
                numeric = (at(xa[idx] + h) - at(xa[idx] - h)) / (2 * h)
                err = _rel(float(ga[idx]), numeric)
                if worst is None or err > worst.max_rel_error:
                    worst = GradCheck(float(err), k, idx, float(ga[idx]), float(numeric), rtol)
        if worst is None:       # only empty arrays: nothing to disagree about
            worst = GradCheck(0.0, nums[0], (), 0.0, 0.0, rtol)
        return worst
    except Exception as exc:
        cut_for_user(exc)
        raise
