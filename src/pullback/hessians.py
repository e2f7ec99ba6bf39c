"""Second derivatives: hvp and hessian, by reverse mode over forward mode.

``hvp`` is the reverse transform applied to the tangent program (the forward
transform's generated function is ordinary code), seeded with the cotangent
``(0, 1)`` of its result ``(value, tangent)``: the gradient of ``<grad f, v>``.
``hessian`` is one ``hvp`` per entry of the differentiated arguments, all from
one compiled loop under ``jit=True`` (:mod:`pullback.columns`).
"""
from __future__ import annotations

import numpy as np

from . import columns
from .api import _check_argnums, _check_differentiable, _name, call_vjp
from .core.errors import PullbackError
from .core.kinds import kind_of_value
from .jacobian_trees import hessian_tree
from .pipeline import choose_backend, derivative
from .tangent_calls import (
    _checked,
    _flat_trees,
    _like_value,
    _put,
    _run,
    _scalar,
    _tangent_program,
    _zero_tangents,
)
from .trees import is_container
from .user_errors import cut_for_user, for_user


def hvp(f, primals, tangents, jit=None):
    """The Hessian of a scalar ``f`` at ``primals`` times ``tangents``: a tuple with one
    entry per primal, each of its shape (``None`` for a non-float argument, and zeros
    for one whose tangent is ``None``, held fixed).

    Reverse mode over forward mode: the gradient of ``<grad f, v>``, one forward and
    one reverse sweep of the tangent program.  For SciPy:
    ``minimize(f, x0, jac=grad(f), hessp=lambda x, p: hvp(f, (x,), (p,))[0],
    method="trust-ncg")``.
    """
    try:
        flat = _flat_trees(f, primals, tangents, "hvp")
        if flat is not None:
            fa = flat[0]
            out = _hvp_call(f, fa.args, flat[1], flat[2], jit, fa.structures)
            grads = {i: g for i, g in enumerate(out) if g is not None}
            return tuple(fa.gradient(k, grads, lambda g, a: g) for k in range(len(fa.spans)))
        args, nums, dots = _checked(f, primals, tangents, "hvp")
        return _hvp_call(f, args, nums, dots, jit)
    except Exception as exc:
        cut_for_user(exc)
        raise


def _hvp_call(f, args, nums, dots, jit, structures=()):
    """The Hessian of f at ``args`` times ``dots``, one entry per argument (None for
    one that is not a float)."""
    value, grads = _second_order(f, args, nums, dots, jit, structures)(dots)
    out = [None] * len(args)
    for i, g in grads.items():
        out[i] = _like_value(g, args[i])
    return tuple(out)


def _second_order(f, args, nums, dots, jit, structures=(), wrt=None):
    """``run(dots) -> (value, {argument: its entry of H dots})`` for the kinds of
    ``args`` and ``dots``, for the arguments ``wrt`` (default: every float one): the
    reverse transform applied to the tangent program, seeded with the cotangent
    ``(0, 1)`` of its result ``(value, tangent)``, the gradient of ``<grad f, v>``.
    Made once, so a Hessian's columns each cost one call of the compiled function."""
    return _runner(f, args, *_second_program(f, args, nums, dots, jit, structures, wrt))


def _runner(f, args, second, floats):
    """``run(dots)`` of the second-order program ``second`` (see _second_order)."""
    def run(dots):
        try:
            (value, _), grads = _run(second, *args, *dots, (0.0, 1.0))
        except PullbackError as exc:
            raise for_user(exc) from None
        if np.ndim(value) != 0 or isinstance(value, tuple):
            raise TypeError(f"hvp and hessian need {_name(f)} to return a scalar, but it "
                            f"returned shape {np.shape(value)}; use jacfwd(jacrev(f)) per "
                            "output")
        return value, dict(zip(floats, grads))
    return run


def _second_program(f, args, nums, dots, jit, structures=(), wrt=None):
    """The second-order program and the arguments it differentiates."""
    floats = tuple(i for i, a in enumerate(args) if kind_of_value(a).dtype == "f") \
        if wrt is None else tuple(wrt)
    try:
        program = _tangent_program(f, args, nums, jit, structures)
        kinds = tuple(kind_of_value(a) for a in args + tuple(dots))
        return derivative(program.fn, floats, kinds, choose_backend(f, jit), call_vjp), floats
    except PullbackError as exc:
        raise for_user(exc) from None


def hessian(f, argnums=0, jit=None):
    """The Hessian of a scalar ``f``: one :func:`hvp` per entry of the differentiated
    arguments.  For an int ``argnums`` an array of shape ``arg.shape + arg.shape``; for
    a tuple, the blocks ``H[i][j]`` of shape ``args[i].shape + args[j].shape``, as
    JAX's ``hessian`` gives them; a pytree argument's blocks are pytrees of pytrees
    (:mod:`pullback.jacobian_trees`).  The second-order program is looked up once
    per call; each column is one call of it."""
    def hess(*args):
        try:
            fname = _name(f)
            nums, single = _check_argnums(argnums, len(args), fname)
            if any(is_container(args[i]) for i in nums):
                return hessian_tree(hvp, f, args, nums, single, jit)
            _check_differentiable(args, nums, fname)
            dots = _zero_tangents(args, nums)
            # The blocks of the arguments asked for only: no entry of H v for the others.
            second, floats = _second_program(f, args, nums, tuple(dots.values()), jit, wrt=nums)
            run = _runner(f, args, second, floats)
            blocks = {}
            for j in nums:
                n = max(np.size(args[j]), 1)
                cols = {i: np.empty((max(np.size(args[i]), 1), n)) for i in nums}
                for k in range(n):
                    _put(dots, j, k, 1.0)
                    _, grads = run(tuple(dots.values()))
                    for i in nums:
                        cols[i][:, k] = np.ravel(grads[i])
                    _put(dots, j, k, 0.0)
                    at_once = None if k or n < 2 else columns.hessian_columns(
                        second, args, dots, j, nums)
                    if at_once is not None:     # every column from one compiled loop
                        cols = {i: a.reshape(n, -1).T for i, a in at_once.items()}
                        break
                for i in nums:
                    blocks[i, j] = cols[i].reshape(np.shape(args[i]) + np.shape(args[j]))
            out = [[_scalar(blocks[i, j]) for j in nums] for i in nums]
            return out[0][0] if single else tuple(tuple(row) for row in out)
        except Exception as exc:
            cut_for_user(exc)
            raise
    hess.__name__ = f"hessian({_name(f)})"
    return hess

