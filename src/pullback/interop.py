"""A user's function as another framework differentiates it: its value, its vjp, its
jvp, and the function that *is* its vjp, again differentiable, to any order.

PyTorch and JAX (:mod:`pullback.torch`, :mod:`pullback.jax`) call pullback through a
:class:`Level`.  The first level is the user's function.  ``level.transpose(args)``
is the level of ``(*args, c) -> J(args)^T c`` (the cotangents' float leaves, one
flat tuple): its value is computed by the level below (``below.vjp``, compiled at
the first level under ``jit=True``), and its own derivative by pullback from
generated Python that calls :func:`pullback.vjp` inside, as pullback differentiates
any nested transform (:mod:`pullback.nesting`).  So a framework's backward is the
second level's value, its double backward the second level's vjp, and each order
adds one.  ``level.tangent(args)`` is the level of the jvp, computed by pullback's
forward mode; of the first level's vjp, by :meth:`Level.vjp_tangent` (reverse mode
over the forward program), so forward over reverse (a Hessian as ``jacfwd`` of a
gradient) works too.

Invariant: ``Level(f).transpose(args).value(args + (c,), f(*args))`` equals the
float leaves of ``vjp(f, *args)[1](c)``, and that level's vjp is the vjp of
``(*args, c) -> vjp(f, *args)[1](c)``.  Levels above the first are differentiated on
the Python backend: a derivative that calls ``vjp`` at run time is not compiled
(:mod:`pullback.backends.object_mode`).
"""
from __future__ import annotations

import functools
import types
import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import api
from .api import _RUN, _copy_leaf, call_vjp, vjp_at
from .api import _run as _run_reverse
from .arguments import _signature, _to_user
from .core.errors import PullbackError
from .core.kinds import kind_of_value
from .core.trees import flatten, paths, unflatten
from .jacobians import jvp as _jvp
from .pipeline import choose_backend, derivative, still_valid
from .rules.twins import function_from_source
from .tangent_calls import _run as _run_tangent
from .trees import may_hold_tree, tree_map
from .user_errors import for_user


@dataclass(frozen=True, eq=False)      # hashed by identity: the caches' keys
class Level:
    """``fn`` (pullback-differentiable), run under ``jit``.  The first level is the
    user's function; a level with ``below`` is ``below``'s vjp: ``fn(*args, c)``
    returns the cotangents of ``below``'s ``nargs`` arguments at their float leaves
    (``mask``: which leaves of the arguments, flattened, are floats), as one tuple;
    with ``forward``, ``below``'s jvp: ``fn(*args, *tangents)``."""

    fn: Callable
    jit: object = None
    below: Level | None = None
    nargs: int = 0
    mask: tuple = ()
    forward: bool = False

    def value(self, args: tuple, below_value=None):
        """``fn(*args)``.  The first level under the Numba backend runs compiled code:
        the tangent program with no tangent, which is the primal as pullback lowers
        it.  A level above runs the vjp of the level below, given that level's value
        ``below_value`` when the caller has it.  The caller's arrays are never
        written, whatever ``fn`` does."""
        if self.forward:
            n = self.nargs
            if self.below.below is not None:
                return self.below.vjp_tangent(tuple(args[:n]), tuple(args[n:]))
            return self.below.jvp(tuple(args[:n]), tuple(args[n:]))[1]
        if self.below is not None:
            *inner, c = args
            inner = tuple(inner)
            plain = self.below.plain(inner)
            if below_value is None:
                below_value = self.below.value(inner)
            if plain is not None:
                return self.pick(plain.cotangents(inner, conform(below_value, c)))
            _, back = self.below.vjp(inner, below_value)
            return self.pick(back(conform(below_value, c)))
        plain = self.plain(args)
        if plain is not None:
            return plain.value(args)
        if choose_backend(self.fn, self.jit, False).name == "numba":
            return _jvp(self.fn, args, (None,) * len(args), jit=self.jit)[0]
        return self.fn(*(tree_map(_copy_leaf, a) for a in args))

    def plain(self, args: tuple) -> Plain | None:
        """The first level's two programs for these arguments, when they are floats,
        ints and arrays and its value no pytree (a float, an array, a tuple of them),
        else None."""
        if self.below is not None:
            return None
        key = (self.jit, tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a)
                                for a in args]))
        per_fn = _PLAINS.get(self.fn)
        made = per_fn.get(key) if per_fn is not None else None
        if made is None or made is not False and not made.valid:
            if any(t not in _PLAIN_TYPES for t in map(type, args)):
                return None
            made = _PLAINS.setdefault(self.fn, {})[key] = _plain(self.fn, args, self.jit)
        return made or None

    def vjp(self, args: tuple, value=_RUN):
        """``(value, back)`` as :func:`pullback.vjp` gives them; ``value``, when the
        caller has it, is not computed again."""
        return vjp_at(self.fn, args, {}, self.jit, False, value)

    def jvp(self, args: tuple, tangents: tuple):
        """``(value, tangent)`` as :func:`pullback.jvp` gives them."""
        return _jvp(self.fn, args, tangents, jit=self.jit)

    def pick(self, cotangents: tuple) -> tuple:
        """The float leaves of each argument's cotangent, in order, as one tuple (the
        leaf itself when there is one: a level above then takes one cotangent, not a
        tuple, which a ``vjp`` inside code could not take)."""
        leaves = cotangents if not may_hold_tree(cotangents) else flatten(tuple(cotangents))[0]
        out = tuple(leaf for leaf, m in zip(leaves, self.mask) if m)
        return out[0] if len(out) == 1 else out

    def transpose(self, args: tuple) -> Level:
        """The level of this level's vjp at arguments like ``args``: generated Python,
        differentiated on the Python backend (a derivative that calls ``vjp`` at run
        time is not compiled).  The third derivative is refused: pullback's forward
        mode, which the vjp of a nested ``vjp`` runs, does not differentiate one."""
        if self.below is not None and self.below.below is not None:
            raise NotImplementedError(
                "pullback differentiates a function called from another framework to "
                "second order (a double backward, gradgradcheck); a third derivative "
                "is not supported")
        leaves, structure = (args, None) if not may_hold_tree(args) else flatten(tuple(args))
        return _transpose(self, len(args), structure, tuple(map(is_float, leaves)))

    def tangent(self, args: tuple) -> Level:
        """The level of ``(*args, *tangents) -> jvp(fn, args, tangents)[1]``, its
        derivatives from generated Python, as :meth:`transpose`'s are.  Of the first
        level's vjp (forward over reverse: ``torch.func.hessian``), the tangent is
        computed by :meth:`vjp_tangent`, and differentiated no further; of any other
        level above the first it is refused: pullback's forward mode does not
        differentiate a ``vjp`` or ``jvp`` inside code."""
        if self.below is not None and (self.forward or self.below.below is not None):
            raise NotImplementedError(
                "pullback differentiates a function called from another framework to "
                "second order: forward mode over a second derivative is not supported")
        if self.below is not None:
            return Level(None, False, self, len(args), forward=True)
        return Level(_tangent(self.fn, len(args)), False, self, len(args), forward=True)

    def vjp_tangent(self, args: tuple, dots: tuple):
        """The tangent of this level's value ``J(x)^T c`` along ``(dx, dc)`` (this level
        the first one's vjp): the gradient in ``x`` of ``<c, J(x) dx>``, one reverse
        sweep of the first level's tangent program, plus ``J(x)^T dc``."""
        n = self.nargs
        x, c, dx, dc = args[:n], args[n], dots[:n], dots[n]
        first = self.below
        value = first.value(x)
        terms = []
        if any(d is not None for d in dx):
            _, back = api.vjp(_tangent(first.fn, n), *x, *dx)
            terms.append(self.pick(back(conform(value, c))[:n]))
        if dc is not None:
            _, back = first.vjp(x, value)
            terms.append(self.pick(back(conform(value, dc))))
        if not terms:
            return self.pick(tuple(None if a is None else a * 0.0 for a in x))
        if len(terms) == 1:
            return terms[0]
        if isinstance(terms[0], tuple):
            return tuple(a + b for a, b in zip(*terms))
        return terms[0] + terms[1]


# fn -> {(jit, the arguments' types): Plain, or False where the value is a pytree}.
_PLAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PLAIN_TYPES = frozenset({np.ndarray, float, int, bool})


@dataclass
class Plain:
    """The first level's compiled programs for one set of argument types, called
    directly: the tangent program with no tangent for the value, the reverse program
    for the cotangents.  Invariant: ``value(args)`` is ``fn(*args)`` and
    ``cotangents(args, c)`` is ``vjp(fn, *args)[1](c)``, as the public functions give
    them, while ``valid`` (no global or closure value they inlined has changed, no
    rule since)."""

    value_program: object
    gradient_program: object
    nums: tuple

    @property
    def valid(self) -> bool:
        v, g = self.value_program, self.gradient_program
        return not (v.stale or g.stale or v.dependencies and not still_valid(v)
                    or g.dependencies and not still_valid(g))

    def value(self, args: tuple):
        return _run_tangent(self.value_program, *args)[0]

    def cotangents(self, args: tuple, c) -> tuple:
        _, grads = _run_reverse(self.gradient_program, (*args, c))
        by_index = dict(zip(self.nums, grads))
        return tuple(_to_user(by_index[i], a) if i in by_index else None
                     for i, a in enumerate(args))


def _plain(fn, args, jit):
    """A :class:`Plain` of ``fn`` for ``args``, or False where its value is a pytree
    or nothing is differentiable."""
    if not isinstance(fn, types.FunctionType) or _signature(fn) != (len(args), ()):
        return False
    backend = choose_backend(fn, jit, False)
    kinds = tuple(kind_of_value(a) for a in args)
    nums = tuple(i for i, k in enumerate(kinds) if k.dtype == "f")
    try:
        value = derivative(fn, (), kinds, backend, mode="forward")
        reverse = derivative(fn, nums, kinds, backend, call_vjp) if nums else None
    except PullbackError as exc:
        raise for_user(exc) from None
    if reverse is None or value.out_tree is not None or reverse.out_tree is not None:
        return False
    return Plain(value, reverse, nums)


def conform(value, c):
    """The cotangent ``c`` (NumPy leaves from another framework) in ``value``'s
    structure and kinds: a float where the value is a number, a contiguous array
    where it is an array (a framework may hand over a broadcast view)."""
    if type(value) is np.ndarray:
        return np.ascontiguousarray(c)
    leaves, structure = flatten(value)
    cs = flatten(c)[0]
    return unflatten(structure, [np.ascontiguousarray(x) if isinstance(v, np.ndarray)
                                 else float(np.asarray(x)) for x, v in zip(cs, leaves)])


@functools.lru_cache(maxsize=256)
def _transpose(level: Level, nargs: int, structure, mask: tuple) -> Level:
    """:meth:`Level.transpose` for arguments of ``structure`` (their tuple's; None:
    no argument is a pytree) whose leaves are floats where ``mask`` says."""
    where = [f"g[{k}]" for k in range(nargs)] if structure is None else paths(structure, "g")
    picks = tuple(p for p, m in zip(where, mask) if m)
    return Level(_transposed(level.fn, nargs, picks), False, level, nargs, mask)


@functools.lru_cache(maxsize=256)
def _transposed(fn, nargs: int, picks: tuple):
    """Generated ``def vjp_of_<fn>(a0, ..., c)`` calling ``vjp(fn, a0, ...)`` and
    returning the cotangent leaves at ``picks`` (paths such as ``g[0]['w']``) as
    :meth:`Level.pick` does (cached, so that a framework calling it again finds pullback's derivative
    cached as well)."""
    params = [f"a{i}" for i in range(nargs)]
    body = [f"value, back = vjp(inner, {', '.join(params)})",
            "g = back(c)",
            f"return {picks[0]}" if len(picks) == 1 else f"return ({', '.join(picks)})"]
    name = f"vjp_of_{getattr(fn, '__name__', 'f').strip('<>')}"
    return function_from_source(name, params + ["c"], body, {"vjp": api.vjp, "inner": fn})


@functools.lru_cache(maxsize=256)
def _tangent(fn, nargs: int):
    """Generated ``def jvp_of_<fn>(a0, ..., t0, ...)`` returning
    ``jvp(fn, (a0, ...), (t0, ...))[1]``."""
    params = [f"a{i}" for i in range(nargs)]
    dots = [f"t{i}" for i in range(nargs)]
    body = [f"value, dot = jvp(inner, ({''.join(p + ', ' for p in params)}), "
            f"({''.join(t + ', ' for t in dots)}))",
            "return dot"]
    name = f"jvp_of_{getattr(fn, '__name__', 'f').strip('<>')}"
    return function_from_source(name, params + dots, body, {"jvp": _jvp, "inner": fn})


def is_float(a) -> bool:
    """Whether a leaf carries a derivative: a Python float or a float array."""
    if isinstance(a, float):
        return True
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"
