"""Derivatives of NumPy's cumulative reductions: cumsum and cumprod.

The cotangent of ``cumsum`` is the reversed cumulative sum of ``g``; with
``axis=None`` NumPy works on the flattened array.

``cumprod`` is zero-safe, as ``prod`` is (see :mod:`.prod`, whose building
blocks it uses): ``y_i = prod_{j<=i} x_j`` has cotangent
``ct_k = sum_{i>=k} g_i prod_{j<=i, j!=k} x_j``.  The fast path is
``revcumsum(g * y) / x``; the exact path is ``L_k * S_k`` with ``L`` the
exclusive cumulative product and ``S_k = g_k + x_{k+1} S_{k+1}``, a linear
recurrence evaluated by ``log2(n)`` doubling steps (only multiply, add,
concat and flip, so it is differentiable again).

Conventions are those of :mod:`pullback.rules.reductions`.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, is_scalar, like_arg, namespace, normalize_axes, shape_of
from .forms import numba_twin
from .prod import cumprod_last, host_array, inverse_permutation
from .prod_second import _dual_cumprod_last
from .prod_twins import axis_layout
from .reductions import check_axis
from .registry import defrule
from .tangents import deftangent

__all__ = ["cumsum_vjp", "cumprod_vjp", "cumprod_vjp_exact", "cumulative_twin"]


# ---------------------------------------------------------------------------
# cumsum

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
# cumprod

def _suffix_recurrence_last(xp, g, y):
    """``S[..., k] = sum_{i >= k} g[..., i] * prod_{k < j <= i} y[..., j]``.

    The linear recurrence ``S_k = g_k + y_{k+1} S_{k+1}`` run from the end, by
    doubling: after the step with shift d, ``B_k`` holds the terms ``i < k + 2d``
    and ``A_k = prod(y[k+1 .. k+2d])`` links ``S_k`` to ``S_{k+2d}`` (0 past
    the end of the slice, which is what stops the sum).
    """
    n = y.shape[-1]
    a = xp.concat([y[..., 1:], xp.zeros_like(y[..., :1])], axis=-1)
    b = g
    d = 1
    while d < n:
        b = b + a * xp.concat([b[..., d:], xp.zeros_like(b[..., :d])], axis=-1)
        a = a * xp.concat([a[..., d:], xp.zeros_like(a[..., :d])], axis=-1)
        d *= 2
    return b


def cumprod_vjp_exact(g, x, axis=None):
    """Cotangent of ``x`` in ``cumprod(x, axis)``, branch-free and division-free.

    ``ct_k = L_k * S_k``: ``L_k = prod(x[:k])`` and ``S_k = sum_{i>=k} g_i
    prod(x[k+1 .. i])``.  Differentiable again (see the module docstring).
    """
    xp = namespace(g, x)
    x = as_array(xp, x, g)
    g = as_array(xp, g, x)
    shape = tuple(x.shape)
    if axis is None:            # NumPy flattens
        x, ax = xp.reshape(x, (-1,)), 0
    else:
        (ax,) = normalize_axes(axis, x.ndim)
    perm = tuple(d for d in range(x.ndim) if d != ax) + (ax,)
    y = xp.permute_dims(x, perm)
    gy = xp.permute_dims(xp.reshape(g, tuple(x.shape)), perm)
    left = cumprod_last(xp, xp.concat([xp.ones_like(y[..., :1]), y[..., :-1]], axis=-1))
    ct = xp.permute_dims(left * _suffix_recurrence_last(xp, gy, y), inverse_permutation(perm))
    return xp.reshape(ct, shape)


def cumprod_jvp(t, x, axis=None):
    """Tangent of ``cumprod(x, axis)`` along ``t``: the ε-parts of the running products
    of the dual numbers ``x + ε t`` (only products and sums: exact with zeros)."""
    xp = namespace(t, x)
    xa = as_array(xp, x, t)
    ta = xp.broadcast_to(as_array(xp, t, xa), tuple(xa.shape))
    if axis is None or xa.ndim == 0:        # NumPy flattens
        xa, ta, axis = xp.reshape(xa, (-1,)), xp.reshape(ta, (-1,)), 0
    _, eps = _dual_cumprod_last(xp, xp.moveaxis(xa, axis, -1), xp.moveaxis(ta, axis, -1))
    return xp.moveaxis(eps, -1, axis)


def cumprod_vjp(g, ans, x, axis=None, *, exact=None):
    """Cotangent of ``x`` in ``ans = cumprod(x, axis)`` (``axis=None`` flattens).

    Exact with zeros.  Fast path ``revcumsum(g * ans) / x`` on NumPy and
    PyTorch CPU when the last running product of every slice is finite and
    nonzero (then all of them are, and no ``x`` is zero); otherwise
    :func:`cumprod_vjp_exact`.
    """
    if is_scalar(x):
        return like_arg(cumprod_vjp(g, ans, np.asarray(x), axis, exact=exact), x)
    xp = namespace(g, x)
    if exact is None and (type(x) is np.ndarray or host_array(x)):
        shape = tuple(x.shape)
        flat = xp.reshape(x, (-1,)) if axis is None else x
        ax = 0 if axis is None else normalize_axes(axis, x.ndim)[0]
        if ans is None:
            ans = xp.cumulative_prod(flat, axis=ax)
        ans = xp.reshape(as_array(xp, ans, x), tuple(flat.shape))
        g = xp.reshape(as_array(xp, g, x), tuple(flat.shape))
        last = ans[(slice(None),) * ax + (slice(-1, None),)]
        if bool(xp.all(xp.isfinite(last) & (last != 0))):
            rev = xp.flip(xp.cumulative_sum(xp.flip(g * ans, axis=ax), axis=ax), axis=ax)
            return xp.reshape(rev / flat, shape)
    return cumprod_vjp_exact(g, x, axis)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.cumsum, "a, axis=None, dtype=None, out=None", result=results.same_shape,
        methods=("cumsum",), a="cumsum_vjp(g, a, axis)")
deftangent(np.cumsum, linear="a")
defrule(np.cumprod, "a, axis=None, dtype=None, out=None",
        a="cumprod_vjp(g, ans, a, axis)", result=results.same_shape, methods=("cumprod",))
deftangent(np.cumprod, shaped=True, a="cumprod_jvp(t, a, axis)")


# ---------------------------------------------------------------------------
# Numba twins: the cotangents, and cumsum and cumprod along one axis (Numba's
# take no axis).

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
@twins.keeps_dtype("a")
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


numba_twin(np.cumsum)(twins.keeps_dtype("a")(cumulative_twin(_cumsum3)))


def _cumprod_grad3(x3, g3):
    """Cotangent of cumprod along the middle axis: ``L_k * S_k`` (see cumprod_vjp_exact)."""
    pre, n, post = x3.shape
    out = np.empty((pre, n, post))
    s = np.empty(n)
    for a in range(pre):
        for b in range(post):
            acc = 0.0
            for k in range(n - 1, -1, -1):
                acc = g3[a, k, b] + (x3[a, k + 1, b] * acc if k + 1 < n else 0.0)
                s[k] = acc
            left = 1.0
            for k in range(n):
                out[a, k, b] = left * s[k]
                left *= x3[a, k, b]
    return out


@numba_twin(cumprod_vjp)
@twins.keeps_dtype("x")
def _cumprod_vjp_numba(g, ans, x, axis=None, exact=None):
    if not twins.is_array(x):
        return None
    layout, grad3 = axis_layout(x, axis), twins.jitted(_cumprod_grad3)

    def impl(g, ans, x, axis=None, exact=None):
        pre, n, post = layout(x, axis)
        x3 = np.ascontiguousarray(x).reshape((pre, n, post)) * 1.0
        g3 = np.ascontiguousarray(g).reshape((pre, n, post))
        return grad3(x3, g3).reshape(x.shape)
    return impl


def _cumprod3(a3):
    pre, n, post = a3.shape
    out = np.empty((pre, n, post))
    for i in range(pre):
        for j in range(post):
            acc = 1.0
            for k in range(n):
                acc *= a3[i, k, j]
                out[i, k, j] = acc
    return out

numba_twin(np.cumprod)(twins.keeps_dtype("a")(cumulative_twin(_cumprod3)))
