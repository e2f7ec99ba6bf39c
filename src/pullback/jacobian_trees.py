"""Jacobians and Hessians of pytree arguments, as JAX lays them out.

``jacfwd`` and ``hessian`` of plain arguments build their blocks in
:mod:`pullback.jacobians`; where a differentiated argument is a pytree (a dict
of arrays, a dataclass model), this module builds them from the public
:func:`~pullback.jacobians.jvp` and :func:`~pullback.hessians.hvp`, which
take pytree tangents: one call per entry of each float leaf, its tangent the
unit vector there and ``None`` (held fixed) everywhere else.

* ``jacfwd`` with respect to a pytree argument is a pytree of its structure
  whose leaf for ``p`` has shape ``value.shape + p.shape`` (``None`` for a leaf
  that is not a float).
* ``hessian`` is ``args[i]``'s structure whose leaf ``p`` holds ``args[j]``'s
  structure of blocks, the block for leaves ``p`` and ``q`` of shape ``p.shape +
  q.shape``; with a tuple ``argnums``, a tuple over ``i`` of such, each leaf ``p``
  holding a tuple over ``j`` (JAX's ``jacfwd(jacrev(f))`` nesting).  A plain
  argument is a pytree of one leaf, so plain arrays give ``H[i][j]``.
"""
from __future__ import annotations

import numpy as np

from .core.kinds import kind_of_value
from .core.trees import flatten, unflatten


def _float_leaves(arg):
    """``(leaves, structure, float leaf indices)`` of an argument."""
    leaves, structure = flatten(arg)
    return leaves, structure, [k for k, v in enumerate(leaves)
                               if kind_of_value(v).dtype == "f"]


def _units(args, i):
    """``(leaf index, tangents)`` for each entry of each float leaf of argument i:
    the unit tangent there, None for every other leaf and argument."""
    leaves, structure, floats = _float_leaves(args[i])
    for k in floats:
        for e in range(max(np.size(leaves[k]), 1)):
            unit = np.zeros(np.shape(leaves[k]))
            unit.flat[e] = 1.0
            dot = unit if np.ndim(leaves[k]) else 1.0
            tangent = unflatten(structure, [dot if m == k else None
                                            for m in range(len(leaves))])
            yield k, tuple(tangent if a == i else None for a in range(len(args)))


def _block(columns, out_shape, in_shape):
    """The columns of one block stacked: shape ``out_shape + in_shape``."""
    stacked = np.moveaxis(np.array([np.asarray(c, dtype=float) for c in columns]), 0, -1)
    block = stacked.reshape(tuple(out_shape) + tuple(in_shape))
    return float(block) if block.ndim == 0 else block


def jacfwd_tree(jvp, f, args, i, jit, has_aux):
    """The Jacobian of ``f`` in argument ``i``, a pytree; and the aux (or None)."""
    leaves, structure, floats = _float_leaves(args[i])
    columns = {k: [] for k in floats}
    value = aux = None
    for k, tangents in _units(args, i):
        out = jvp(f, args, tangents, jit=jit, has_aux=has_aux)
        value, column = out[0], out[1]
        aux = out[2] if has_aux else None
        columns[k].append(column)
    blocks = [_block(columns[k], np.shape(value), np.shape(leaves[k])) if k in columns else None
              for k in range(len(leaves))]
    return unflatten(structure, blocks), aux


def hessian_tree(hvp, f, args, nums, single, jit):
    """The Hessian in arguments ``nums``, laid out as JAX's ``hessian`` (``jacfwd`` of
    ``jacrev``): argument ``i``'s structure, each float leaf ``p`` holding (for a tuple
    ``nums``) a tuple over ``j`` of argument ``j``'s structure holding the blocks."""
    flat = {i: _float_leaves(args[i]) for i in nums}
    # columns[(j, q), (i, p)]: leaf p of argument i's part of H times each unit of (j, q)
    columns: dict = {}
    for j in nums:
        for q, tangents in _units(args, j):
            col = hvp(f, args, tangents, jit=jit)
            for i in nums:
                parts, _ = flatten(col[i])
                for p in flat[i][2]:
                    columns.setdefault(((j, q), (i, p)), []).append(parts[p])

    def blocks(i, p, j):
        """Argument j's structure holding the blocks of leaf p of argument i."""
        leaves_j, structure_j, floats_j = flat[j]
        shape_p = np.shape(flat[i][0][p])
        return unflatten(structure_j, [
            _block(columns[(j, q), (i, p)], shape_p, np.shape(leaves_j[q]))
            if q in floats_j else None for q in range(len(leaves_j))])

    out = []
    for i in nums:
        leaves_i, structure_i, floats_i = flat[i]
        rows = [None if p not in floats_i else blocks(i, p, nums[0]) if single
                else tuple(blocks(i, p, j) for j in nums) for p in range(len(leaves_i))]
        out.append(unflatten(structure_i, rows))
    return out[0] if single else tuple(out)
