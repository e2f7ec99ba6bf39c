"""pullback inside JAX: a function of NumPy arrays, differentiated by pullback, as a
function of JAX arrays that ``jax.grad`` differentiates, inside ``jax.jit`` too.

``function(f, jit=...)`` is a ``jax.custom_vjp`` whose value and cotangents run
pullback's code through ``jax.pure_callback``: the value compiled under
``jit=True``, the cotangents by pullback's vjp, and a second derivative (``grad``
of ``grad``) by the vjp of that vjp (:mod:`pullback.interop`).

* Arguments are pytrees (dicts, lists, tuples, NamedTuples) of arrays, numbers and
  other leaves; arrays (float or int) are traced, everything else (Python numbers,
  strings) is a constant.
* The value's shapes and dtypes are found by calling ``f`` once at ones of the
  arguments' shapes (cached per shapes); pass ``result_shape`` (a pytree of
  ``jax.ShapeDtypeStruct``) when the value's shape depends on the arguments' values.
* Reverse mode by default, to second order: ``jax.grad``, ``vjp``, ``jacrev`` and
  ``jacrev(jacrev(...))``.  JAX allows a function one custom rule, and forward mode
  over pullback's vjp is not supported, so ``jax.jvp``, ``jacfwd`` and
  ``jax.hessian`` (forward over reverse) are refused by JAX; ``mode="forward"``
  gives a ``custom_jvp`` instead (``jax.jvp``, ``jacfwd``, first order).
* ``jax.vmap`` hands the callback the whole batch, which :func:`pullback.vmap` maps
  ``f`` over (a loop over the examples, in one callback).
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import jax
import numpy as np

from .core.trees import flatten, unflatten
from .interop import Level, is_float
from .vmap import vmap

__all__ = ["function"]


def function(f, jit=None, result_shape=None, mode="reverse"):
    """``f`` (a function of NumPy arrays and numbers that pullback differentiates) as
    a function of JAX arrays that JAX differentiates, under ``jax.jit`` too.  ``jit``
    chooses pullback's backend, as in :func:`pullback.grad`; ``result_shape``: the
    value's ``jax.ShapeDtypeStruct``\\ s, when calling ``f`` at ones cannot tell them.
    ``mode="reverse"`` (a ``custom_vjp``: ``grad``, ``vjp``, ``jacrev``, to second
    order) or ``"forward"`` (a ``custom_jvp``: ``jvp``, ``jacfwd``, first order, by
    pullback's forward mode); JAX allows a function one of the two.

    >>> import jax, jax.numpy as jnp, pullback.jax
    >>> def horner(c, x):
    ...     s = 0.0
    ...     for k in range(c.shape[0]):
    ...         s = s * x + c[k]
    ...     return s
    >>> jax.grad(pullback.jax.function(horner))(jnp.array([1.0, 2.0, 3.0]), 2.0)
    Array([4., 2., 1.], dtype=float32)
    """
    if mode not in ("reverse", "forward"):
        raise ValueError(f"pullback.jax.function: mode={mode!r}; expected 'reverse' or "
                         "'forward'")
    shape = None if result_shape is None else flatten(result_shape)
    wrapped = functools.partial(_call, Level(f, jit), shape, mode == "forward")
    functools.update_wrapper(wrapped, f)
    return wrapped


@dataclass(frozen=True)
class _Call:
    """A call's static part: the level, the arguments' structure, the leaves that are
    constants (``_TRACED`` where a leaf is an array, traced), and the value's given
    shape."""

    level: Level
    structure: object
    constants: tuple
    result_shape: object = None

    def args(self, arrays) -> tuple:
        it = iter(arrays)
        return unflatten(self.structure, [next(it) if c is _TRACED else c
                                          for c in self.constants])

    def value_shape(self, arrays):
        """The value's leaves as ``ShapeDtypeStruct``\\ s, and its structure."""
        if self.result_shape is not None:
            leaves, structure = self.result_shape
            return tuple(leaves), structure
        return _probe(self, tuple((tuple(a.shape), np.dtype(a.dtype)) for a in arrays))


def _call(level, result_shape, forward, *args):
    leaves, structure = flatten(args)
    constants = tuple(_TRACED if _is_array(a) else a for a in leaves)
    call = _Call(level, structure, constants, result_shape)
    arrays = [a for a in leaves if _is_array(a)]
    shapes, out_structure = call.value_shape(arrays)
    apply = _apply_forward if forward else _apply
    return unflatten(out_structure, list(apply(call, *arrays)))


_TRACED = type("Traced", (), {"__repr__": lambda self: "<traced>"})()  # an array's slot


def _is_array(a) -> bool:
    return isinstance(a, (jax.Array, np.ndarray))


@functools.lru_cache(maxsize=512)
def _probe(call: _Call, shapes: tuple):
    """The value's shapes and dtypes, from one call of the level at ones."""
    ones = [np.ones(s, d) for s, d in shapes]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        value = call.level.value(call.args(ones))
    leaves, structure = flatten(value)
    return tuple(jax.ShapeDtypeStruct(np.shape(v), jax.dtypes.canonicalize_dtype(
        np.result_type(v))) for v in leaves), structure


def _value(call: _Call, arrays):
    """The level's value at ``arrays``, through a callback.  Under ``jax.vmap`` the
    callback gets the arguments with the batch axes in front (``"expand_dims"``: an
    unbatched argument's of size 1) and maps the level over them with
    :func:`pullback.vmap`, in one callback."""
    shapes, _ = call.value_shape(arrays)
    ranks = [len(a.shape) for a in arrays]

    def one(*xs):
        value = call.level.value(call.args(list(xs)))
        return tuple(np.asarray(v, dtype=s.dtype) for v, s in zip(flatten(value)[0], shapes))

    def run(*xs):
        xs = [np.asarray(x) for x in xs]
        extra = xs[0].ndim - ranks[0] if xs else 0
        if extra == 0:
            return one(*xs)
        batch = np.broadcast_shapes(*[x.shape[:extra] for x in xs])
        size = int(np.prod(batch))
        axes = tuple(None if all(n == 1 for n in x.shape[:extra]) else 0 for x in xs)
        flat = [x.reshape(x.shape[extra:]) if ax is None else
                np.broadcast_to(x, batch + x.shape[extra:]).reshape((size,) + x.shape[extra:])
                for x, ax in zip(xs, axes)]
        if all(ax is None for ax in axes):
            out = tuple(v[None] for v in one(*flat))
        else:
            out = vmap(one, in_axes=axes)(*flat)
        return tuple(np.asarray(v).reshape(batch + s.shape) for v, s in zip(out, shapes))
    return jax.pure_callback(run, tuple(shapes), *arrays, vmap_method="expand_dims")


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _apply(call: _Call, *arrays):
    return _value(call, arrays)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _apply_forward(call: _Call, *arrays):
    return _value(call, arrays)


@_apply_forward.defjvp
def _tangent(call, arrays, dots):
    """The value's tangent: pullback's jvp, the tangent level called through a
    callback (a float array's tangent traced, any other argument's None)."""
    stand_ins = call.args([np.empty(0, a.dtype) for a in arrays])
    nxt = call.level.tangent(stand_ins)
    it = iter(d if np.dtype(a.dtype).kind == "f" else None for a, d in zip(arrays, dots))
    tangents = unflatten(call.structure, [next(it) if c is _TRACED else None
                                          for c in call.constants])
    out = _call(nxt, None, False, *call.args(arrays), *tangents)
    return _apply_forward(call, *arrays), tuple(flatten(out)[0])


def _forward(call, *arrays):
    return _apply(call, *arrays), arrays


def _backward(call, arrays, cotangents):
    """The arrays' cotangents: the next level, called as a JAX function itself (so
    that ``grad`` of ``grad`` differentiates it)."""
    _, structure = call.value_shape(arrays)
    stand_ins = call.args([np.empty(0, a.dtype) for a in arrays])
    nxt = call.level.transpose(stand_ins)
    c = unflatten(structure, list(cotangents))
    out = iter(flatten(_call(nxt, None, False, *call.args(arrays), c))[0])
    grads = [next(out) if is_float(s) else None
             for s in flatten(stand_ins)[0]]
    return tuple(g for g, c in zip(grads, call.constants) if c is _TRACED)


_apply.defvjp(_forward, _backward)
