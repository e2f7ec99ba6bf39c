"""Derivative of ``np.pad``.

Every mode that fills the border with copies of entries (``edge``, ``reflect``,
``symmetric``, ``wrap``) or with a constant is handled by one mechanism: pad the
*positions* ``0 .. size-1`` of the array the same way, and each entry of the
result names the entry it copies (a constant border gets ``-1``).  The cotangent
of ``array`` is ``g`` added back at those positions (a scatter-add, so a copied
entry gets every copy's share); for the constant mode, the commonest, it is
simply ``g`` without its border.  The cotangent of a scalar ``constant_values``
is the sum of ``g`` over the border.  Modes that compute their border
(``linear_ramp``, ``maximum``, ``mean``, ``median``, ``minimum``) and a
``constant_values`` differentiated per axis, and ``reflect_type='odd'`` (whose
border is computed, not copied) raise NotImplementedError.
Conventions are those of :mod:`pullback.rules.elementwise`.
"""
from __future__ import annotations

import numpy as np

from . import results
from .elementwise import as_array, like_arg, namespace, shape_of
from .indexing import getitem_vjp
from .registry import defrule

__all__ = ["pad_vjp_array", "pad_vjp_constant"]

_COPYING = ("constant", "edge", "reflect", "symmetric", "wrap")


def _check_mode(mode, reflect_type="even"):
    if mode not in _COPYING:
        raise NotImplementedError(
            f"the derivative of np.pad with mode={mode!r} is not implemented (the modes "
            f"that copy entries or a constant are: {', '.join(_COPYING)})")
    if reflect_type != "even" and mode in ("reflect", "symmetric"):
        # An 'odd' border is computed (2 * edge - mirror), not copied.
        raise NotImplementedError("the derivative of np.pad with reflect_type='odd' is not "
                                  "implemented; use the default 'even'")


def _interior(g, shape, pad_width):
    """``g`` without the border ``np.pad`` added around an array of ``shape``."""
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (len(shape), 2))
    return g[tuple(slice(int(lo), int(lo) + n) for (lo, _), n in zip(widths, shape))]


def pad_vjp_array(g, array, pad_width, mode="constant", reflect_type="even"):
    """Cotangent of ``array`` in ``np.pad(array, pad_width, mode, ...)``."""
    _check_mode(mode, reflect_type)
    xp = namespace(g, array)
    A = as_array(xp, array, g)
    shape = tuple(A.shape)
    if mode == "constant":
        return like_arg(_interior(as_array(xp, g, A), shape, pad_width), array)
    positions = np.pad(np.arange(int(np.prod(shape))).reshape(shape), pad_width, mode)
    flat = xp.reshape(as_array(xp, g, A), (-1,))
    ct = getitem_vjp(flat, xp.reshape(A, (-1,)), positions.reshape(-1))
    return like_arg(xp.reshape(ct, shape), array)


def pad_vjp_constant(g, array, pad_width, mode="constant", constant_values=0):
    """Cotangent of ``constant_values`` (a number): the sum of ``g`` over the border."""
    if np.ndim(constant_values) != 0:
        raise NotImplementedError("the derivative of np.pad with respect to per-axis "
                                  "constant_values is not implemented; pass one number")
    xp = namespace(g, array)
    G = as_array(xp, g, array)
    return xp.sum(G) - xp.sum(_interior(G, shape_of(array), pad_width))


defrule(np.pad, "array, pad_width, mode='constant', *, stat_length=None, constant_values=0, "
        "end_values=0, reflect_type='even'", result=results.same_shape,
        array="pad_vjp_array(g, array, pad_width, mode, reflect_type)",
        constant_values="pad_vjp_constant(g, array, pad_width, mode, constant_values)")
