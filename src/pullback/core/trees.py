"""Pytrees: nested containers of arrays, flattened to their leaves and rebuilt.

A *pytree* is a value built of these containers, nested to any depth:

- a ``dict`` (exactly ``dict``; its keys in their insertion order),
- a ``list``,
- a ``tuple`` (but a tuple of ints, ``()`` included, is a *shape*: one leaf, as
  pullback has always taken it),
- a NamedTuple (a tuple subclass with ``_fields``), its fields in order,
- a dataclass instance (frozen or not), its fields in declaration order.

Anything else is a *leaf*: a float, an array, an int, a string, None, an object
of any other class.  Only float leaves (floats and float arrays) are
differentiated; the others pass through and get ``None`` as their gradient.

:func:`flatten` gives the leaves in a fixed order (depth first, in the order
above) and a :class:`Tree` without the leaves: a frozen, hashable record of the
containers, their types and their keys, which is part of a derivative's cache
key (a different structure is a different derivative).  :func:`unflatten` puts
leaves back into it, building the same container types; a dataclass is rebuilt
without calling its ``__init__`` (as ``copy.replace`` would not run validation
twice), so a frozen one works too.  :func:`paths` names each leaf as the user
writes it: ``params['layers'][1].w``.

This module lives in ``core`` because the frontend resolves the containers of an
argument when transforming, from the same record the API flattens with.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

#: The kinds of container a :class:`Tree` node can be.
KINDS = ("dict", "list", "tuple", "namedtuple", "dataclass")


@dataclass(frozen=True)
class Tree:
    """One container: its kind, its class (NamedTuple or dataclass, else None),
    its keys (dict keys, field names; () for a list or tuple) and its children,
    each a :class:`Tree` or a leaf (:data:`LEAF` in a flattened structure; the
    frontend puts the atoms holding the values there)."""

    kind: str
    cls: type | None
    keys: tuple
    children: tuple

    def leaves(self) -> list:
        """The leaves, depth first."""
        out = []
        for c in self.children:
            out.extend(c.leaves() if isinstance(c, Tree) else [c])
        return out

    def shape(self) -> Tree:
        """This structure with every leaf replaced by :data:`LEAF` (hashable)."""
        return Tree(self.kind, self.cls, self.keys,
                    tuple(c.shape() if isinstance(c, Tree) else LEAF for c in self.children))

    def fill(self, leaves) -> Tree:
        """This structure with its leaves taken in order from the iterator ``leaves``."""
        return Tree(self.kind, self.cls, self.keys,
                    tuple(c.fill(leaves) if isinstance(c, Tree) else next(leaves)
                          for c in self.children))

    def item(self, key):
        """The child ``self[key]`` (a dict key, an index), or KeyError."""
        if self.kind == "dict":
            if key not in self.keys:
                raise KeyError(key)
            return self.children[self.keys.index(key)]
        if self.kind == "dataclass" or not isinstance(key, int) or isinstance(key, bool) \
                or not -len(self.children) <= key < len(self.children):
            raise KeyError(key)
        return self.children[key]

    def attr(self, name: str):
        """The child ``self.name`` (a field), or KeyError."""
        if self.kind not in ("namedtuple", "dataclass") or name not in self.keys:
            raise KeyError(name)
        return self.children[self.keys.index(name)]

    def describe(self) -> str:
        """``dict with keys 'w', 'b'``, ``list of 3``, ``Layer``..."""
        if self.kind == "dict":
            return f"dict with keys {', '.join(map(repr, self.keys))}"
        if self.kind in ("list", "tuple"):
            return f"{self.kind} of {len(self.children)}"
        return f"{self.cls.__name__}"


class _Leaf:
    """The placeholder of a leaf in a flattened structure."""

    def __repr__(self):
        return "*"

    def __reduce__(self):
        return "LEAF"


LEAF = _Leaf()


# The leaves met most, told apart at once (a pytree is flattened on every call).
_LEAF_TYPES = frozenset({np.ndarray, float, int, bool, type(None), str, np.float64,
                         np.float32, np.int64})


def _is_shape(v) -> bool:
    return all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v)


def node_of(v):
    """(kind, class, keys, children) when ``v`` is a container, else None."""
    t = type(v)
    if t in _LEAF_TYPES:
        return None
    if t is dict:
        return "dict", None, tuple(v), tuple(v.values())
    if t is list:
        return "list", None, (), tuple(v)
    if isinstance(v, tuple):
        if hasattr(t, "_fields"):
            return "namedtuple", t, tuple(t._fields), tuple(v)
        if t is tuple and not _is_shape(v):
            return "tuple", None, (), v
        return None
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        names = tuple(f.name for f in dataclasses.fields(v))
        return "dataclass", t, names, tuple(getattr(v, n) for n in names)
    return None


def is_container(v) -> bool:
    """Whether ``v`` is a container of a pytree (not a leaf)."""
    return node_of(v) is not None


def flatten(value):
    """``(leaves, structure)``: the leaves of ``value`` depth first, and its
    :class:`Tree` with :data:`LEAF` for each (``None`` when ``value`` is a leaf)."""
    node = node_of(value)
    if node is None:
        return [value], None
    leaves = []
    return leaves, _flatten(node, leaves)


def shape_key(value, leaves, leaf=False):
    """A hashable key of ``value``'s structure and of its leaves' kinds (an array's
    dtype and rank, another leaf's type), ``value``'s leaves appended to ``leaves``
    (``value`` itself when ``leaf``).  Two values with one key flatten alike."""
    node = None if leaf else node_of(value)
    if node is None:
        leaves.append(value)
        return (value.dtype, value.ndim) if type(value) is np.ndarray else type(value)
    kind, cls, keys, children = node
    return kind, cls, keys, tuple([shape_key(c, leaves) for c in children])


def _flatten(node, leaves):
    kind, cls, keys, children = node
    out = []
    for c in children:
        sub = node_of(c)
        if sub is None:
            leaves.append(c)
            out.append(LEAF)
        else:
            out.append(_flatten(sub, leaves))
    return Tree(kind, cls, keys, tuple(out))


def unflatten(structure, leaves):
    """The value of ``structure`` (a :class:`Tree`, or None for one leaf) holding
    ``leaves`` in order."""
    if structure is None:
        (leaf,) = leaves
        return leaf
    it = iter(leaves)
    out = _build(structure, it)
    if next(it, LEAF) is not LEAF:
        raise ValueError("more leaves than the structure holds")
    return out


def build(structure: Tree, children: list):
    """One container of ``structure``'s kind and class holding ``children``."""
    kind, cls = structure.kind, structure.cls
    if kind == "dict":
        return dict(zip(structure.keys, children))
    if kind == "list":
        return list(children)
    if kind == "tuple":
        return tuple(children)
    if kind == "namedtuple":
        return cls(*children)
    obj = object.__new__(cls)       # a frozen dataclass, and no __post_init__ run twice
    for name, c in zip(structure.keys, children):
        object.__setattr__(obj, name, c)
    return obj


def _build(structure, it):
    return build(structure, [_build(c, it) if isinstance(c, Tree) else next(it)
                             for c in structure.children])


def paths(structure, prefix: str) -> list[str]:
    """The path of each leaf as the user writes it: ``params['layers'][1].w``."""
    if structure is None:
        return [prefix]
    out = []
    for k, c in enumerate(structure.children):
        if structure.kind == "dict":
            step = f"[{structure.keys[k]!r}]"
        elif structure.kind in ("namedtuple", "dataclass"):
            step = f".{structure.keys[k]}"
        else:
            step = f"[{k}]"
        out.extend(paths(c, prefix + step) if isinstance(c, Tree) else [prefix + step])
    return out


def tree_flatten(tree):
    """``(leaves, treedef)`` of a pytree (see the module's rules); ``treedef`` is
    hashable, and :func:`tree_unflatten` rebuilds the tree from it."""
    return flatten(tree)


def tree_unflatten(treedef, leaves):
    """The pytree of ``treedef`` (from :func:`tree_flatten`) holding ``leaves``."""
    return unflatten(treedef, list(leaves))


def tree_map(f, tree, *rest):
    """``f`` applied to each leaf of ``tree`` (and the matching leaves of ``rest``,
    pytrees of the same structure), in a pytree of the same structure."""
    leaves, structure = flatten(tree)
    others = []
    for r in rest:
        lv, st = flatten(r)
        if st != structure:
            raise ValueError("tree_map: the pytrees have different structures")
        others.append(lv)
    return unflatten(structure, [f(*xs) for xs in zip(leaves, *others)])
