"""Derivatives of the functions that pick, entry by entry, among their inputs:
``np.select`` and ``np.clip`` (and the ``clip`` method).

Each entry's cotangent goes to the input it was taken from.  At a bound, ``clip``
gives ``g`` to ``a`` and none to the bound (PyTorch's ``clamp`` convention).
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, namespace, unbroadcast
from .forms import numba_twin
from .registry import defrule
from .tangents import deftangent

__all__ = ["clip_vjp_a", "clip_vjp_min", "clip_vjp_max", "select_vjp_choices", "select_vjp_default"]


# select: each entry is taken from the first choice whose condition holds there,
# else from the default; its cotangent goes back to that one.

def _first_holding(xp, condlist, like):
    """For each condition, where it is the first that holds; and where none does."""
    taken = xp.zeros(like.shape, dtype=xp.bool)
    firsts = []
    for cond in condlist:
        c = xp.broadcast_to(as_array(xp, cond, like), like.shape)
        firsts.append(c & ~taken)
        taken = taken | c
    return firsts, ~taken


def select_vjp_choices(g, condlist, choicelist, default=0):
    """Cotangents of ``choicelist`` in ``np.select``: ``g`` where each was chosen."""
    xp = namespace(g, *choicelist)
    G = as_array(xp, g, *choicelist)
    firsts, _ = _first_holding(xp, condlist, G)
    zero = xp.zeros_like(G)
    return [unbroadcast(xp.where(here, G, zero), choice) for here, choice in zip(firsts, choicelist)]


def select_vjp_default(g, condlist, choicelist, default=0):
    """Cotangent of ``default`` in ``np.select``: ``g`` where no condition holds."""
    xp = namespace(g, default)
    G = as_array(xp, g, default)
    _, none = _first_holding(xp, condlist, G)
    return unbroadcast(xp.where(none, G, xp.zeros_like(G)), default)


defrule(np.select, "condlist, choicelist, default=0", result=results.array,
        choicelist="select_vjp_choices(g, condlist, choicelist, default)",
        default="select_vjp_default(g, condlist, choicelist, default)")
deftangent(np.select, linear="choicelist, default")


# Numba twins of select and its cotangents: conditions and choices are tuples of arrays
# of the result's shape (no broadcasting, as in Numba's own np.select), the default a
# number or such an array.

def _select_sizes(condlist, choicelist, default):
    """The number of choices, after refusing what the twins have no code for.  The
    conditions may also be a list (a global list of masks reaches Numba as one)."""
    from numba import types
    n = len(choicelist) if twins.is_tuple(choicelist) else 0
    ndim = choicelist[0].ndim if n and twins.is_array(choicelist[0]) else 0
    conds = (isinstance(condlist, types.List) and twins.is_array(condlist.dtype, ndim)
             or twins.is_tuple(condlist) and len(condlist) == n
             and all(twins.is_array(c, ndim) for c in condlist))
    if not (ndim and conds and all(twins.is_array(c, ndim) for c in choicelist)
            and (twins.is_number(default) or twins.is_array(default, ndim)
                 or isinstance(default, (int, float)))):    # an omitted default: 0
        twins.unsupported(f"np.select of conditions {condlist}, choices {choicelist} and "
                          f"default {default}")
    return n


def _first_holding_twin(condlist, n):
    """A compiled ``f(condlist, shape)``: at each entry, the index of the first of the
    ``n`` conditions that holds there, ``n`` where none does.  (Compiled on its own,
    not inlined: Numba unrolls a loop over a tuple only in a function it compiles.)"""
    from numba import literal_unroll, njit, types
    if isinstance(condlist, types.List):
        def which(condlist, shape):
            out = np.full(shape, n, np.int64)
            for k in range(n):
                out = np.where((out == n) & (condlist[k] != 0), k, out)
            return out
    else:
        def which(condlist, shape):
            out = np.full(shape, n, np.int64)
            k = 0
            for c in literal_unroll(condlist):      # the masks' types may differ
                out = np.where((out == n) & (c != 0), k, out)
                k += 1
            return out
    return njit(which)


_SELECT_SHAPES = ("np.select under jit=True takes conditions, choices and an array default "
                  "of one shape (no broadcasting); use jit=False")
_SELECT_COUNTS = "np.select: list of cases must be same length as list of conditions"


def _choosing(k, n):
    """A compiled ``f(condlist, choicelist, default, shape)``: ``np.select`` of the
    conditions and choices from ``k`` on, each checked to be of ``shape``."""
    if k == n:
        return twins.jitted(lambda condlist, choicelist, default, shape: default)
    rest = _choosing(k + 1, n)

    def choose(condlist, choicelist, default, shape):
        if condlist[k].shape != shape or choicelist[k].shape != shape:
            raise ValueError(_SELECT_SHAPES)
        return np.where(condlist[k], choicelist[k], rest(condlist, choicelist, default, shape))
    return twins.jitted(choose)


@numba_twin(np.select)
@twins.keeps_dtype("choicelist")
def _select_numba(condlist, choicelist, default=0):
    # Numba's own np.select takes only a number for the default.  The shapes are checked
    # here, in the forward sweep, so that the cotangents' twins need not unbroadcast.
    n = _select_sizes(condlist, choicelist, default)
    chosen = _choosing(0, n)
    if twins.is_array(default):
        fits = twins.jitted(lambda default, shape: default.shape == shape)
    else:
        fits = twins.jitted(lambda default, shape: True)

    def impl(condlist, choicelist, default=0):
        shape = choicelist[0].shape
        if len(condlist) != n:
            raise ValueError(_SELECT_COUNTS)
        if not fits(default, shape):
            raise ValueError(_SELECT_SHAPES)
        return chosen(condlist, choicelist, default, shape)
    return impl


@numba_twin(select_vjp_choices)
def _select_vjp_choices_numba(g, condlist, choicelist, default=0):
    n = _select_sizes(condlist, choicelist, default)
    which = _first_holding_twin(condlist, n)
    # A zero of g's dtype: np.where(..., g, 0.0) of a float32 g would be float64.
    items = twins.tuple_of(n, lambda k: lambda g, first: np.where(first == k, g, np.zeros_like(g)))

    def impl(g, condlist, choicelist, default=0):
        return items(g, which(condlist, g.shape))
    return impl


@numba_twin(select_vjp_default)
@twins.keeps_dtype("default")
def _select_vjp_default_numba(g, condlist, choicelist, default=0):
    n = _select_sizes(condlist, choicelist, default)
    which = _first_holding_twin(condlist, n)
    if twins.is_number(default):
        return lambda g, condlist, choicelist, default=0: np.sum(
            np.where(which(condlist, g.shape) < n, 0.0, g))
    return lambda g, condlist, choicelist, default=0: np.where(which(condlist, g.shape) < n, 0.0, g)


# ---------------------------------------------------------------------------
# clip: a_min/a_max may be None (no bound), arrays, or given as min=/max= (NumPy >= 2.1).

def _clip_parts(g, a, a_min, a_max, min, max):
    """The namespace, ``g`` as an array, and the lower and upper bounds (None: none),
    given as a_min/a_max or as min=/max=."""
    xp = namespace(g, a)
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    return xp, as_array(xp, g, a), lo, hi


def clip_vjp_a(g, a, a_min=None, a_max=None, min=None, max=None):
    """Cotangent of ``a`` in ``np.clip``: ``g`` where ``a_min <= a <= a_max``.

    Returned at the broadcast shape; the transform unbroadcasts it.
    """
    xp, g, lo, hi = _clip_parts(g, a, a_min, a_max, min, max)
    inside = xp.ones_like(g, dtype=xp.bool)
    if lo is not None:
        inside = inside & (a >= lo)
    if hi is not None:
        inside = inside & (a <= hi)
    return xp.where(inside, g, xp.zeros_like(g))


def clip_vjp_min(g, a, a_min=None, a_max=None, min=None, max=None):
    """Cotangent of the lower bound: ``g`` where ``a < a_min`` (and the lower bound is active)."""
    xp, g, lo, hi = _clip_parts(g, a, a_min, a_max, min, max)
    below = a < lo
    if hi is not None:
        # With a_min > a_max NumPy returns a_max everywhere: the lower bound never shows.
        below = below & (lo <= hi)
    return xp.where(below, g, xp.zeros_like(g))


def clip_vjp_max(g, a, a_min=None, a_max=None, min=None, max=None):
    """Cotangent of the upper bound: ``g`` where the result is ``a_max`` and ``a`` was not."""
    xp, g, lo, hi = _clip_parts(g, a, a_min, a_max, min, max)
    above = a > hi
    if lo is not None:
        above = above | (lo > hi)
    return xp.where(above, g, xp.zeros_like(g))


defrule(np.clip, "a, a_min=None, a_max=None, out=None, *, min=None, max=None", methods=("clip",),
        a="clip_vjp_a(g, a, a_min, a_max, min, max)",
        a_min="clip_vjp_min(g, a, a_min, a_max, min, max)",
        a_max="clip_vjp_max(g, a, a_min, a_max, min, max)",
        min="clip_vjp_min(g, a, a_min, a_max, min, max)",
        max="clip_vjp_max(g, a, a_min, a_max, min, max)")
deftangent(np.clip, elementwise=True)
# Forward mode's tangent of clip calls these, linear in g and piecewise constant in the rest.
for _mask in (clip_vjp_a, clip_vjp_min, clip_vjp_max):
    defrule(_mask, "u, a, a_min=None, a_max=None, min=None, max=None", result=results.like,
            u=f"{_mask.__name__}(g, a, a_min, a_max, min, max)")
    deftangent(_mask, elementwise=True)


# Numba twins of clip's cotangents: numbers (or arrays) for the bounds, no min=/max=.
def _clip_twin(mask_of):
    """The twin of a clip cotangent ``np.where(mask, g, 0.0)``: ``mask_of(lo, hi)`` (whether
    there is a lower, an upper bound) is ``mask(a, a_min, a_max)``, or None for none."""
    def twin(g, a, a_min=None, a_max=None, min=None, max=None):
        if not (twins.is_none(min) and twins.is_none(max)):
            twins.unsupported("np.clip with min= or max=")
        mask = mask_of(not twins.is_none(a_min), not twins.is_none(a_max))
        if mask is None:
            return None
        m = twins.jitted(mask)
        return lambda g, a, a_min=None, a_max=None, min=None, max=None: np.where(
            m(a, a_min, a_max), g, 0.0)
    return twin


def _clip_inside(lo, hi):
    if lo and hi:
        return lambda a, a_min, a_max: (a >= a_min) & (a <= a_max)
    if lo:
        return lambda a, a_min, a_max: a >= a_min
    if hi:
        return lambda a, a_min, a_max: a <= a_max
    return lambda a, a_min, a_max: a == a


def _clip_below(lo, hi):
    if not lo:
        return None
    if hi:
        return lambda a, a_min, a_max: (a < a_min) & (a_min <= a_max)
    return lambda a, a_min, a_max: a < a_min


def _clip_above(lo, hi):
    if not hi:
        return None
    if lo:
        return lambda a, a_min, a_max: (a > a_max) | (a_min > a_max)
    return lambda a, a_min, a_max: a > a_max


numba_twin(clip_vjp_a)(twins.keeps_dtype("a")(_clip_twin(_clip_inside)))
numba_twin(clip_vjp_min)(twins.keeps_dtype("a_min")(_clip_twin(_clip_below)))
numba_twin(clip_vjp_max)(twins.keeps_dtype("a_max")(_clip_twin(_clip_above)))
