"""Loops: ``for`` over range, arrays, enumerate, zip and reversed; ``while``.

Every ``for`` becomes a loop over a range with a loop variable; ``break``,
``continue`` and ``return`` inside become flags that guard the rest of the body
and leave the loop after the iteration that set them.
"""
from __future__ import annotations

import ast

from ..core import ir
from ..core.checkpointing import checkpointed
from ..core.runtime import trip_count
from .scope import UNRESOLVED, Loop, walk_same_scope


class Loops:
    """Mixin of the Normalizer: lowering for and while loops."""

    def _new_loop(self):
        return Loop(stop=self.names.fresh("_skip"), exit=self.names.fresh("_leave"))

    def _loop_body(self, s, scope, loop, prologue):
        """Lower a loop body with flags for break/continue/return."""
        self.loops.append(loop)
        scope.loop_depth += 1
        before = self.exits
        try:
            with self.out.into(list(prologue)) as body:
                self.lower_block(s.body, scope)
        finally:
            self.loops.pop()
            scope.loop_depth -= 1
        used_flags = self.exits != before
        # break/continue end at this loop; a return is re-counted by _finish_loop.
        self.exits = before
        return body, used_flags

    def _finish_loop(self, s, scope, loop, node, body, used_flags):
        line = self.out.line(s, scope)
        if used_flags:
            reset = ir.Assign(line, loop.stop, ast.Constant(False))
            body.insert(0, reset)
            # A loop with only ``continue`` runs every iteration: it has no exit flag
            # (so its trip count is known when it starts, and its tapes are reserved).
            if any(isinstance(st, ir.Assign) and st.target == loop.exit for st in ir.walk(body)):
                node.exit_flag = loop.exit
                self.out.emit(ir.Assign(line, loop.exit, ast.Constant(False)))
            self.out.emit(ir.Assign(line, loop.stop, ast.Constant(False)))
        node.body = body
        self.out.emit(node)
        returned_inside = used_flags and scope.ret_flag is not None and any(
            isinstance(st, ir.Assign) and st.target == scope.ret_flag for st in ir.walk(body))
        if returned_inside:
            # A return inside the loop leaves the enclosing loop too.
            if self._in_current_fn_loop(scope):
                outer = self.loops[-1]
                self.out.emit(ir.If(line, scope.ret_flag, [
                    ir.Assign(line, outer.stop, ast.Constant(True)),
                    ir.Assign(line, outer.exit, ast.Constant(True))], []))
            self.exits += 1

    def lower_for(self, s, scope):
        every = None
        fn = self.resolver.resolve_callee(s.iter.func, scope) if isinstance(s.iter, ast.Call) \
            else UNRESOLVED
        if fn is checkpointed:      # for t in checkpointed(it, every): the loop over it
            inner, every = _checkpointed_parts(s.iter)
            if inner is None:
                raise self.error("checkpointed() with these arguments", s.iter, scope,
                                 "write `checkpointed(range(n))` or `checkpointed(range(n), k)`")
            every = self.lower_expr(every, scope) if every is not None else ast.Constant(None)
            s = ast.copy_location(ast.For(s.target, inner, s.body, s.orelse), s)
        it = s.iter
        loop = self._new_loop()
        prologue = []       # binds the loop target(s) at the top of each iteration
        fn = self.resolver.resolve_callee(it.func, scope) if isinstance(it, ast.Call) else UNRESOLVED
        if self.unroll(s, scope, fn):       # over a list of pytrees (frontend/structures.py)
            return
        if fn is range or (fn is reversed and isinstance(it.args[0], ast.Call)
                           and self.resolver.resolve_callee(it.args[0].func, scope) is range):
            var, start, stop, step = self._range_header(s, scope, fn)
        else:
            var, start, stop, step = self._sequence_header(s, scope, fn, prologue)
        node = ir.For(self.out.line(s, scope), var, start, stop, step, checkpoint=every)
        with self.control_block(scope, s):
            body, used_flags = self._loop_body(s, scope, loop, prologue)
        self._finish_loop(s, scope, loop, node, body, used_flags)

    def _range_header(self, s, scope, fn):
        """``for i in range(...)`` (or ``reversed(range(...))``): the loop's own variable."""
        it = s.iter
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
        if not isinstance(s.target, ast.Name):
            raise self.error("a tuple loop target over range()", s.target, scope)
        return scope.assigned_name(s.target.id), start, stop, step

    def _sequence_header(self, s, scope, fn, prologue):
        """An index loop over one or more sequences (an array, enumerate, zip, reversed)."""
        var = self.names.fresh("_i")
        index = ast.Name(var)

        def bind(t, value):
            with self.out.into(prologue):
                self.assignments.assign(t, value, scope, s, lowered=True)

        seqs, items = self._sequences(s, scope, fn, index, prologue, bind)
        lengths = [self.out.temp(s, ast.Call(ast.Name("len"), [q], []), scope, callee=len)
                   for q in seqs]
        n = lengths[0]
        for other in lengths[1:]:
            n = self.out.temp(s, ast.Call(ast.Name("min"), [n, other], []), scope, callee=min)
        start, stop, step = ast.Constant(0), n, ast.Constant(1)
        if fn is reversed:
            start, stop, step = self.reversed_range(s, scope, start, stop, step)
        for t, q in items:
            item = self._temp_in(prologue, s, ast.Subscript(q, index))
            bind(t, item)
        return var, start, stop, step

    def _sequences(self, s, scope, fn, index, prologue, bind):
        """The sequences iterated over, and (target, sequence) for each item bound."""
        it, target = s.iter, s.target
        if fn is enumerate:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                raise self.error("enumerate() without an `i, x` target", target, scope)
            counter, item_t = target.elts
            inner = it.args[0]
            if isinstance(inner, ast.Call) and self.resolver.resolve_callee(inner.func, scope) is zip:
                seqs, items = self._zipped(inner, item_t, s, scope)   # enumerate(zip(a, b))
            else:
                seqs = [self._iterated(inner, s, scope)]
                items = [(item_t, seqs[0])]
            offset = self.lower_expr(it.args[1], scope) if len(it.args) > 1 else ast.Constant(0)
            count = index if isinstance(offset, ast.Constant) and offset.value == 0 else \
                self._temp_in(prologue, s, ast.BinOp(index, ast.Add(), offset))
            bind(counter, count)
            return seqs, items
        if fn is zip:
            return self._zipped(it, target, s, scope)
        if fn is reversed:
            seqs = [self._iterated(it.args[0], s, scope)]
            return seqs, [(target, seqs[0])]
        if isinstance(it, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            seqs = [self._iterated(it, s, scope)]
            return seqs, [(target, seqs[0])]
        raise self.error("a for loop over this iterable", it, scope,
                         "iterate over range(...), an array, enumerate(...) or zip(...)")

    def _zipped(self, call, target, s, scope):
        """``zip(a, b)`` unpacked into ``target`` (``x, y``): its sequences, and
        (target, sequence) for each item."""
        seqs = [self._iterated(a, s, scope) for a in call.args]
        if not (isinstance(target, ast.Tuple) and len(target.elts) == len(seqs)):
            raise self.error("zip() whose target does not unpack every sequence",
                             target, scope)
        return seqs, list(zip(target.elts, seqs))

    def _iterated(self, e, s, scope):
        """The sequence a loop iterates over, as the loop found it: Python's iterator
        holds the object, so a body that rebinds the name (``p = p * 2``) still
        iterates over the old array.  (``p += ...`` changes that object in place,
        and the iterator sees it: then the name is read as it is.)"""
        seq = self.as_name(self.lower_expr(e, scope), s, scope)
        if isinstance(e, ast.Name) and e.id in _rebound_in(s.body):
            seq = self.out.temp(s, seq, scope)
        return seq

    def _temp_in(self, stmts, s, expr):
        name = self.names.fresh("_t")
        stmts.append(ir.Assign(s.lineno, name, expr))
        return ast.Name(name)

    def reversed_range(self, s, scope, start, stop, step):
        n = self.out.temp(s, ast.Call(ast.Name("trip_count"), [start, stop, step], []), scope,
                          callee=trip_count)
        last = self.out.temp(s, ast.BinOp(n, ast.Sub(), ast.Constant(1)), scope)
        off = self.out.temp(s, ast.BinOp(last, ast.Mult(), step), scope)
        new_start = self.out.temp(s, ast.BinOp(start, ast.Add(), off), scope)
        new_stop = self.out.temp(s, ast.BinOp(start, ast.Sub(), step), scope)
        new_step = self.out.temp(s, ast.UnaryOp(ast.USub(), step), scope)
        return new_start, new_stop, new_step

    def lower_while(self, s, scope):
        line = self.out.line(s, scope)
        loop = self._new_loop()
        test, cond = self.out.collect(lambda: self.as_name(self.lower_expr(s.test, scope), s, scope))
        for st in cond:
            self.out.emit(st)
        with self.control_block(scope, s):
            body, used_flags = self._loop_body(s, scope, loop, [])
            # Re-evaluate the condition at the end of each iteration into the same name.
            _, cond2 = self.out.collect(lambda: self._retest(s, scope, test.id))
        node = ir.While(line, test.id, cond2, [])
        self._finish_loop(s, scope, loop, node, body, used_flags)

    def _retest(self, s, scope, name):
        prim = self.lower_primitive(s.test, scope)
        self.out.emit(ir.Assign(self.out.line(s, scope), name, prim.expr, callee=prim.callee,
                                method=prim.method))


def _rebound_in(stmts) -> set:
    """Names a block binds to a new value (not ``+=``, which updates in place), in
    its own scope (a nested def's locals are its own)."""
    out = set()
    for node in (n for st in stmts for n in walk_same_scope(st)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.For, ast.NamedExpr)) else []
        for t in targets:
            # Names bound, not those read inside a target (``p[j] = ...`` binds no name).
            out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
    return out


def _checkpointed_parts(call):
    """``(iterable, every)`` of a call ``checkpointed(iterable, every)`` (``every``
    None when not given), or ``(None, None)`` for other arguments."""
    args = list(call.args) + [k.value for k in call.keywords if k.arg == "every"]
    if not call.args or len(args) > 2 or any(k.arg != "every" for k in call.keywords):
        return None, None
    return call.args[0], (args[1] if len(args) == 2 else None)
