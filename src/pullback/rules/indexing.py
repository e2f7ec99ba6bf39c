"""Derivatives of array indexing: reads ``x[index]`` and slice writes ``x[index] = v``.

Conventions are those of :mod:`pullback.rules.elementwise`.

:func:`getitem_vjp` gives the dense cotangent of ``x`` for an array-valued read
``y = x[index]``: zeros with ``g`` scatter-ADDED at ``index``, so an integer
array index that repeats a position accumulates (``x[[0, 0]]`` gives 2 g at
0).  Any NumPy index works: int, slice, tuple, Ellipsis, None, integer arrays
or lists, boolean masks.  (A scalar element read ``p[i]`` in a loop does not
come here: the transform turns it into an in-place ``dp[i] += g``.)

How the scatter-add is done, per array library:

* NumPy: ``out[index] = g`` for a basic index (no two positions coincide),
  ``np.add.at`` otherwise.
* PyTorch: basic indices as NumPy; advanced ones read ``index`` from a tensor of
  flat positions (``arange(size).reshape(shape)[index]``) and ``index_add_``
  there, which accumulates repeats and runs on the device.  Index arrays given
  as NumPy arrays are moved to the tensor's device.
* JAX: ``zeros.at[index].add(g)``; CuPy: ``cupyx.scatter_add``.
* Any other array API library: basic indices only (the standard has no
  scatter-add); an advanced index raises NotImplementedError.

For a write ``x[index] = v`` into a local array (the transform saves what the
write overwrites), :func:`setitem_vjp_v` gives the cotangent of ``v``
(``g[index]`` summed to ``v``'s shape) and :func:`setitem_vjp_x` the cotangent
of the array before the write (``g`` with zeros at ``index``).  With an integer
array index that repeats a position NumPy keeps the last write; these helpers
then give every repeat the full ``g`` (not supported: write each position once).
"""
from __future__ import annotations

import operator

import array_api_compat
import numpy as np

from .elementwise import as_array, float_dtype, namespace, shape_of, unbroadcast
from .registry import defrule
from .tangents import deftangent

__all__ = ["getitem_vjp", "setitem_vjp_x", "setitem_vjp_v", "is_basic_index"]


def is_basic_index(index) -> bool:
    """True when ``index`` selects each position at most once without index arrays.

    ints, slices, Ellipsis and None (``bool`` is an advanced index in NumPy).
    """
    items = index if isinstance(index, tuple) else (index,)
    for i in items:
        if isinstance(i, (bool, np.bool_)):
            return False
        if not (i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))):
            return False
    return True


def _torch_index(index, device):
    """Index arrays (NumPy arrays, lists) as tensors on ``device``."""
    import torch

    def conv(i):
        if isinstance(i, (np.ndarray, list)):
            return torch.as_tensor(np.asarray(i), device=device)
        if isinstance(i, torch.Tensor) and i.device != device:
            return i.to(device)
        return i
    if isinstance(index, tuple):
        return tuple(conv(i) for i in index)
    return conv(index)


def getitem_vjp(g, x, index):
    """Cotangent of ``x`` in ``y = x[index]``: zeros of ``x``'s shape, ``g`` added at ``index``."""
    xp = namespace(g, x)
    shape = shape_of(x)
    dtype = float_dtype(xp, g, x)
    device = array_api_compat.device(x) if hasattr(x, "shape") else None
    basic = is_basic_index(index)
    if array_api_compat.is_numpy_namespace(xp):
        out = np.zeros(shape, dtype=dtype)
        if basic:
            out[index] = g            # positions are distinct: assigning is adding
        else:
            np.add.at(out, index, g)
        return out
    if array_api_compat.is_jax_namespace(xp):
        return xp.zeros(shape, dtype=dtype).at[index].add(g)
    out = xp.zeros(shape, dtype=dtype, device=device)
    if basic:
        out[index] = g
        return out
    if array_api_compat.is_torch_namespace(xp):
        size = int(np.prod(shape))
        positions = xp.reshape(xp.arange(size, device=device), shape)[_torch_index(index, device)]
        values = xp.broadcast_to(as_array(xp, g, x), tuple(positions.shape))
        flat = xp.reshape(out, (-1,))
        flat.index_add_(0, xp.reshape(positions, (-1,)), xp.reshape(values, (-1,)))
        return out
    if array_api_compat.is_cupy_namespace(xp):
        import cupyx
        cupyx.scatter_add(out, index, g)
        return out
    raise NotImplementedError(
        f"getitem_vjp: advanced indexing needs a scatter-add, which {xp.__name__} lacks")


def _backend_index(xp, index, like):
    if array_api_compat.is_torch_namespace(xp):
        return _torch_index(index, like.device)
    return index


def setitem_vjp_v(g, x, index, v):
    """Cotangent of ``v`` in ``x[index] = v``: ``g[index]``, summed to ``v``'s shape.

    ``g`` is the cotangent of ``x`` after the write.
    """
    xp = namespace(g, x)
    return unbroadcast(g[_backend_index(xp, index, g)], v)


def setitem_vjp_x(g, x, index, v=None):
    """Cotangent of ``x`` before ``x[index] = v``: ``g`` with zeros at ``index`` (a new array)."""
    xp = namespace(g, x)
    out = xp.asarray(g, copy=True)
    out[_backend_index(xp, index, out)] = 0
    return out


# Array-valued reads.  (Scalar element reads inside loops are the transform's own.)
defrule(operator.getitem, "x, index, /", result="any", x="getitem_vjp(g, x, index)")
deftangent(operator.getitem, linear="x")
