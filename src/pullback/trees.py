"""Pytree arguments and results at the API: flattened outside the generated code.

``grad``, ``value_and_grad`` and ``vjp`` take dicts, lists, tuples, NamedTuples
and dataclasses of floats and arrays, nested (the rules are those of
:mod:`pullback.core.trees`).  A pytree argument is flattened here to its leaves,
which the derivative takes as plain parameters (so Numba compiles it on floats
and arrays); the frontend resolves the containers when transforming, from the
structure, which is part of the derivative's cache key.  Gradients come back in
the argument's structure: a float leaf's gradient in its type and shape, ``None``
for any other leaf (an int, a string, None, an object), which passes through.
A pytree result is returned by the derivative as the tuple of its leaves and
rebuilt here; ``back`` takes a cotangent of the same structure.

``tree_flatten``, ``tree_unflatten`` and ``tree_map`` are exported for users.
The checks of a result as ``grad`` and ``back`` take it (a scalar; one cotangent
per item of a tuple) are here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .analysis.activity import COMPLEX_UNSUPPORTED
from .arguments import _name
from .core.kinds import kind_of_value
from .core.trees import (
    flatten,
    is_container,
    paths,
    tree_flatten,
    tree_map,
    tree_unflatten,
    unflatten,
)

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "FlatArgs", "flatten_args",
           "may_hold_tree", "is_container"]

_CONTAINER_TYPES = (dict, list, tuple)


def may_hold_tree(args) -> bool:
    """A cheap test run on every call: could one of ``args`` be a pytree?"""
    for a in args:
        t = type(a)
        if t in _CONTAINER_TYPES or isinstance(a, tuple) or hasattr(t, "__dataclass_fields__"):
            return True
    return False


@dataclass(frozen=True)
class FlatArgs:
    """A call's arguments with its pytrees flattened: ``args`` the leaves and plain
    arguments in order, ``structures`` per argument its structure (None: plain),
    ``spans`` per argument its (start, stop) in ``args``."""

    args: tuple
    structures: tuple
    spans: tuple

    def floats(self, k) -> tuple:
        """The indices in ``args`` of argument k's float leaves (its own index if plain)."""
        start, stop = self.spans[k]
        return tuple(i for i in range(start, stop) if kind_of_value(self.args[i]).dtype == "f")

    def gradient(self, k, grads: dict, convert):
        """Argument k's gradient: its structure holding ``convert(g, leaf)`` for each
        float leaf whose index ``grads`` maps to ``g``, None for the other leaves."""
        start, stop = self.spans[k]
        leaves = [convert(grads[i], self.args[i]) if i in grads else None
                  for i in range(start, stop)]
        return unflatten(self.structures[k], leaves)


def flatten_args(args, positions, fname, names, need_float=False):
    """Flatten the arguments at ``positions`` that are pytrees; None when none is.

    ``names``: the parameters' names, for the leaf paths of errors.  With
    ``need_float``, a pytree without a float leaf stays a plain argument (vjp:
    nothing to differentiate in it).  A complex leaf is a TypeError naming it."""
    flat, structures, spans = [], [], []
    found = False
    for k, a in enumerate(args):
        structure = None
        if k in positions:
            leaves, structure = flatten(a)
            if structure is not None:
                where = paths(structure, names[k] if k < len(names) else f"args[{k}]")
                _refuse_complex_leaves(leaves, where, k, fname)
                if need_float and not any(kind_of_value(v).dtype == "f" for v in leaves):
                    structure = None
        start = len(flat)
        if structure is None:
            flat.append(a)
        else:
            found = True
            flat.extend(leaves)
        structures.append(structure)
        spans.append((start, len(flat)))
    if not found:
        return None
    return FlatArgs(tuple(flat), tuple(structures), tuple(spans))


def _refuse_complex_leaves(leaves, where, k, fname):
    for leaf, path in zip(leaves, where):
        if kind_of_value(leaf).dtype == "c":
            what = f"an array of dtype {leaf.dtype}" if np.ndim(leaf) else \
                f"a {type(leaf).__name__}"
            raise TypeError(f"{fname}: argument {k}'s leaf {path} is {what}, and "
                            f"{COMPLEX_UNSUPPORTED}. Split it into its real and imaginary "
                            "parts (two float leaves) and write the function with real "
                            "arithmetic on them")


def output_value(compiled, value):
    """The function's value: a pytree result rebuilt from the tuple of its leaves."""
    if compiled.out_tree is None:
        return value
    return unflatten(compiled.out_tree, list(value))


def output_leaves(compiled, fname, api) -> int:
    """How many items the derivative's result has, for a ``has_aux`` function (a
    TypeError when it is not known to return a pair)."""
    if compiled.out_tree is not None:
        return len(compiled.out_tree.leaves())
    if compiled.result_items is not None:
        return compiled.result_items
    raise TypeError(f"{api}(..., has_aux=True) requires {fname} to return a pair, written "
                    "`return output, aux`, but it does not return a tuple")


def cotangent_seed(cotangent, value, fname):
    """The seed of the derivative for ``back(cotangent)`` of a pytree result
    ``value``: the cotangent's leaves in order, checked against its structure."""
    leaves, structure = flatten(cotangent)
    _, want = flatten(value)
    if structure != want:
        raise TypeError(f"vjp: {fname} returned a pytree ({want.describe()}), so back() takes "
                        f"a cotangent of the same structure, but got "
                        f"{type(cotangent).__name__} {_short(cotangent)}")
    return tuple(0.0 if v is None else v for v in leaves)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) < 80 else text[:77] + "..."


def aux_seed(n_out: int, n_all: int, cotangent):
    """The seed for a ``has_aux`` result ``(out, aux)``: the out's cotangent leaves,
    then zeros for the aux's leaves (inactive: the derivative never reads them)."""
    if n_all == 1:
        return cotangent
    head = tuple(cotangent) if n_out > 1 else (cotangent,)
    return head + (0.0,) * (n_all - n_out)


def split_aux(value, fname, api):
    """``(out, aux)`` of a ``has_aux`` function's value, or a TypeError."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        what = f"a {type(value).__name__} of {len(value)} values" \
            if isinstance(value, (tuple, list)) else f"a {type(value).__name__}"
        raise TypeError(f"{api}(..., has_aux=True) requires {fname} to return a pair "
                        f"(output, aux), but it returned {what}")
    return value[0], value[1]


def _check_scalar(value, f, api):
    """``grad`` and ``value_and_grad`` differentiate a scalar result: a tuple or an
    array is refused, never summed."""
    if isinstance(value, (tuple, list)):
        raise TypeError(f"{api} requires {_name(f)} to return a scalar, but it returned "
                        f"a {type(value).__name__} of {len(value)} values, such as "
                        f"(loss, aux). {_NO_AUX}, or return the loss alone, or use vjp "
                        "and give back() one cotangent per item")
    if np.ndim(value) != 0:
        raise TypeError(f"{api} requires {_name(f)} to return a scalar, but it returned "
                        f"shape {np.shape(value)}; use vjp for non-scalar outputs")


_NO_AUX = ("pass has_aux=True to differentiate the first item and return the second "
           "untouched (a pair (loss, aux))")


def check_result(c, f, api, has_aux):
    """A tuple or pytree result (known from the derivative ``c``) is refused before it
    runs (Numba would not compile it), unless has_aux says which item is the loss."""
    if has_aux:
        return
    if c.out_tree is not None:
        raise TypeError(f"{api} requires {_name(f)} to return a scalar, but it returns a "
                        f"pytree ({c.out_tree.describe()}); {_NO_AUX}, or use vjp with a "
                        "cotangent of that structure")
    if c.result_items is not None:
        _check_scalar((None,) * c.result_items, f, api)


def refuse_array_result(c, f, api, has_aux):
    """An array result, known from its kind, is refused before the derivative runs:
    its reverse sweep would start from the scalar seed 1.0, which a VJP of an array
    result (np.array of a list, stack, a transpose) cannot take."""
    if not has_aux and c.out_tree is None and c.result_items is None \
            and c.result_ndim is not None and c.result_ndim > 0:
        raise TypeError(f"{api} requires {_name(f)} to return a scalar, but it returns a "
                        f"{c.result_ndim}-D array; use vjp for non-scalar outputs")


def checked_value(c, value, f, api, has_aux):
    """``(loss, value)``: the function's value, checked: a scalar, or with has_aux
    (scalar, aux)."""
    value = output_value(c, value)
    if has_aux:
        loss, aux = split_aux(value, _name(f), api)
        _check_scalar(loss, f, api)
        return loss, (loss, aux)
    if type(value) is not float and type(value) is not np.float64:
        _check_scalar(value, f, api)
    return value, value


def _check_cotangent(value, cotangent, f):
    """``back(cotangent)`` of a tuple result takes one cotangent per item: a single
    one would differentiate the sum of the items."""
    if isinstance(value, (tuple, list)) and not (
            isinstance(cotangent, (tuple, list)) and len(cotangent) == len(value)):
        n = len(value)
        raise TypeError(f"vjp: {_name(f)} returned a {type(value).__name__} of {n} values, "
                        f"so back() takes a tuple of {n} cotangents, one per item (e.g. "
                        f"({', '.join(['1.0'] + ['0.0'] * (n - 1))}) for the first item "
                        f"alone), but got {type(cotangent).__name__} {cotangent!r}; "
                        f"{_NO_AUX}")
