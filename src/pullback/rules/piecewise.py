"""Derivatives of the functions that pick, entry by entry, among their inputs:
``np.select`` and ``np.clip`` (and the ``clip`` method).

Each entry's cotangent goes to the input it was taken from.  At a bound, ``clip``
gives ``g`` to ``a`` and none to the bound (PyTorch's ``clamp`` convention).
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, namespace, unbroadcast
from .registry import defrule, numba_twin

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


def _holding_source(n):
    """Lines that leave ``first{k}`` (where condition k is the first that holds) and
    ``taken`` (where any does)."""
    lines = ["taken = np.zeros(g.shape, dtype=np.bool_)"]
    for k in range(n):
        lines += [f"first{k} = condlist[{k}] & ~taken", f"taken = taken | condlist[{k}]"]
    return "".join(f"    {line}\n" for line in lines)


_SELECT_SHAPES = ("np.select under jit=True takes conditions, choices and an array default "
                  "of one shape (no broadcasting); use jit=False")


@numba_twin(np.select)
def _select_numba(condlist, choicelist, default=0):
    # Numba's own np.select takes only a number for the default.  The shapes are checked
    # here, in the forward sweep, so that the cotangents' twins need not unbroadcast.
    n = _select_sizes(condlist, choicelist, default)
    same = [f"condlist[{k}].shape != shape or choicelist[{k}].shape != shape" for k in range(n)]
    if twins.is_array(default):
        same.append("default.shape != shape")
    nested = "default"
    for k in reversed(range(n)):
        nested = f"np.where(condlist[{k}], choicelist[{k}], {nested})"
    ns = {"np": np, "message": _SELECT_SHAPES,
          "counts": "np.select: list of cases must be same length as list of conditions"}
    exec("def impl(condlist, choicelist, default=0):\n    shape = choicelist[0].shape\n"
         f"    if len(condlist) != {n}:\n        raise ValueError(counts)\n"
         f"    if {' or '.join(same)}:\n        raise ValueError(message)\n"
         f"    return {nested}\n", ns)
    return ns["impl"]


@numba_twin(select_vjp_choices)
def _select_vjp_choices_numba(g, condlist, choicelist, default=0):
    n = _select_sizes(condlist, choicelist, default)
    ns = {"np": np}
    exec("def impl(g, condlist, choicelist, default=0):\n" + _holding_source(n)
         + "    return (" + "".join(f"np.where(first{k}, g, 0.0), " for k in range(n)) + ")\n", ns)
    return ns["impl"]


@numba_twin(select_vjp_default)
def _select_vjp_default_numba(g, condlist, choicelist, default=0):
    n = _select_sizes(condlist, choicelist, default)
    total = "np.sum(rest)" if twins.is_number(default) else "rest"
    ns = {"np": np}
    exec("def impl(g, condlist, choicelist, default=0):\n" + _holding_source(n)
         + f"    rest = np.where(taken, 0.0, g)\n    return {total}\n", ns)
    return ns["impl"]


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


# Numba twins of clip's cotangents: numbers (or arrays) for the bounds, no min=/max=.
def _clip_twin(where_src):
    def twin(g, a, a_min=None, a_max=None, min=None, max=None):
        if not (twins.is_none(min) and twins.is_none(max)):
            twins.unsupported("np.clip with min= or max=")
        lo, hi = not twins.is_none(a_min), not twins.is_none(a_max)
        src = where_src(lo, hi)
        if src is None:
            return None
        ns = {"np": np}
        exec("def impl(g, a, a_min=None, a_max=None, min=None, max=None):\n"
             f"    return np.where({src}, g, 0.0)\n", ns)
        return ns["impl"]
    return twin


def _clip_inside(lo, hi):
    parts = (["(a >= a_min)"] if lo else []) + (["(a <= a_max)"] if hi else [])
    return " & ".join(parts) or "a == a"


numba_twin(clip_vjp_a)(_clip_twin(_clip_inside))
numba_twin(clip_vjp_min)(_clip_twin(
    lambda lo, hi: None if not lo else "(a < a_min)" + (" & (a_min <= a_max)" if hi else "")))
numba_twin(clip_vjp_max)(_clip_twin(
    lambda lo, hi: None if not hi else "(a > a_max)" + (" | (a_min > a_max)" if lo else "")))
