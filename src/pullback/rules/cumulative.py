"""Derivatives of NumPy's cumulative reductions: cumsum.

The cotangent of ``cumsum`` is the reversed cumulative sum of ``g``; with
``axis=None`` NumPy works on the flattened array.  Conventions are those of
:mod:`pullback.rules.reductions`.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace, normalize_axes, shape_of
from .reductions import check_axis
from .registry import defrule, numba_twin

__all__ = ["cumsum_vjp", "cumulative_twin"]


def cumsum_vjp(g, a, axis=None):
    """Cotangent of ``a`` in ``np.cumsum``: the reversed cumulative sum of ``g``.

    With ``axis=None`` NumPy works on the flattened array.
    """
    xp = namespace(g, a)
    shape = shape_of(a)
    g = as_array(xp, g, a)
    if axis is None:
        flat = xp.reshape(g, (-1,))
        rev = xp.flip(xp.cumulative_sum(xp.flip(flat, axis=0), axis=0), axis=0)
        return like_arg(xp.reshape(rev, shape), a)
    (ax,) = normalize_axes(axis, len(shape))
    return like_arg(xp.flip(xp.cumulative_sum(xp.flip(g, axis=ax), axis=ax), axis=ax), a)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.cumsum, "a, axis=None, dtype=None, out=None", result=results.same_shape,
        methods=("cumsum",), a="cumsum_vjp(g, a, axis)")


# ---------------------------------------------------------------------------
# Numba twins: cumsum_vjp, and cumsum along one axis (Numba's takes no axis).

def _revcumsum3(g3):
    pre, n, post = g3.shape
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            acc = 0.0
            for k in range(n - 1, -1, -1):
                acc += g3[i, k, j]
                out[i, k, j] = acc
    return out


@numba_twin(cumsum_vjp)
def _cumsum_vjp_numba(g, a, axis=None):
    rev = twins.jitted(_revcumsum3)
    if twins.is_none(axis):
        return lambda g, a, axis=None: rev(
            np.ascontiguousarray(g).reshape((1, g.size, 1))).reshape(a.shape)
    split = twins.split_shape()

    def along(g, a, axis=None):
        pre, n, post = split(g.shape, axis % g.ndim)
        return rev(np.ascontiguousarray(g).reshape((pre, n, post))).reshape(a.shape)
    return along


def _cumsum3(a3):
    pre, n, post = a3.shape
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            acc = 0.0
            for k in range(n):
                acc += a3[i, k, j]
                out[i, k, j] = acc
    return out


def cumulative_twin(kernel3):
    """The forward twin of np.cumsum / np.cumprod (``kernel3`` on a (pre, n, post) array)."""
    def decide(t):
        a, axis = t["a"], t["axis"]
        if not twins.is_array(a):
            return None
        check_axis(axis)
        k3, split = twins.jitted(kernel3), twins.split_shape()
        if twins.is_none(axis):
            return lambda a, axis, dtype, out: k3(
                np.ascontiguousarray(a).reshape((1, a.size, 1)) * 1.0).ravel()

        def along(a, axis, dtype, out):
            pre, n, post = split(a.shape, axis % a.ndim)
            return k3(np.ascontiguousarray(a).reshape((pre, n, post)) * 1.0).reshape(a.shape)
        return along
    return twins.signature_twin("a, axis=None, dtype=None, out=None", decide)


numba_twin(np.cumsum)(cumulative_twin(_cumsum3))
