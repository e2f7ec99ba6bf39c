"""Forward mode, whole Jacobians and second derivatives: jvp, jacfwd, jacrev,
jacobian, hvp, hessian.

``jvp`` runs the forward transform (:mod:`pullback.forward`): the function's own
loops with a tangent beside each value, nothing saved.  ``jacfwd`` is one ``jvp``
per entry of the differentiated arguments, ``jacrev`` one ``vjp`` cotangent per
entry of the result, both on the compiled derivative, so a Jacobian costs its
columns (or rows) times one derivative call.  ``hvp`` is reverse mode over forward
mode: the forward transform's generated function is ordinary code, which the
reverse transform differentiates again; ``hessian`` is one ``hvp`` per entry.
"""
from __future__ import annotations

import numbers
import types
import weakref

import numpy as np

from . import api
from .api import (
    GradientFunction,
    _check_argnums,
    _check_differentiable,
    _full_args,
    _name,
    _param_names,
    _refuse_complex,
    call_vjp,
    for_user,
    vjp,
)
from .core.errors import PullbackError
from .core.kinds import kind_of_value
from .jacobian_trees import hessian_tree, jacfwd_tree
from .pipeline import choose_backend, derivative, still_valid
from .sparse_jacobians import SparseJacobian
from .trees import (
    flatten_args,
    is_container,
    may_hold_tree,
    split_aux,
    tree_flatten,
    tree_map,
    tree_unflatten,
)
from .user_errors import cut_for_user, locate


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


def _jvp_result(program, value, tangent):
    """The value and tangent for the user: a pytree result rebuilt, each tangent in
    its value's shape and type."""
    if program.out_tree is not None:    # a pytree result: the tuples of its leaves
        return (tree_unflatten(program.out_tree, list(value)),
                tree_unflatten(program.out_tree, [_like_value(t, v)
                                                  for t, v in zip(tangent, value)]))
    return value, _like_value(tangent, value)


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
    floats = tuple(i for i, a in enumerate(args) if kind_of_value(a).dtype == "f") \
        if wrt is None else tuple(wrt)
    try:
        program = _tangent_program(f, args, nums, jit, structures)
        kinds = tuple(kind_of_value(a) for a in args + tuple(dots))
        second = derivative(program.fn, floats, kinds, choose_backend(f, jit), call_vjp)
    except PullbackError as exc:
        raise for_user(exc) from None

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
            run = _second_order(f, args, nums, tuple(dots.values()), jit, wrt=nums)
            blocks = {}
            for j in nums:
                n = max(np.size(args[j]), 1)
                columns = {i: np.empty((max(np.size(args[i]), 1), n)) for i in nums}
                for k in range(n):
                    _put(dots, j, k, 1.0)
                    _, grads = run(tuple(dots.values()))
                    for i in nums:
                        columns[i][:, k] = np.ravel(grads[i])
                    _put(dots, j, k, 0.0)
                for i in nums:
                    blocks[i, j] = columns[i].reshape(np.shape(args[i]) + np.shape(args[j]))
            out = [[_scalar(blocks[i, j]) for j in nums] for i in nums]
            return out[0][0] if single else tuple(tuple(row) for row in out)
        except Exception as exc:
            cut_for_user(exc)
            raise
    hess.__name__ = f"hessian({_name(f)})"
    return hess


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


def _like_value(tangent, value):
    """The tangent in the value's shape and type (zeros where nothing flowed)."""
    if isinstance(value, tuple):
        return tuple(_like_value(t, v) for t, v in zip(tangent, value))
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return float(tangent)
    t = np.asarray(tangent, dtype=np.result_type(np.asarray(value).dtype, np.float64))
    return t if t.shape == np.shape(value) else np.broadcast_to(t, np.shape(value)).copy()


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
        return _sparse(f, argnums, jit, has_aux, reverse=False)
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
            out = []
            for i in nums:
                columns, value = [], None
                for k in range(max(np.size(args[i]), 1)):
                    _put(dots, i, k, 1.0)
                    try:
                        value, column = _jvp_result(program, *_run(program, *args,
                                                                   *dots.values()))
                    except PullbackError as exc:
                        raise for_user(exc) from None
                    columns.append(np.array(column, dtype=float))     # a copy
                    _put(dots, i, k, 0.0)
                shape = np.shape(value) + np.shape(args[i])
                out.append(np.moveaxis(np.array(columns), 0, -1).reshape(shape) if columns[0].ndim
                           else np.array(columns).reshape(shape))
            return _shaped(out, single)
        except Exception as exc:
            cut_for_user(exc)
            raise
    jacobian.__name__ = f"jacfwd({_name(f)})"
    return jacobian


def jacrev(f, argnums=0, jit=None, has_aux=False, sparse=False):
    """The Jacobian of ``f`` by reverse mode: one :func:`vjp` cotangent per entry of
    the result (cheapest when it has fewer entries than the arguments).  Shapes as
    in :func:`jacfwd`; a pytree argument's Jacobian is a pytree of its structure whose
    leaves have shape ``value.shape + leaf.shape`` (None for a leaf that is not a
    float).  With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the call
    returns ``(jacobian, aux)``.  ``sparse=True``: one sweep per colour of its rows."""
    if sparse:
        return _sparse(f, argnums, jit, has_aux, reverse=True)
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


def _stacked(rows, value):
    """One leaf's Jacobian from its cotangent in each row (None: not a float)."""
    if rows[0] is None:
        return None
    out = np.array([np.asarray(r, dtype=float) for r in rows])
    return _scalar(out.reshape(np.shape(value) + np.shape(rows[0])))


#: The Jacobian by reverse mode, as JAX's ``jacobian``.
jacobian = jacrev


def _sparse(f, argnums, jit, has_aux, reverse):
    if has_aux:
        raise TypeError("sparse=True takes no has_aux: return the residual alone")
    return SparseJacobian(f, argnums, jit, reverse)


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
