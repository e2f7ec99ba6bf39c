"""The optimised derivative against the reference derivative (every optimisation off).

An optimisation drops work that provably changes no result (see
``pullback.core.optimise``): the gradient it gives must be the reference's, up to
the rounding of operations done in another order.  Comparing the two catches a
wrong term far smaller than finite differences can resolve, and needs no
threshold-free input (a program may branch on its data).
"""
from __future__ import annotations

import numpy as np

import pullback
from pullback.core.optimise import reference

#: The largest difference allowed, relative to the largest entry of the gradient
#: (or of the value): summing the same terms in another order rounds differently.
RTOL = 1e-12


def _copies(args):
    return tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)


def both(f, args, argnums=0, jit=False, reference_jit=False, **kwargs):
    """``(optimised, reference)``, each ``(value, grads)`` of ``value_and_grad``.

    The optimised derivative runs on the backend ``jit`` names; the reference, by
    default, is the Python backend's.  Under ``jit=True`` that one comparison checks
    both the optimisations and the Numba backend against the plainest derivative
    there is, at one Numba compile instead of two (``reference_jit=True`` compiles
    the Numba backend's reference too)."""
    optimised = pullback.value_and_grad(f, argnums=argnums, jit=jit)(*_copies(args), **kwargs)
    with reference():
        plain = pullback.value_and_grad(f, argnums=argnums, jit=reference_jit)(
            *_copies(args), **kwargs)
    return optimised, plain


def differs(a, b, rtol=RTOL) -> str | None:
    """Why ``a`` (optimised) is not ``b`` (reference) within ``rtol`` of ``b``'s
    largest entry, or None when it is.  Tuples compare item by item."""
    if isinstance(b, tuple):
        if not isinstance(a, tuple) or len(a) != len(b):
            return f"a {type(a).__name__} against the reference's tuple of {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            why = differs(x, y, rtol)
            if why:
                return f"item {k}: {why}"
        return None
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return f"shape {a.shape} against the reference's {b.shape}"
    same_nan = np.isnan(a) == np.isnan(b)
    if not same_nan.all():
        return "NaN where the reference has none, or the other way round"
    a, b = np.nan_to_num(a), np.nan_to_num(b)
    scale = float(np.max(np.abs(b), initial=0.0))
    off = float(np.max(np.abs(a - b), initial=0.0))
    if off > rtol * scale and off > 1e-300:
        at = np.unravel_index(np.argmax(np.abs(a - b)), a.shape) if a.ndim else ()
        return (f"differs by {off:.3g} (largest entry {scale:.3g}) at {at}: "
                f"{a[at]!r} against the reference's {b[at]!r}")
    return None


def assert_matches_reference(f, args, argnums=0, jit=False, rtol=RTOL, reference_jit=False,
                             **kwargs):
    """The optimised value and gradients of ``f`` equal the reference's to ``rtol``
    (the Python backend's reference unless ``reference_jit``, see :func:`both`)."""
    (value, grads), (ref_value, ref_grads) = both(f, args, argnums, jit, reference_jit, **kwargs)
    for what, a, b in (("value", value, ref_value), ("gradient", grads, ref_grads)):
        why = differs(a, b, rtol)
        assert why is None, f"{getattr(f, '__name__', f)} (jit={jit}): optimised {what} " \
                            f"against the reference derivative's: {why}"
