"""The primal program as the backend can run it: the last stage that rewrites the IR.

It needs the kinds (and the backend) and comes after kind inference, before
activity:

* a call the backend cannot compile as written calls the backend's twin instead
  (Numba: ``np.max`` with an axis), receiver first for a method;
* a tuple of numbers passed to a library function becomes an array first, in a
  statement of its own, when the backend asks (Numba's NumPy takes no tuples);
* a call whose function name would not name its callee in the generated code (a
  function of pullback's own that the normalizer calls) calls it through a helper
  bound to it;
* an index the backend cannot apply is refused, located at its line;
* a product that ``np.dot``, ``a.dot``, ``np.inner`` or ``np.einsum`` spells but
  that computes what ``a @ b`` computes (by the operands' ranks) is written
  ``a @ b``, so that one rule, its summed form, fusion and twins serve every
  spelling, and each costs the same.

It returns a new IR, numbered (``sid``), never editing the one it is given, with
the kinds of the names it introduced and the helper names its calls use, as a
record.  After it the IR and the kinds are final: activity runs on this IR, and
nothing edits them again.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
from dataclasses import dataclass

import numpy as np

from ..core import ir
from ..core.errors import UnsupportedSyntaxError, located
from ..core.kinds import Kind, kind_of_atom
from ..core.names import HelperNames, Helpers, Names
from ..rules import registry
from ..rules.einsum import parse_einsum


@dataclass(frozen=True)
class Lowered:
    fn: ir.Function         # the final IR, numbered
    kinds: dict             # the names this stage introduced -> their kinds
    helpers: HelperNames    # every helper name the IR calls, the given ones included


def lower_primal(fn: ir.Function, kinds: dict, backend, lookup, location,
                 helpers: HelperNames = HelperNames()) -> Lowered:
    """``fn`` as ``backend`` runs it.  ``kinds``: every variable's kind (read, never
    changed); ``lookup``: name -> the object the user's code sees there;
    ``location``: line -> Location, for refusals; ``helpers``: the helper names
    earlier stages chose."""
    low = _Lowering(fn, kinds, backend, lookup, location, helpers)
    body = low.block(fn.body)
    ir.number(body)
    return Lowered(dataclasses.replace(fn, body=body, names=low.names.used), low.new_kinds,
                   low.helpers.record())


class _Lowering:
    def __init__(self, fn, kinds, backend, lookup, location, helpers):
        self.kinds = kinds
        self.backend = backend
        self.lookup = lookup
        self.location = location
        self.names = Names(set(fn.names) | set(kinds))
        assigned = set(fn.params).union(*(s.writes() for s in ir.walk(fn.body)))
        self.helpers = Helpers(self.names, lookup, assigned.__contains__, helpers,
                               backend.calls_as_is)
        self.new_kinds: dict = {}

    def kind(self, atom) -> Kind:
        return kind_of_atom(atom, self.kinds)

    def error(self, s, what, hint="", cls=UnsupportedSyntaxError):
        """A refusal located at ``s``'s line (what a backend's check raises)."""
        return located(what, self.location(s.line), hint, cls)

    def block(self, stmts) -> list:
        """The statements, each a copy (numbering them must not edit the given IR)."""
        out = []
        for s in stmts:
            out += ir.dispatch(_LOWERING, s)(self, copy.copy(s))
        return out

    def _assign(self, s: ir.Assign) -> list:
        operands = matmul_operands(s, self.kind)
        if operands is not None:
            a, b = operands
            s.expr, s.callee, s.method = ast.BinOp(a, ast.MatMult(), b), None, None
        e = s.expr
        if isinstance(e, ast.Subscript):
            self._check_index(s, e.slice)
        arrays, s = self._numbers_as_arrays(s) if isinstance(e, ast.Call) else ([], s)
        if arrays:
            return arrays + self._assign(s)
        twin = self.backend.primal_twin(s.callee, s.method, e, self.kind,
                                        self.kind(ast.Name(s.target))) \
            if isinstance(e, ast.Call) else None
        if twin is not None:
            args = ([e.func.value] if s.method is not None else []) + e.args
            s.callee, s.method = registry.method(s.method) if s.method else s.callee, None
            s.expr = ast.Call(ast.Name(self.helpers.name(twin, twin.__name__)), args, e.keywords)
            return [s]
        if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Name)
                and s.callee is not None and s.method is None) \
                or self.lookup(e.func.id) is s.callee:
            return [s]
        s.expr = ast.Call(ast.Name(self.helpers.name(s.callee, e.func.id)), e.args, e.keywords)
        return [s]

    def _numbers_as_arrays(self, s: ir.Assign) -> tuple[list, ir.Assign]:
        """``np.mean([x, y])``: the statements making each tuple of numbers (a float
        among them) passed to a library function an array, and ``s`` (a copy of the
        given IR's statement) made to read the arrays."""
        if not (self.backend.sequences_as_arrays and registry.lookup(s.callee) is not None) \
                or s.callee in (np.array, np.asarray):
            return [], s
        out, args = [], list(s.expr.args)
        for k, a in enumerate(args):
            items = self.kind(a).items if isinstance(a, ast.Name) else None
            if not items or not all(i.ndim == 0 and i.dtype in "bif" for i in items) \
                    or all(i.dtype != "f" for i in items):
                continue
            name = self.names.fresh("_array")
            self.new_kinds[name] = Kind(1, "f")
            out.append(ir.Assign(s.line, name, ast.Call(
                ast.Name(self.helpers.name(np.array, "array")), [a], []), callee=np.array))
            args[k] = ast.Name(name)
        if out:
            s.expr = ast.Call(s.expr.func, args, s.expr.keywords)
        return out, s

    def _check_index(self, s, index):
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        self.backend.check_index(self, s, [self.kind(i) for i in items
                                           if not isinstance(i, (ast.Slice, ast.Constant))])

    def _setitem(self, s: ir.SetItem) -> list:
        self._check_index(s, s.index)
        return [s]

    def _if(self, s: ir.If) -> list:
        s.body, s.orelse = self.block(s.body), self.block(s.orelse)
        return [s]

    def _for(self, s: ir.For) -> list:
        s.body = self.block(s.body)
        return [s]

    def _while(self, s: ir.While) -> list:
        s.body, s.cond = self.block(s.body), self.block(s.cond)
        return [s]


_LOWERING = ir.table("primal lowering", {
    ir.Assign: _Lowering._assign, ir.SetItem: _Lowering._setitem, ir.Return: lambda low, s: [s],
    ir.If: _Lowering._if, ir.For: _Lowering._for, ir.While: _Lowering._while})


def matmul_operands(s: ir.Assign, kind) -> tuple | None:
    """``(a, b)`` when ``s`` computes ``a @ b`` under another name, else None.

    ``np.dot(a, b)`` and ``a.dot(b)`` are ``a @ b`` for vectors and matrices;
    ``np.inner(a, b)`` for a vector ``b``; ``np.einsum(subscripts, a, b)`` when the
    subscripts contract the last index of ``a`` with the first of ``b`` and keep
    the others in order (``'ij,j->i'``, ``'ij,jk->ik'``, ``'i,i->'``).  ``kind``
    gives an atom's kind; a rank not known here keeps the call as written."""
    e = s.expr
    if not isinstance(e, ast.Call) or e.keywords:
        return None
    fn = registry.method(s.method) if s.method is not None else s.callee
    args = ([e.func.value] if s.method is not None else []) + list(e.args)
    if fn is np.einsum and len(args) == 3 and isinstance(args[0], ast.Constant) \
            and isinstance(args[0].value, str):
        subscripts, args = args[0].value, args[1:]
        if not _einsum_is_matmul(subscripts, [kind(a).ndim for a in args]):
            return None
    elif len(args) != 2 or fn not in (np.dot, np.inner):
        return None
    ranks = [kind(a).ndim for a in args]
    if any(r not in (1, 2) for r in ranks) or any(kind(a).dtype not in "bif" for a in args):
        return None
    if fn is np.inner and ranks[1] != 1:
        return None     # inner contracts the last axes: a @ b.T for a matrix b
    return args[0], args[1]


def _einsum_is_matmul(subscripts: str, ranks) -> bool:
    if "." in subscripts:
        return False
    try:
        (a, b), out = parse_einsum(subscripts, ranks)
    except ValueError:
        return False
    if [len(a), len(b)] != list(ranks) or len(set(a + b)) != len(a) + len(b) - 1:
        return False        # (each index once, but the one contracted)
    return a[-1] == b[0] and out == a[:-1] + b[1:]
