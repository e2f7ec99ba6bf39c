"""Loop bookkeeping: what the reverse sweep needs to know of each loop and branch,
recorded by ordinary IR statements inserted before kinds are inferred.

* A ``range`` loop's bounds that are not constants are copied into ``_start`` and
  ``_step`` before it, and its trip count into ``_n = trip_count(start, stop, step)``;
  the reverse sweep runs the same indices backwards from them.
* A loop left early (``exit_flag``) and a ``while`` loop count their iterations
  instead: ``_n = 0`` before, ``_n = _n + 1`` first in the body.
* A loop whose body rebinds its own variable loops over a fresh index and assigns
  the variable from it, as an ordinary statement whose overwritten values are saved.
* A branch that rebinds its own condition (a lowered ``a and b``) tests a copy
  taken before it (``_cond``), which the reverse sweep replays.

The stage needs no kinds, only fresh names.  It returns a new IR (statements it
changes are copies; the normalized IR is not edited) with ``For.trips`` and
``While.trips`` naming the counters, and the kinds of the counters and bounds it
introduced, integers by construction (``trip_count`` has no rule to infer them
from).  The other names it introduces get their kinds by inference.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
from dataclasses import dataclass

from ..core import ir
from ..core.kinds import INT
from ..core.names import HelperNames, Helpers, Names
from ..core.runtime import trip_count


@dataclass(frozen=True)
class Bookkept:
    fn: ir.Function         # the IR with the bookkeeping statements
    kinds: dict             # counters and bounds it introduced -> INT
    helpers: HelperNames    # the name the trip counts call trip_count by


def insert_bookkeeping(fn: ir.Function, lookup, calls_as_is=lambda obj: True) -> Bookkept:
    """``fn`` with its loop bookkeeping; ``lookup``: name -> the object the user's
    code sees there (:func:`.resolve.value_lookup`); ``calls_as_is``: the backend's
    (:meth:`.Backend.calls_as_is`), which says whether a helper may be called by the
    user's own global name."""
    book = _Bookkeeping(fn, lookup, calls_as_is)
    body = book.block(fn.body)
    return Bookkept(dataclasses.replace(fn, body=body, names=book.names.used), book.kinds,
                    book.helpers.record())


class _Bookkeeping:
    def __init__(self, fn: ir.Function, lookup, calls_as_is):
        self.names = Names(fn.names)
        assigned = set(fn.params).union(*(s.writes() for s in ir.walk(fn.body)))
        self.helpers = Helpers(self.names, lookup, assigned.__contains__,
                               calls_as_is=calls_as_is)
        self.kinds: dict = {}

    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            out += ir.dispatch(_BOOKKEEPING, s)(self, s)
        return out

    def _if(self, s: ir.If) -> list:
        out = []
        s = copy.copy(s)
        s.body, s.orelse = self.block(s.body), self.block(s.orelse)
        if any(isinstance(t, ir.Assign) and t.target == s.test
               for t in ir.walk(s.body + s.orelse)):
            # The branch rebinds its own condition: replay it from a copy taken when
            # it was tested.
            cond = self.names.fresh("_cond")
            out.append(ir.Assign(s.line, cond, ast.Name(s.test)))
            s.test = cond
        return out + [s]

    def _for(self, s: ir.For) -> list:
        out = []
        s = copy.copy(s)
        s.body = self.block(s.body)
        if any(s.var in t.writes() for t in ir.walk(s.body)):
            # The body rebinds the loop variable (an inner loop over the same name, an
            # assignment), so at the end of an iteration it no longer holds the index
            # the reverse loop sets.
            index = self.names.fresh(f"_{s.var.lstrip('_')}_")
            s.body = [ir.Assign(s.line, s.var, ast.Name(index))] + s.body
            s.var = index
        lo, st = s.start, s.step
        if not isinstance(lo, ast.Constant):
            lo = ast.Name(self.names.fresh("_start"))
            out.append(ir.Assign(s.line, lo.id, s.start))
        if not isinstance(st, ast.Constant):
            st = ast.Name(self.names.fresh("_step"))
            out.append(ir.Assign(s.line, st.id, s.step))
        n = self.names.fresh("_n")
        if s.exit_flag is None:
            count = ast.Call(ast.Name(self.helpers.name(trip_count, "trip_count")),
                             [lo, s.stop, st], [])
            out.append(ir.Assign(s.line, n, count, callee=trip_count))
        else:       # left early: count the iterations as they run
            out.append(ir.Assign(s.line, n, ast.Constant(0)))
            s.body = [_count(s.line, n)] + s.body
        s.start, s.step = lo, st
        s.trips = n
        for name in [n] + [a.id for a in (lo, st) if isinstance(a, ast.Name)]:
            self.kinds[name] = INT
        return out + [s]

    def _while(self, s: ir.While) -> list:
        s = copy.copy(s)
        s.body = self.block(s.body)
        s.cond = self.block(s.cond)
        n = self.names.fresh("_n")
        s.trips = n
        s.body = [_count(s.line, n)] + s.body
        self.kinds[n] = INT
        return [ir.Assign(s.line, n, ast.Constant(0)), s]


def _count(line, n) -> ir.Assign:
    """``n = n + 1``: one more iteration, an IR statement like any other, so that
    every analysis sees that the loop rebinds its counter."""
    return ir.Assign(line, n, ast.BinOp(ast.Name(n), ast.Add(), ast.Constant(1)))


_BOOKKEEPING = ir.table("loop bookkeeping", {
    ir.Assign: lambda book, s: [s], ir.SetItem: lambda book, s: [s],
    ir.Return: lambda book, s: [s],
    ir.If: _Bookkeeping._if, ir.For: _Bookkeeping._for, ir.While: _Bookkeeping._while})
