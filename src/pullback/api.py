"""The public functions: grad, value_and_grad, vjp, show; argument handling.

The transform itself, and its cache, live in :mod:`pullback.pipeline`.
"""
from __future__ import annotations

import types
import weakref

import numpy as np

from .arguments import (
    _check_argnums,
    _check_differentiable,
    _converter,
    _example_args,
    _full_args,
    _name,
    _param_names,
    _refuse_complex,
    _signature,
    _split_method,
    _to_user,
    _unshared,
)
from .core.errors import PullbackError
from .core.kinds import kind_of_value
from .core.trees import Tree, shape_key, tree_map, unflatten
from .frontend.parse import unwrap
from .pipeline import Compiled, choose_backend, derivative, still_valid
from .trees import (
    FlatArgs,
    _check_cotangent,
    _check_scalar,
    aux_seed,
    check_result,
    checked_value,
    cotangent_seed,
    flatten_args,
    may_hold_tree,
    output_leaves,
    output_value,
    refuse_array_result,
    split_aux,
)
from .user_errors import cut_for_user, for_user, locate


class _Finished:
    """The result of a call made in full off the fast path (pytree arguments)."""
    __slots__ = ("result",)

    def __init__(self, result):
        self.result = result


class GradientFunction:
    """``grad(f)`` / ``value_and_grad(f)``: call it like f."""

    def __init__(self, f, argnums=0, jit=None, with_value=False, has_aux=False):
        if not callable(f):
            raise TypeError(f"grad expects a function, got {type(f).__name__}")
        self._given = f                              # what the user passed (for pickling)
        self.f, self._bound = _split_method(f)      # _bound: (self,) for a bound method
        self.argnums = argnums
        self.jit = jit
        self.with_value = with_value
        self.has_aux = bool(has_aux)
        self.backend = choose_backend(self.f, jit, bool(self._bound))
        self._last: Compiled | None = None
        self._fast: dict = {}
        self._trees: dict = {}      # pytree calls' entries (see _call_tree)
        self._tree_argnums: dict = {}
        self._npos, kwonly = _signature(self.f)
        # With keyword-only parameters every call goes through _full_args.
        self._nparams = -1 if kwonly else self._npos
        self.__name__ = f"grad({_name(self.f)})"
        self._api = "value_and_grad" if with_value else "grad"
        self.__doc__ = getattr(f, "__doc__", None)

    def compiled(self, *args) -> tuple[Compiled, tuple, bool]:
        """``args``: every parameter by position (the bound object first, keyword-only
        parameters last)."""
        nb, name = len(self._bound), _name(self.f)
        npos = self._npos if self._npos >= 0 else len(args)
        nums, single = _check_argnums(self.argnums, npos - nb, name)
        _refuse_complex(args[nb:], name)
        _check_differentiable(args[nb:], nums, name)
        nums = tuple(i + nb for i in nums)
        kinds = tuple(kind_of_value(a) for a in args)
        c = derivative(self.f, nums, kinds, self.backend, call_vjp, has_aux=self.has_aux)
        check_result(c, self.f, self._api, self.has_aux)
        self._last = c
        return c, nums, single

    def _call_tree(self, args):
        """A call with pytree arguments (pullback/trees.py), or None when it has none.

        The derivative, its differentiated leaves and seed are kept per structure
        and leaf kinds (``_trees``), so a repeated call flattens its arguments,
        calls the compiled code and rebuilds the gradients, and nothing else."""
        npos = self._npos if self._npos >= 0 else len(args)
        checked = self._tree_argnums.get(npos)
        if checked is None:
            nb = len(self._bound)
            nums, single = _check_argnums(self.argnums, npos - nb, _name(self.f))
            checked = self._tree_argnums[npos] = (tuple(i + nb for i in nums), single)
        nums, single = checked
        flat, spans, key = [], [], []
        for k, a in enumerate(args):
            start = len(flat)
            key.append(shape_key(a, flat) if k in nums else shape_key(a, flat, leaf=True))
            spans.append((start, len(flat)))
        key = tuple(key)
        entry = self._trees.get(key)
        if entry is None or entry[0].stale or (entry[0].dependencies
                                               and not still_valid(entry[0])):
            entry = _tree_entry(self, args, nums)
            if entry is None:
                return None
            self._trees[key] = entry
        c, wrt, seed, structures = entry
        fn = c.fn
        try:
            value, grads = fn(*flat, seed)
        except PullbackError as exc:
            raise for_user(exc) from None
        except Exception as exc:
            _failed(self, exc, c, tuple(flat), seed, args)
            raise
        if type(fn) is not types.FunctionType and getattr(fn, "ok", False):
            c.fn = fn.dispatcher
        loss, value = checked_value(c, value, self.f, self._api, self.has_aux)
        by_index = dict(zip(wrt, _unshared(list(grads))))
        out = []
        for i in nums:
            start, stop = spans[i]
            out.append(unflatten(structures[i], [
                _to_user(by_index[j], flat[j]) if j in by_index else None
                for j in range(start, stop)]))
        out = out[0] if single else tuple(out)
        if self.has_aux:
            return (value, out) if self.with_value else (out, value[1])
        return (value, out) if self.with_value else out

    def __call__(self, *args, **kwargs):
        try:
            if self._bound:
                args = self._bound + args
            if kwargs or len(args) != self._nparams:
                args = _full_args(self.f, args, kwargs)
            # Fast path: the same argument kinds as a previous call.  (This runs on every
            # call: a list comprehension over the arrays' dtype objects costs least.)
            key = tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a) for a in args])
            entry = self._fast.get(key)
            if entry is None or entry[0].stale or (entry[0].dependencies
                                                   and not still_valid(entry[0])):
                entry = self._new_entry(key, args)
                if type(entry) is _Finished:       # a call with pytree arguments
                    return entry.result
            c, plan, single, seed = entry
            fn = c.fn
            try:
                value, grads = fn(*args, seed)
            except PullbackError as exc:
                raise for_user(exc) from None
            except Exception as exc:    # raised while the derivative ran
                _failed(self, exc, c, args, seed)
                raise
            if type(fn) is not types.FunctionType and getattr(fn, "ok", False):
                c.fn = fn.dispatcher
            if self.has_aux:
                # (loss, aux), the loss checked
                _, value = checked_value(c, value, self.f, self._api, self.has_aux)
            elif type(value) is not float and type(value) is not np.float64:
                _check_scalar(output_value(c, value), self.f, self._api)
            if single:
                _, i, convert = plan[0]
                out = convert(grads[0], args[i])
            else:   # (a plain loop: a comprehension costs a function call in Python 3.11)
                out = []
                for k, i, convert in plan:
                    out.append(convert(grads[k], args[i]))
                out = _unshared(out)
            if self.has_aux and not self.with_value:
                return out, value[1]
            return (value, out) if self.with_value else out
        except Exception as exc:
            # The API's refusals, and errors located while the derivative ran (above):
            # shown without pullback's frames (pullback.user_errors).
            cut_for_user(exc)
            raise

    def _new_entry(self, key, args):
        """The fast path's entry for argument kinds ``key``: the derivative, and per
        gradient (its index in the gradients, in args, its converter), whether there
        is one, and the seed (has_aux: the loss's cotangent, zeros for the aux's).  A
        call with pytree arguments runs here instead, and keeps no entry (so a key with
        an entry has no pytree: a container there is refused on the plain path)."""
        if may_hold_tree(args):
            out = self._call_tree(args)
            if out is not None:
                return _Finished(out)
        try:
            c, nums, single = self.compiled(*args)
            refuse_array_result(c, self.f, self._api, self.has_aux)
            seed = aux_seed(1, output_leaves(c, _name(self.f), self._api), 1.0) \
                if self.has_aux else 1.0
        except PullbackError as exc:
            raise for_user(exc) from None
        plan = tuple([(k, i, _converter(args[i])) for k, i in enumerate(nums)])
        entry = self._fast[key] = (c, plan, single, seed)
        return entry

    @property
    def source(self) -> str:
        """The generated derivative source (of the last call's argument kinds; before
        the first call, for float scalars and 1-D float arrays guessed from use)."""
        if self._last is None:
            args = _example_args(self.f)
            try:
                self.compiled(*(self._bound + args[len(self._bound):]))
            except Exception as exc:
                cut_for_user(exc)
                raise
        return self._last.source

    def __repr__(self):
        return f"<pullback {self.__name__} ({self.backend.name} backend)>"

    def __reduce__(self):
        # The function and the options, not the generated code: a new process
        # transforms again (once) on its first call.
        return (GradientFunction, (self._given, self.argnums, self.jit, self.with_value,
                                   self.has_aux))


def _tree_entry(gf, args, nums):
    """``(derivative, indices of the differentiated leaves, seed, structures)`` for a
    call with pytree arguments, its arguments checked as on the first call of a
    kind; None when it has none."""
    name = _name(gf.f)
    flat = flatten_args(args, nums, name, _param_names(gf.f))
    if flat is None:
        return None
    _refuse_complex(args[len(gf._bound):], name)
    _check_differentiable(args, [i for i in nums if flat.structures[i] is None], name)
    wrt = tuple(j for i in nums for j in flat.floats(i))
    kinds = tuple(kind_of_value(a) for a in flat.args)
    try:
        c = derivative(gf.f, wrt, kinds, gf.backend, call_vjp, structures=flat.structures,
                       has_aux=gf.has_aux)
        check_result(c, gf.f, gf._api, gf.has_aux)
        refuse_array_result(c, gf.f, gf._api, gf.has_aux)
        gf._last = c
        seed = aux_seed(1, output_leaves(c, name, gf._api), 1.0) if gf.has_aux else 1.0
    except PullbackError as exc:
        raise for_user(exc) from None
    return c, wrt, seed, flat.structures


def _failed(gf, exc, c, args, seed, primal_args=None):
    """``exc``, raised while ``gf``'s derivative ``c`` ran at ``args``: a result whose
    rank kind inference did not know (a user's rule, np.kron) that is no scalar is
    refused as such, since the reverse sweep started from the seed 1.0 (a VJP of
    an array result may fail on it); otherwise ``exc`` gets a note naming the
    user's line (:func:`.user_errors.locate`).  The primal runs again, on this
    path only, to tell the two apart."""
    if not gf.has_aux and c.out_tree is None and c.result_items is None \
            and c.result_ndim == -1:
        primal_args = args if primal_args is None else primal_args
        npos, kwonly = _signature(gf.f)
        npos = len(primal_args) if npos < 0 else npos
        try:
            value = gf.backend.primal(gf.f, unwrap(gf.f)[0])(
                *primal_args[:npos], **dict(zip(kwonly, primal_args[npos:])))
        except Exception:
            value = None
        if value is not None and np.ndim(value) != 0:
            _check_scalar(value, gf.f, gf._api)
    locate(exc, c.lines, c.python, (*args, seed))


def _run(c: Compiled, args: tuple):
    """``c.fn(*args)``: the derivative run, an error it raises located at the user's
    line it comes from and cut to the caller's frame (:func:`.user_errors.locate`);
    once Numba compiled it, later calls go to the dispatcher directly."""
    try:
        out = c.fn(*args)
    except PullbackError as exc:
        raise for_user(exc) from None
    except Exception as exc:
        locate(exc, c.lines, c.python, args)
        raise
    if type(c.fn) is not types.FunctionType and getattr(c.fn, "ok", False):
        c.fn = c.fn.dispatcher
    return out


def grad(f, argnums=0, jit=None, has_aux=False):
    """The gradient of a scalar function ``f``.

    ``argnums`` (an int or a tuple of ints) says which positional arguments to
    differentiate; a tuple gives a tuple of gradients.  Each gradient has the
    type and shape of its argument; an argument may be a pytree (dicts, lists,
    tuples, NamedTuples, dataclasses of floats and arrays, nested), whose gradient
    has its structure, with ``None`` for leaves that are not floats (see
    :mod:`pullback.trees`).  With ``has_aux=True``, ``f`` returns
    ``(loss, aux)``: the gradient is of the loss, and the call returns
    ``(gradient, aux)``, the aux as ``f`` computed it.  ``jit=None`` uses Numba when ``f`` is a
    ``numba.njit`` function and plain Python otherwise; ``jit=True`` / ``False``
    force one.

    >>> import pullback
    >>> pullback.grad(lambda x: x * x)(3.0)
    6.0
    """
    try:
        return GradientFunction(f, argnums, jit, with_value=False, has_aux=has_aux)
    except Exception as exc:
        cut_for_user(exc)
        raise


def value_and_grad(f, argnums=0, jit=None, has_aux=False):
    """Like :func:`grad`, but the function returns ``(value, gradient)``, and with
    ``has_aux=True`` ``((loss, aux), gradient)``."""
    try:
        return GradientFunction(f, argnums, jit, with_value=True, has_aux=has_aux)
    except Exception as exc:
        cut_for_user(exc)
        raise


def vjp(f, *args, jit=None, has_aux=False, **kwargs):
    """``(value, back)`` where ``back(cotangent)`` returns one cotangent per
    positional argument (``None`` for arguments that cannot carry one, such as
    ints).  An argument may be a pytree (see :func:`grad`): its cotangent has its
    structure; a pytree value takes a cotangent of its structure.  With
    ``has_aux=True``, ``f`` returns ``(value, aux)`` and vjp returns
    ``(value, back, aux)``: the aux as ``f`` computed it, never differentiated.

    ``back`` reruns the forward sweep together with the reverse sweep, so each
    call costs one gradient evaluation.  The caller's arrays are never mutated,
    even if ``f`` writes into its arguments, and ``back`` differentiates at the
    arguments as they were when ``vjp`` was called.
    """
    try:
        return vjp_at(f, args, kwargs, jit, has_aux)
    except Exception as exc:
        cut_for_user(exc)
        raise


_RUN = object()
# f -> {(jit, the arguments' types): (derivative, nums, npos, primal)}: a vjp of floats
# and arrays like an earlier one skips the argument checks and the pipeline's lookup,
# as grad's fast path does.  Weak in f, so a lambda made per call does not pile up.
_FAST: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def vjp_at(f, args: tuple, kwargs: dict, jit, has_aux: bool, value=_RUN):
    """:func:`vjp`, given ``f``'s value at ``args`` when the caller has it (one
    computed by compiled code, :mod:`pullback.interop`): otherwise ``f`` runs here,
    as Python under either backend."""
    key = None
    if not kwargs and not has_aux and not may_hold_tree(args):
        key = (jit, tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a)
                           for a in args]))
        entry = _FAST.get(f, {}).get(key) if isinstance(f, types.FunctionType) else None
        if entry is not None and not entry[0].stale and (not entry[0].dependencies
                                                         or still_valid(entry[0])):
            c, nums, npos, primal = entry
            leaves = _copy_arrays(args)
            if value is _RUN:
                value = primal(*_copy_arrays(args))
            return value, _plain_back(c, f, leaves, value, nums, npos)
    f, bound = _split_method(f)
    given = len(args)
    args = _full_args(f, bound + args, kwargs)
    nb, name = len(bound), _name(f)
    npos, kwonly = _signature(f)
    if npos < 0:
        npos = len(args)
    _refuse_complex(args[nb:], name)
    flat = flatten_args(args, range(nb, npos), name, _param_names(f), need_float=True) \
        if may_hold_tree(args) else None
    if flat is None:
        flat = FlatArgs(args, (None,) * len(args),
                        tuple((i, i + 1) for i in range(len(args))))
    nums = tuple(j for i in range(nb, npos) for j in flat.floats(i))
    backend = choose_backend(f, jit, bool(bound))
    leaves = _copy_arrays(flat.args)    # a snapshot: the point back() differentiates at
    primal = backend.primal(f, unwrap(f)[0])
    if value is _RUN:
        call = tuple(tree_map(_copy_leaf, a) for a in args)     # f may write into them
        value = primal(*call[:npos], **dict(zip(kwonly, call[npos:])))
    aux = None
    if has_aux:
        value, aux = split_aux(value, name, "vjp")
    if not nums:
        return _with_aux(value, lambda ct: tuple(None for _ in range(npos - nb)), aux,
                         has_aux)
    kinds = tuple(kind_of_value(a) for a in leaves)
    try:
        c = derivative(f, nums, kinds, backend, call_vjp, structures=flat.structures,
                       has_aux=has_aux)
    except PullbackError as exc:
        raise for_user(exc) from None
    if key is not None and not bound and npos == len(args) == given and c.out_tree is None:
        _FAST.setdefault(f, {})[key] = (c, nums, npos, primal)
        return value, _plain_back(c, f, leaves, value, nums, npos)
    tree_out = c.out_tree is not None and (not has_aux
                                           or isinstance(c.out_tree.children[0], Tree))
    n_all = output_leaves(c, name, "vjp") if has_aux else None

    def back(cotangent):
        try:
            if tree_out:
                seed = cotangent_seed(cotangent, value, name)
            else:
                _check_cotangent(value, cotangent, f)
                seed = (cotangent,) if has_aux else cotangent
            if has_aux:
                seed = tuple(seed) + (0.0,) * (n_all - len(seed))
            _, grads = _run(c, (*leaves, seed))
            by_index = dict(zip(nums, _unshared(list(grads))))
            return tuple(flat.gradient(i, by_index, _to_user) for i in range(nb, npos))
        except Exception as exc:
            cut_for_user(exc)
            raise
    back.source = c.source
    return _with_aux(value, back, aux, has_aux)


def _plain_back(c: Compiled, f, leaves: tuple, value, nums: tuple, npos: int):
    """``back`` of a vjp of floats and arrays whose value is no pytree."""
    def back(cotangent):
        try:
            _check_cotangent(value, cotangent, f)
            _, grads = _run(c, (*leaves, cotangent))
            by_index = dict(zip(nums, _unshared(list(grads))))
            return tuple(_to_user(by_index[i], leaves[i]) if i in by_index else None
                         for i in range(npos))
        except Exception as exc:
            cut_for_user(exc)
            raise
    back.source = c.source
    return back


def _with_aux(value, back, aux, has_aux):
    return (value, back, aux) if has_aux else (value, back)


def _copy_leaf(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _copy_arrays(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def call_vjp(f, g, *args):
    """Cotangents of a call ``f(*args)`` whose result has cotangent ``g``: what the
    derivative of a recursive function calls, at run time, for its recursive call
    (each level differentiates the next).  Passed to the pipeline for that."""
    _, back = vjp(f, *args, jit=False)
    return back(g)


def show(g, *args) -> None:
    """Print the derivative source of ``g = grad(f)`` (for ``args`` if given)."""
    try:
        if args and may_hold_tree(args):
            g(*args)        # pytree arguments: flattened by a call, which makes the derivative
            print(g._last.source)
        elif args:
            full = g._bound + args
            try:
                g.compiled(*(full if len(full) == g._nparams else _full_args(g.f, full, {})))
            except PullbackError as exc:
                raise for_user(exc) from None
            print(g._last.source)
        else:
            print(g.source)
    except Exception as exc:
        cut_for_user(exc)
        raise
