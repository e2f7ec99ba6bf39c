"""Pytrees resolved when transforming, as tracing resolves them.

A structured argument (a dict, list, tuple, NamedTuple or dataclass of arrays,
see :mod:`pullback.core.trees`) reaches the IR as one parameter per leaf.  The
normalizer keeps, per scope, which local names are bound to a *static*
structure: a :class:`~pullback.core.trees.Tree` whose leaves are the atoms
holding the values.  So ``params["layers"][1].w`` is resolved here to the atom
of that leaf, ``layer = params["layers"][0]`` binds a name to a sub-structure,
``w, b = layer`` unpacks one, a structured argument passed to an inlined function
binds its parameter, ``for layer in params["layers"]`` is unrolled (its length
is known), ``len(params["layers"])`` is a constant, and a display or a
NamedTuple / dataclass constructor builds a structure (to return one).

Any other use (arithmetic on a dict, a dynamic index, a method, assigning into
one) is refused with a located error saying what to write instead.  A name
bound to a structure inside a branch or a loop is not read after it, and a name
bound before may not be rebound inside one: the binding is static, and the
branch taken, or the iteration, is not.
"""
from __future__ import annotations

import ast
import dataclasses
import re
from contextlib import contextmanager

from ..core import ir
from ..core.trees import Tree, paths
from .expressions import Primitive
from .scope import UNRESOLVED, walk_same_scope

_HINT = ("read its leaves with constant keys, indices or fields (p['w'], p[0], p.w), pass "
         "it whole to a function of yours, loop over a list of them with "
         "`for layer in params['layers']`, or return it")


class _Poisoned:
    """A name bound to a structure inside a branch or loop, read after it."""

    def __init__(self, node):
        self.node = node


class Bindings:
    """Mixin of the Normalizer: names bound to structures, and loops over them."""

    # ---- looking up --------------------------------------------------------------
    def structure_of_name(self, name, scope):
        """The structure the local ``name`` is bound to, or None."""
        s = scope
        while s is not None:
            if name in s.structures:
                found = s.structures[name]
                if isinstance(found, _Poisoned):
                    raise scope.unsupported(
                        f"reading {name!r} after the branch or loop that bound it to a pytree",
                        found.node, "bind it before the branch or loop")
                return found
            if name in s.rename:
                return None
            s = s.parent
        return None

    def static_tree(self, e, scope):
        """What ``e`` is when it reads a structure with constant keys: a Tree, a leaf's
        atom, or None (not a structure).  Emits nothing."""
        if isinstance(e, ast.Name):
            return self.structure_of_name(e.id, scope)
        if isinstance(e, ast.Subscript):
            base = self.static_tree(e.value, scope)
            if not isinstance(base, Tree):
                return None
            return _leaf(self._select(base, e, scope))
        if isinstance(e, ast.Attribute):
            base = self.static_tree(e.value, scope)
            if not isinstance(base, Tree):
                return None
            try:
                return _leaf(base.attr(e.attr))
            except KeyError:
                raise scope.unsupported(f"the attribute .{e.attr} of a pytree "
                                        f"({base.describe()})", e, _fields_hint(base)) from None
        return None

    def _select(self, base: Tree, e: ast.Subscript, scope):
        key = _constant(e.slice)
        if isinstance(e.slice, ast.Slice) and base.kind in ("list", "tuple"):
            bounds = [_constant(p) if p is not None else None
                      for p in (e.slice.lower, e.slice.upper, e.slice.step)]
            if all(b is None or isinstance(b, int) for b in bounds):
                return Tree(base.kind, None, (), base.children[slice(*bounds)])
        if key is UNRESOLVED:
            raise scope.unsupported(
                f"the index `{ast.unparse(e.slice)}` into a pytree ({base.describe()}), which "
                "is not a constant", e,
                "a structure is resolved when transforming, so its keys must be constants; "
                "loop over the items instead (`for layer in params['layers']:`, or "
                "`for i, layer in enumerate(params['layers'])`)")
        try:
            return base.item(key)
        except KeyError:
            raise scope.unsupported(f"`{ast.unparse(e)}`: the pytree ({base.describe()}) has "
                                    f"no item {key!r}", e, _fields_hint(base)) from None

    # ---- binding -----------------------------------------------------------------
    def bind_tree(self, target, value, scope, stmt):
        """``target = value`` where ``value`` is a Tree or an atom."""
        if not isinstance(value, Tree):
            return self.assignments.assign(target, value, scope, stmt, lowered=True)
        if isinstance(target, ast.Name):
            return self.bind_structure(target.id, value, scope, stmt)
        if isinstance(target, (ast.Tuple, ast.List)):
            if value.kind not in ("list", "tuple", "namedtuple") \
                    or len(value.children) != len(target.elts):
                raise scope.unsupported(f"unpacking a pytree ({value.describe()}) into "
                                        f"{len(target.elts)} names", stmt,
                                        "unpack a list or tuple of as many items")
            for t, c in zip(target.elts, value.children):
                self.bind_tree(t, c, scope, stmt)
            return None
        raise scope.unsupported("assigning a pytree to this target", stmt, _HINT)

    def bind_structure(self, name, tree, scope, stmt):
        local, owner = scope.lookup_local(name)
        if local is None:
            raise scope.unsupported(f"assignment to the non-local name {name!r}", stmt)
        self.check_rebinding(name, owner, stmt)
        owner.structures[name] = tree

    def check_rebinding(self, name, scope, stmt):
        """Refuse rebinding, inside a branch or loop, a name bound to a structure before it."""
        if name in scope.frozen:
            raise scope.unsupported(f"rebinding {name!r}, bound to a pytree before this "
                                    "branch or loop, inside it", stmt,
                                    "use another name inside the branch or loop")

    def unbind(self, name, scope, stmt):
        """A plain value assigned to ``name``: it no longer names a structure."""
        _, owner = scope.lookup_local(name)
        if owner is not None and name in owner.structures:
            self.check_rebinding(name, owner, stmt)
            del owner.structures[name]

    @contextmanager
    def control_block(self, scope, stmt):
        """A branch or a loop that is not unrolled: see the module's docstring."""
        before = dict(scope.structures)
        saved = scope.frozen
        scope.frozen = saved | {n for n, t in before.items() if not isinstance(t, _Poisoned)}
        try:
            yield
        finally:
            scope.frozen = saved
        for name, tree in list(scope.structures.items()):
            if before.get(name) is not tree:
                if isinstance(stmt, (ast.For, ast.While)):
                    _refuse_read_before_bound(name, stmt, scope)
                scope.structures[name] = _Poisoned(stmt)

    # ---- loops and len -------------------------------------------------------------
    def unroll(self, s: ast.For, scope, fn) -> bool:
        """``for x in <structure>`` (or over enumerate / zip / reversed of structures),
        unrolled; False when the loop iterates over no structure."""
        it = s.iter
        inner = it.args if fn in (enumerate, zip, reversed) and isinstance(it, ast.Call) \
            else [it]
        zipped = fn is zip
        if fn is enumerate:
            inner = inner[:1]
            if isinstance(inner[0], ast.Call) \
                    and self.resolver.resolve_callee(inner[0].func, scope) is zip:
                inner, zipped = inner[0].args, True         # enumerate(zip(a, b))
        seqs = [self.static_tree(x, scope) for x in inner]
        if not any(isinstance(q, Tree) for q in seqs):
            return False
        for q, x in zip(seqs, inner):
            if not isinstance(q, Tree) or q.kind not in ("list", "tuple", "namedtuple"):
                what = f"a pytree ({q.describe()})" if isinstance(q, Tree) else \
                    "a value that is not a pytree, zipped with a pytree"
                raise scope.unsupported(f"a loop over {what}", x,
                                        "loop over lists or tuples of pytrees (all the "
                                        "sequences zipped); read a dict's or a dataclass's "
                                        "values by their constant keys or fields")
        for n in (n for st in s.body for n in walk_same_scope(st)):
            if isinstance(n, (ast.Break, ast.Continue, ast.Return)):
                word = type(n).__name__.lower()
                raise scope.unsupported(
                    f"`{word}` in a loop over a list of pytrees (it is unrolled when "
                    "transforming)", n, "compute a flag and guard the rest of the body with "
                    "`if`, or return after the loop")
        if s.orelse:
            raise scope.unsupported("a for loop with an else clause", s)
        count = min(len(q.children) for q in seqs)
        order = range(count - 1, -1, -1) if fn is reversed else range(count)
        for k in order:
            items = [_leaf(q.children[k]) for q in seqs]
            item = Tree("tuple", None, (), tuple(items)) if zipped else items[0]
            if fn is enumerate:
                if not (isinstance(s.target, ast.Tuple) and len(s.target.elts) == 2):
                    raise scope.unsupported("enumerate() without an `i, x` target", s.target)
                start = _constant(it.args[1]) if len(it.args) > 1 else 0
                if not isinstance(start, int):
                    raise scope.unsupported("enumerate() of a pytree from a start that is "
                                            "not a constant", it)
                self.bind_tree(s.target.elts[0], ast.Constant(k + start), scope, s)
                self.bind_tree(s.target.elts[1], item, scope, s)
            else:
                self.bind_tree(s.target, item, scope, s)
            self.lower_block(s.body, scope)
        return True


class Structures(Bindings):
    """Mixin of the Normalizer: pytree parameters, values built and returned."""

    def flatten_params(self, params, scope):
        """One IR parameter per leaf of a pytree argument, named by its path."""
        out = []
        for k, p in enumerate(params):
            tree = self.arg_trees[k] if k < len(self.arg_trees) else None
            if tree is None:
                out.append(p)
                continue
            names = [self.names.reserve(re.sub(r"\W+", "_", path).strip("_"))
                     for path in paths(tree, p)]
            scope.structures[p] = tree.fill(iter([ast.Name(n) for n in names]))
            out.extend(names)
        return out

    # ---- lowering ----------------------------------------------------------------
    def lower_tree(self, e, scope):
        """Lower ``e`` to a Tree of atoms when it is a structure, else to an atom."""
        value = self.lower_value(e, scope)
        if isinstance(value, Tree):
            return value
        prim = value if isinstance(value, Primitive) else Primitive(value)
        if isinstance(prim.expr, (ast.Name, ast.Constant)):
            return prim.expr
        return self.out.temp(e, prim.expr, scope, callee=prim.callee, method=prim.method)

    def refuse_value(self, tree: Tree, e, scope):
        """A structure where a value is needed."""
        return scope.unsupported(f"a pytree ({tree.describe()}) used as a value in "
                                 f"`{ast.unparse(e)}`", e, _HINT)

    def tree_display(self, e, scope):
        """A list or tuple display holding a structure, or a dict display: a Tree."""
        if isinstance(e, ast.Dict):
            keys = []
            for k in e.keys:
                key = _constant(k) if k is not None else UNRESOLVED
                if key is UNRESOLVED:
                    raise scope.unsupported("a dict display whose keys are not constants", e,
                                            "write each key as a constant: {'w': w, 'b': b}")
                keys.append(key)
            values = [self._snapshot(self.lower_tree(v, scope), v, scope) for v in e.values]
            return Tree("dict", None, tuple(keys), tuple(values))
        items = [self.lower_tree(x, scope) for x in e.elts]
        if not any(isinstance(x, Tree) for x in items):
            return ast.Tuple(items, ast.Load())
        kind = "list" if isinstance(e, ast.List) else "tuple"
        return Tree(kind, None, (), tuple(self._snapshot(x, e, scope) for x in items))

    def _snapshot(self, atom, node, scope):
        """A leaf held by a new structure: a local name is copied, as the container
        holds the object, not the name (which may be rebound later)."""
        if isinstance(atom, ast.Name) and atom.id in scope.all_locals():
            return self.out.temp(node, atom, scope)
        return atom

    def construct(self, e: ast.Call, cls, scope):
        """``Point(x=..., y=...)`` of a NamedTuple or dataclass: a Tree, or None."""
        if not isinstance(cls, type):
            return None
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            fields = list(cls._fields)
            defaults = dict(getattr(cls, "_field_defaults", {}))
            kind = "namedtuple"
        elif dataclasses.is_dataclass(cls):
            if any(not f.init for f in dataclasses.fields(cls)) or hasattr(cls, "__post_init__"):
                raise scope.unsupported(f"constructing the dataclass {cls.__name__}, which has "
                                        "fields outside __init__ or a __post_init__", e)
            fields = [f.name for f in dataclasses.fields(cls)]
            defaults = {f.name: f.default for f in dataclasses.fields(cls)
                        if f.default is not dataclasses.MISSING}
            kind = "dataclass"
        else:
            return None
        given = dict(zip(fields, e.args))
        given.update({k.arg: k.value for k in e.keywords})
        if len(e.args) > len(fields) or set(given) - set(fields):
            raise scope.unsupported(f"this call of {cls.__name__}", e,
                                    f"pass its fields {', '.join(fields)}")
        values = []
        for name in fields:
            if name in given:
                values.append(self._snapshot(self.lower_tree(given[name], scope), e, scope))
            elif name in defaults and isinstance(defaults[name], (int, float, str, bool,
                                                                  type(None))):
                values.append(ast.Constant(defaults[name]))
            else:
                raise scope.unsupported(f"this call of {cls.__name__} without the field "
                                        f"{name!r}", e, "pass every field")
        return Tree(kind, cls, tuple(fields), tuple(values))

    def tree_result(self, tree: Tree, scope, stmt):
        """``return <pytree>``: for the top function, the atom of the tuple of its leaves
        (its structure recorded in ``out_tree``); for an inlined callee, None after
        assigning the names of its result's leaves.  Every return gives one structure."""
        shape = tree.shape()
        top = scope.parsed is self.top and scope.depth == 0
        known = self.out_tree if top else (scope.ret_tree.shape() if scope.ret_tree else None)
        if known is not None and known != shape:
            raise scope.unsupported("returns that give pytrees of different structures", stmt,
                                    "make every return give the same structure")
        leaves = [_leaf(x) for x in tree.leaves()]
        if top:
            self.out_tree = shape
            return self.out.temp(stmt, ast.Tuple(leaves, ast.Load()), scope)
        if scope.ret_tree is None:
            scope.ret_tree = shape.fill(iter([ast.Name(self.names.fresh("_ret"))
                                              for _ in leaves]))
        line = self.out.line(stmt, scope)
        for name, leaf in zip(scope.ret_tree.leaves(), leaves):
            self.out.emit(ir.Assign(line, name.id, leaf))
        return None

    def tree_call(self, e: ast.Call, fn, scope):
        """A call that is about pytrees: ``len(<pytree>)``, a constant; a NamedTuple's
        or dataclass's constructor, a Tree; None for any other call."""
        if fn is len:
            return self.tree_len(e, scope)
        return self.construct(e, fn, scope)

    def tree_len(self, e: ast.Call, scope):
        """``len(<structure>)``: a constant, or None when the argument is not one."""
        if len(e.args) != 1 or e.keywords:
            return None
        tree = self.static_tree(e.args[0], scope)
        return ast.Constant(len(tree.children)) if isinstance(tree, Tree) else None


def _refuse_read_before_bound(name, loop, scope):
    """A name bound to a pytree inside a loop must not be read in the loop before it
    is bound there: a later iteration would read the pytree, the lowered code the
    value bound before the loop."""
    def at(n):
        return (n.lineno, n.col_offset)
    nodes = [n for st in loop.body for n in walk_same_scope(st)
             if isinstance(n, ast.Name) and n.id == name]
    stores = [at(n) for n in nodes if isinstance(n.ctx, ast.Store)]
    loads = [n for n in nodes if isinstance(n.ctx, ast.Load)]
    first = min(stores, default=None)
    early = [n for n in loads if first is None or at(n) < first]
    if early:
        raise scope.unsupported(f"reading {name!r} in a loop before the statement of that "
                                "loop that binds it to a pytree", early[0],
                                "bind it before the loop, or use another name")


def _leaf(x):
    """A child as the lowering uses it: a Tree, or a fresh copy of a leaf's atom."""
    if isinstance(x, ast.Name):
        return ast.Name(x.id, ast.Load())
    if isinstance(x, ast.Constant):
        return ast.Constant(x.value)
    return x


def _constant(e):
    """The value of a constant expression (``1``, ``-1``, ``'w'``), or UNRESOLVED."""
    if isinstance(e, ast.Constant):
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) \
            and isinstance(e.operand, ast.Constant) and isinstance(e.operand.value, int):
        return -e.operand.value
    return UNRESOLVED


def _fields_hint(tree: Tree) -> str:
    if tree.kind == "dict":
        return f"its keys are {', '.join(map(repr, tree.keys))}"
    if tree.kind in ("namedtuple", "dataclass"):
        return f"its fields are {', '.join(tree.keys)}"
    return f"it has {len(tree.children)} items"
