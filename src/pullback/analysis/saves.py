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
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import ir


@dataclass(frozen=True)
class SavePlan:
    sites: frozenset         # sids of the assignments (and For loops) that must save
    undefined: frozenset     # names saved where they may be unassigned


@dataclass(frozen=True)
class _State:
    read: frozenset = frozenset()        # read by an adjoint since last assigned
    unset: frozenset = frozenset()       # maybe not assigned yet

    def merge(self, other: "_State") -> "_State":
        return _State(self.read | other.read, self.unset | other.unset)


def plan(body, params, names, reads_at, loop_reads) -> SavePlan:
    """``reads_at[sid]``: names an Assign/SetItem's adjoint reads (its own
    target meaning its result); ``loop_reads[sid]``: names read at an
    If/For/While (condition, bounds, trip count).  ``names``: every local."""
    planner = _Planner(reads_at, loop_reads)
    planner.block(body, _State(frozenset(), frozenset(set(names) - set(params))))
    return SavePlan(frozenset(planner.sites), frozenset(planner.undefined))


class _Planner:
    def __init__(self, reads_at, loop_reads):
        self.reads_at, self.loop_reads = reads_at, loop_reads
        self.sites, self.undefined = set(), set()

    def assign(self, state, name, site):
        if name in state.read:
            self.sites.add(site)
            if name in state.unset:
                self.undefined.add(name)
        return _State(state.read - {name}, state.unset - {name})

    @staticmethod
    def read(state, names_read):
        return _State(state.read | frozenset(names_read), state.unset)

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
            state = _State(state.read, state.unset | {s.var})

        def body(st):
            st = _State(st.read - {s.var}, st.unset - {s.var})
            return self.block(s.body, st)
        state = self.loop(state, body)
        # Reads of the loop variable in the body see values the reverse loop
        # sets itself; after the loop only later reads count.
        state = _State(state.read - {s.var}, state.unset)
        return self.read(state, self.loop_reads.get(s.sid, set()))

    def step_while(self, s, state):
        state = self.loop(state, lambda st: self.block(s.cond, self.block(s.body, st)))
        return self.read(state, self.loop_reads.get(s.sid, set()))

    def step_return(self, s, state):
        return state


_STEP = ir.table("saves", {
    ir.Assign: _Planner.step_assign, ir.SetItem: _Planner.step_setitem, ir.If: _Planner.step_if,
    ir.For: _Planner.step_for, ir.While: _Planner.step_while, ir.Return: _Planner.step_return})
