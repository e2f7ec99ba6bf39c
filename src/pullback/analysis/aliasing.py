"""Refuse in-place writes into an array that may share memory with another name."""
from __future__ import annotations

import ast

import numpy as np

from ..core import ir
from ..core.errors import UnsupportedSyntaxError

_VIEW_METHODS = {"reshape", "ravel", "transpose", "view", "squeeze", "swapaxes", "diagonal"}
_VIEW_FUNCTIONS = {np.reshape, np.ravel, np.transpose, np.squeeze, np.swapaxes, np.diagonal,
                   np.expand_dims, np.broadcast_to, np.asarray, np.moveaxis}


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
        elif isinstance(e, ast.Call) and (s.method in _VIEW_METHODS
                                          or s.callee in _VIEW_FUNCTIONS):
            source = f"{s.target} = {ast.unparse(e)} may be a view"
        if source is not None:
            w = written[s.target]
            raise UnsupportedSyntaxError(
                f"a write into {w.array!r}, which shares memory with another array "
                f"({source})", location(w.line),
                f"write `{s.target} = {ast.unparse(e)}.copy()` to work on a copy, or "
                "write through the original array")
