"""Where each variable is assigned and read: the facts the adjoints' storage rests on.

``find`` counts, once, each name's assignment sites (an Assign's target, a For
loop's variable; a parameter counts one, at the top level), which of them are
assigned inside a loop or at the function's top level, which are read by a
statement inside a loop, and which are read by exactly one later statement of
the block that assigns them (``single_use``).  ``local_temps`` narrows, once
the adjoints are known, the temporaries whose adjoint is one contribution.

Invariant (what ``single_use`` promises): a name in it is assigned at one
site, not a parameter, and read by exactly one statement, later in the same
block; the reverse sweep reaches that reader's adjoint, which sets the name's
adjoint, before the adjoint of its definition.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from ..core import ir


@dataclass(frozen=True)
class Sites:
    count: MappingProxyType      # name -> assignment sites (a parameter counts one)
    in_loop: frozenset           # assigned inside a loop
    top_level: frozenset         # assigned at the function's top level, or a parameter
    read_in_loop: frozenset      # an operand of a statement inside a loop (ir.operands)
    single_use: frozenset        # assigned once, read by one later statement of its block

    def __contains__(self, name) -> bool:
        return name in self.count


def find(body, params) -> Sites:
    """The sites of a numbered program ``body`` with parameters ``params``."""
    count, in_loop, top_level = {}, set(), set()

    def site(name, looped, top):
        count[name] = count.get(name, 0) + 1
        if looped:
            in_loop.add(name)
        if top:
            top_level.add(name)

    def visit(stmts, looped, top):
        for s in stmts:
            if isinstance(s, ir.Assign):
                site(s.target, looped, top)
            elif isinstance(s, ir.For):
                site(s.var, True, False)
            nested = looped or isinstance(s, (ir.For, ir.While))
            for block in s.blocks():
                visit(block, nested, False)
    visit(body, False, True)
    read_in_loop = {n for loop in ir.walk(body) if isinstance(loop, (ir.For, ir.While))
                    for block in loop.blocks() for s in ir.walk(block) for n in ir.operands(s)}
    for p in params:
        site(p, False, True)
    return Sites(MappingProxyType(count), frozenset(in_loop), frozenset(top_level),
                 frozenset(read_in_loop), _single_use(body, params, count))


def _uses(body) -> dict:
    """Name -> how many statements read it."""
    uses = {}
    for s in ir.walk(body):
        for n in ir.operands(s):
            uses[n] = uses.get(n, 0) + 1
    return uses


def _single_use(body, params, count) -> frozenset:
    """Variables assigned once and read by exactly one later statement of the
    same block (see the module's invariant)."""
    uses, params, found = _uses(body), set(params), set()

    def visit(block):
        defined = set()
        for s in block:
            if isinstance(s, (ir.Assign, ir.SetItem)):
                found.update(n for n in ir.operands(s) & defined if uses[n] == 1)
            if isinstance(s, ir.Assign) and count.get(s.target) == 1 and s.target not in params:
                defined.add(s.target)
            for sub in s.blocks():
                visit(sub)
    visit(body)
    return frozenset(found)


def local_temps(body, sites: Sites, active, contribs, updated_in_place, params=()) -> frozenset:
    """Adjoints that are exactly one contribution, assigned, never zeroed or
    accumulated (``contribs``: contributions per name; none of them updated item
    by item, ``updated_in_place``):

    * temporaries defined once and read once in the same block;
    * parameters in ``params`` (the differentiated ones whose adjoint may be an
      array) read by one statement of the function's top level, never assigned:
      that statement's adjoint runs once, unconditionally (the normalizer puts
      whatever follows an early exit under a guard), so its one contribution is
      the whole gradient.  It spares a zero array and an addition the size of
      the argument (Numba gives every other array adjoint a zeroed buffer).
    """
    uses, found = _uses(body), set()

    def visit(block):
        defined = {}
        for s in block:
            if isinstance(s, ir.Assign) and s.target.startswith("_t") \
                    and sites.count.get(s.target) == 1 and s.target in active:
                defined[s.target] = s
            for n in ir.operands(s) if isinstance(s, (ir.Assign, ir.SetItem)) else ():
                if n in defined and uses.get(n) == 1 and contribs.get(n) == 1 \
                        and n not in updated_in_place:
                    found.add(n)
            for sub in s.blocks():
                visit(sub)
    visit(body)
    top_reads = {n for s in body if isinstance(s, (ir.Assign, ir.SetItem)) for n in ir.operands(s)}
    found.update(p for p in params if p in active and p in top_reads and uses.get(p) == 1
                 and sites.count.get(p) == 1 and contribs.get(p) == 1
                 and p not in updated_in_place)
    return frozenset(found)
