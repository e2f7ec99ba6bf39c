"""Lower a parsed function to the normalized program of :mod:`pullback.ir`.

One primitive per statement over atoms (names and constants), with fresh
temporaries; augmented assignment, tuple unpacking, chained comparisons,
``and``/``or``, conditional expressions, ``for x in array``, ``enumerate``,
``zip`` and ``reversed`` are desugared.  ``break``, ``continue`` and early
``return`` become boolean flags that guard the rest of the block, so the
reverse transform sees only structured control flow.  Calls to user Python
functions (module level, nested ``def`` or ``lambda``) are inlined with their
locals renamed, so the loop that calls them stays one loop.
"""
from __future__ import annotations

import ast
import builtins
import copy
import math
import types
from dataclasses import dataclass, field


from ..core import ir
from ..core.errors import UnsupportedSyntaxError
from ..core.names import Names
from ..core.runtime import trip_count
from ..rules import registry
from . import fence
from .parse import ParsedFunction, parse_function, unwrap

# Builtins that the normalizer lowers itself, never inlines.
_ITER_BUILTINS = (range, enumerate, zip, reversed)
MAX_INLINE_DEPTH = 32


@dataclass
class Scope:
    """One function being lowered (the top function or an inlined callee)."""

    parsed: ParsedFunction
    rename: dict                    # local name -> name in the output
    local_defs: dict = field(default_factory=dict)   # name -> (ast node, Scope)
    parent: "Scope | None" = None   # lexically enclosing scope (for nested defs)
    ret_flag: str | None = None     # set by a return that is not the last statement
    ret_value: str | None = None
    depth: int = 0

    def lookup_local(self, name):
        s = self
        while s is not None:
            if name in s.rename:
                return s.rename[name], s
            s = s.parent
        return None, None

    def lookup_def(self, name):
        s = self
        while s is not None:
            if name in s.local_defs:
                return s.local_defs[name]
            if name in s.rename:          # shadowed by a plain local
                return None
            s = s.parent
        return None


@dataclass
class Loop:
    stop: str           # skip the rest of this iteration
    exit: str           # leave the loop after this iteration


class _Unresolved:
    pass


UNRESOLVED = _Unresolved()


def _local_names(fn: ast.FunctionDef) -> set[str]:
    """Names bound in fn's own scope (params, assignment targets, loop targets, defs)."""
    out = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}

    def visit(nodes):
        for node in nodes:
            for n in _walk_same_scope(node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.add(n.id)
                elif isinstance(n, ast.FunctionDef):
                    out.add(n.name)
    visit(fn.body)
    return out


def _walk_same_scope(node):
    """ast.walk that does not enter nested functions or lambdas (but yields them)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))


class Normalizer:
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

    # ------------------------------------------------------------------ entry
    def run(self) -> ir.Function:
        parsed = self.top
        fence.check(parsed)
        fn = parsed.node
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if fn.args.kwonlyargs:
            raise UnsupportedSyntaxError("keyword-only parameters", parsed.location(fn),
                                         "make them ordinary parameters")
        locals_ = _local_names(fn)
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

    # ------------------------------------------------------------- utilities
    def emit(self, stmt):
        self.out.append(stmt)
        return stmt

    def temp(self, node, expr, scope, **kw) -> ast.Name:
        name = self.names.fresh("_t")
        self.emit(ir.Assign(self._line(node, scope), name, expr, **kw))
        return ast.Name(name)

    def _line(self, node, scope) -> int:
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

    # ------------------------------------------------------------ statements
    def _prepare_returns(self, scope: Scope, body):
        """Decide whether returns need a flag (any return but a final one)."""
        returns = [n for node in body for n in _walk_same_scope(node) if isinstance(n, ast.Return)]
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
        return getattr(scope, "_loop_depth", 0) > 0

    def lower_stmt(self, s, scope):
        line = self._line(s, scope)
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return   # docstring or bare constant
            if isinstance(s.value, ast.Call):
                atom = self.lower_expr(s.value, scope)
                return atom
            raise self.error("an expression statement", s, scope, "assign its value or remove it")
        if isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Assign):
            if len(s.targets) == 1:
                return self.assign(s.targets[0], s.value, scope, s)
            value = self.lower_expr(s.value, scope)
            for t in s.targets:
                self.assign(t, value, scope, s, lowered=True)
            return
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                return
            return self.assign(s.target, s.value, scope, s)
        if isinstance(s, ast.AugAssign):
            return self.aug_assign(s, scope)
        if isinstance(s, ast.If):
            test = self.lower_expr(s.test, scope)
            test = self.as_name(test, s, scope)
            body = self.sub_block(s.body, scope)
            orelse = self.sub_block(s.orelse, scope)
            self.emit(ir.If(line, test.id, body, orelse))
            return
        if isinstance(s, ast.For):
            return self.lower_for(s, scope)
        if isinstance(s, ast.While):
            return self.lower_while(s, scope)
        if isinstance(s, (ast.Break, ast.Continue)):
            if not self._in_current_fn_loop(scope):
                raise self.error(f"`{type(s).__name__.lower()}` outside a loop", s, scope)
            loop = self.loops[-1]
            self.emit(ir.Assign(line, loop.stop, ast.Constant(True)))
            if isinstance(s, ast.Break):
                self.emit(ir.Assign(line, loop.exit, ast.Constant(True)))
            self.exits += 1
            return
        if isinstance(s, ast.Return):
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
            return
        if isinstance(s, ast.FunctionDef):
            scope.local_defs[s.name] = (s, scope)
            return
        raise self.error(f"a `{type(s).__name__}` statement", s, scope)

    # ------------------------------------------------------------ assignment
    def assign(self, target, value, scope, stmt, lowered=False):
        line = self._line(stmt, scope)
        if isinstance(value, ast.Lambda) and isinstance(target, ast.Name) and not lowered:
            scope.local_defs[target.id] = (value, scope)
            return
        if isinstance(target, ast.Name):
            name = self.local_name(target.id, scope)
            if lowered:
                expr = value
            else:
                expr = self.lower_value(value, scope)
            if name in ir.atom_names(expr) and not _is_atom(expr):
                # x = f(x): compute into a temporary first, so the statement that
                # overwrites x reads nothing but the temporary.
                expr = self.temp(stmt, expr, scope, **self._call_info(expr))
            self.emit(ir.Assign(line, name, expr, **self._call_info(expr)))
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
            return self.assign(ast.Name(s.target.id, ctx=ast.Store()), value, scope, s)
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

    # ----------------------------------------------------------------- loops
    def _new_loop(self):
        return Loop(stop=self.names.fresh("_skip"), exit=self.names.fresh("_leave"))

    def _loop_body(self, s, scope, loop, prologue):
        """Lower a loop body with flags for break/continue/return."""
        self.loops.append(loop)
        scope._loop_depth = getattr(scope, "_loop_depth", 0) + 1
        before = self.exits
        try:
            saved, self.out = self.out, list(prologue)
            self.lower_block(s.body, scope)
            body = self.out
            self.out = saved
        finally:
            self.loops.pop()
            scope._loop_depth -= 1
        used_flags = self.exits != before
        # break/continue end at this loop; a return is re-counted by _finish_loop.
        self.exits = before
        return body, used_flags

    def _finish_loop(self, s, scope, loop, node, body, used_flags):
        line = self._line(s, scope)
        if used_flags:
            reset = ir.Assign(line, loop.stop, ast.Constant(False))
            body.insert(0, reset)
            node.exit_flag = loop.exit
            self.emit(ir.Assign(line, loop.exit, ast.Constant(False)))
            self.emit(ir.Assign(line, loop.stop, ast.Constant(False)))
        node.body = body
        self.emit(node)
        returned_inside = used_flags and scope.ret_flag is not None and any(
            isinstance(st, ir.Assign) and st.target == scope.ret_flag for st in ir.walk(body))
        if returned_inside:
            # A return inside the loop leaves the enclosing loop too.
            if self._in_current_fn_loop(scope):
                outer = self.loops[-1]
                self.emit(ir.If(line, scope.ret_flag, [
                    ir.Assign(line, outer.stop, ast.Constant(True)),
                    ir.Assign(line, outer.exit, ast.Constant(True))], []))
            self.exits += 1

    def lower_for(self, s, scope):
        line = self._line(s, scope)
        it = s.iter
        target = s.target
        loop = self._new_loop()
        prologue = []
        fn = self.resolve_callee(it.func, scope) if isinstance(it, ast.Call) else UNRESOLVED

        def bind(t, value):
            saved, self.out = self.out, prologue
            try:
                self.assign(t, value, scope, s, lowered=True)
            finally:
                self.out = saved

        if fn is range or (fn is reversed and isinstance(it.args[0], ast.Call)
                           and self.resolve_callee(it.args[0].func, scope) is range):
            rng = it if fn is range else it.args[0]
            if rng.keywords or not 1 <= len(rng.args) <= 3:
                raise self.error("range() with these arguments", it, scope)
            args = [self.lower_expr(a, scope) for a in rng.args]
            if len(args) == 1:
                start, stop, step = ast.Constant(0), args[0], ast.Constant(1)
            elif len(args) == 2:
                (start, stop), step = args, ast.Constant(1)
            else:
                start, stop, step = args
            if isinstance(step, ast.Constant) and step.value == 0:
                raise self.error("range() with step 0", it, scope)
            if fn is reversed:
                start, stop, step = self.reversed_range(s, scope, start, stop, step)
            if isinstance(target, ast.Name):
                var = self.local_name(target.id, scope)
            else:
                raise self.error("a tuple loop target over range()", target, scope)
        else:
            # An index loop over one or more sequences.
            var = self.names.fresh("_i")
            index = ast.Name(var)
            if fn is enumerate:
                seqs = [self.as_name(self.lower_expr(it.args[0], scope), s, scope)]
                offset = self.lower_expr(it.args[1], scope) if len(it.args) > 1 else ast.Constant(0)
                if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                    raise self.error("enumerate() without an `i, x` target", target, scope)
                counter, item_t = target.elts
                count = index if isinstance(offset, ast.Constant) and offset.value == 0 else \
                    self._temp_in(prologue, s, ast.BinOp(index, ast.Add(), offset))
                bind(counter, count)
                items = [(item_t, seqs[0])]
            elif fn is zip:
                seqs = [self.as_name(self.lower_expr(a, scope), s, scope) for a in it.args]
                if not (isinstance(target, ast.Tuple) and len(target.elts) == len(seqs)):
                    raise self.error("zip() whose target does not unpack every sequence",
                                     target, scope)
                items = list(zip(target.elts, seqs))
            elif fn is reversed:
                seqs = [self.as_name(self.lower_expr(it.args[0], scope), s, scope)]
                items = [(target, seqs[0])]
            elif isinstance(it, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
                seqs = [self.as_name(self.lower_expr(it, scope), s, scope)]
                items = [(target, seqs[0])]
            else:
                raise self.error("a for loop over this iterable", it, scope,
                                 "iterate over range(...), an array, enumerate(...) or zip(...)")
            lengths = [self.temp(s, ast.Call(ast.Name("len"), [q], []), scope, callee=len)
                       for q in seqs]
            n = lengths[0]
            for other in lengths[1:]:
                n = self.temp(s, ast.Call(ast.Name("min"), [n, other], []), scope, callee=min)
            start, stop, step = ast.Constant(0), n, ast.Constant(1)
            if fn is reversed:
                start, stop, step = self.reversed_range(s, scope, start, stop, step)
            for t, q in items:
                item = self._temp_in(prologue, s, ast.Subscript(q, index))
                bind(t, item)
        node = ir.For(line, var, start, stop, step)
        body, used_flags = self._loop_body(s, scope, loop, prologue)
        self._finish_loop(s, scope, loop, node, body, used_flags)

    def _temp_in(self, stmts, s, expr):
        name = self.names.fresh("_t")
        stmts.append(ir.Assign(s.lineno, name, expr))
        return ast.Name(name)

    def reversed_range(self, s, scope, start, stop, step):
        n = self.temp(s, ast.Call(ast.Name("trip_count"), [start, stop, step], []), scope,
                      callee=trip_count)
        last = self.temp(s, ast.BinOp(n, ast.Sub(), ast.Constant(1)), scope)
        off = self.temp(s, ast.BinOp(last, ast.Mult(), step), scope)
        new_start = self.temp(s, ast.BinOp(start, ast.Add(), off), scope)
        new_stop = self.temp(s, ast.BinOp(start, ast.Sub(), step), scope)
        new_step = self.temp(s, ast.UnaryOp(ast.USub(), step), scope)
        return new_start, new_stop, new_step

    def lower_while(self, s, scope):
        line = self._line(s, scope)
        loop = self._new_loop()
        test, cond = self.sub_exprs(lambda: self.as_name(self.lower_expr(s.test, scope), s, scope))
        for st in cond:
            self.emit(st)
        body, used_flags = self._loop_body(s, scope, loop, [])
        # Re-evaluate the condition at the end of each iteration into the same name.
        _, cond2 = self.sub_exprs(lambda: self._retest(s, scope, test.id))
        node = ir.While(line, test.id, cond2, [])
        self._finish_loop(s, scope, loop, node, body, used_flags)

    def _retest(self, s, scope, name):
        value = self.lower_value(s.test, scope)
        self.emit(ir.Assign(self._line(s, scope), name, value, **self._call_info(value)))

    # ----------------------------------------------------------- expressions
    def as_name(self, atom, node, scope) -> ast.Name:
        if isinstance(atom, ast.Name):
            return atom
        return self.temp(node, atom, scope)

    def lower_expr(self, e, scope) -> ast.expr:
        """Lower e and return an atom (Name or Constant) holding its value."""
        value = self.lower_value(e, scope)
        if _is_atom(value):
            return value
        return self.temp(e, value, scope, **self._call_info(value))

    def _call_info(self, value):
        info = getattr(value, "_pb_call", None)
        return {"callee": info[0], "method": info[1]} if info else {}

    def lower_value(self, e, scope) -> ast.expr:
        """Lower e to one primitive expression over atoms (or an atom)."""
        if isinstance(e, ast.Constant):
            return ast.Constant(e.value)
        if isinstance(e, ast.Name):
            return self.name_ref(e, scope)
        if isinstance(e, ast.Attribute):
            obj = self.resolve(e, scope)
            if obj is not UNRESOLVED:
                return self.external_ref(e, obj, scope)
            base = self.lower_expr(e.value, scope)
            return ast.Attribute(base, e.attr, ast.Load())
        if isinstance(e, ast.Subscript):
            base = self.lower_expr(e.value, scope)
            return ast.Subscript(base, self.lower_index(e.slice, scope), ast.Load())
        if isinstance(e, ast.BinOp):
            a = self.lower_expr(e.left, scope)
            b = self.lower_expr(e.right, scope)
            return ast.BinOp(a, e.op, b)
        if isinstance(e, ast.UnaryOp):
            a = self.lower_expr(e.operand, scope)
            if isinstance(e.op, ast.UAdd):
                return a
            if isinstance(e.op, ast.USub) and isinstance(a, ast.Constant) \
                    and isinstance(a.value, (int, float, complex)) and not isinstance(a.value, bool):
                return ast.Constant(-a.value)
            return ast.UnaryOp(e.op, a)
        if isinstance(e, ast.Compare):
            return self.lower_compare(e, scope)
        if isinstance(e, ast.BoolOp):
            return self.lower_boolop(e, scope)
        if isinstance(e, ast.IfExp):
            test = self.as_name(self.lower_expr(e.test, scope), e, scope)
            result = self.names.fresh("_t")
            line = self._line(e, scope)
            body = self.sub_exprs(lambda: self.lower_expr(e.body, scope))
            orelse = self.sub_exprs(lambda: self.lower_expr(e.orelse, scope))
            self.emit(ir.If(line, test.id,
                            body[1] + [ir.Assign(line, result, body[0])],
                            orelse[1] + [ir.Assign(line, result, orelse[0])]))
            return ast.Name(result)
        if isinstance(e, (ast.Tuple, ast.List)):
            return ast.Tuple([self.lower_expr(x, scope) for x in e.elts], ast.Load())
        if isinstance(e, ast.Call):
            return self.lower_call(e, scope)
        if isinstance(e, ast.Lambda):
            raise self.error("a lambda used as a value", e, scope,
                             "assign it to a name and call it, or define a def")
        raise self.error(f"the expression {type(e).__name__}", e, scope)

    def lower_index(self, s, scope):
        if isinstance(s, ast.Slice):
            parts = [None if p is None else self.lower_expr(p, scope)
                     for p in (s.lower, s.upper, s.step)]
            return ast.Slice(*parts)
        if isinstance(s, ast.Tuple):
            return ast.Tuple([self.lower_index(x, scope) for x in s.elts], ast.Load())
        return self.lower_expr(s, scope)

    def lower_compare(self, e, scope):
        left = self.lower_expr(e.left, scope)
        if len(e.ops) == 1:
            return ast.Compare(left, e.ops, [self.lower_expr(e.comparators[0], scope)])
        # a < b < c: each operand once, later comparisons only if earlier ones hold.
        result = self.names.fresh("_t")
        line = self._line(e, scope)

        def chain(left, ops, comps):
            right = self.lower_expr(comps[0], scope)
            self.emit(ir.Assign(line, result, ast.Compare(left, [ops[0]], [right])))
            if len(ops) > 1:
                _, rest = self.sub_exprs(lambda: chain(right, ops[1:], comps[1:]))
                self.emit(ir.If(line, result, rest, []))
        chain(left, e.ops, e.comparators)
        return ast.Name(result)

    def lower_boolop(self, e, scope):
        result = self.names.fresh("_t")
        line = self._line(e, scope)
        is_and = isinstance(e.op, ast.And)

        def chain(values):
            v = self.lower_expr(values[0], scope)
            self.emit(ir.Assign(line, result, v))
            if len(values) > 1:
                test = result
                if not is_and:
                    test = self.temp(e, ast.UnaryOp(ast.Not(), ast.Name(result)), scope).id
                _, rest = self.sub_exprs(lambda: chain(values[1:]))
                self.emit(ir.If(line, test, rest, []))
        chain(e.values)
        return ast.Name(result)

    # ----------------------------------------------------------------- names
    def name_ref(self, e: ast.Name, scope) -> ast.expr:
        local, _ = scope.lookup_local(e.id)
        if local is not None:
            return ast.Name(local)
        obj = self.resolve(e, scope)
        if obj is UNRESOLVED:
            raise self.error(f"the undefined name {e.id!r}", e, scope)
        return self.external_ref(e, obj, scope)

    def external_ref(self, e, obj, scope) -> ast.expr:
        """A reference to a global, closure variable or builtin, read as the primal reads it."""
        root = e
        while isinstance(root, ast.Attribute):
            root = root.value
        if scope.parsed is self.top or (scope.parsed.globals is self.top.globals
                                        and root.id not in scope.parsed.closure
                                        and root.id not in self.top_locals
                                        and root.id not in self.top.closure):
            # The top function's own globals and closure: read live at run time.
            if scope.parsed is not self.top:
                self._depend_on(scope, root.id)
            return _copy_expr(e)
        # Another module's global or an inlined closure's cell: bind it by value.
        value = self._resolve_root(root, scope)
        key = (id(scope.parsed.globals), root.id, id(value))
        name = self._aliases.get(key)
        if name is None:
            name = self._aliases[key] = self.names.reserve(root.id)
            self.externals[name] = value
            self._depend_on(scope, root.id)
        if isinstance(e, ast.Name):
            return ast.Name(name)
        out = _copy_expr(e)
        r = out
        while isinstance(r.value, ast.Attribute):
            r = r.value
        r.value = ast.Name(name)
        return out

    def _depend_on(self, scope, name):
        p = scope.parsed
        if name in p.closure:
            self.dependencies.append((p.closure[name], None, self._resolve_root(ast.Name(name), scope)))
        elif name in p.globals:
            self.dependencies.append((p.globals, name, p.globals[name]))

    def _resolve_root(self, root: ast.Name, scope):
        p = scope.parsed
        if root.id in p.closure:
            try:
                return p.closure[root.id].cell_contents
            except ValueError:
                return UNRESOLVED
        if root.id in p.globals:
            return p.globals[root.id]
        if hasattr(builtins, root.id):
            return getattr(builtins, root.id)
        return UNRESOLVED

    def resolve(self, e, scope):
        """The object a Name/Attribute chain names, if it is not local."""
        if isinstance(e, ast.Name):
            if scope.lookup_local(e.id)[0] is not None:
                return UNRESOLVED
            return self._resolve_root(e, scope)
        if isinstance(e, ast.Attribute):
            base = self.resolve(e.value, scope)
            if base is UNRESOLVED:
                return UNRESOLVED
            try:
                return getattr(base, e.attr)
            except AttributeError:
                raise self.error(f"the attribute {ast.unparse(e)!r}, which does not exist",
                                 e, scope) from None
        return UNRESOLVED

    def resolve_callee(self, func, scope):
        if isinstance(func, ast.Name) and scope.lookup_def(func.id) is not None:
            return scope.lookup_def(func.id)
        return self.resolve(func, scope)

    # ----------------------------------------------------------------- calls
    def lower_call(self, e: ast.Call, scope):
        for a in e.args:
            if isinstance(a, ast.Starred):
                raise self.error("a starred argument", a, scope, "pass arguments one by one")
        # A local def or lambda: inline it.
        if isinstance(e.func, ast.Name):
            local_def = scope.lookup_def(e.func.id)
            if local_def is not None:
                node, def_scope = local_def
                return self.inline(node, def_scope.parsed, e, scope, enclosing=def_scope)
        fn = self.resolve(e.func, scope)
        if fn is UNRESOLVED:
            if isinstance(e.func, ast.Attribute):
                # A method of a local value: x.sum(axis=0), A.dot(v), x.copy().
                recv = self.lower_expr(e.func.value, scope)
                args = [self.lower_expr(a, scope) for a in e.args]
                kws = [ast.keyword(k.arg, self.lower_expr(k.value, scope)) for k in e.keywords]
                call = ast.Call(ast.Attribute(recv, e.func.attr, ast.Load()), args, kws)
                call._pb_call = (None, e.func.attr)
                return call
            raise self.error(f"a call to {ast.unparse(e.func)}, which is not a known function",
                             e, scope)
        if fn in (min, max) and len(e.args) > 2 and not e.keywords:
            # max(a, b, c) == max(max(a, b), c): the two-argument rule applies.
            acc = self.lower_expr(e.args[0], scope)
            for a in e.args[1:]:
                b = self.lower_expr(a, scope)
                call = ast.Call(_copy_expr(e.func), [acc, b], [])
                call._pb_call = (fn, None)
                acc = self.temp(e, call, scope, callee=fn)
            return acc
        if fn in _ITER_BUILTINS:
            raise self.error(f"{fn.__name__}() outside a for statement", e, scope,
                             f"use {fn.__name__}() directly in `for ... in {fn.__name__}(...)`")
        if fn in (sum, math.fsum) and len(e.args) == 1 and not e.keywords \
                and isinstance(e.args[0], (ast.GeneratorExp, ast.ListComp)):
            return self.lower_sum(e, fn, scope)
        target, is_numba = unwrap(fn)
        if registry.lookup(fn) is None and registry.lookup(target) is None \
                and isinstance(target, types.FunctionType) and not _is_library(target):
            self._depend_on(scope, _root_name(e.func))
            if target.__code__ not in self.inline_stack:
                return self.inline(None, None, e, scope, fn=target)
            # A recursive call: its depth is not known here, so it stays a call, and
            # the reverse sweep takes its vector-Jacobian product at run time.
            if e.keywords:
                raise self.error("a recursive call with keyword arguments", e, scope,
                                 "pass the arguments by position")
        func = self.external_ref(e.func, fn, scope)
        args = [self.lower_expr(a, scope) for a in e.args]
        kws = [ast.keyword(k.arg, self.lower_expr(k.value, scope)) for k in e.keywords]
        call = ast.Call(func, args, kws)
        call._pb_call = (fn, None)
        return call

    def lower_sum(self, e, fn, scope):
        """sum(f(v) for v in xs if c) as the loop it is: acc = 0; for v in xs: if c: acc += f(v)."""
        gen = e.args[0]
        rename = {}
        for comp in gen.generators:
            for n in ast.walk(comp.target):
                if isinstance(n, ast.Name):
                    rename.setdefault(n.id, self.names.fresh(f"_{n.id}_"))

        class Rename(ast.NodeTransformer):
            def visit_Name(_, node):
                return ast.copy_location(ast.Name(rename.get(node.id, node.id), node.ctx), node)
        acc = self.names.fresh("_sum")
        for new in list(rename.values()) + [acc]:
            scope.rename[new] = new
        line = self._line(e, scope)
        body = [ast.copy_location(ast.Assign([ast.Name(acc, ast.Store())], ast.BinOp(
            ast.Name(acc, ast.Load()), ast.Add(), Rename().visit(copy.deepcopy(gen.elt)))), e)]
        for comp in reversed(gen.generators):
            for cond in reversed(comp.ifs):
                body = [ast.copy_location(ast.If(Rename().visit(copy.deepcopy(cond)), body, []), e)]
            iter_ = comp.iter if comp is gen.generators[0] else Rename().visit(copy.deepcopy(comp.iter))
            body = [ast.copy_location(ast.For(Rename().visit(copy.deepcopy(comp.target)), iter_,
                                              body, []), e)]
        self.emit(ir.Assign(line, acc, ast.Constant(0.0 if fn is math.fsum else 0)))
        for st in body:
            self.lower_stmt(st, scope)
        return ast.Name(acc)

    def inline(self, node, parsed, call: ast.Call, scope, enclosing=None, fn=None):
        """Inline a call to a Python function; return an atom holding its result."""
        if scope.depth >= MAX_INLINE_DEPTH:
            raise self.error("recursion (or calls nested too deeply to inline)", call, scope,
                             "give the recursive function a rule with @pullback.rule")
        if fn is not None:
            parsed = parse_function(fn)
            fence.check(parsed)
            node = parsed.node
        if isinstance(node, ast.Lambda):
            fdef = ast.FunctionDef(name="_lambda", args=node.args,
                                   body=[ast.copy_location(ast.Return(node.body), node.body)],
                                   decorator_list=[], returns=None, type_params=[])
            node = ast.copy_location(fdef, node)
        else:
            fence.check(ParsedFunction(parsed.fn, node, parsed.filename, parsed.lines,
                                       parsed.globals, parsed.closure))
        a = node.args
        if a.vararg or a.kwarg:
            raise self.error(f"a call to {node.name}, which takes *args or **kwargs", call, scope)
        # Evaluate arguments in the caller's scope first.
        args = [self.lower_expr(x, scope) for x in call.args]
        kwargs = {k.arg: self.lower_expr(k.value, scope) for k in call.keywords}
        prefix = (node.name if node.name != "_lambda" else "lam").lstrip("_")
        rename = {}
        for local in sorted(_local_names(node)):
            rename[local] = self.names.fresh(f"_{prefix}_{local}_")
        callee = Scope(parsed, rename=rename, parent=enclosing, depth=scope.depth + 1)
        params = a.posonlyargs + a.args
        defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
        line = self._line(call, scope)
        if len(args) > len(params):
            raise self.error(f"a call to {node.name} with too many arguments", call, scope)
        for p, d, k in zip(params, defaults, range(len(params))):
            if k < len(args):
                value = args[k]
            elif p.arg in kwargs:
                value = kwargs.pop(p.arg)
            elif d is not None:
                value = self.lower_expr(d, enclosing or Scope(parsed, rename={}))
            else:
                raise self.error(f"a call to {node.name} missing the argument {p.arg!r}",
                                 call, scope)
            self.emit(ir.Assign(line, rename[p.arg], value))
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            value = kwargs.pop(p.arg, None)
            if value is None:
                if d is None:
                    raise self.error(f"a call to {node.name} missing the argument {p.arg!r}",
                                     call, scope)
                value = self.lower_expr(d, enclosing or Scope(parsed, rename={}))
            self.emit(ir.Assign(line, rename[p.arg], value))
        if kwargs:
            raise self.error(f"a call to {node.name} with unknown keyword {next(iter(kwargs))!r}",
                             call, scope)
        callee.ret_value = self.names.fresh(f"_{prefix}_result")
        body = node.body
        returns = [n for st in body for n in _walk_same_scope(st) if isinstance(n, ast.Return)]
        if not (len(returns) == 1 and body and body[-1] is returns[0]):
            callee.ret_flag = self.names.fresh(f"_{prefix}_returned")
            self.emit(ir.Assign(line, callee.ret_flag, ast.Constant(False)))
        saved_loops, self.loops = self.loops, []
        saved_exits = self.exits
        code = getattr(parsed.fn, "__code__", None) if fn is not None else None
        if code is not None:
            self.inline_stack.append(code)
        try:
            self.lower_block(body, callee)
        finally:
            self.loops = saved_loops
            self.exits = saved_exits
            if code is not None:
                self.inline_stack.pop()
        return ast.Name(callee.ret_value)


_LIBRARIES = ("numpy", "scipy", "numba", "math", "torch", "jax", "pullback", "array_api_compat")


def _is_library(fn) -> bool:
    """Library functions are primitives (they need a rule), never inlined: their
    source is an implementation detail written for speed, not for us."""
    mod = getattr(fn, "__module__", "") or ""
    return mod.split(".")[0] in _LIBRARIES


def _root_name(e):
    while isinstance(e, ast.Attribute):
        e = e.value
    return e.id if isinstance(e, ast.Name) else None


def _is_atom(e) -> bool:
    return isinstance(e, (ast.Name, ast.Constant))


def _copy_expr(e):
    return ast.parse(ast.unparse(e), mode="eval").body


def normalize(parsed: ParsedFunction) -> tuple[ir.Function, Normalizer]:
    n = Normalizer(parsed)
    return n.run(), n


__all__ = ["normalize", "Normalizer", "Names"]
