"""Expressions: one primitive operation per statement, over atoms (names and constants)."""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..core import ir
from ..core.trees import Tree
from .scope import UNRESOLVED


@dataclass(frozen=True)
class Primitive:
    """One lowered operation over atoms.  For a call, what it calls: ``callee`` is the
    resolved function, ``method`` the name in ``x.name(...)`` on a local value."""

    expr: ast.expr
    callee: object = None
    method: str | None = None


class Expressions:
    """Mixin of the Normalizer: lowering expressions to atoms and primitives."""

    def as_name(self, atom, node, scope) -> ast.Name:
        if isinstance(atom, ast.Name):
            return atom
        return self.out.temp(node, atom, scope)

    def lower_expr(self, e, scope) -> ast.expr:
        """Lower e and return an atom (Name or Constant) holding its value."""
        prim = self.lower_primitive(e, scope)
        if is_atom(prim.expr):
            return prim.expr
        return self.out.temp(e, prim.expr, scope, callee=prim.callee, method=prim.method)

    def lower_primitive(self, e, scope) -> Primitive:
        """Lower e to one primitive operation over atoms (or an atom)."""
        value = self.lower_value(e, scope)
        if isinstance(value, Tree):
            raise self.refuse_value(value, e, scope)
        return value if isinstance(value, Primitive) else Primitive(value)

    def lower_value(self, e, scope):
        """Lower e to one primitive expression over atoms (or an atom); a call comes
        back as the :class:`Primitive` that also says what it calls."""
        handler = _EXPRESSIONS.get(type(e))
        if handler is None:
            raise self.error(f"the expression {type(e).__name__}", e, scope)
        return handler(self, e, scope)

    def _name(self, e, scope):
        tree = self.static_tree(e, scope)
        return tree if tree is not None else self.resolver.name_ref(e, scope)

    def _attribute(self, e, scope):
        tree = self.static_tree(e, scope)
        if tree is not None:
            return tree
        obj = self.resolver.resolve(e, scope)
        if obj is not UNRESOLVED:
            return self.resolver.external_ref(e, obj, scope)
        return ast.Attribute(self.lower_expr(e.value, scope), e.attr, ast.Load())

    def _subscript(self, e, scope):
        tree = self.static_tree(e, scope)
        if tree is not None:
            return tree
        base = self.lower_expr(e.value, scope)
        return ast.Subscript(base, self.lower_index(e.slice, scope), ast.Load())

    def _binop(self, e, scope):
        return ast.BinOp(self.lower_expr(e.left, scope), e.op, self.lower_expr(e.right, scope))

    def _unaryop(self, e, scope):
        a = self.lower_expr(e.operand, scope)
        if isinstance(e.op, ast.UAdd):
            return a
        if isinstance(e.op, ast.USub) and isinstance(a, ast.Constant) \
                and isinstance(a.value, (int, float, complex)) and not isinstance(a.value, bool):
            return ast.Constant(-a.value)
        return ast.UnaryOp(e.op, a)

    def _ifexp(self, e, scope):
        test = self.as_name(self.lower_expr(e.test, scope), e, scope)
        result = self.names.fresh("_t")
        line = self.out.line(e, scope)
        body = self.out.collect(lambda: self.lower_expr(e.body, scope))
        orelse = self.out.collect(lambda: self.lower_expr(e.orelse, scope))
        self.out.emit(ir.If(line, test.id,
                            body[1] + [ir.Assign(line, result, body[0])],
                            orelse[1] + [ir.Assign(line, result, orelse[0])]))
        return ast.Name(result)

    def _sequence(self, e, scope):
        # A display holding a pytree is one (frontend/structures.py); else a tuple of atoms.
        return self.tree_display(e, scope)

    def _lambda(self, e, scope):
        raise self.error("a lambda used as a value", e, scope,
                         "assign it to a name and call it, or define a def")

    def lower_index(self, s, scope):
        if isinstance(s, ast.Slice):
            parts = [None if p is None else self.lower_expr(p, scope)
                     for p in (s.lower, s.upper, s.step)]
            return ast.Slice(*parts)
        if isinstance(s, ast.Tuple):
            return ast.Tuple([self.lower_index(x, scope) for x in s.elts], ast.Load())
        if isinstance(s, ast.List):
            # x[[0, 2]] picks elements (a tuple x[(0, 2)] would index two axes), as the
            # array of the list does, which every backend takes (Numba takes no list).
            items = [self.lower_expr(x, scope) for x in s.elts]
            listed = self.as_name(ast.List(items, ast.Load()), s, scope)
            return self.out.temp(s, ast.Call(ast.Name("array"), [listed], []), scope, callee=np.array)
        return self.lower_expr(s, scope)

    def lower_compare(self, e, scope):
        left = self.lower_expr(e.left, scope)
        if len(e.ops) == 1:
            return ast.Compare(left, e.ops, [self.lower_expr(e.comparators[0], scope)])
        # a < b < c: each operand once, later comparisons only if earlier ones hold.
        result = self.names.fresh("_t")
        line = self.out.line(e, scope)

        def chain(left, ops, comps):
            right = self.lower_expr(comps[0], scope)
            self.out.emit(ir.Assign(line, result, ast.Compare(left, [ops[0]], [right])))
            if len(ops) > 1:
                _, rest = self.out.collect(lambda: chain(right, ops[1:], comps[1:]))
                self.out.emit(ir.If(line, result, rest, []))
        chain(left, e.ops, e.comparators)
        return ast.Name(result)

    def lower_boolop(self, e, scope):
        result = self.names.fresh("_t")
        line = self.out.line(e, scope)
        is_and = isinstance(e.op, ast.And)

        def chain(values):
            v = self.lower_expr(values[0], scope)
            self.out.emit(ir.Assign(line, result, v))
            if len(values) > 1:
                test = result
                if not is_and:
                    test = self.out.temp(e, ast.UnaryOp(ast.Not(), ast.Name(result)), scope).id
                _, rest = self.out.collect(lambda: chain(values[1:]))
                self.out.emit(ir.If(line, test, rest, []))
        chain(e.values)
        return ast.Name(result)


def is_atom(e) -> bool:
    return isinstance(e, (ast.Name, ast.Constant))


# Python expression class -> how it is lowered.  Anything else is refused.
_EXPRESSIONS = {
    ast.Constant: lambda self, e, scope: ast.Constant(e.value),
    ast.Name: Expressions._name, ast.Dict: Expressions._sequence,
    ast.Attribute: Expressions._attribute, ast.Subscript: Expressions._subscript,
    ast.BinOp: Expressions._binop, ast.UnaryOp: Expressions._unaryop,
    ast.Compare: lambda self, e, scope: self.lower_compare(e, scope),
    ast.BoolOp: lambda self, e, scope: self.lower_boolop(e, scope),
    ast.IfExp: Expressions._ifexp, ast.Tuple: Expressions._sequence, ast.List: Expressions._sequence,
    ast.Call: lambda self, e, scope: self.lower_call(e, scope), ast.Lambda: Expressions._lambda,
}
