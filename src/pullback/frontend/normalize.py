"""Lower a parsed function to the normalized program of :mod:`pullback.core.ir`.

One primitive per statement over atoms (names and constants), with fresh
temporaries; augmented assignment, tuple unpacking, chained comparisons,
``and``/``or``, conditional expressions, ``for x in array``, ``enumerate``,
``zip`` and ``reversed`` are desugared.  ``break``, ``continue`` and early
``return`` become boolean flags that guard the rest of the block, so the
reverse transform sees only structured control flow.  Calls to user Python
functions (module level, nested ``def`` or ``lambda``) are inlined with their
locals renamed, so the loop that calls them stays one loop.

The work is split by construct: :mod:`.expressions`, :mod:`.loops`,
:mod:`.calls`, :mod:`.resolve` (non-local names); this module holds the
statements and the entry point.
"""
from __future__ import annotations

import ast

from ..core import ir
from ..core.errors import UnsupportedSyntaxError
from ..core.names import Names
from . import fence
from .calls import Calls
from .expressions import Expressions, Primitive, is_atom
from .loops import Loops
from .parse import ParsedFunction
from .resolve import Resolver
from .scope import Loop, Scope, local_names, walk_same_scope


class Normalizer(Expressions, Loops, Calls, Resolver):
    """Lowers one function (and everything inlined into it) to the IR."""

    def __init__(self, parsed: ParsedFunction):
        self.top = parsed
        used = {n.id for n in ast.walk(parsed.node) if isinstance(n, ast.Name)}
        used |= {a.arg for a in ast.walk(parsed.node) if isinstance(a, ast.arg)}
        used |= set(parsed.globals) | set(parsed.closure)
        self.names = Names(used)
        self.out: list = []
        self.loops: list[Loop] = []
        self.exits = 0                      # count of lowered break/continue/return
        self.externals: dict[str, object] = {}   # output name -> value bound at transform time
        self.dependencies: list = []        # (namespace dict or cell, key, object): cache validity
        self.copied_params: set = set()
        self.source_lines: dict[int, str] = {}
        self.top_locals: set = set()
        self._aliases: dict = {}

    def run(self) -> ir.Function:
        parsed = self.top
        fence.check(parsed)
        fn = parsed.node
        # The derivative takes every parameter by position, keyword-only ones last
        # (the API fills them from keywords and defaults): their defaults never apply.
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        locals_ = local_names(fn)
        self.top_locals = set(locals_)
        self.inline_stack = [parsed.fn.__code__]
        scope = Scope(parsed, rename={n: n for n in locals_})
        self._prepare_returns(scope, fn.body)
        body = self.lower_block(fn.body, scope)
        if scope.ret_flag is not None:
            body = [ir.Assign(fn.lineno, scope.ret_flag, ast.Constant(False))] + body
            body.append(ir.Return(fn.lineno, ast.Name(scope.ret_value)))
        elif not body or not isinstance(body[-1], ir.Return):
            raise UnsupportedSyntaxError("a function that does not end with a return statement",
                                         parsed.location(fn.body[-1] if fn.body else fn),
                                         "return the value to differentiate")
        written = {s.array for s in ir.walk(body) if isinstance(s, ir.SetItem)}
        self.copied_params = written & set(params)
        return ir.Function(name=fn.name, params=params, body=body, names=self.names.used,
                           copied_params=self.copied_params, source_lines=self.source_lines)

    def emit(self, stmt):
        self.out.append(stmt)
        return stmt

    def temp(self, node, expr, scope, **kw) -> ast.Name:
        name = self.names.fresh("_t")
        self.emit(ir.Assign(self._line(node, scope), name, expr, **kw))
        return ast.Name(name)

    def _line(self, node, scope) -> int:
        if scope.site_line is not None:
            return scope.site_line
        line = getattr(node, "lineno", None) or scope.parsed.node.lineno
        if scope.parsed is self.top and line not in self.source_lines:
            loc = scope.parsed.location(node)
            self.source_lines[line] = loc.line.strip()
        return line

    def error(self, what, node, scope, hint=""):
        return UnsupportedSyntaxError(what, scope.parsed.location(node), hint)

    def sub_block(self, stmts, scope):
        saved, self.out = self.out, []
        try:
            self.lower_block(stmts, scope)
            return self.out
        finally:
            self.out = saved

    def sub_exprs(self, fn):
        """Run fn() collecting the statements it emits into a separate list."""
        saved, self.out = self.out, []
        try:
            result = fn()
            return result, self.out
        finally:
            self.out = saved

    def _prepare_returns(self, scope: Scope, body):
        """Decide whether returns need a flag (any return but a final one)."""
        returns = [n for node in body for n in walk_same_scope(node) if isinstance(n, ast.Return)]
        simple = len(returns) == 1 and body and body[-1] is returns[0]
        if returns and not simple:
            scope.ret_flag = self.names.fresh("_returned")
            scope.ret_value = self.names.fresh("_result")

    def lower_block(self, stmts, scope) -> list:
        start = len(self.out)
        for i, s in enumerate(stmts):
            before = self.exits
            self.lower_stmt(s, scope)
            if self.exits != before and i + 1 < len(stmts):
                # Something in s may have left the block: guard the rest.
                flag = self.loops[-1].stop if self.loops and self._in_current_fn_loop(scope) \
                    else scope.ret_flag
                go_on = self.temp(s, ast.UnaryOp(ast.Not(), ast.Name(flag)), scope)
                rest = self.sub_block(stmts[i + 1:], scope)
                self.emit(ir.If(self._line(stmts[i + 1], scope), go_on.id, rest, []))
                break
        return self.out[start:]

    def _in_current_fn_loop(self, scope):
        return scope.loop_depth > 0

    def lower_stmt(self, s, scope):
        """Lower one Python statement (the fence has refused the kinds not handled here)."""
        self._line(s, scope)        # records the source line for the generated comments
        handler = _STATEMENTS.get(type(s))
        if handler is None:
            raise self.error(f"a `{type(s).__name__}` statement", s, scope)
        handler(self, s, scope)

    def _expr_stmt(self, s, scope):
        if isinstance(s.value, ast.Constant):
            return   # docstring or bare constant
        if not isinstance(s.value, ast.Call):
            raise self.error("an expression statement", s, scope, "assign its value or remove it")
        self.lower_expr(s.value, scope)

    def _assign_stmt(self, s, scope):
        if len(s.targets) == 1:
            return self.assign(s.targets[0], s.value, scope, s)
        value = self.lower_expr(s.value, scope)
        for t in s.targets:
            self.assign(t, value, scope, s, lowered=True)

    def _ann_assign_stmt(self, s, scope):
        if s.value is not None:
            self.assign(s.target, s.value, scope, s)

    def _if_stmt(self, s, scope):
        test = self.as_name(self.lower_expr(s.test, scope), s, scope)
        body = self.sub_block(s.body, scope)
        orelse = self.sub_block(s.orelse, scope)
        self.emit(ir.If(self._line(s, scope), test.id, body, orelse))

    def _jump_stmt(self, s, scope):
        """``break`` / ``continue``: set the loop's flags; the rest of the body is guarded."""
        if not self._in_current_fn_loop(scope):
            raise self.error(f"`{type(s).__name__.lower()}` outside a loop", s, scope)
        line, loop = self._line(s, scope), self.loops[-1]
        self.emit(ir.Assign(line, loop.stop, ast.Constant(True)))
        if isinstance(s, ast.Break):
            self.emit(ir.Assign(line, loop.exit, ast.Constant(True)))
        self.exits += 1

    def _return_stmt(self, s, scope):
        line = self._line(s, scope)
        value = ast.Constant(None) if s.value is None else self.lower_expr(s.value, scope)
        if scope.ret_flag is None:
            if scope.parsed is self.top and scope.depth == 0:
                # The top function returns; an inlined callee assigns its result.
                self.emit(ir.Return(line, value))
            else:
                self.emit(ir.Assign(line, scope.ret_value, value))
            return
        self.emit(ir.Assign(line, scope.ret_value, value))
        self.emit(ir.Assign(line, scope.ret_flag, ast.Constant(True)))
        if self._in_current_fn_loop(scope):
            loop = self.loops[-1]
            self.emit(ir.Assign(line, loop.stop, ast.Constant(True)))
            self.emit(ir.Assign(line, loop.exit, ast.Constant(True)))
        self.exits += 1

    def _def_stmt(self, s, scope):
        scope.local_defs[s.name] = (s, scope)

    def assign(self, target, value, scope, stmt, lowered=False):
        line = self._line(stmt, scope)
        if isinstance(value, ast.Lambda) and isinstance(target, ast.Name) and not lowered:
            scope.local_defs[target.id] = (value, scope)
            return
        if isinstance(target, ast.Name):
            if not lowered and self.assign_constant(target.id, value, scope):
                return
            name = self.local_name(target.id, scope)
            prim = Primitive(value) if lowered else self.lower_primitive(value, scope)
            if name in ir.atom_names(prim.expr) and not is_atom(prim.expr):
                # x = f(x): compute into a temporary first, so the statement that
                # overwrites x reads nothing but the temporary.
                prim = Primitive(self.temp(stmt, prim.expr, scope, callee=prim.callee,
                                           method=prim.method))
            self.emit(ir.Assign(line, name, prim.expr, callee=prim.callee, method=prim.method))
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not lowered and isinstance(value, (ast.Tuple, ast.List)) \
                    and len(value.elts) == len(target.elts):
                # a, b = b, a + b: evaluate every right-hand side before assigning.
                atoms = []
                for e in value.elts:
                    a = self.lower_expr(e, scope)
                    if isinstance(a, ast.Name):
                        a = self.temp(stmt, a, scope)
                    atoms.append(a)
                for t, a in zip(target.elts, atoms):
                    self.assign(t, a, scope, stmt, lowered=True)
                return
            whole = value if lowered else self.lower_expr(value, scope)
            whole = self.as_name(whole, stmt, scope)
            for k, t in enumerate(target.elts):
                item = self.temp(stmt, ast.Subscript(whole, ast.Constant(k)), scope)
                self.assign(t, item, scope, stmt, lowered=True)
            return
        if isinstance(target, ast.Subscript):
            array = self.lower_expr(target.value, scope)
            if not isinstance(array, ast.Name) or array.id not in self._all_locals(scope):
                raise self.error("assignment into an array that is not a local variable",
                                 target, scope, "copy it into a local array first")
            index = self.lower_index(target.slice, scope)
            v = value if lowered else self.lower_expr(value, scope)
            self.emit(ir.SetItem(line, array.id, index, v))
            return
        raise self.error(f"assignment to {type(target).__name__}", target, scope)

    def aug_assign(self, s, scope):
        op = s.op
        if isinstance(s.target, ast.Name):
            value = ast.BinOp(ast.Name(s.target.id, ctx=ast.Load()), op, s.value)
            ast.copy_location(value, s)
            self.assign(ast.Name(s.target.id, ctx=ast.Store()), value, scope, s)
            last = self.out[-1] if self.out else None
            if isinstance(last, ir.Assign) and last.target == self.local_name(s.target.id, scope):
                last.augmented = True
            return
        if isinstance(s.target, ast.Subscript):
            array = self.lower_expr(s.target.value, scope)
            index = self.lower_index(s.target.slice, scope)
            old = self.temp(s, ast.Subscript(array, index), scope)
            rhs = self.lower_expr(s.value, scope)
            new = self.temp(s, ast.BinOp(old, op, rhs), scope)
            if not isinstance(array, ast.Name) or array.id not in self._all_locals(scope):
                raise self.error("assignment into an array that is not a local variable",
                                 s.target, scope, "copy it into a local array first")
            self.emit(ir.SetItem(self._line(s, scope), array.id, index, new))
            return
        raise self.error("augmented assignment to this target", s, scope)

    def _all_locals(self, scope):
        out = set()
        s = scope
        while s is not None:
            out |= set(s.rename.values())
            s = s.parent
        return out

    def local_name(self, name, scope):
        local, _ = scope.lookup_local(name)
        if local is None:
            raise self.error(f"assignment to the non-local name {name!r}", scope.parsed.node, scope)
        return local


def normalize(parsed: ParsedFunction) -> tuple[ir.Function, Normalizer]:
    n = Normalizer(parsed)
    return n.run(), n


# Python statement class -> how it is lowered.  Anything else is refused.
_STATEMENTS = {
    ast.Expr: Normalizer._expr_stmt, ast.Pass: lambda self, s, scope: None,
    ast.Assign: Normalizer._assign_stmt, ast.AnnAssign: Normalizer._ann_assign_stmt,
    ast.AugAssign: lambda self, s, scope: self.aug_assign(s, scope),
    ast.If: Normalizer._if_stmt, ast.For: lambda self, s, scope: self.lower_for(s, scope),
    ast.While: lambda self, s, scope: self.lower_while(s, scope),
    ast.Break: Normalizer._jump_stmt, ast.Continue: Normalizer._jump_stmt,
    ast.Return: Normalizer._return_stmt, ast.FunctionDef: Normalizer._def_stmt,
}
