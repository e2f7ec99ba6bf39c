"""Which temporaries the reverse sweep computes again instead of saving."""
from __future__ import annotations

import ast

from ..core import ir
from ..core.kinds import Kind, kind_of_value


def find_cheap(stmts, control, sites, kinds, array_reads: bool,
               value_reads=None) -> dict:
    """Temporaries to compute again in the reverse sweep: ``{name: expression}``.

    Float temporaries made by one arithmetic operation (``_t = a * x``) or,
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
    (``unbroadcast``; not in ``value_reads``), which an in-place write keeps."""
    written = {s.array for s in ir.walk(stmts) if isinstance(s, ir.SetItem)}
    value_reads = set() if value_reads is None else value_reads

    def cheap(target, e) -> bool:
        scalar = kinds.get(target) == Kind(0, "f")
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

    def visit(block):
        for k, st in enumerate(block):
            for sub in st.blocks():
                visit(sub)
            if not (isinstance(st, ir.Assign) and st.target.startswith("_t")
                    and sites.get(st.target) == 1 and st.target not in control
                    and cheap(st.target, st.expr)):
                continue
            operands = ir.atom_names(st.expr)
            later = [j for j in range(k + 1, len(block))
                     if st.target in ir.operands(block[j])]
            if not later or len(later) != uses.get(st.target, 0):
                continue
            # The reverse sweep recomputes before a use's adjoint, when the use's
            # own target still holds its new value: it must not be an operand.
            if any(isinstance(block[j], ir.Assign) and block[j].target in operands
                   for j in later):
                continue
            between = block[k + 1:later[-1]]
            assigned = {t.target for t in ir.walk(between) if isinstance(t, ir.Assign)} | \
                {t.var for t in ir.walk(between) if isinstance(t, ir.For)}
            if not operands & assigned and not any(t.blocks() for t in between):
                found[st.target] = st.expr
    visit(stmts)
    return found


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
