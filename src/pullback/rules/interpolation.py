"""Derivatives of sampling and interpolation: linspace (in its endpoints) and interp.

Conventions are those of :mod:`pullback.rules.elementwise`.

* ``linspace(start, stop, num)`` is ``start + t (stop - start)`` with
  ``t_i = i / (num - 1)`` (``i / num`` without the endpoint; ``t = 0`` for a
  single sample): ``d/dstart = sum g (1 - t)``, ``d/dstop = sum g t``.
  ``num`` is an integer, not differentiable.  Array endpoints broadcast as in
  NumPy, with the samples along ``axis``.  ``retstep=True`` (a tuple) raises
  NotImplementedError.
* ``interp(x, xp, fp, left, right)`` is piecewise linear: ``d/dx`` is the slope
  of the segment ``x`` is in (the segment to its right at an inner knot, the
  last segment at ``xp[-1]``) and 0 outside ``[xp[0], xp[-1]]``; each value
  gets its share of ``fp`` at the two knots around it (scatter-added, so many
  values in one segment accumulate), and ``left``/``right`` the values outside.
  The knots ``xp`` and ``period=`` are not differentiated (``period`` raises
  NotImplementedError).
"""
from __future__ import annotations

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, float_dtype, like_arg, namespace, unbroadcast
from .indexing import getitem_vjp
from .registry import defrule, numba_twin

__all__ = ["linspace_vjp", "interp_vjp_x", "interp_vjp_fp", "interp_vjp_left",
           "interp_vjp_right"]


# ---------------------------------------------------------------------------
# linspace

def linspace_vjp(g, start, stop, num=50, endpoint=True, retstep=False, axis=0, which="start"):
    """Cotangent of ``start`` (``which="start"``) or ``stop`` in ``np.linspace``."""
    if retstep:
        raise NotImplementedError("the derivative of np.linspace(..., retstep=True) is not "
                                  "implemented; compute the step from start and stop")
    xp = namespace(g, start, stop)
    G = as_array(xp, g, start, stop)
    num = int(num)
    div = num - 1 if endpoint else num
    dev = array_api_compat.device(G)
    t = xp.arange(num, dtype=float_dtype(xp, G), device=dev)
    t = t / div if div > 0 else t * 0.0
    G = xp.moveaxis(G, int(axis) % max(G.ndim, 1), -1)
    weight = 1.0 - t if which == "start" else t
    return unbroadcast(xp.sum(G * weight, axis=-1), start if which == "start" else stop)


# ---------------------------------------------------------------------------
# interp

def _interp_parts(g, x, xp, fp, period):
    """(namespace, g, x, segment index j, position t in it, below, above, inside)."""
    if period is not None:
        raise NotImplementedError("the derivative of np.interp with period= is not implemented")
    ns = namespace(g, x, xp, fp)
    FP = as_array(ns, fp, g, x)
    X = as_array(ns, x, FP)
    XP = ns.astype(as_array(ns, xp, FP), X.dtype if ns.isdtype(X.dtype, "real floating")
                   else float_dtype(ns, FP))
    G = ns.broadcast_to(as_array(ns, g, X), tuple(X.shape))
    n = XP.shape[0]
    below, above = X < XP[0], X > XP[n - 1]
    inside = ~(below | above)
    if n == 1:
        j = ns.zeros(tuple(X.shape), dtype=ns.int64, device=array_api_compat.device(X))
        return ns, G, X, j, ns.zeros_like(G), below, above, inside, XP, FP
    j = ns.searchsorted(XP, ns.reshape(X, (-1,)), side="right") - 1
    # searchsorted gives -1 below the knots and n - 1 above: into [0, n - 2] by
    # maximum/minimum (array_api_compat's clip masks, which reads back from a GPU).
    j = ns.minimum(ns.maximum(j, ns.zeros_like(j)), ns.full_like(j, n - 2))
    j = ns.reshape(j, tuple(X.shape))
    x0, x1 = ns.take(XP, ns.reshape(j, (-1,))), ns.take(XP, ns.reshape(j + 1, (-1,)))
    x0, x1 = ns.reshape(x0, tuple(X.shape)), ns.reshape(x1, tuple(X.shape))
    t = (X - x0) / (x1 - x0)
    return ns, G, X, j, t, below, above, inside, XP, FP


def interp_vjp_x(g, x, xp, fp, left=None, right=None, period=None):
    """Cotangent of ``x`` in ``np.interp``: ``g`` times the slope of its segment."""
    ns, G, X, j, t, below, above, inside, XP, FP = _interp_parts(g, x, xp, fp, period)
    if XP.shape[0] == 1:
        return like_arg(ns.zeros_like(G), x)
    flat = ns.reshape(j, (-1,))
    f0 = ns.reshape(ns.take(FP, flat), tuple(X.shape))
    f1 = ns.reshape(ns.take(FP, flat + 1), tuple(X.shape))
    x0 = ns.reshape(ns.take(XP, flat), tuple(X.shape))
    x1 = ns.reshape(ns.take(XP, flat + 1), tuple(X.shape))
    slope = (f1 - f0) / (x1 - x0)
    return like_arg(ns.where(inside, G * slope, ns.zeros_like(G)), x)


def interp_vjp_fp(g, x, xp, fp, left=None, right=None, period=None):
    """Cotangent of ``fp`` in ``np.interp``: each value's weights on the two knots
    around it, added up per knot."""
    ns, G, X, j, t, below, above, inside, XP, FP = _interp_parts(g, x, xp, fp, period)
    zero = ns.zeros_like(G)
    w0 = ns.where(inside, G * (1.0 - t), zero)
    w1 = ns.where(inside, G * t, zero)
    if left is None:
        w0 = w0 + ns.where(below, G, zero)             # j is 0 there: fp[0]
    if right is None:
        w1 = w1 + ns.where(above, G, zero)             # j + 1 is n - 1 there: fp[-1]
    flat = ns.reshape(j, (-1,))
    ct = getitem_vjp(ns.reshape(w0, (-1,)), FP, flat)
    if XP.shape[0] > 1:
        ct = ct + getitem_vjp(ns.reshape(w1, (-1,)), FP, flat + 1)
    else:
        ct = ct + ns.sum(w1)
    return like_arg(ct, fp)


def interp_vjp_left(g, x, xp, fp, left=None, right=None, period=None):
    """Cotangent of ``left``: ``g`` of the values below ``xp[0]``."""
    ns, G, _, _, _, below, _, _, _, _ = _interp_parts(g, x, xp, fp, period)
    return unbroadcast(ns.where(below, G, ns.zeros_like(G)), left)


def interp_vjp_right(g, x, xp, fp, left=None, right=None, period=None):
    """Cotangent of ``right``: ``g`` of the values above ``xp[-1]``."""
    ns, G, _, _, _, _, above, _, _, _ = _interp_parts(g, x, xp, fp, period)
    return unbroadcast(ns.where(above, G, ns.zeros_like(G)), right)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.linspace,
        "start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None",
        result=results.sequence,
        start="linspace_vjp(g, start, stop, num, endpoint, retstep, axis, 'start')",
        stop="linspace_vjp(g, start, stop, num, endpoint, retstep, axis, 'stop')")
defrule(np.interp, "x, xp, fp, left=None, right=None, period=None", result=results.same_shape,
        x="interp_vjp_x(g, x, xp, fp, left, right, period)",
        fp="interp_vjp_fp(g, x, xp, fp, left, right, period)",
        left="interp_vjp_left(g, x, xp, fp, left, right, period)",
        right="interp_vjp_right(g, x, xp, fp, left, right, period)")


@numba_twin(linspace_vjp)
def _linspace_vjp_numba(g, start, stop, num=50, endpoint=True, retstep=False, axis=0,
                        which="start"):
    # Numbers for start and stop (Numba's np.linspace takes no more).
    end, side = twins.literal(endpoint, None), twins.literal(which, None)
    if not (twins.is_array(g, 1) and twins.is_number(start) and twins.is_number(stop)
            and end in (True, False) and side in ("start", "stop")
            and twins.literal(retstep, False) is False):
        twins.unsupported("the derivative of np.linspace with these arguments")
    first = side == "start"

    def body(g, start, stop, num=50, endpoint=True, retstep=False, axis=0, which="start"):
        div = num - 1 if end else num
        t = np.arange(num) * 1.0
        if div > 0:
            t = t / div
        else:
            t = t * 0.0
        return np.sum(g * (1.0 - t)) if first else np.sum(g * t)
    return body
