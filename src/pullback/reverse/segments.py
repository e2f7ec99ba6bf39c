"""Checkpointed loops in the sweeps: the code of a loop run in segments
(:mod:`pullback.analysis.checkpoints` says what each segment carries in).

The forward sweep runs the loop without its pushes, segment by segment,
snapshotting the carried names at each segment's start; the reverse sweep, last
segment first, restores them, runs the segment again with its pushes (``taped``,
the loop as :mod:`.sweeps` writes it) and then its reverse (``reversed_body``).
"""
from __future__ import annotations

import ast
import copy

from ..core import ir
from ..core.runtime import segment_length, snapshot, trip_count
from .ops import LoopInfo, Push, Reserve, ReverseFor, assign, call, expr_stmt, fold


def _segment(s: ir.For, first: ast.expr, trips: ast.expr) -> ast.expr:
    """``range(...)`` over the ``trips`` iterations of ``s`` from iteration ``first``
    (counted from 0)."""
    def at(k):
        return fold(ast.BinOp(copy.deepcopy(s.start), ast.Add(),
                              ast.BinOp(k, ast.Mult(), copy.deepcopy(s.step))))
    return call("range", at(first), at(ast.BinOp(first, ast.Add(), trips)),
                copy.deepcopy(s.step))


def forward(tr, s: ir.For, taped) -> list:
    """A checkpointed loop (:mod:`pullback.analysis.checkpoints`) in the forward sweep:
    no tape, its carried names snapshotted at each segment's start, and the names
    it assigns put aside as they are at loop entry.  A loop that may be left early
    is cut by its range's length and leaves the segments too."""
    seg, names = tr.checkpoints[s.sid], tr.segment_names[s.sid]
    copy_of = tr.helper(snapshot, "snapshot")
    total = ast.Name(s.trips) if s.exit_flag is None else call(
        tr.helper(trip_count, "trip_count"), *(copy.deepcopy(e) for e in (s.start, s.stop, s.step)))
    out = [assign(names.total, total), assign(names.length, call(
        tr.helper(segment_length, "segment_length"), ast.Name(names.total),
        copy.deepcopy(seg.every)))] + _segment_count(names)
    out += [assign(kept, call(copy_of, ast.Name(n))) for n, kept in names.entry.items()]
    out += [assign(lst, ast.List([], ast.Load())) for lst in names.snapshots.values()]
    body = [expr_stmt(call(ast.Attribute(ast.Name(lst), "append", ast.Load()),
                           call(copy_of, ast.Name(n)))) for n, lst in names.snapshots.items()]
    body += _segment_bounds(names)
    body += _untaped(taped(_segment(s, ast.Name(names.first), ast.Name(names.trips)),
                           ast.Name(names.trips)))
    if s.exit_flag is not None:
        body.append(ast.If(ast.Name(s.exit_flag), [ast.Break()], []))
    return out + [ast.For(ast.Name(names.segment, ast.Store()),
                          call("range", ast.Name(names.count)), body, [])]


def _segment_count(names) -> list:
    """``count = (total + length - 1) // length``."""
    return [assign(names.count, ast.BinOp(ast.BinOp(ast.Name(names.total), ast.Add(), ast.BinOp(
        ast.Name(names.length), ast.Sub(), ast.Constant(1))), ast.FloorDiv(),
        ast.Name(names.length)))]


def _segment_bounds(names) -> list:
    """``first = segment * length``, ``trips = min(total - first, length)``."""
    return [assign(names.first, ast.BinOp(ast.Name(names.segment), ast.Mult(),
                                          ast.Name(names.length))),
            assign(names.trips, call("min", ast.BinOp(ast.Name(names.total), ast.Sub(),
                                                      ast.Name(names.first)),
                                     ast.Name(names.length)))]


def _untaped(code: list) -> list:
    """``code`` without its pushes and reservations, at any depth (a copy)."""
    out = []
    for st in code:
        if isinstance(st, (Push, Reserve)):
            continue
        st = copy.copy(st)
        for field in ("body", "orelse"):
            if isinstance(getattr(st, field, None), list):
                setattr(st, field, _untaped(getattr(st, field)))
        out.append(st)
    return out


def reverse(tr, s: ir.For, taped, reversed_body) -> list:
    """A checkpointed loop in the reverse sweep: per segment, last first, its carried
    names restored, the segment run again with its tape, and reversed; then the
    names it assigns as they were at loop entry.  The segments are those of the
    iterations that ran (a loop left early counts them); in each, the exit flag
    starts unset, as it was at the start of every iteration."""
    names = tr.segment_names[s.sid]
    body = [assign(n, call(ast.Attribute(ast.Name(lst), "pop", ast.Load())))
            for n, lst in names.snapshots.items()] + _segment_bounds(names)
    if s.exit_flag is not None:
        body.append(assign(s.exit_flag, ast.Constant(False)))
    again = taped(_segment(s, ast.Name(names.first), ast.Name(names.trips)),
                  ast.Name(names.trips))
    start = fold(ast.BinOp(copy.deepcopy(s.start), ast.Add(),
                           ast.BinOp(ast.Name(names.first), ast.Mult(), copy.deepcopy(s.step))))
    back = [ReverseFor(s.var if ir.var_read_in(s) else None,
                       LoopInfo(start, copy.deepcopy(s.step), names.trips), reversed_body)]
    body += tr.tape.replayed(again, back)
    out = [assign(names.total, ast.Name(s.trips))] + _segment_count(names)
    out.append(ReverseFor(names.segment, LoopInfo(ast.Constant(0), ast.Constant(1), names.count),
                          body, sums=False))
    return out + [assign(n, ast.Name(kept)) for n, kept in names.entry.items()]
