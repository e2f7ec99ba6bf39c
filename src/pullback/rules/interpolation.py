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

import functools

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, float_dtype, like_arg, namespace, unbroadcast
from .forms import numba_twin
from .indexing import getitem_vjp
from .registry import defrule
from .tangents import deftangent

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
def held_bound(value):
    """``left``/``right`` in the tangent of ``fp``: still the end value (None), or a
    value of its own, whose part is not this one (0)."""
    return None if value is None else 0.0


deftangent(np.linspace, linear="start, stop")
# interp is linear in (fp, left, right) jointly: each part with the others' zero (a
# given left or right is 0 in fp's part; fp is 0 in theirs).  In x: the slope.
deftangent(np.interp, shaped=True,
           x="interp_vjp_x(t, x, xp, fp, left, right, period)",
           fp="np.interp(x, xp, t, held_bound(left), held_bound(right), period)",
           left="np.interp(x, xp, np.zeros_like(fp), t, 0.0, period)",
           right="np.interp(x, xp, np.zeros_like(fp), 0.0, t, period)")


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



# Numba twins of interp: the same steps as the rules above on the flattened values (a
# number is one value), for knots and values in real vectors.  Numba's np.interp
# takes no left=, right= or period=: the forward sweep's twin puts left and right in.

def _real_vector(t) -> bool:
    from numba import types
    return twins.is_array(t, 1) and isinstance(t.dtype, (types.Integer, types.Float))


def _real_number(t) -> bool:
    from numba import types
    return isinstance(t, (types.Integer, types.Float, types.Boolean))


def _interp_check(x, xp, fp, left, right, period):
    if not twins.is_none(period):
        twins.unsupported("np.interp with period=")
    if not (_real_vector(xp) and _real_vector(fp)
            and (_real_number(x) or (twins.is_array(x) and _real_number(x.dtype)))):
        twins.unsupported(f"np.interp of x of type {x} on knots of type {xp} with values "
                          f"of type {fp}")
    for bound in (left, right):
        if not (twins.is_none(bound) or _real_number(bound)):
            twins.unsupported(f"np.interp with a bound of type {bound}")


def _segments(X, XP):
    """(j, t): the segment each value of the vector ``X`` is in and its place there."""
    n = XP.shape[0]
    if n == 1:
        return np.zeros(X.shape[0], dtype=np.int64), np.zeros(X.shape[0])
    j = np.searchsorted(XP, X, side="right") - 1
    j = np.minimum(np.maximum(j, 0), n - 2)
    x0, x1 = XP[j], XP[j + 1]
    return j, (X - x0) / (x1 - x0)         # array division: inf or nan, as NumPy's


def _sides(X, XP):
    """(below, above, inside) for the vector ``X``."""
    below, above = X < XP[0], X > XP[XP.shape[0] - 1]
    return below, above, ~(below | above)


def _scatter(w, j, n):
    """A vector of length ``n`` with ``w[i]`` added at ``j[i]``."""
    out = np.zeros(n)
    for i in range(w.shape[0]):
        out[j[i]] += w[i]
    return out


@functools.cache
def _interp_cores():
    """The compiled cotangents of x, fp, left and right as ``f(G, X, XP, FP, left, right)``
    on vectors, ``left``/``right`` saying whether the bound was given."""
    segments, sides, scatter = (twins.jitted(f) for f in (_segments, _sides, _scatter))

    def dx(G, X, XP, FP, left, right):
        if XP.shape[0] == 1:
            return np.zeros(X.shape[0])
        j, _ = segments(X, XP)
        _, _, inside = sides(X, XP)
        slope = (FP[j + 1] - FP[j]) / (XP[j + 1] - XP[j])
        return np.where(inside, G * slope, 0.0)

    def dfp(G, X, XP, FP, left, right):
        n = XP.shape[0]
        j, t = segments(X, XP)
        below, above, inside = sides(X, XP)
        w0 = np.where(inside, G * (1.0 - t), 0.0)
        w1 = np.where(inside, G * t, 0.0)
        if not left:
            w0 = w0 + np.where(below, G, 0.0)       # j is 0 there: fp[0]
        if not right:
            w1 = w1 + np.where(above, G, 0.0)       # j + 1 is n - 1 there: fp[-1]
        ct = scatter(w0, j, n)
        if n > 1:
            return ct + scatter(w1, j + 1, n)
        return ct + np.sum(w1)

    def dleft(G, X, XP, FP, left, right):
        below, _, _ = sides(X, XP)
        return np.sum(np.where(below, G, 0.0))

    def dright(G, X, XP, FP, left, right):
        _, above, _ = sides(X, XP)
        return np.sum(np.where(above, G, 0.0))
    return {k: twins.jitted(f) for k, f in
            {"x": dx, "fp": dfp, "left": dleft, "right": dright}.items()}


def _interp_vjp_twin(which):
    """The twin of the interp VJP of ``which``: its core on the flattened values, the
    cotangent of x put back in the shape of x."""
    def twin(g, x, xp, fp, left=None, right=None, period=None):
        _interp_check(x, xp, fp, left, right, period)
        lo, hi = not twins.is_none(left), not twins.is_none(right)
        core, shaped = _interp_cores()[which], which == "x"
        if twins.is_number(x):
            def number(g, x, xp, fp, left=None, right=None, period=None):
                out = core(np.full(1, g), np.full(1, x), xp * 1.0, fp, lo, hi)
                return out[0] if shaped else out
            return number

        def array(g, x, xp, fp, left=None, right=None, period=None):
            G = (np.zeros(x.shape) + g).ravel()
            out = core(G, np.ascontiguousarray(x).ravel(), xp * 1.0, fp, lo, hi)
            return out.reshape(x.shape) if shaped else out
        return array
    return twin


numba_twin(interp_vjp_x)(_interp_vjp_twin("x"))
numba_twin(interp_vjp_fp)(_interp_vjp_twin("fp"))
numba_twin(interp_vjp_left)(_interp_vjp_twin("left"))
numba_twin(interp_vjp_right)(_interp_vjp_twin("right"))


def _bounded(x, xp, fp, left, right):
    """``np.interp(x, xp, fp, left, right)`` for a vector ``x``."""
    y = np.interp(x, xp, fp)
    n = xp.shape[0]
    for i in range(x.shape[0]):
        if x[i] < xp[0]:
            y[i] = left
        elif x[i] > xp[n - 1]:
            y[i] = right
    return y


@numba_twin(np.interp)
def _interp_numba(x, xp, fp, left=None, right=None, period=None):
    _interp_check(x, xp, fp, left, right, period)
    lo, hi = not twins.is_none(left), not twins.is_none(right)
    if not (lo or hi):
        return lambda x, xp, fp, left=None, right=None, period=None: np.interp(x, xp, fp)
    bounded = twins.jitted(_bounded)
    if twins.is_number(x):
        vector = twins.jitted(lambda x, xp, fp, lo, hi: bounded(np.full(1, x), xp, fp, lo, hi)[0])
    else:
        vector = twins.jitted(lambda x, xp, fp, lo, hi: bounded(
            np.ascontiguousarray(x).ravel(), xp, fp, lo, hi).reshape(x.shape))
    # A bound not given is NumPy's: fp[0] below, fp[-1] above.
    if lo and hi:
        return lambda x, xp, fp, left=None, right=None, period=None: vector(
            x, xp, fp, left, right)
    if lo:
        return lambda x, xp, fp, left=None, right=None, period=None: vector(
            x, xp, fp, left, fp[fp.shape[0] - 1])
    return lambda x, xp, fp, left=None, right=None, period=None: vector(
        x, xp, fp, fp[0], right)
