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

Both are exact for any number of zeros per slice.  The exact formulations
divide nothing.  :func:`prod_jvp` sums ``v`` times the weights ``prod_{j != i}
x_j`` of :func:`~.prod.prod_vjp` (exact with zeros on each of its paths).  Its
derivative in ``x`` takes the leave-one-out products of the dual numbers: the
exclusive prefix dual products times the exclusive suffix ones (as
:func:`~.prod.prod_vjp_exact` does with real numbers), each an inclusive scan
computed by doubling
(``log2(n)`` steps of shifted copies, vector operations over every slice at
once, no element read alone), so they run on any array API namespace.  Where
asking "are there zeros?" is free (NumPy arrays, PyTorch CPU tensors) and every
product is finite and nonzero, the division formulas run instead:
``prod_jvp = p * sum(v / x)`` and ``d/dx_k = g p / x_k * (sum_i v_i / x_i - v_k / x_k)``.

``p`` is the primal's product, ``prod(x, axis, keepdims, initial=initial,
where=where)``, or None: it only saves recomputing it.  The value of
:func:`prod_jvp` is a function of ``v`` and ``x`` alone, so its rule gives ``p``
a zero cotangent (the derivative through ``p`` is the one through ``x``).  Passing
anything else for ``p`` is an error this module does not detect.
"""
from __future__ import annotations

import numpy as np

from ..core.kinds import Kind
from .elementwise import as_array, is_scalar, like_arg, mask_on, namespace, normalize_axes
from .prod import _move_back, _move_to_end, host_array, prod_vjp, prod_vjp_exact
from .registry import defrule
from .tangents import deftangent

__all__ = ["prod_jvp", "prod_jvp_vjp_x", "prod_jvp_vjp_p"]


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
    if _fast(x) and _fast(v):
        pk = _products(xp, p, x, axes, initial)
        if _all_finite_nonzero(xp, pk):
            out = pk * xp.sum(v / x, axis=axes, keepdims=True)
            return out if keepdims else xp.reshape(out, tuple(
                s for d, s in enumerate(x.shape) if d not in axes))
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
    y, perm, kept_shape = _move_to_end(xp, xa, axes)
    s, _, _ = _move_to_end(xp, xp.broadcast_to(va, xa.shape), axes)
    eps = _dual_others_eps(xp, y, s) * xp.reshape(gk, kept_shape + (1,))
    return like_arg(_move_back(xp, eps, xa.shape, perm), x)


def prod_jvp_vjp_p(p):
    """Cotangent of ``p`` in ``prod_jvp``: zero, of ``p``'s form (the value does not
    depend on ``p``, see the module docstring; the derivative through the product
    is the one through ``x``)."""
    if not hasattr(p, "shape"):
        return 0.0
    xp = namespace(p)
    return xp.zeros_like(p)


def _like_products(fn, args, kws, call) -> Kind:
    """prod_jvp's result has the kind of ``p``, the primal's product."""
    p = args[1] if len(args) > 1 else kws.get("p")
    return Kind(p.ndim, "f") if p is not None and p.ndim is not None else Kind(-1, "f")


# ---------------------------------------------------------------------------
# Registration

deftangent(np.prod, shaped=True, a="prod_jvp(t, ans, a, axis, keepdims, initial=initial, where=where)")

defrule(prod_jvp, "v, p, x, axis=None, keepdims=False, *, initial=None, where=True",
        v="prod_vjp(g, p, x, axis, keepdims, initial=initial, where=where)",
        p="prod_jvp_vjp_p(p)",
        x="prod_jvp_vjp_x(g, v, p, x, axis, keepdims, initial=initial, where=where)",
        result=_like_products)
# Forward over forward: linear in v; in x the weights of the rule above for a
# cotangent of ones (exact with zeros), summed along the slice; p is no input.
deftangent(prod_jvp, shaped=True,
           v="prod_jvp(t, p, x, axis, keepdims, initial=initial, where=where)",
           p="prod_jvp_vjp_p(ans)",
           x="np.sum(t * prod_jvp_vjp_x(np.ones_like(ans), v, p, x, axis, True, initial=initial, "
             "where=where), axis=axis, keepdims=keepdims)")

