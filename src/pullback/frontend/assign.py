"""Assignment statements lowered: to a name, to a tuple unpacked (``a, b = b, a + b``
evaluates every right-hand side before assigning), to an element of a local
array, and augmented assignment (``x += v``, ``a[i] *= v``)."""
from __future__ import annotations

import ast

from ..core import ir
from ..core.trees import Tree
from .expressions import Primitive, is_atom


class Assignments:
    """Lowers assignments for ``lowering`` (the normalizer), whose expressions it
    lowers and whose output it emits into."""

    def __init__(self, lowering):
        self.lowering = lowering

    def assign(self, target, value, scope, stmt, lowered=False):
        """``target = value``; ``lowered``: ``value`` is an atom already."""
        line = self.lowering.out.line(stmt, scope)
        if lowered and isinstance(value, Tree):
            return self.lowering.bind_tree(target, value, scope, stmt)
        if isinstance(value, ast.Lambda) and isinstance(target, ast.Name) and not lowered:
            scope.local_defs[target.id] = (value, scope)
            return
        if isinstance(target, ast.Name):
            return self._to_name(target, value, scope, stmt, lowered, line)
        if isinstance(target, (ast.Tuple, ast.List)):
            return self._unpack(target, value, scope, stmt, lowered)
        if isinstance(target, ast.Subscript):
            low = self.lowering
            _refuse_into_tree(low, target, scope)
            array = low.lower_expr(target.value, scope)
            _refuse_non_local_array(array, target, scope)
            index = low.lower_index(target.slice, scope)
            v = value if lowered else low.lower_expr(value, scope)
            low.out.emit(ir.SetItem(line, array.id, index, v))
            return
        raise scope.unsupported(f"assignment to {type(target).__name__}", target)

    def _to_name(self, target, value, scope, stmt, lowered, line):
        low = self.lowering
        if not lowered and low.resolver.assign_constant(target.id, value, scope):
            return
        name = scope.assigned_name(target.id)
        prim = Primitive(value) if lowered else low.lower_value(value, scope)
        if isinstance(prim, Tree):          # name = <a pytree>: an alias of its structure
            return low.bind_structure(target.id, prim, scope, stmt)
        prim = prim if isinstance(prim, Primitive) else Primitive(prim)
        low.unbind(target.id, scope, stmt)
        if name in ir.atom_names(prim.expr) and not is_atom(prim.expr):
            # x = f(x): compute into a temporary first, so the statement that
            # overwrites x reads nothing but the temporary.
            prim = Primitive(low.out.temp(stmt, prim.expr, scope, callee=prim.callee,
                                          method=prim.method))
        low.out.emit(ir.Assign(line, name, prim.expr, callee=prim.callee, method=prim.method))

    def _unpack(self, target, value, scope, stmt, lowered):
        low = self.lowering
        if not lowered:
            value = low.rewritten(value, scope) or value
        if not lowered and isinstance(value, (ast.Tuple, ast.List)) \
                and len(value.elts) == len(target.elts):
            # a, b = b, a + b: evaluate every right-hand side before assigning.
            atoms = []
            for e in value.elts:
                if isinstance(e, ast.Lambda):   # a, f = x, lambda v: ...: f is a local def
                    atoms.append(e)
                    continue
                a = low.lower_tree(e, scope)
                if isinstance(a, ast.Name):
                    a = low.out.temp(stmt, a, scope)
                atoms.append(a)
            for t, a in zip(target.elts, atoms):
                self.assign(t, a, scope, stmt, lowered=not isinstance(a, ast.Lambda))
            return
        whole = value if lowered else low.lower_tree(value, scope)
        if isinstance(whole, Tree):
            return low.bind_tree(target, whole, scope, stmt)
        whole = low.as_name(whole, stmt, scope)
        for k, t in enumerate(target.elts):
            item = low.out.temp(stmt, ast.Subscript(whole, ast.Constant(k)), scope)
            self.assign(t, item, scope, stmt, lowered=True)

    def augmented(self, s, scope):
        """``x op= v`` as ``x = x op v`` (marked augmented); ``a[i] op= v`` as the
        element read, the operation and the element written."""
        low = self.lowering
        op = s.op
        if isinstance(s.target, ast.Name):
            value = ast.BinOp(ast.Name(s.target.id, ctx=ast.Load()), op, s.value)
            ast.copy_location(value, s)
            self.assign(ast.Name(s.target.id, ctx=ast.Store()), value, scope, s)
            last = low.out.last()
            if isinstance(last, ir.Assign) and last.target == scope.assigned_name(s.target.id):
                last.augmented = True
            return
        if isinstance(s.target, ast.Subscript):
            _refuse_into_tree(low, s.target, scope)
            array = low.lower_expr(s.target.value, scope)
            index = low.lower_index(s.target.slice, scope)
            old = low.out.temp(s, ast.Subscript(array, index), scope)
            rhs = low.lower_expr(s.value, scope)
            new = low.out.temp(s, ast.BinOp(old, op, rhs), scope)
            _refuse_non_local_array(array, s.target, scope)
            low.out.emit(ir.SetItem(low.out.line(s, scope), array.id, index, new))
            return
        raise scope.unsupported("augmented assignment to this target", s)


def _refuse_into_tree(low, target, scope):
    tree = low.static_tree(target.value, scope)
    if isinstance(tree, Tree):
        raise scope.unsupported(f"assignment into a pytree ({tree.describe()})", target,
                                "pytrees are read-only here: compute the new value into a "
                                "local name, or build a new dict, list or NamedTuple from the "
                                "values and return it")


def _refuse_non_local_array(array, target, scope):
    if not isinstance(array, ast.Name) or array.id not in scope.all_locals():
        raise scope.unsupported("assignment into an array that is not a local variable",
                                target, "copy it into a local array first")
