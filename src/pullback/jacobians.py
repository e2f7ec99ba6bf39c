"""Forward mode and whole Jacobians: jvp, jacfwd, jacrev, jacobian.

``jvp`` runs the forward transform (:mod:`pullback.forward`): the function's own
loops with a tangent beside each value, nothing saved.  ``jacfwd`` is one ``jvp``
per entry of the differentiated arguments, ``jacrev`` one ``vjp`` cotangent per
entry of the result, both on the compiled derivative, so a Jacobian costs its
columns (or rows) times one derivative call; under ``jit=True`` all of them run
from one compiled loop (:mod:`pullback.columns`).  ``sparse=True`` colours the
columns of a sparse one (:mod:`pullback.sparse_jacobians`).  Second derivatives
are :mod:`pullback.hessians`.
"""
from __future__ import annotations

import types
import weakref

import numpy as np

from . import api, columns
from .api import (
    GradientFunction,
    _check_argnums,
    _check_differentiable,
    _full_args,
    _name,
    call_vjp,
    for_user,
    vjp,
)
from .core.errors import PullbackError
from .core.kinds import kind_of_value
from .hessians import hessian, hvp
from .jacobian_trees import jacfwd_tree
from .pipeline import choose_backend, derivative, still_valid
from .sparse_jacobians import sparse_jacobian
from .tangent_calls import (
    _checked,
    _flat_trees,
    _jvp_result,
    _put,
    _run,
    _scalar,
    _tangent_of,
    _tangent_program,
    _zero_tangents,
)
from .trees import (
    is_container,
    may_hold_tree,
    split_aux,
    tree_map,
)
from .user_errors import cut_for_user


def jvp(f, primals, tangents, jit=None, has_aux=False):
    """``(value, tangent)``: ``f(*primals)`` and its derivative along ``tangents``
    (the Jacobian-vector product), by forward mode.

    ``primals`` and ``tangents`` are tuples of the same length; each tangent has the
    shape of its primal.  A ``None`` tangent holds its argument fixed; arguments that
    are not floats or float arrays (ints, flags) carry no tangent, and theirs is
    ignored.  The tangent of the
    value has the value's shape.  ``jit`` chooses the backend as in :func:`grad`.
    With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the call returns
    ``(value, tangent, aux)``, the aux as ``f`` computed it.

    >>> import pullback
    >>> pullback.jvp(lambda x, y: x * y, (3.0, 2.0), (1.0, 0.0))
    (6.0, 2.0)
    """
    try:
        if has_aux:
            value, tangent = jvp(f, primals, tangents, jit)
            out, aux = split_aux(value, _name(f), "jvp")
            return out, tangent[0], aux
        if hasattr(f, "gradient_function") and not f.with_value:    # grad(grad(g)), nesting.py
            f = f.gradient_function(_full_args(f.f, tuple(primals), {}))
        if isinstance(f, GradientFunction) and not f.with_value and not f._bound:
            return _jvp_of_grad(f, primals, tangents, jit)
        flat = _flat_trees(f, primals, tangents, "jvp")
        if flat is not None:
            return _jvp_call(f, flat[0].args, flat[1], flat[2], jit, flat[0].structures)
        return _jvp_plain(f, primals, tangents, jit)
    except Exception as exc:
        cut_for_user(exc)
        raise


# f -> {(jit, the primals' types, which tangents are None): (tangent program, nums)}:
# a call like an earlier one skips the argument checks and the pipeline's lookup, as
# grad's fast path does.  Weak in f, so a lambda made per call does not pile up.
_FAST: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _jvp_plain(f, primals, tangents, jit):
    """``jvp`` of floats and arrays, through the fast path once a call had these kinds."""
    key = None
    if type(primals) is tuple and type(tangents) is tuple and len(primals) == len(tangents):
        key = (jit, tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a)
                           for a in primals]), tuple([t is None for t in tangents]))
    per_f = _FAST.get(f) if key is not None else None
    entry = per_f.get(key) if per_f is not None else None
    if entry is None or entry[0].stale or (entry[0].dependencies
                                          and not still_valid(entry[0])):
        args, nums, dots = _checked(f, primals, tangents, "jvp")
        value, tangent, program = _jvp_run(f, args, nums, dots, jit)
        if key is not None and len(args) == len(primals):    # no default filled in
            try:
                _FAST.setdefault(f, {})[key] = (program, nums)
            except TypeError:       # an object that takes no weak reference
                pass
        return _jvp_result(program, value, tangent)
    program, nums = entry
    fname = getattr(f, "__qualname__", "f")
    dots = tuple([_tangent_of(primals[i], tangents[i], i, fname) for i in nums])
    try:
        value, tangent = _run(program, *primals, *dots)
    except PullbackError as exc:
        raise for_user(exc) from None
    return _jvp_result(program, value, tangent)


def _inner_argnum(gf, api):
    """The one argument ``grad(f)`` differentiates (an int ``argnums``)."""
    if not isinstance(gf.argnums, int) or isinstance(gf.argnums, bool):
        raise TypeError(f"{api} of {gf.__name__} needs its argnums to be one int, so that it "
                        f"returns one gradient; got argnums={gf.argnums!r}")
    return gf.argnums


def _jvp_of_grad(gf, primals, tangents, jit):
    """``jvp(grad(f), ...)``: the gradient and the Hessian times the tangents."""
    i = _inner_argnum(gf, "jvp")
    return gf(*primals), hvp(gf.f, primals, tangents, jit)[i % len(primals)]


def _jvp_call(f, args, nums, dots, jit, structures=()):
    value, tangent, program = _jvp_run(f, args, nums, dots, jit, structures)
    return _jvp_result(program, value, tangent)


def _jvp_run(f, args, nums, dots, jit, structures=()):
    """``(value, tangent, tangent program)`` as the program returns them."""
    try:
        program = _tangent_program(f, args, nums, jit, structures)
        value, tangent = _run(program, *args, *dots)
    except PullbackError as exc:
        raise for_user(exc) from None
    return value, tangent, program


def jacfwd(f, argnums=0, jit=None, has_aux=False, sparse=False):
    """The Jacobian of ``f`` by forward mode: one :func:`jvp` per entry of the
    differentiated arguments (cheapest when they have fewer entries than the result).

    The Jacobian with respect to an argument has shape ``value.shape + arg.shape``;
    a tuple ``argnums`` gives a tuple of them; a pytree argument's is a pytree of its
    structure (:mod:`pullback.jacobian_trees`).  With ``has_aux=True``, ``f`` returns
    ``(value, aux)`` and the call returns ``(jacobian, aux)``.  With ``sparse=True``
    (a 1-D argument and result), a ``scipy.sparse.csr_array`` from one sweep per
    colour of its columns (:mod:`pullback.sparse_jacobians`)."""
    if sparse:
        return sparse_jacobian(f, argnums, jit, has_aux, reverse=False)
    def jacobian(*args):
        try:
            fname = _name(f)
            nums, single = _check_argnums(argnums, len(args), fname)
            if has_aux or any(is_container(args[i]) for i in nums):
                parts = [jacfwd_tree(jvp, f, args, i, jit, has_aux) for i in nums]
                out = _shaped([p[0] for p in parts], single)
                return (out, parts[-1][1]) if has_aux else out
            _check_differentiable(args, nums, fname)
            dots = _zero_tangents(args, nums)
            try:    # one tangent program for every column (the other arguments held fixed)
                program = _tangent_program(f, args, nums, jit)
            except PullbackError as exc:
                raise for_user(exc) from None
            return _shaped([_forward_block(program, args, dots, i) for i in nums], single)
        except Exception as exc:
            cut_for_user(exc)
            raise
    jacobian.__name__ = f"jacfwd({_name(f)})"
    return jacobian


def _forward_block(program, args, dots, i):
    """The Jacobian in argument ``i``: column 0 from Python (it gives the value), then
    every column from one compiled loop (:mod:`pullback.columns`), or from Python."""
    stacked, value = [], None
    for k in range(max(np.size(args[i]), 1)):
        _put(dots, i, k, 1.0)
        try:
            value, column = _jvp_result(program, *_run(program, *args, *dots.values()))
        except PullbackError as exc:
            raise for_user(exc) from None
        _put(dots, i, k, 0.0)
        stacked.append(np.array(column, dtype=float))     # a copy
        if k == 0 and program.out_tree is None and not isinstance(value, tuple) \
                and np.size(args[i]) > 1:
            at_once = columns.tangents(program, args, dots, i, np.shape(value))
            if at_once is not None:
                stacked = at_once
                break
    stacked = np.asarray(stacked)
    shape = np.shape(value) + np.shape(args[i])
    return np.moveaxis(stacked, 0, -1).reshape(shape) if stacked.ndim > 1 \
        else stacked.reshape(shape)


def jacrev(f, argnums=0, jit=None, has_aux=False, sparse=False):
    """The Jacobian of ``f`` by reverse mode: one :func:`vjp` cotangent per entry of
    the result (cheapest when it has fewer entries than the arguments).  Shapes as
    in :func:`jacfwd`; a pytree argument's Jacobian is a pytree of its structure whose
    leaves have shape ``value.shape + leaf.shape`` (None for a leaf that is not a
    float).  With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the call
    returns ``(jacobian, aux)``.  ``sparse=True``: one sweep per colour of its rows."""
    if sparse:
        return sparse_jacobian(f, argnums, jit, has_aux, reverse=True)
    def jacobian(*args):
        try:
            fname = _name(f)
            nums, single = _check_argnums(argnums, len(args), fname)
            _check_differentiable(args, [i for i in nums if not is_container(args[i])], fname)
            if has_aux:
                value, back, aux = vjp(f, *args, jit=jit, has_aux=True)
            else:
                value, back = vjp(f, *args, jit=jit)
            if isinstance(value, tuple):
                raise TypeError(f"jacrev: {fname} returns a tuple; return one array (stack the "
                                "items) to take its Jacobian")
            at_once = None if has_aux or isinstance(value, tuple) or may_hold_tree(args) \
                else _compiled_rows(f, args, nums, value, jit)
            if at_once is not None:
                return _shaped([r.reshape(np.shape(value) + np.shape(args[i]))
                                for r, i in zip(at_once, nums)], single)
            rows = [back(_unit(value, k)) for k in range(max(np.size(value), 1))]
            out = []
            for i in nums:
                if is_container(args[i]):
                    out.append(tree_map(lambda *ls: _stacked(ls, value), *[r[i] for r in rows]))
                    continue
                stacked = np.array([np.asarray(r[i], dtype=float) for r in rows])
                out.append(stacked.reshape(np.shape(value) + np.shape(args[i])))
            return (_shaped(out, single), aux) if has_aux else _shaped(out, single)
        except Exception as exc:
            cut_for_user(exc)
            raise
    jacobian.__name__ = f"jacrev({_name(f)})"
    return jacobian


def _compiled_rows(f, args, nums, value, jit):
    """jacrev's rows from one compiled loop over unit cotangents, or None."""
    if isinstance(f, types.MethodType) or np.size(value) < 2:
        return None
    wrt = tuple(i for i, a in enumerate(args) if kind_of_value(a).dtype == "f")
    c = derivative(f, wrt, tuple(kind_of_value(a) for a in args), choose_backend(f, jit),
                   call_vjp)
    return columns.cotangents(c, args, wrt, nums, value)


def _stacked(rows, value):
    """One leaf's Jacobian from its cotangent in each row (None: not a float)."""
    if rows[0] is None:
        return None
    out = np.array([np.asarray(r, dtype=float) for r in rows])
    return _scalar(out.reshape(np.shape(value) + np.shape(rows[0])))


#: The Jacobian by reverse mode, as JAX's ``jacobian``.
jacobian = jacrev


def _unit(like, k):
    """The k-th unit vector in the shape of ``like`` (1.0 for a number)."""
    if np.ndim(like) == 0:
        return 1.0
    e = np.zeros(np.shape(like), dtype=float)
    e.flat[k] = 1.0
    return e


def _shaped(out, single):
    out = [o[()] if isinstance(o, np.ndarray) and o.ndim == 0 else o for o in out]
    out = [float(o) if isinstance(o, np.floating) else o for o in out]
    return out[0] if single else tuple(out)


# These transforms called in differentiated code are refused by line; grad, jvp and
# vjp there are primitives or rewritten (pullback.nesting).
_NOT_NESTED = ("pullback differentiates calls of grad(f), jvp(f, ...) and vjp(f, ...) made "
               "inside the function, not yet of the other transforms: take the derivative "
               "from outside (grad(grad(f)), hessian(f), jvp(grad(f), ...)), or write it with "
               "grad, jvp or vjp")
for _transform in (api.value_and_grad, hvp, hessian, jacfwd, jacrev):
    _transform.refused_in_code = _NOT_NESTED
