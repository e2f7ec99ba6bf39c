"""A dense Jacobian's or Hessian's columns from one compiled loop.

``jacfwd``'s columns are the tangent program at unit tangents, ``jacrev``'s
rows the reverse derivative at unit cotangents, a Hessian's columns the
second-order program at unit tangents.  Under ``jit=True`` each is one call of
compiled code, and for a loop of a hundred steps the call from Python costs more
than the column: these functions run all of them from one compiled loop, split
across Numba's threads (:mod:`pullback.backends.batch_loop`).  Each returns the
stacked results, entry ``k`` that of unit direction ``k`` (C order), or None
where the loop does not run (the Python backend, fewer than
:data:`MIN_COLUMNS` columns, a loop still compiling in the background, a call
that raised): the caller then calls the program once per
column from Python, which gives the same numbers.
"""
from __future__ import annotations

import numpy as np

from .backends import batch_loop

#: Fewer columns are called from Python: compiling the loop (about half a second
#: per derivative, once) would cost more than it saves, unless it is called
#: thousands of times.
MIN_COLUMNS = 16


def units(value) -> np.ndarray:
    """The unit directions of a value's shape: ``(size,) + shape``, entry ``k`` one
    at position ``k`` (C order) and zero elsewhere; a number's is ``[1.0]``."""
    size = max(int(np.size(value)), 1)
    return np.eye(size).reshape((size,) + np.shape(value))


def tangents(program, args, dots: dict, i, value_shape):
    """Column ``k``: the tangent of the result for the unit tangent ``k`` of
    argument ``i``, the other tangents as in ``dots`` (argument -> tangent, in the
    program's order); shape ``(size of argument i,) + value_shape``."""
    seeds = units(args[i])
    if len(seeds) < MIN_COLUMNS:
        return None
    tangent_args = [seeds if j == i else d for j, d in dots.items()]
    axes = [None] * len(args) + [0 if j == i else None for j in dots]
    out = np.empty((len(seeds),) + tuple(value_shape))
    if batch_loop.run(program.fn, (*args, *tangent_args), axes, [((1,), out)], len(seeds)):
        return out
    return None


def cotangents(compiled, args, wrt, nums, value):
    """Row ``k`` of each gradient: the reverse derivative (differentiated in the
    arguments ``wrt``) at the unit cotangent ``k`` of ``value``; one array
    ``(size of value,) + argument shape`` per entry of ``nums``."""
    seeds = units(value)
    if len(seeds) < MIN_COLUMNS:
        return None
    outs = [((1, wrt.index(i)), np.empty((len(seeds),) + np.shape(args[i]))) for i in nums]
    axes = [None] * len(args) + [0]
    if batch_loop.run(compiled.fn, (*args, seeds), axes, outs, len(seeds)):
        return [a for _, a in outs]
    return None


def hessian_columns(second, args, dots: dict, j, wrt):
    """Column ``k`` of each block ``H[i][j]``: the second-order program's entry for
    argument ``i`` (each of ``wrt``) at the unit tangent ``k`` of argument ``j``;
    one array ``(size of argument j,) + shape of argument i`` per entry of ``wrt``."""
    seeds = units(args[j])
    if len(seeds) < MIN_COLUMNS:
        return None
    tangent_args = [seeds if m == j else d for m, d in dots.items()]
    axes = [None] * len(args) + [0 if m == j else None for m in dots] + [None]
    outs = [((1, k), np.empty((len(seeds),) + np.shape(args[i]))) for k, i in enumerate(wrt)]
    if batch_loop.run(second.fn, (*args, *tangent_args, (0.0, 1.0)), axes, outs, len(seeds)):
        return {i: a for i, (_, a) in zip(wrt, outs)}
    return None
