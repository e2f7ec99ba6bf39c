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
:mod:`.calls` (with :mod:`.callees`, what a call may do, and :mod:`.inline`),
:mod:`.assign`, :mod:`.resolve` (non-local names) and :mod:`.output` (the
statements emitted); this module holds the statements, their control flow and
the entry point.
"""
from __future__ import annotations

import ast

from ..core import ir
from ..core.errors import UnsupportedSyntaxError
from ..core.names import Names
from ..core.trees import Tree
from . import fence
from .assign import Assignments
from .calls import Calls
from .expressions import Expressions
from .inline import Inliner
from .loops import Loops
from .output import Output
from .parse import ParsedFunction
from .resolve import Resolver
from .scope import Loop, Scope, local_names, walk_same_scope
from .structures import Structures


class Normalizer(Structures, Expressions, Loops, Calls):
    """Lowers one function (and everything inlined into it) to the IR: its
    statements and their control flow here, with the expressions, loops and calls
    of its mixins; non-local names are the :class:`.Resolver`'s, assignments the
    :class:`.Assignments`', inlining the :class:`.Inliner`'s, and the emitted
    statements the :class:`.Output`'s."""

    def __init__(self, parsed: ParsedFunction, structures: tuple = (), has_aux: bool = False):
        self.top = parsed
        self.has_aux = has_aux
        self.aux_tuples: dict = {}      # has_aux: (out, aux) tuple returned -> leaves of out
        self.arg_trees = structures     # per parameter: its pytree's structure, or None
        self.out_tree = None            # the structure of a pytree result
        used = {n.id for n in ast.walk(parsed.node) if isinstance(n, ast.Name)}
        used |= {a.arg for a in ast.walk(parsed.node) if isinstance(a, ast.arg)}
        used |= set(parsed.globals) | set(parsed.closure)
        self.names = Names(used)
        self.out = Output(parsed, self.names)
        self.resolver = Resolver(parsed, self.names)
        self.assignments = Assignments(self)
        self.inliner: Inliner | None = None     # made once the fence has passed
        self.loops: list[Loop] = []
        self.exits = 0                      # count of lowered break/continue/return

    @property
    def externals(self) -> dict:
        """Output name -> the value it was bound to when transforming."""
        return self.resolver.externals

    @property
    def dependencies(self) -> list:
        """(namespace dict or cell, key, object) the derivative's validity depends on."""
        return self.resolver.dependencies

    def run(self) -> ir.Function:
        parsed = self.top
        fence.check(parsed)
        fn = parsed.node
        # The derivative takes every parameter by position, keyword-only ones last
        # (the API fills them from keywords and defaults): their defaults never apply.
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        self.inliner = Inliner(self, parsed.fn.__code__)
        scope = Scope(parsed, rename={n: n for n in local_names(fn)})
        params = self.flatten_params(params, scope)
        self._prepare_returns(scope, fn.body)
        body = self.lower_block(fn.body, scope)
        if self.out_tree is not None and scope.ret_plain:
            raise UnsupportedSyntaxError("a function whose returns give a pytree and a plain "
                                         "value", parsed.location(fn),
                                         "make every return give the same structure")
        if scope.ret_flag is not None:
            body = [ir.Assign(fn.lineno, scope.ret_flag, ast.Constant(False))] + body
            body.append(ir.Return(fn.lineno, ast.Name(scope.ret_value)))
        elif not body or not isinstance(body[-1], ir.Return):
            raise UnsupportedSyntaxError("a function that does not end with a return statement",
                                         parsed.location(fn.body[-1] if fn.body else fn),
                                         "return the value to differentiate")
        written = {s.array for s in ir.walk(body) if isinstance(s, ir.SetItem)}
        return ir.Function(name=fn.name, params=params, body=body, names=self.names.used,
                           copied_params=written & set(params),
                           source_lines=self.out.source_lines)

    def error(self, what, node, scope, hint=""):
        return scope.unsupported(what, node, hint)

    def sub_block(self, stmts, scope):
        return self.out.collect(lambda: self.lower_block(stmts, scope))[1]

    def _prepare_returns(self, scope: Scope, body):
        """Decide whether returns need a flag (any return but a final one)."""
        returns = [n for node in body for n in walk_same_scope(node) if isinstance(n, ast.Return)]
        simple = len(returns) == 1 and body and body[-1] is returns[0]
        if returns and not simple:
            scope.ret_flag = self.names.fresh("_returned")
            scope.ret_value = self.names.fresh("_result")

    def lower_block(self, stmts, scope) -> list:
        start = len(self.out.stmts)
        for i, s in enumerate(stmts):
            before = self.exits
            self.lower_stmt(s, scope)
            if self.exits != before and i + 1 < len(stmts):
                # Something in s may have left the block: guard the rest.
                flag = self.loops[-1].stop if self.loops and self._in_current_fn_loop(scope) \
                    else scope.ret_flag
                go_on = self.out.temp(s, ast.UnaryOp(ast.Not(), ast.Name(flag)), scope)
                rest = self.sub_block(stmts[i + 1:], scope)
                self.out.emit(ir.If(self.out.line(stmts[i + 1], scope), go_on.id, rest, []))
                break
        return self.out.stmts[start:]

    def lower_inlined(self, body, callee: Scope):
        """The body of an inlined function: the loops around the call are not its own."""
        saved_loops, self.loops = self.loops, []
        saved_exits = self.exits
        try:
            self.lower_block(body, callee)
        finally:
            self.loops = saved_loops
            self.exits = saved_exits

    def _in_current_fn_loop(self, scope):
        return scope.loop_depth > 0

    def lower_stmt(self, s, scope):
        """Lower one Python statement (the fence has refused the kinds not handled here)."""
        self.out.line(s, scope)        # records the source line for the generated comments
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
            return self.assignments.assign(s.targets[0], s.value, scope, s)
        value = self.lower_expr(s.value, scope)
        for t in s.targets:
            self.assignments.assign(t, value, scope, s, lowered=True)

    def _ann_assign_stmt(self, s, scope):
        if s.value is not None:
            self.assignments.assign(s.target, s.value, scope, s)

    def _if_stmt(self, s, scope):
        test = self.as_name(self.lower_expr(s.test, scope), s, scope)
        with self.control_block(scope, s):
            body = self.sub_block(s.body, scope)
        with self.control_block(scope, s):
            orelse = self.sub_block(s.orelse, scope)
        self.out.emit(ir.If(self.out.line(s, scope), test.id, body, orelse))

    def _jump_stmt(self, s, scope):
        """``break`` / ``continue``: set the loop's flags; the rest of the body is guarded."""
        if not self._in_current_fn_loop(scope):
            raise self.error(f"`{type(s).__name__.lower()}` outside a loop", s, scope)
        line, loop = self.out.line(s, scope), self.loops[-1]
        self.out.emit(ir.Assign(line, loop.stop, ast.Constant(True)))
        if isinstance(s, ast.Break):
            self.out.emit(ir.Assign(line, loop.exit, ast.Constant(True)))
        self.exits += 1

    def _return_stmt(self, s, scope):
        line = self.out.line(s, scope)
        value = ast.Constant(None) if s.value is None else self.lower_tree(s.value, scope)
        first = 1
        if isinstance(value, Tree):
            head = value.children[0] if value.kind == "tuple" and value.children else None
            first = len(head.leaves()) if isinstance(head, Tree) else 1
            value = self.tree_result(value, scope, s)
            if value is None:           # an inlined callee: its leaves are assigned
                return self._returned(scope, line)
        else:
            scope.ret_plain = True
        top = scope.parsed is self.top and scope.depth == 0
        last = self.out.last()
        if top and self.has_aux and isinstance(value, ast.Name) and isinstance(last, ir.Assign) \
                and last.target == value.id and isinstance(last.expr, ast.Tuple):
            self.aux_tuples[value.id] = first
        if scope.ret_flag is None:
            if top:
                # The top function returns; an inlined callee assigns its result.
                self.out.emit(ir.Return(line, value))
            else:
                self.out.emit(ir.Assign(line, scope.ret_value, value))
            return
        self.out.emit(ir.Assign(line, scope.ret_value, value))
        self._returned(scope, line)

    def _returned(self, scope, line):
        """After a return's value is stored: set the flags that skip the rest."""
        if scope.ret_flag is None:
            return
        self.out.emit(ir.Assign(line, scope.ret_flag, ast.Constant(True)))
        if self._in_current_fn_loop(scope):
            loop = self.loops[-1]
            self.out.emit(ir.Assign(line, loop.stop, ast.Constant(True)))
            self.out.emit(ir.Assign(line, loop.exit, ast.Constant(True)))
        self.exits += 1

    def _def_stmt(self, s, scope):
        scope.local_defs[s.name] = (s, scope)


def normalize(parsed: ParsedFunction, structures: tuple = (),
              has_aux: bool = False) -> tuple[ir.Function, Normalizer]:
    """``structures``: per parameter, its pytree's structure (core/trees.py) or None;
    ``has_aux``: the function returns ``(loss, aux)``, whose aux is not differentiated
    (the tuples returned are recorded in ``aux_tuples`` for activity)."""
    n = Normalizer(parsed, structures, has_aux)
    return n.run(), n


# Python statement class -> how it is lowered.  Anything else is refused.
_STATEMENTS = {
    ast.Expr: Normalizer._expr_stmt, ast.Pass: lambda self, s, scope: None,
    ast.Assign: Normalizer._assign_stmt, ast.AnnAssign: Normalizer._ann_assign_stmt,
    ast.AugAssign: lambda self, s, scope: self.assignments.augmented(s, scope),
    ast.If: Normalizer._if_stmt, ast.For: lambda self, s, scope: self.lower_for(s, scope),
    ast.While: lambda self, s, scope: self.lower_while(s, scope),
    ast.Break: Normalizer._jump_stmt, ast.Continue: Normalizer._jump_stmt,
    ast.Return: Normalizer._return_stmt, ast.FunctionDef: Normalizer._def_stmt,
}
