"""Which assignments must save the value they overwrite.

The reverse sweep reads some primal values (a multiplication's operands, an
index, a branch condition).  When it reaches a statement, every later
assignment has been undone, so the variables hold what they held right after
that statement ran in the forward sweep — provided that each assignment that
destroyed a value the reverse sweep reads saved it first.

An assignment to ``v`` destroys a value the reverse sweep needs exactly when
some statement since ``v``'s previous assignment has an adjoint that reads
``v``.  A forward pass over the structured program tracks, per variable, "read
by an adjoint since last assigned" (on any path), and marks the assignments
that find it set.  So the accumulator of an inner loop (``yi += A[i, j] *
x[j]``) saves nothing, although the statement after the loop reads ``yi``;
the assignment that resets ``yi`` before the next inner loop saves one value.

An in-place write (``u[1:-1] = ...``) is judged the same way against reads of
its array: a heat step, linear in ``u``, saves no rows.  A local that holds one
value for the whole call (:func:`invariant`, ``c = h / 6.0`` in a loop) is never
saved: assigning it again rewrites the value it already holds.

Invariant (what makes dropping a save safe): an assignment to ``v`` saves
nothing only when, on every path from ``v``'s previous assignment to it
(through loop back edges, nested loops and early exits alike), no adjoint or
loop header of the reverse sweep reads ``v``, or when ``v`` holds one value for
the whole call.  Both rest on the program's writes being exactly its
statements' ``writes()``: the forward sweep rebinds nothing else (the
transform checks it), and loop bookkeeping, such as the iteration counter of a
loop left early, is an IR statement of its own.  ``plan(..., flow=False)`` is
the reference: every overwrite of a name some adjoint reads saves.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..core import ir
from ..core.runtime import trip_count


@dataclass(frozen=True)
class SavePlan:
    sites: frozenset         # sids of the assignments, in-place writes and For loops that must save
    undefined: frozenset     # names saved where they may be unassigned


@dataclass(frozen=True)
class _State:
    read: frozenset = frozenset()        # read by an adjoint since last assigned
    unset: frozenset = frozenset()       # maybe not assigned yet
    bound: frozenset = frozenset()       # maybe assigned already

    def merge(self, other: "_State") -> "_State":
        return _State(self.read | other.read, self.unset | other.unset, self.bound | other.bound)


def plan(body, params, names, reads_at, loop_reads, flow=True) -> SavePlan:
    """``reads_at[sid]``: names an Assign/SetItem's adjoint reads (its own
    target meaning its result); ``loop_reads[sid]``: names read at an
    If/For/While (condition, bounds, trip count).  ``names``: every local.

    ``flow=False`` gives the reference plan: every assignment that may overwrite
    a value of a name that any adjoint or loop header reads saves, and every
    in-place write into such an array, wherever the read is (no "read since last
    assigned", no invariant locals)."""
    everything = None
    if not flow:
        everything = frozenset().union(*reads_at.values(), *loop_reads.values())
    planner = _Planner(reads_at, loop_reads,
                       invariant(body, params) if flow else frozenset(), everything)
    planner.block(body, _State(frozenset(), frozenset(set(names) - set(params)),
                               frozenset(params)))
    return SavePlan(frozenset(planner.sites), frozenset(planner.undefined))


def invariant(body, params) -> frozenset:
    """Locals (not parameters) that hold one value for the whole call once
    assigned: assigned at one site, by arithmetic on constants, on parameters
    never rebound nor written in place, on their shapes, and on other such locals
    (``c = h / 6.0`` in a loop), or by ``trip_count`` or ``len`` of such values
    (the trip count of ``for k in range(3)`` nested in a loop).  Assigning one
    again overwrites a value with itself: no save.

    Invariant: "one site" counts every rebinding of the name, so ``writes()`` of
    the statements must declare all of them (a counter ``n = 0`` that a loop
    counts up is assigned twice: ``n = n + 1`` is in the loop's body)."""
    sites, written = {}, set()
    for s in ir.walk(body):
        if isinstance(s, ir.SetItem):
            written.add(s.array)
        for n in s.writes():
            sites[n] = sites.get(n, 0) + 1
    fixed = {p for p in params if p not in sites and p not in written}

    def arithmetic(e) -> bool:
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float))
        if isinstance(e, ast.Name):
            return e.id in fixed
        if isinstance(e, ast.BinOp):
            return arithmetic(e.left) and arithmetic(e.right)
        if isinstance(e, ast.Attribute):        # a shape: x.shape, x.ndim
            return e.attr in ("shape", "ndim", "size") and arithmetic(e.value)
        if isinstance(e, ast.Subscript):        # an item of a shape: _t1[0]
            return isinstance(e.slice, ast.Constant) and arithmetic(e.value)
        return isinstance(e, ast.UnaryOp) and arithmetic(e.operand)

    def holds_one_value(s) -> bool:
        if isinstance(s.expr, ast.Call):        # a trip count or a length of such values
            return s.callee in (trip_count, len) and not s.expr.keywords \
                and all(arithmetic(a) for a in s.expr.args)
        return arithmetic(s.expr)

    found, grew = set(), True
    while grew:
        grew = False
        for s in ir.walk(body):
            if isinstance(s, ir.Assign) and s.target not in fixed and s.target not in params \
                    and sites[s.target] == 1 and s.target not in written \
                    and holds_one_value(s):
                fixed.add(s.target)
                found.add(s.target)
                grew = True
    return frozenset(found)


class _Planner:
    def __init__(self, reads_at, loop_reads, invariant, everything=None):
        self.reads_at, self.loop_reads, self.invariant = reads_at, loop_reads, invariant
        self.everything = everything        # the reference plan: names read anywhere
        self.sites, self.undefined = set(), set()

    def needed(self, state, name) -> bool:
        """Whether the value ``name`` holds may still be read by an adjoint."""
        if self.everything is not None:
            return name in self.everything and name in state.bound
        return name in state.read and name not in self.invariant

    def assign(self, state, name, site):
        if self.needed(state, name):
            self.sites.add(site)
            if name in state.unset:
                self.undefined.add(name)
        return _State(state.read - {name}, state.unset - {name}, state.bound | {name})

    @staticmethod
    def read(state, names_read):
        return _State(state.read | frozenset(names_read), state.unset, state.bound)

    def block(self, stmts, state):
        for s in stmts:
            state = ir.dispatch(_STEP, s)(self, s, state)
        return state

    @staticmethod
    def loop(state, body):
        """The state after a loop: iterate the body over its back edge to a fixed point."""
        head = state
        for _ in range(100):
            after = body(head)
            new = head.merge(after)
            if new == head:
                break
            head = new
        return head

    def step_assign(self, s, state):
        reads = self.reads_at.get(s.sid, set())
        state = self.read(state, reads - {s.target})
        state = self.assign(state, s.target, s.sid)
        return self.read(state, reads & {s.target})

    def step_setitem(self, s, state):
        # An in-place write destroys what an earlier adjoint reads, like an
        # assignment; it leaves the rest of the array, so the array stays read.
        if self.needed(state, s.array):
            self.sites.add(s.sid)
        return self.read(state, self.reads_at.get(s.sid, set()))

    def step_if(self, s, state):
        state = self.read(state, self.loop_reads.get(s.sid, set()))
        return self.block(s.body, state).merge(self.block(s.orelse, state))

    def step_for(self, s, state):
        # Saving the loop variable once, before the loop, is enough: the
        # reverse loop sets it afresh each iteration.
        unset = s.var in state.unset
        state = self.assign(state, s.var, s.sid)
        if unset:       # a loop that runs zero times leaves it unassigned
            state = _State(state.read, state.unset | {s.var}, state.bound)

        def body(st):
            st = _State(st.read - {s.var}, st.unset - {s.var}, st.bound | {s.var})
            return self.block(s.body, st)
        state = self.loop(state, body)
        # Reads of the loop variable in the body see values the reverse loop
        # sets itself; after the loop only later reads count.
        state = _State(state.read - {s.var}, state.unset, state.bound)
        return self.read(state, self.loop_reads.get(s.sid, set()))

    def step_while(self, s, state):
        state = self.loop(state, lambda st: self.block(s.cond, self.block(s.body, st)))
        return self.read(state, self.loop_reads.get(s.sid, set()))

    def step_return(self, s, state):
        return state


_STEP = ir.table("saves", {
    ir.Assign: _Planner.step_assign, ir.SetItem: _Planner.step_setitem, ir.If: _Planner.step_if,
    ir.For: _Planner.step_for, ir.While: _Planner.step_while, ir.Return: _Planner.step_return})
