"""Calling a tangent program: tangents checked in, columns seeded, tangents shaped out.

What ``jvp``, the Jacobians and the Hessians share (:mod:`pullback.jacobians`,
:mod:`pullback.hessians`): the forward transform's compiled function for the
arguments' kinds, called with its errors located at the user's line; each
tangent checked against its primal; unit tangents set in place column by
column; a tangent returned in its value's shape and type.
"""
from __future__ import annotations

import numbers
import types

import numpy as np

from .api import _full_args, _name, _param_names, _refuse_complex
from .core.errors import PullbackError
from .core.kinds import kind_of_value
from .pipeline import choose_backend, derivative
from .trees import flatten_args, may_hold_tree, tree_flatten, tree_unflatten
from .user_errors import for_user, locate


def _tangent_of(primal, tangent, i, fname):
    """``tangent`` checked against its primal: same shape, real numbers."""
    if isinstance(primal, np.ndarray):
        t = np.asarray(tangent, dtype=np.result_type(primal.dtype, np.float64)
                       if primal.dtype.kind != "f" else primal.dtype)
        if t.shape != primal.shape:
            raise ValueError(f"jvp of {fname}: the tangent of argument {i} has shape "
                             f"{t.shape}, its primal {primal.shape}")
        return t      # the tangent program copies what it writes in place
    if not isinstance(tangent, numbers.Real) and not (
            isinstance(tangent, np.ndarray) and tangent.ndim == 0):
        raise TypeError(f"jvp of {fname}: the tangent of argument {i} must be a real number "
                        f"like its primal, got {type(tangent).__name__}")
    return float(tangent)


def _tangent_program(f, args, nums, jit, structures=()):
    """The forward transform's compiled function for these argument kinds (the
    leaves of pytree arguments, whose ``structures`` are given)."""
    kinds = tuple(kind_of_value(a) for a in args)
    return derivative(f, nums, kinds, choose_backend(f, jit), mode="forward",
                      structures=structures)


def _run(compiled, *args):
    """``compiled.fn(*args)``; once Numba compiled it, later calls go to the
    dispatcher directly (as grad's do).  The generated function copies any argument
    it writes in place, so the caller's arrays are never touched.  An error it
    raises names the user's line it was generated for."""
    try:
        out = compiled.fn(*args)
    except PullbackError as exc:
        raise for_user(exc) from None
    except Exception as exc:    # raised while it ran: name the user's line (user_errors)
        locate(exc, compiled.lines, compiled.python, args)
        raise
    if type(compiled.fn) is not types.FunctionType and getattr(compiled.fn, "ok", False):
        compiled.fn = compiled.fn.dispatcher
    return out


def _jvp_result(program, value, tangent):
    """The value and tangent for the user: a pytree result rebuilt, each tangent in
    its value's shape and type."""
    if program.out_tree is not None:    # a pytree result: the tuples of its leaves
        return (tree_unflatten(program.out_tree, list(value)),
                tree_unflatten(program.out_tree, [_like_value(t, v)
                                                  for t, v in zip(tangent, value)]))
    return value, _like_value(tangent, value)


def _like_value(tangent, value):
    """The tangent in the value's shape and type (zeros where nothing flowed)."""
    if isinstance(value, tuple):
        return tuple(_like_value(t, v) for t, v in zip(tangent, value))
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return float(tangent)
    t = np.asarray(tangent, dtype=np.result_type(np.asarray(value).dtype, np.float64))
    return t if t.shape == np.shape(value) else np.broadcast_to(t, np.shape(value)).copy()


def _flat_trees(f, primals, tangents, api):
    """``(FlatArgs, nums, tangents)`` for pytree primals, whose tangents are pytrees
    of the same structure (None: held fixed); None when no primal is a pytree."""
    if not isinstance(primals, (tuple, list)) or not may_hold_tree(primals):
        return None
    fname = _name(f)
    args = _full_args(f, tuple(primals), {})
    flat = flatten_args(args, range(len(primals)), fname, _param_names(f), need_float=True)
    if flat is None:
        return None
    if not isinstance(tangents, (tuple, list)) or len(tangents) != len(primals):
        raise TypeError(f"{api} takes one tangent per primal, a pytree of its structure "
                        "for a pytree (None: held fixed)")
    nums, dots = [], []
    for k, t in enumerate(tangents):
        if t is None:
            continue
        leaves, structure = tree_flatten(t)
        if structure != flat.structures[k] and flat.structures[k] is not None:
            raise TypeError(f"{api} of {fname}: the tangent of argument {k} must have the "
                            "structure of its primal (a pytree of the same containers)")
        for i, leaf in zip(range(*flat.spans[k]), leaves):
            if i in flat.floats(k) and leaf is not None:
                nums.append(i)
                dots.append(_tangent_of(flat.args[i], leaf, k, fname))
    return flat, tuple(nums), tuple(dots)


def _checked(f, primals, tangents, api):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{api} takes the primals and the tangents as two tuples, "
                        f"got {type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(f"{api}: {len(primals)} primals but {len(tangents)} tangents; "
                         "give one tangent per primal (None for a non-float argument)")
    fname = _name(f)
    args = _full_args(f, tuple(primals), {})
    _refuse_complex(args, fname)
    nums = tuple(i for i in range(len(primals))
                 if kind_of_value(args[i]).dtype == "f" and tangents[i] is not None)
    return args, nums, tuple(_tangent_of(args[i], tangents[i], i, fname) for i in nums)


def _zero_tangents(args, nums) -> dict:
    """Argument -> a zero tangent of it (a float array, or 0.0 for a number), which
    :func:`_put` makes a unit tangent in place, column by column."""
    return {i: (np.zeros_like(args[i], dtype=float) if np.ndim(args[i]) else 0.0)
            for i in nums}


def _put(dots, i, k, value):
    """Entry ``k`` of the tangent of argument ``i`` set to ``value`` in place (a
    number's tangent replaced): the tangent program copies what it writes, and each
    column is copied out before the next, so one array serves every column."""
    if isinstance(dots[i], np.ndarray):
        dots[i].flat[k] = value
    else:
        dots[i] = value


def _scalar(a):
    return float(a[()]) if a.ndim == 0 else a

