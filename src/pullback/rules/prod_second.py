"""The tangent of ``np.prod`` and its derivative, exact with zeros (second derivatives).

The tangent of ``p = prod(x)`` along ``v``, slice by slice, is

    prod_jvp = sum_i v_i prod_{j != i} x_j

the ε-part of the product of the dual numbers ``x_j + ε v_j``.  Forward mode
calls :func:`prod_jvp`; a Hessian taken reverse over forward differentiates that
call again, so it has a derivative rule of its own:

* in ``v`` it is linear, with the weights of :func:`~.prod.prod_vjp`:
  ``g * prod_{j != k} x_j``;
* in ``x``: ``d/dx_k = g * sum_{i != k} v_i prod_{j not in {i, k}} x_j``, the
  ε-part of the product of the dual numbers of the slice *but the k-th*
  (:func:`prod_jvp_vjp_x`).

Both are exact for any number of zeros per slice, and three formulations
compute them:

* **division**, where asking "are there zeros?" is free (NumPy arrays, PyTorch
  CPU tensors) and every product is finite and nonzero:
  ``prod_jvp = p * sum(v / x)`` and
  ``d/dx_k = g p / x_k * (sum_i v_i / x_i - v_k / x_k)``;
* **compiled** (a float64 NumPy array reduced along one axis or all of them,
  with zeros, and for :func:`prod_jvp` along a leading axis, zeros or not, where
  it is faster than division): the dual-number recurrence ``r <- r x_i``, ``e <- e x_i + r v_i``
  along each slice, compiled with Numba; for the derivative in ``x`` one pass
  from each end, the leave-one-out dual product being the exclusive prefix dual
  product times the exclusive suffix one;
* **exact** (any namespace, and the other NumPy cases): :func:`prod_jvp` sums
  ``v`` times the weights ``prod_{j != i} x_j`` of :func:`~.prod.prod_vjp`
  (exact with zeros on each of its paths), and its derivative in ``x`` takes the
  same prefix and suffix dual products, each an inclusive scan computed by
  doubling (``log2(n)`` steps of shifted copies, vector operations over every
  slice at once, no element read alone), so it runs on GPU arrays.

The compiled and exact formulations divide nothing.

``p`` is the primal's product, ``prod(x, axis, keepdims, initial=initial,
where=where)``, or None: it only saves recomputing it.  The value of
:func:`prod_jvp` is a function of ``v`` and ``x`` alone, so its rule gives ``p``
a zero cotangent (the derivative through ``p`` is the one through ``x``).  Passing
anything else for ``p`` is an error this module does not detect.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import numbacache
from ..core.kinds import Kind
from . import twins
from .elementwise import as_array, is_scalar, like_arg, mask_on, namespace, normalize_axes
from .forms import numba_twin
from .prod import _move_back, _move_to_end, host_array, prod_vjp, prod_vjp_exact
from .prod_twins import _as2, axis_layout
from .reductions_second import zero_cotangent  # noqa: F401 - named by templates
from .registry import defrule
from .tangents import deftangent

__all__ = ["prod_jvp", "prod_jvp_vjp_x"]


# ---------------------------------------------------------------------------
# Dual numbers r + ε e along the last axis

def _dual_cumprod_last(xp, r, e):
    """Inclusive cumulative product of the dual numbers ``r + ε e`` along the last
    axis, by doubling: after the step with shift d, entry i holds the product of
    entries ``i-2d+1 .. i``.  Only multiplies and adds: exact with zeros."""
    n = r.shape[-1]
    d = 1
    while d < n:
        r_shift = xp.concat([xp.ones_like(r[..., :d]), r[..., :-d]], axis=-1)
        e_shift = xp.concat([xp.zeros_like(e[..., :d]), e[..., :-d]], axis=-1)
        r, e = r * r_shift, r * e_shift + e * r_shift
        d *= 2
    return r, e


def _dual_others_eps(xp, y, s):
    """``out[..., k]``: the ε-part of ``prod_{j != k} (y_j + ε s_j)``, that is
    ``sum_{i != k} s_i prod_{j not in {i, k}} y_j``."""
    one, zero = xp.ones_like(y[..., :1]), xp.zeros_like(s[..., :1])
    # Exclusive prefix products: the inclusive scan of [1, y_0, ..., y_{n-2}].
    lr, le = _dual_cumprod_last(xp, xp.concat([one, y[..., :-1]], axis=-1),
                                xp.concat([zero, s[..., :-1]], axis=-1))
    # Exclusive suffix products, scanned from the right.
    rr, re = _dual_cumprod_last(xp, xp.concat([one, xp.flip(y[..., 1:], axis=-1)], axis=-1),
                                xp.concat([zero, xp.flip(s[..., 1:], axis=-1)], axis=-1))
    rr, re = xp.flip(rr, axis=-1), xp.flip(re, axis=-1)
    return lr * re + le * rr


# ---------------------------------------------------------------------------
# Compiled kernels for float64 NumPy arrays reduced along one axis (or all of
# them), over the layout (pre, n, post): the same dual-number recurrences, one
# pass along the slice (two for the leave-one-out products), division-free.

def _dual_prod_kernel(x3, v3, out):
    """``out[a, b]``: the ε-part of ``prod_i (x3[a, i, b] + ε v3[a, i, b])``."""
    pre, n, post = x3.shape
    r = np.empty(post)
    for a in range(pre):
        r[:] = 1.0
        e = out[a]
        e[:] = 0.0
        for i in range(n):
            for b in range(post):
                x = x3[a, i, b]
                e[b] = e[b] * x + r[b] * v3[a, i, b]
                r[b] = r[b] * x


def _dual_others_kernel(x3, v3, g2, out):
    """``out[a, k, b] = g2[a, b] * sum_{i != k} v_i prod_{j not in {i, k}} x_j`` along
    the middle axis (``g2`` (pre, post), or (1, 1) for one cotangent everywhere)."""
    pre, n, post = x3.shape
    lr, le = np.empty((n, post)), np.empty((n, post))
    r, e, gs = np.empty(post), np.empty(post), np.empty(post)
    for a in range(pre):
        if g2.shape[0] == pre and g2.shape[1] == post:
            gs[:] = g2[a]
        else:
            gs[:] = g2[0, 0]
        r[:] = 1.0
        e[:] = 0.0
        for i in range(n):          # exclusive prefix dual products
            for b in range(post):
                x = x3[a, i, b]
                lr[i, b] = r[b]
                le[i, b] = e[b]
                e[b] = e[b] * x + r[b] * v3[a, i, b]
                r[b] = r[b] * x
        r[:] = 1.0
        e[:] = 0.0
        for i in range(n - 1, -1, -1):      # times the exclusive suffix ones
            for b in range(post):
                x = x3[a, i, b]
                out[a, i, b] = gs[b] * (lr[i, b] * e[b] + le[i, b] * r[b])
                e[b] = e[b] * x + r[b] * v3[a, i, b]
                r[b] = r[b] * x


_KERNELS: dict = {}


def _kernel(fn):
    """``fn`` compiled with Numba on first use (cached in pullback's cache directory)."""
    if fn not in _KERNELS:
        _KERNELS[fn] = numbacache.njit(fn, nogil=True)
    return _KERNELS[fn]


def _layout(x, axis, *others):
    """(pre, n, post) of a float64 C-contiguous ``x`` reduced along an int axis or all
    of them, the others float64 or float32 of ``x``'s shape; None for anything else."""
    if type(x) is not np.ndarray or x.dtype != np.float64 or not x.ndim \
            or not x.flags.c_contiguous or not (axis is None or type(axis) is int):
        return None
    if any(type(o) is not np.ndarray or o.shape != x.shape
           or o.dtype not in (np.float64, np.float32) for o in others):
        return None
    if axis is None:
        return 1, x.size, 1
    axis %= x.ndim
    return math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:])


def _as3(a, layout):
    """``a`` as a float64 (pre, n, post) array; for post == 1 the transposed view
    (1, n, pre), so that the kernels' inner loops run over independent slices."""
    a3 = np.ascontiguousarray(a, dtype=np.float64).reshape(layout)
    return a3.reshape(layout[:2]).T[np.newaxis] if layout[2] == 1 else a3


def _dual_prod(x, v, layout):
    """``sum_i v_i prod_{j != i} x_j`` per slice, (pre, post)."""
    out = np.empty((layout[0], layout[2]))
    _kernel(_dual_prod_kernel)(_as3(x, layout), _as3(v, layout),
                               out.T if layout[2] == 1 else out)
    return out


def _dual_others(x, v, g, layout):
    """``g * sum_{i != k} v_i prod_{j not in {i, k}} x_j``, (pre, n, post)."""
    pre, n, post = layout
    out = np.empty(layout)
    g2 = np.ascontiguousarray(np.reshape(g, (pre, post)), dtype=np.float64)
    _kernel(_dual_others_kernel)(_as3(x, layout), _as3(v, layout),
                                 g2.T if post == 1 else g2, _as3(out, layout))
    return out


# ---------------------------------------------------------------------------
# The tangent

def _masked(xp, where, x, v, ref):
    """``x`` with masked-out entries 1 and ``v`` with them 0 (they leave the product),
    and the mask."""
    xa = as_array(xp, x, ref)
    mask = mask_on(xp, where, xa)
    va = as_array(xp, v, xa)
    return (xp.where(mask, xa, xp.ones_like(xa)), xp.where(mask, va, xp.zeros_like(va)), mask)


def _kept_shape(shape, axes):
    return tuple(1 if d in axes else s for d, s in enumerate(shape))


def _result_shape(shape, axes, keepdims):
    """The shape of ``prod(x, axes, keepdims=keepdims)`` for ``x`` of ``shape``."""
    return _kept_shape(shape, axes) if keepdims else \
        tuple(s for d, s in enumerate(shape) if d not in axes)


def _products(xp, p, x, axes, initial):
    """The products with the reduced axes kept: ``p`` reshaped, or computed."""
    if p is None:
        p = xp.prod(x, axis=axes, keepdims=True)
        return p if initial is None else p * initial
    return xp.reshape(as_array(xp, p, x), _kept_shape(x.shape, axes))


def _all_finite_nonzero(xp, a) -> bool:
    return bool(xp.all(xp.isfinite(a) & (a != 0)))


def _fast(x) -> bool:
    """Whether the zero test is free for ``x``: NumPy, or a PyTorch CPU tensor."""
    return type(x) is np.ndarray or host_array(x)


def prod_jvp(v, p, x, axis=None, keepdims=False, *, initial=None, where=True):
    """Tangent of ``p = prod(x, axis, keepdims, initial=initial, where=where)`` along
    ``v`` (the shape of ``x``): ``sum_i v_i prod_{j != i} x_j`` per reduced slice,
    times ``initial``.  Exact with any number of zeros.  ``p`` is the primal's
    product or None (see the module docstring: the value does not depend on it)."""
    if where is not None and where is not True:
        xp = namespace(v, x)
        xm, vm, _ = _masked(xp, where, x, v, v)
        return prod_jvp(vm, None, xm, axis, keepdims, initial=initial)
    if is_scalar(x) and is_scalar(v):
        return v if initial is None else v * initial
    xp = namespace(v, x)
    x = as_array(xp, x, v)
    v = as_array(xp, v, x)
    axes = normalize_axes(axis, x.ndim)
    layout = _layout(x, axis, v)
    # The compiled recurrence is exact and, when its inner loop runs along many
    # contiguous slices (a reduction along a leading axis), faster than division too.
    if _fast(x) and _fast(v) and (layout is None or layout[2] < 16):
        pk = _products(xp, p, x, axes, initial)
        if _all_finite_nonzero(xp, pk):
            out = pk * xp.sum(v / x, axis=axes, keepdims=True)
            return out if keepdims else xp.reshape(out, _result_shape(x.shape, axes, False))
    if layout is not None:
        out = _dual_prod(x, v, layout).reshape(_result_shape(x.shape, axes, keepdims))
        return out if initial is None else out * initial
    if type(x) is np.ndarray:
        # prod_vjp's own NumPy paths (a compiled kernel for float64) give the weights.
        w = prod_vjp(np.ones(_kept_shape(x.shape, axes), dtype=np.result_type(x, v, 1.0)), p, x,
                     axis, True, initial=initial)
    else:
        w = prod_vjp_exact(xp.ones_like(xp.sum(x, axis=axes, keepdims=True)), x, axes, True,
                           initial)
    return xp.sum(v * w, axis=axes, keepdims=keepdims)


# ---------------------------------------------------------------------------
# Its derivative in x

def prod_jvp_vjp_x(g, v, p, x, axis=None, keepdims=False, *, initial=None, where=True):
    """Cotangent of ``x`` in ``prod_jvp(v, p, x, axis, keepdims, ...)`` for the
    cotangent ``g`` of its result: ``g * sum_{i != k} v_i prod_{j not in {i, k}} x_j``
    at each ``x_k`` (times ``initial``), exact with any number of zeros."""
    if where is not None and where is not True:
        xp = namespace(g, v, x)
        xm, vm, mask = _masked(xp, where, x, v, g)
        ct = prod_jvp_vjp_x(g, vm, None, xm, axis, keepdims, initial=initial)
        return like_arg(xp.where(mask, ct, xp.zeros_like(ct)), x)
    if is_scalar(x) and np.ndim(v) == 0:
        return like_arg(0.0 * g * v, x)         # prod of one number: v * initial
    xp = namespace(g, v, x)
    xa = as_array(xp, x, g, v)
    va = as_array(xp, v, xa)
    axes = normalize_axes(axis, xa.ndim)
    gk = xp.reshape(as_array(xp, g, xa), _kept_shape(xa.shape, axes))
    if _fast(xa) and _fast(va):
        pk = _products(xp, p, xa, axes, initial)        # initial included
        if _all_finite_nonzero(xp, pk):
            r = va / xa
            return like_arg((gk * pk) / xa * (xp.sum(r, axis=axes, keepdims=True) - r), x)
    if initial is not None:
        gk = gk * initial
    layout = _layout(xa, axis, va)
    if layout is not None and np.result_type(gk) in (np.float64, np.float32):
        return like_arg(_dual_others(xa, va, gk, layout).reshape(xa.shape), x)
    y, perm, kept_shape = _move_to_end(xp, xa, axes)
    s, _, _ = _move_to_end(xp, xp.broadcast_to(va, xa.shape), axes)
    eps = _dual_others_eps(xp, y, s) * xp.reshape(gk, kept_shape + (1,))
    return like_arg(_move_back(xp, eps, xa.shape, perm), x)


def _like_products(fn, args, kws, call) -> Kind:
    """prod_jvp's result has the kind of ``p``, the primal's product."""
    p = args[1] if len(args) > 1 else kws.get("p")
    return Kind(p.ndim, "f") if p is not None and p.ndim is not None else Kind(-1, "f")


# ---------------------------------------------------------------------------
# Numba twins (jit=True): the compiled dual-number kernels above, over an int axis or
# all of them, without initial= or where=; ``v`` may be broadcast to ``x``'s shape.

def _twin_case(x, axis, initial, where, what):
    """Refuse what the twins do not take; True when ``x`` is one number."""
    if twins.is_number(x) and twins.is_none(initial):
        return True
    if not twins.is_array(x):
        twins.unsupported(f"{what} of a value that is not a float array")
    if not twins.is_none(initial) or twins.literal(where, False) is not True:
        twins.unsupported(f"{what} with initial= or where=")
    r = twins.axes_count(axis)
    if r is not None and 1 < x.ndim != r:
        twins.unsupported(f"{what} over a tuple of axes")
    return False


def _spread_v(x, v):
    """``v`` as a float64 array of ``x``'s shape."""
    return np.zeros(x.shape) + v


@numba_twin(prod_jvp)
@twins.keeps_dtype("v", "x")
def _prod_jvp_numba(v, p, x, axis=None, keepdims=False, initial=None, where=True):
    if _twin_case(x, axis, initial, where, "the tangent of np.prod"):
        return lambda v, p, x, axis=None, keepdims=False, initial=None, where=True: v * 1.0
    keep = twins.literal(keepdims, None)
    if keep is None:
        twins.unsupported("keepdims= other than a constant True or False")
    layout, kernel, spread = axis_layout(x, axis), twins.jitted(_dual_prod_kernel), \
        twins.jitted(_spread_v)
    nd = x.ndim
    if twins.is_none(axis) or nd == 1 or twins.axes_count(axis) == nd:
        ones = twins.ones_shape(nd)

        def total(v, x):
            out = np.empty((1, 1))
            kernel(np.ascontiguousarray(x).reshape((1, x.size, 1)) * 1.0,
                   spread(x, v).reshape((1, x.size, 1)), out)
            return out
        whole = twins.jitted(total)
        if keep:
            return lambda v, p, x, axis=None, keepdims=False, initial=None, where=True: \
                whole(v, x).reshape(ones)
        return lambda v, p, x, axis=None, keepdims=False, initial=None, where=True: \
            whole(v, x)[0, 0]
    shaper = twins.reduced_shape(nd, keep)

    def along(v, p, x, axis=None, keepdims=False, initial=None, where=True):
        pre, n, post = layout(x, axis)
        out = np.empty((pre, post))
        kernel(np.ascontiguousarray(x).reshape((pre, n, post)) * 1.0,
               spread(x, v).reshape((pre, n, post)), out)
        return out.reshape(shaper(x.shape, axis % nd))
    return along


@numba_twin(prod_jvp_vjp_x)
@twins.keeps_dtype("x")
def _prod_jvp_vjp_x_numba(g, v, p, x, axis=None, keepdims=False, initial=None, where=True):
    if _twin_case(x, axis, initial, where, "the derivative of np.prod's tangent"):
        return lambda g, v, p, x, axis=None, keepdims=False, initial=None, where=True: \
            0.0 * g * v
    layout, kernel, spread = axis_layout(x, axis), twins.jitted(_dual_others_kernel), \
        twins.jitted(_spread_v)
    as2 = _as2(g)

    def impl(g, v, p, x, axis=None, keepdims=False, initial=None, where=True):
        pre, n, post = layout(x, axis)
        g2 = as2(g, pre, post)
        out = np.empty((pre, n, post))
        kernel(np.ascontiguousarray(x).reshape((pre, n, post)) * 1.0,
               spread(x, v).reshape((pre, n, post)), g2, out)
        return out.reshape(x.shape)
    return impl


# ---------------------------------------------------------------------------
# Registration

deftangent(np.prod, shaped=True, a="prod_jvp(t, ans, a, axis, keepdims, initial=initial, where=where)")

defrule(prod_jvp, "v, p, x, axis=None, keepdims=False, *, initial=None, where=True",
        v="prod_vjp(g, p, x, axis, keepdims, initial=initial, where=where)",
        p="zero_cotangent(p)",      # the value does not depend on p (module docstring)
        x="prod_jvp_vjp_x(g, v, p, x, axis, keepdims, initial=initial, where=where)",
        result=_like_products)
# Forward over forward: linear in v; in x the weights of the rule above for a
# cotangent of ones (exact with zeros), summed along the slice; p is no input.
deftangent(prod_jvp, shaped=True,
           v="prod_jvp(t, p, x, axis, keepdims, initial=initial, where=where)",
           p="zero_cotangent(ans)",
           x="np.sum(t * prod_jvp_vjp_x(np.ones_like(ans), v, p, x, axis, True, initial=initial, "
             "where=where), axis=axis, keepdims=keepdims)")

