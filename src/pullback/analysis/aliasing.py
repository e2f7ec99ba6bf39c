"""Refuse in-place writes into an array that may share memory with another name."""
from __future__ import annotations

import ast

from ..core import ir
from ..core.errors import UnsupportedSyntaxError
from ..rules import registry


def check_aliasing(stmts, kind, location) -> None:
    """Refuse in-place writes into an array that may share memory with another
    name: the write would change the other array behind the transform's back
    (or the caller's array, which we never mutate).

    ``stmts`` is numbered (sids in program order); ``kind(atom)`` gives an
    atom's kind and ``location(line)`` the user's source location."""
    loops = {}           # sid -> sids of the loops around it

    def visit(block, enclosing):
        for st in block:
            loops[st.sid] = enclosing
            for sub in st.blocks():
                visit(sub, enclosing | ({st.sid} if isinstance(st, (ir.For, ir.While))
                                        else frozenset()))
    visit(stmts, frozenset())
    sets = [st for st in ir.walk(stmts) if isinstance(st, ir.SetItem)]
    for s in ir.walk(stmts):
        if not isinstance(s, ir.Assign):
            continue
        # Writes into s.target that may run while it still aliases another array.
        later = [w for w in sets if w.array == s.target and (
            w.sid > s.sid or loops[w.sid] & loops[s.sid])]
        if not later:
            continue
        written = {s.target: later[0]}
        e, source = s.expr, None
        if isinstance(e, ast.Name) and kind(e).ndim != 0:
            source = f"{s.target} = {e.id} makes no copy"
        elif isinstance(e, ast.Subscript) and kind(ast.Name(s.target)).ndim != 0:
            source = f"{s.target} = {ast.unparse(e)} is a view"
        elif isinstance(e, ast.Attribute) and e.attr in ("T", "mT", "real", "imag"):
            source = f"{s.target} = {ast.unparse(e)} is a view"
        elif isinstance(e, ast.Call) and _may_be_view(s):
            source = f"{s.target} = {ast.unparse(e)} may be a view"
        if source is not None:
            w = written[s.target]
            raise UnsupportedSyntaxError(
                f"a write into {w.array!r}, which shares memory with another array "
                f"({source})", location(w.line),
                f"write `{s.target} = {ast.unparse(e)}.copy()` to work on a copy, or "
                "write through the original array")


def _may_be_view(s: ir.Assign) -> bool:
    """The call's primitive (or method) is registered as possibly returning a view."""
    fn = registry.method(s.method) if s.method is not None else s.callee
    rule = registry.lookup(fn) if fn is not None else None
    return rule is not None and rule.view
