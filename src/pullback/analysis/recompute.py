"""Which temporaries the reverse sweep computes again instead of saving.

``plan`` returns a :class:`Recomputation`: the temporaries and their
expressions (:func:`find_cheap`), and what each statement's adjoint then reads
from the forward sweep: a recomputed temporary's operands instead of the
temporary (what the save plan, :mod:`.saves`, must keep).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from types import MappingProxyType

from ..core import ir
from ..core.kinds import Kind, kind_of_value


@dataclass(frozen=True)
class Recomputation:
    exprs: MappingProxyType     # temporary -> its expression, in program order
    reads: frozenset            # the names those expressions read
    stmt_reads: MappingProxyType    # sid -> names its adjoint reads, recomputed ones replaced

    def needed_for(self, names) -> set:
        """``names`` and, through recomputed temporaries among them, what their
        expressions read, transitively."""
        out, todo = set(), list(names)
        while todo:
            n = todo.pop()
            if n not in out:
                out.add(n)
                if n in self.exprs:
                    todo += ir.atom_names(self.exprs[n])
        return out


def plan(stmts, stmt_reads, control, sites, kinds, array_reads: bool, value_reads,
         on=True) -> Recomputation:
    """The temporaries to compute again (:func:`find_cheap`; none when not ``on``)
    and ``stmt_reads`` (sid -> names an adjoint reads) with each recomputed
    temporary replaced by what its expression reads, transitively.

    Invariant: a name is read at a statement in the result exactly when its
    adjoint, or a recomputation it needs, reads it there and it is not itself
    recomputed."""
    exprs = find_cheap(stmts, control, sites, kinds, array_reads, value_reads) if on else {}
    out = Recomputation(MappingProxyType(exprs),
                        frozenset().union(*map(ir.atom_names, exprs.values())),
                        MappingProxyType({}))
    narrowed = {sid: frozenset(out.needed_for(names) - set(exprs))
                for sid, names in stmt_reads.items()}
    return Recomputation(out.exprs, out.reads, MappingProxyType(narrowed))


def find_cheap(stmts, control, sites, kinds, array_reads: bool,
               value_reads=None) -> dict:
    """Temporaries to compute again in the reverse sweep: ``{name: expression}``,
    in program order (one may read another: recompute them in this order).

    Float temporaries made by one arithmetic operation (``_t = a * x``), integer
    ones made by one addition, subtraction or product (an index ``_t = i + 1``), or,
    with ``array_reads`` (the backend's policy: Numba), read from an array that
    never changes (``_t = A[i, j]``; in CPython a saved float pops faster than a
    NumPy element reads, and computes faster).  Each must be read only later in
    its own block, with no operand assigned in between, so that recomputing it
    just before its reader's adjoint gives the value the reader saw.  ``control``:
    names read by conditions and loop bounds; ``sites``: assignments per name.

    With ``array_reads``, also a row or slice by basic indexing (``_t = x[t]``,
    ``_t = u[1:-1]``: a view, which Numba makes without allocating) instead of a
    copy pushed to a list tape every iteration: of an array that never changes, or
    of one written in place when the reverse sweep reads only the temporary's shape
    (``unbroadcast``; not in ``value_reads``), which an in-place write keeps.

    Invariant: the recomputed expression gives, just before each reader's adjoint,
    the value the reader read in the forward sweep.  It holds because the
    temporary is assigned once, read only by later statements of its own block
    (not across a loop or branch), no operand is reassigned between it and its
    last reader and no reader rebinds an operand, and an array it reads is never
    written (or only its shape is read).  Off (``Optimisations.recompute``),
    every such temporary is saved as usual."""
    written = {s.array for s in ir.walk(stmts) if isinstance(s, ir.SetItem)}
    value_reads = set() if value_reads is None else value_reads

    def cheap(target, e, looped) -> bool:
        k = kinds.get(target)
        scalar = k == Kind(0, "f")
        if k == Kind(0, "i") and isinstance(e, ast.BinOp):      # an index: ``i + 1``
            # (outside loops assigned once and never saved: nothing to gain)
            return looped and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult))
        if isinstance(e, (ast.BinOp, ast.UnaryOp)):
            return scalar and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.USub))
        if not (array_reads and isinstance(e, ast.Subscript)
                and isinstance(e.value, ast.Name) and sites.get(e.value.id, 0) <= 1):
            return False
        if scalar and e.value.id not in written:
            return True
        return _basic_view(kinds, target, e) and \
            (e.value.id not in written or target not in value_reads)

    uses = {}
    for st in ir.walk(stmts):
        for n in ir.operands(st):
            uses[n] = uses.get(n, 0) + 1
    found = {}

    def visit(block, looped=False):
        for st in block:
            for sub in st.blocks():
                visit(sub, looped or isinstance(st, (ir.For, ir.While)))
        # Backwards, so that a temporary read by a recomputed one (``_t1 = A[k]``
        # read by ``_t2 = x - _t1``) is judged at the readers of that one: it is
        # recomputed there too, just before them.
        readers = {}        # a chosen temporary's position -> its readers' positions
        for k in range(len(block) - 1, -1, -1):
            st = block[k]
            if isinstance(st, ir.Assign) and st.target.startswith("_t") \
                    and sites.get(st.target) == 1 and st.target not in control \
                    and cheap(st.target, st.expr, looped):
                reached = _readers_if_unchanged(block, k, readers, uses.get(st.target, 0))
                if reached:
                    readers[k] = reached
        for k in sorted(readers):        # program order: a chain is recomputed in this order
            found[block[k].target] = block[k].expr
    visit(stmts)
    return found


def _readers_if_unchanged(block, k, readers, uses) -> set:
    """The positions in ``block`` whose adjoints need ``block[k]``'s temporary
    (its readers, and theirs where those are recomputed too), or an empty set
    when recomputing it there would not give the value they saw: a reader
    outside the block, or an operand assigned on the way."""
    st = block[k]
    later = [j for j in range(k + 1, len(block)) if st.target in ir.operands(block[j])]
    if not later or len(later) != uses:
        return set()
    reached = set(later).union(*(readers[j] for j in later if j in readers))
    operands = ir.atom_names(st.expr)
    # The reverse sweep recomputes before a reader's adjoint, when the reader's
    # own target still holds its new value: it must not be an operand.
    if any(isinstance(block[j], ir.Assign) and block[j].target in operands for j in reached):
        return set()
    between = block[k + 1:max(reached)]
    assigned = {t.target for t in ir.walk(between) if isinstance(t, ir.Assign)} | \
        {t.var for t in ir.walk(between) if isinstance(t, ir.For)}
    if operands & assigned or any(t.blocks() for t in between):
        return set()
    return reached


def _basic_view(kinds, target, e) -> bool:
    """``target = e`` makes an array by basic indexing (a view: no allocation)."""
    k = kinds.get(target)
    if k is None or k.ndim is None or k.ndim <= 0:
        return False
    index = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
    return all(ir.is_basic_index(i, lambda a: kind_of(kinds, a)) for i in index)


def kind_of(kinds, atom) -> Kind:
    if isinstance(atom, ast.Name):
        return kinds.get(atom.id, Kind(None, "o"))
    if isinstance(atom, ast.Constant):
        return kind_of_value(atom.value)
    return Kind(None, "o")
