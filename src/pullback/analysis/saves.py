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

from dataclasses import dataclass, field

from ..core import ir


@dataclass
class SavePlan:
    sites: set = field(default_factory=set)        # id(stmt) of assignments that must save
    undefined: set = field(default_factory=set)    # names saved where they may be unassigned


@dataclass(frozen=True)
class _State:
    read: frozenset = frozenset()        # read by an adjoint since last assigned
    unset: frozenset = frozenset()       # maybe not assigned yet

    def merge(self, other: "_State") -> "_State":
        return _State(self.read | other.read, self.unset | other.unset)


def plan(body, params, names, reads_at, loop_reads) -> SavePlan:
    """``reads_at[id(stmt)]``: names an Assign/SetItem's adjoint reads (its own
    target meaning its result); ``loop_reads[id(stmt)]``: names read at an
    If/For/While (condition, bounds, trip count).  ``names``: every local."""
    out = SavePlan()

    def assign(state, name, site):
        if name in state.read:
            out.sites.add(site)
            if name in state.unset:
                out.undefined.add(name)
        return _State(state.read - {name}, state.unset - {name})

    def read(state, names_read):
        return _State(state.read | frozenset(names_read), state.unset)

    def block(stmts, state):
        for s in stmts:
            state = stmt(s, state)
        return state

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

    def stmt(s, state):
        if isinstance(s, ir.Assign):
            reads = reads_at.get(id(s), set())
            state = read(state, reads - {s.target})
            state = assign(state, s.target, id(s))
            return read(state, reads & {s.target})
        if isinstance(s, ir.SetItem):
            return read(state, reads_at.get(id(s), set()))
        if isinstance(s, ir.If):
            state = read(state, loop_reads.get(id(s), set()))
            return block(s.body, state).merge(block(s.orelse, state))
        if isinstance(s, ir.For):
            # Saving the loop variable once, before the loop, is enough: the
            # reverse loop sets it afresh each iteration.
            unset = s.var in state.unset
            state = assign(state, s.var, id(s))
            if unset:       # a loop that runs zero times leaves it unassigned
                state = _State(state.read, state.unset | {s.var})

            def body(st):
                st = _State(st.read - {s.var}, st.unset - {s.var})
                return block(s.body, st)
            state = loop(state, body)
            # Reads of the loop variable in the body see values the reverse loop
            # sets itself; after the loop only later reads count.
            state = _State(state.read - {s.var}, state.unset)
            return read(state, loop_reads.get(id(s), set()))
        if isinstance(s, ir.While):
            state = loop(state, lambda st: block(s.cond, block(s.body, st)))
            return read(state, loop_reads.get(id(s), set()))
        return state

    block(body, _State(frozenset(), frozenset(set(names) - set(params))))
    return out
