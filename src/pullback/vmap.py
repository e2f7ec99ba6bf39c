"""``vmap``: a function mapped over a batch axis of its arguments, as JAX's ``vmap``.

``vmap(f, in_axes, out_axes)(*args)`` calls ``f`` once per index ``b`` of the
batch, each argument sliced at ``b`` along its axis in ``in_axes`` (``None``: the
argument passes whole to every call), and stacks each leaf of the results along
its axis in ``out_axes``.  Both are JAX's: an int, ``None``, or a pytree prefix of
the arguments (a tuple with one entry per positional argument) or of the result;
keyword arguments are mapped along axis 0.  ``f`` may be any function, a
``grad``, ``jvp``, ``hessian`` or ``vmap`` of one included, and the arguments
pytrees (:mod:`pullback.core.trees`).

Where ``f`` is a gradient compiled by Numba (``grad``/``value_and_grad`` with
``jit=True``) of float and array arguments, the batch runs as one compiled loop
split across Numba's threads (:mod:`pullback.parallel_map`); until that
loop is compiled (in the background, as a derivative's own code is), and for any
other ``f``, it is a loop in Python.  Invariant: both give the numbers of ``f``
called on each example, the compiled loop calling the very code ``f`` calls.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import parallel_map
from .arguments import _name
from .core.trees import flatten, node_of, unflatten
from .user_errors import cut_for_user


def vmap(f, in_axes=0, out_axes=0, *, axis_size=None):
    """``f`` mapped over a batch axis of its arguments (JAX's ``vmap``).

    ``in_axes``: the axis of each argument that is the batch (an int; ``None`` for
    an argument passed whole to every call; a tuple with one entry per positional
    argument; for a pytree argument a pytree prefix of it).  ``out_axes``: where
    each leaf of the result puts the batch (an int, ``None`` for a leaf that is the
    same for every example, or a pytree prefix of the result).  ``axis_size`` gives
    the batch size when no argument is mapped.

    >>> import numpy as np, pullback
    >>> def loss(w, x):
    ...     return (w[0] * x + w[1]) ** 2
    >>> pullback.vmap(pullback.grad(loss), in_axes=(None, 0))(np.array([2.0, 1.0]),
    ...                                                       np.array([0.0, 1.0]))
    array([[0., 2.],
           [6., 6.]])
    """
    if not callable(f):
        raise TypeError(f"vmap expects a function, got {type(f).__name__}")
    return Mapped(f, in_axes, out_axes, axis_size)


class Mapped:
    """``vmap(f, in_axes, out_axes)``: call it like ``f``, with a batch."""

    def __init__(self, f, in_axes, out_axes, axis_size):
        _check_spec(in_axes, "in_axes")
        _check_spec(out_axes, "out_axes")
        if axis_size is not None and (not isinstance(axis_size, numbers.Integral)
                                      or isinstance(axis_size, bool) or axis_size < 0):
            raise TypeError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}")
        self.f, self.in_axes, self.out_axes, self.axis_size = f, in_axes, out_axes, axis_size
        self.__name__ = f"vmap({_name(f)})"
        self.__doc__ = getattr(f, "__doc__", None)

    def __call__(self, *args, **kwargs):
        try:
            batch = _Batch(self, args, kwargs)
            out = parallel_map.run(self, batch)
            if out is None:
                out = batch.stack([self.f(*a, **k) for a, k in batch.examples()])
            return out
        except Exception as exc:
            cut_for_user(exc)
            raise

    def __repr__(self):
        return f"<pullback {self.__name__}>"


class _Batch:
    """A call's arguments, flattened to leaves, each with its batch axis (None:
    unbatched), and the batch size; the examples sliced from them, and the
    results stacked."""

    def __init__(self, mapped, args, kwargs):
        self.mapped, self.fname = mapped, _name(mapped.f)
        in_axes = mapped.in_axes
        if type(in_axes) in (tuple, list):      # one entry per positional argument
            if len(in_axes) != len(args):
                raise ValueError(f"vmap of {self.fname}: in_axes has {len(in_axes)} entries "
                                 f"but the call passes {len(args)} positional arguments; give "
                                 "one entry per argument (None for one passed whole)")
        else:
            in_axes = (in_axes,) * len(args)
        self.args, self.kwargs = args, kwargs
        self.leaves, self.axes, self.structures = [], [], []
        for k, (a, spec) in enumerate(zip(args, in_axes)):
            self._add(a, spec, f"in_axes[{k}]")
        for key, a in kwargs.items():       # as JAX: keyword arguments along axis 0
            self._add(a, 0, f"the keyword argument {key!r}")
        sizes = {int(np.shape(leaf)[ax]) for leaf, ax in zip(self.leaves, self.axes)
                 if ax is not None}
        if len(sizes) > 1:
            raise ValueError(f"vmap of {self.fname}: the mapped axes have different sizes "
                             f"{sorted(sizes)}; every mapped argument needs the batch size")
        if not sizes and mapped.axis_size is None:
            raise ValueError(f"vmap of {self.fname}: no argument is mapped (in_axes is "
                             f"{mapped.in_axes!r}); map one, or give axis_size")
        size = sizes.pop() if sizes else mapped.axis_size
        if mapped.axis_size is not None and size != mapped.axis_size:
            raise ValueError(f"vmap of {self.fname}: axis_size={mapped.axis_size} but the "
                             f"mapped axes have size {size}")
        if size == 0:
            raise ValueError(f"vmap of {self.fname} over an empty batch: pullback calls "
                             f"{self.fname} once per example, and with none it cannot tell "
                             "the shapes of the results")
        self.size = size

    def _add(self, value, spec, where):
        leaves, structure = flatten(value)
        axes = _leaf_axes(spec, value, where, self.fname)
        for leaf, ax in zip(leaves, axes):
            if ax is not None:
                ndim = np.ndim(leaf)
                if not isinstance(leaf, np.ndarray) or not -ndim <= ax < ndim:
                    raise ValueError(
                        f"vmap of {self.fname}: {where} maps axis {ax} of a value of rank "
                        f"{ndim} ({type(leaf).__name__}); a mapped argument must be an "
                        "array with that axis (use None to pass it whole)")
                ax %= ndim
            self.leaves.append(leaf)
            self.axes.append(ax)
        self.structures.append((structure, len(leaves)))

    def example_leaves(self, b) -> list:
        return [leaf if ax is None else _scalar(leaf[(slice(None),) * ax + (b,)])
                for leaf, ax in zip(self.leaves, self.axes)]

    def rebuild(self, leaves):
        """``(args, kwargs)`` holding ``leaves`` in the call's structure."""
        it = iter(leaves)
        values = [unflatten(s, [next(it) for _ in range(n)]) for s, n in self.structures]
        nargs = len(self.args)
        return tuple(values[:nargs]), dict(zip(self.kwargs, values[nargs:]))

    def examples(self):
        for b in range(self.size):
            yield self.rebuild(self.example_leaves(b))

    def stack(self, results):
        """The results of the examples, each leaf stacked along its ``out_axes``."""
        first, structure = flatten(results[0])
        per_leaf = [[leaf] for leaf in first]
        for b, r in enumerate(results[1:], 1):
            leaves, s = flatten(r)
            if s != structure:
                raise ValueError(f"vmap of {self.fname}: the result for example {b} has "
                                 "another structure than for example 0")
            for acc, leaf in zip(per_leaf, leaves):
                acc.append(leaf)
        return self.placed(unflatten(structure, [self._stacked(vals, k)
                                                 for k, vals in enumerate(per_leaf)]))

    def _stacked(self, values, k):
        if all(v is None for v in values):
            return None         # a gradient that is None (an int argument) stays None
        if not all(isinstance(v, (numbers.Number, np.ndarray, np.generic)) for v in values):
            kinds = sorted({type(v).__name__ for v in values})
            raise TypeError(f"vmap of {self.fname}: leaf {k} of the result is {kinds}, not a "
                            "number or an array, so it cannot be stacked")
        return np.stack([np.asarray(v) for v in values])

    def placed(self, stacked):
        """``stacked`` (a result whose leaves hold the batch on axis 0) with each
        leaf's batch moved to its axis in ``out_axes``."""
        leaves, structure = flatten(stacked)
        axes = _leaf_axes(self.mapped.out_axes, stacked, "out_axes", self.fname)
        out = []
        for k, (leaf, ax) in enumerate(zip(leaves, axes)):
            if leaf is not None and ax is None:
                if any(not np.array_equal(leaf[0], v, equal_nan=True) for v in leaf[1:]):
                    raise ValueError(f"vmap of {self.fname}: out_axes is None for leaf {k} "
                                     "of the result, but it differs from example to example")
                leaf = leaf[0]
                leaf = leaf.item() if leaf.ndim == 0 else leaf
            elif leaf is not None and ax:
                leaf = np.moveaxis(leaf, 0, _out_axis(ax, leaf.ndim, self.fname))
            out.append(leaf)
        return unflatten(structure, out)


def _out_axis(ax, ndim, fname):
    if not -ndim <= ax < ndim:
        raise ValueError(f"vmap of {fname}: out_axes {ax} is out of range for a result of "
                         f"rank {ndim - 1}")
    return ax % ndim


def _scalar(x):
    """An array's element as the Python number a loop over it would give."""
    return x.item() if isinstance(x, np.generic) else x


def _is_axis(spec) -> bool:
    return spec is None or (isinstance(spec, numbers.Integral) and not isinstance(spec, bool))


def _check_spec(spec, what):
    if _is_axis(spec):
        return
    node = node_of(spec) if type(spec) is not tuple else ("tuple", None, (), spec)
    if node is None:
        raise TypeError(f"vmap: {what} must be an int, None or a pytree of them, got "
                        f"{type(spec).__name__}")
    for c in node[3]:
        _check_spec(c, what)


def _leaf_axes(spec, value, where, fname) -> list:
    """The batch axis of each leaf of ``value`` (a pytree) from ``spec``, an axis
    or a pytree prefix of ``value``'s structure."""
    if _is_axis(spec):
        return [spec] * len(flatten(value)[0])
    node = node_of(value)
    children = spec if type(spec) in (tuple, list) else node_of(spec)[3]
    if type(spec) is dict:
        same = type(value) is dict and set(spec) == set(value)
        children = [spec[k] for k in value] if same else ()
    else:
        same = node is not None and len(children) == len(node[3]) and (
            type(spec) in (tuple, list) and node[0] in ("tuple", "namedtuple", "list")
            or node[1] is type(spec))
    if not same:
        raise ValueError(f"vmap of {fname}: {where} is {spec!r}, which does not match the "
                         f"structure of the value there ({type(value).__name__}); give an "
                         "axis, or a container of axes shaped like the value")
    out = []
    for k, (s, c) in enumerate(zip(children, node[3])):
        out += _leaf_axes(s, c, f"{where}[{k}]", fname)
    return out
