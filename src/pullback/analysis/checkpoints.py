"""Checkpointed loops: what a loop marked ``checkpointed`` keeps to run its segments again.

A loop ``for t in checkpointed(range(n), every)`` (:mod:`pullback.core.checkpointing`)
is cut into segments of ``every`` iterations.  The forward sweep runs it without
a tape, and at the start of each segment snapshots its *carried* names; the
reverse sweep, last segment first, restores them, runs the segment again with
its tape, and reverses that segment (:mod:`pullback.reverse.sweeps`).

``find`` returns, per marked loop, a frozen :class:`Segmented`:

* ``carried``: the names the body assigns (or writes into) and may read, in an
  iteration, before it assigns them: what flows from one iteration to the next;
* ``entry``: the other names the body assigns that have a value when the loop
  starts: the segments leave them as the last segment run left them, so their
  value at loop entry, which code before the loop may read in the reverse
  sweep, is put back after the last segment is reversed;
* ``reads``: the names the loop reads from outside it.

Invariant (why a segment run again computes what the first run computed, so
each adjoint reads what it read without checkpoints):

* at a segment's start every carried name holds its snapshot, and a name the
  body assigns but does not carry is assigned in the iteration before any read
  of it there;
* a name the loop reads and does not assign holds, when the reverse sweep runs
  the segments, what it held during the loop: the transform adds ``reads`` to
  the names read at the loop's header, so the save plan saves and restores it
  around a later assignment, and an array among them is a value read, whose
  later in-place writes are undone first;
* snapshots are copies, and an array the loop writes into shares its memory
  with no name from outside the loop nor carried by it (a view, a tuple holding
  it): such a name would still see the array the restored copy replaced.  A view
  made in the body before it is read there is made again from the copy;
* the loop is in no other loop (its snapshots are taken once per call).  A loop
  left early (``break``, ``return``) is cut by its range's length; the segments
  the reverse sweep runs again are those of the iterations that ran, and its
  exit flag was unset at the start of each of them.

A marked loop that breaks any of these is refused at its line.  A marked loop
the transform differentiates without a tape (:mod:`.independent`) keeps none,
and is not cut.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from types import MappingProxyType

from ..core import ir
from . import aliasing


@dataclass(frozen=True)
class Segmented:
    """A loop run in segments: see the module docstring."""
    every: ast.expr            # iterations per segment, an atom (None: the square root)
    carried: tuple             # names snapshotted at each segment's start, sorted
    entry: tuple               # names put back to their value at loop entry, sorted
    reads: frozenset           # names read from outside the loop


NONE = MappingProxyType({})


def find(body, params, kind, untaped, error) -> MappingProxyType:
    """``{sid: Segmented}`` for the loops marked ``checkpointed`` in ``body`` (the
    function's numbered IR), leaving out those in ``untaped`` (loops that keep no
    tape).  ``kind(atom)`` gives an atom's kind; ``error(stmt, what, hint)`` makes
    the refusal located at ``stmt``."""
    if not any(isinstance(s, ir.For) and s.checkpoint is not None for s in ir.walk(body)):
        return NONE
    out = {}
    shared = aliasing.sharing(body, kind, params)
    _visit(body, shared, kind, untaped, error, out, defined=set(params), in_loop=False)
    return MappingProxyType(out)


def _visit(block, shared, kind, untaped, error, out, defined, in_loop):
    """Walk ``block``; ``defined``: the names surely bound where it starts."""
    defined = set(defined)
    for s in block:
        if isinstance(s, ir.For) and s.checkpoint is not None:
            if in_loop:
                raise error(s, "a loop marked checkpointed() inside another loop",
                            "mark the outermost loop only")
            if s.sid not in untaped:
                out[s.sid] = _segmented(s, shared, kind, error, defined)
        for sub in s.blocks():
            _visit(sub, shared, kind, untaped, error, out, defined,
                   in_loop or isinstance(s, (ir.For, ir.While)))
        if isinstance(s, ir.Assign):
            defined.add(s.target)


def _segmented(loop: ir.For, shared, kind, error, defined) -> Segmented:
    written = _written(loop.body)
    carried = _exposed(loop.body, set(), set()) & written
    for name in sorted(carried - defined):
        raise error(loop, f"a loop marked checkpointed() that carries `{name}` from one "
                    "iteration to the next without a value before the loop",
                    f"assign `{name}` before the loop")
    in_place = {w.array for w in aliasing.in_place_writes(loop.body, kind)}
    # A view (or tuple) made in the body each iteration is made again from the
    # restored array; one from outside, or carried, would still see the old one.
    assigned = {t.target for t in ir.walk(loop.body) if isinstance(t, ir.Assign)}
    held = set().union(*(bases for name, bases in shared.items()
                         if name not in assigned or name in carried))
    for name in sorted(held & in_place):
        raise error(loop, f"a loop marked checkpointed() that writes into `{name}`, which "
                    "another name (a view or a tuple) shares memory with",
                    f"work on a copy, `{name} = {name}.copy()`, before the loop")
    read = set().union(*(ir.mentions(t) for t in ir.walk(loop.body))) | ir.atom_names(
        loop.start) | ir.atom_names(loop.stop) | ir.atom_names(loop.step) | ir.atom_names(
        loop.checkpoint)
    return Segmented(loop.checkpoint, tuple(sorted(carried)),
                     tuple(sorted((written - carried) & defined)),
                     frozenset(read - written - {loop.var}))


def _written(stmts) -> set:
    """The names ``stmts`` assign or write into, nested blocks included."""
    out = set()
    for t in ir.walk(stmts):
        out |= t.writes()
        if isinstance(t, ir.SetItem):
            out.add(t.array)
    return out


def _exposed(block, assigned: set, out: set) -> set:
    """Adds to ``out`` the names ``block`` may read before assigning them, given
    the names ``assigned`` surely are when it starts (``assigned`` grows with
    the block).  A write into an array reads it (its other elements stay)."""
    for s in block:
        out |= s.reads() - assigned
        if isinstance(s, ir.If):
            body, orelse = set(assigned), set(assigned)
            _exposed(s.body, body, out)
            _exposed(s.orelse, orelse, out)
            assigned |= body & orelse
        elif isinstance(s, (ir.For, ir.While)):
            inner = set(assigned) | s.writes()      # a loop may run no iteration
            for sub in s.blocks():
                _exposed(sub, set(inner), out)
        else:
            assigned |= s.writes()
    return out

