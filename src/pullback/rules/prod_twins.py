"""Numba twins of ``np.prod`` and of its cotangent (:func:`.prod.prod_vjp`).

The cotangent runs :func:`.prod._prod_grad_kernel`, the kernel the Python
backend compiles too, over a (pre, n, post) layout of the argument: one pass
``g * p / x`` when the forward's products are at hand, finite and nonzero, the
exact zero-count algorithm otherwise, and left and right running products
(:func:`_others3`) when a zero-free product over- or underflows.  The forward
folds the rows along the axis (:func:`.reductions.along_axis`).
"""
from __future__ import annotations

import numpy as np

from . import twins
from .forms import numba_twin
from .prod import _prod_grad_kernel, prod_vjp
from .reductions import reduction_twin


def _others3(x3, g2, out):
    """``out[a, i, b] = g2[a, b] * prod_{j != i} x3[a, j, b]`` by left and right
    running products: exact, no division (the kernel's fallback on over/underflow)."""
    pre, n, post = x3.shape
    for a in range(pre):
        for b in range(post):
            left = 1.0
            for i in range(n):
                out[a, i, b] = left
                left *= x3[a, i, b]
            right = g2[a, b]
            for i in range(n - 1, -1, -1):
                out[a, i, b] *= right
                right *= x3[a, i, b]
    return out


def axis_layout(x, axis):
    """Numba: (pre, n, post) of ``x`` around ``axis`` (all of it for None, or for a
    tuple of every axis)."""
    split = twins.split_shape()
    if twins.is_none(axis) or x.ndim == 1 or twins.axes_count(axis) == x.ndim:
        return twins.jitted(lambda x, axis: (1, x.size, 1))
    return twins.jitted(lambda x, axis: split(x.shape, axis % x.ndim))


def _as2(g):
    if twins.is_number(g):
        return twins.jitted(lambda g, pre, post: np.full((pre, post), g))
    f64 = twins.float64_of(g)
    return twins.jitted(lambda g, pre, post: f64(np.ascontiguousarray(g).reshape((pre, post))))


def _products(ans):
    """Numba: the forward's products as the kernel's ``a2`` (pre, post), or an empty
    array when they are not at hand (the kernel then counts zeros itself)."""
    if twins.is_float_array(ans):
        f64 = twins.float64_of(ans)
        return twins.jitted(lambda ans, pre, post: f64(np.ascontiguousarray(ans).reshape((pre, post))))
    if twins.is_number(ans):
        return twins.jitted(lambda ans, pre, post: np.full((1, 1), ans * 1.0) if pre * post == 1
                            else np.empty((0, 0)))
    return twins.jitted(lambda ans, pre, post: np.empty((0, 0)))


@numba_twin(prod_vjp)
@twins.keeps_dtype("x")
def _prod_vjp_numba(g, ans, x, axis=None, keepdims=False, initial=None, where=True, exact=None):
    if twins.is_number(x) and twins.is_none(initial):     # the product of one number
        return lambda g, ans, x, axis=None, keepdims=False, initial=None, where=True, \
            exact=None: g * 1.0
    if not twins.is_array(x):
        return None
    if not twins.is_none(initial) or twins.literal(where, False) is not True:
        twins.unsupported("the derivative of np.prod with initial= or where=")
    layout, as2, products, f64 = axis_layout(x, axis), _as2(g), _products(ans), twins.float64_of(x)
    kernel, others = twins.jitted(_prod_grad_kernel), twins.jitted(_others3)
    r = twins.axes_count(axis)
    if r is not None and 1 < x.ndim != r:
        return _prod_vjp_axes(x, r, as2, kernel, others, f64)

    def impl(g, ans, x, axis=None, keepdims=False, initial=None, where=True, exact=None):
        pre, n, post = layout(x, axis)
        x3 = f64(np.ascontiguousarray(x).reshape((pre, n, post)))
        g2 = as2(g, pre, post)
        out = np.empty((pre, n, post))
        # ans is the forward's product of x (no initial, no where: refused above).
        if not kernel(x3, g2, out, products(ans, pre, post)):
            others(x3, g2, out)
        return out.reshape(x.shape)
    return impl


def _prod_vjp_axes(x, r, as2, kernel, others, f64):
    """The twin of prod_vjp over a tuple of ``r`` axes (not all): the kernel over the
    rows of ``x`` with the reduced axes moved last, moved back."""
    plan = twins.axes_plan(x.ndim, r)

    def impl(g, ans, x, axis=None, keepdims=False, initial=None, where=True, exact=None):
        perm, back, pre, n, kept, rest = plan(x.shape, axis)
        xt = np.ascontiguousarray(np.transpose(x, perm))
        x3 = f64(xt.reshape((pre, n, 1)))
        g2 = as2(g, pre, 1)
        out = np.empty((pre, n, 1))
        if not kernel(x3, g2, out, np.empty((0, 0))):
            others(x3, g2, out)
        return np.ascontiguousarray(np.transpose(out.reshape(xt.shape), back))
    return impl


numba_twin(np.prod)(reduction_twin(
    "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
    lambda x, p: np.prod(x), combine=lambda s, v: s * v))
