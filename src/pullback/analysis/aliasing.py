"""Refuse in-place writes into an array that may share memory with another name."""
from __future__ import annotations

import ast

import numpy as np

from ..core import ir
from ..core.errors import UnsupportedSyntaxError

_VIEW_METHODS = {"reshape", "ravel", "transpose", "view", "squeeze", "swapaxes", "diagonal"}
_VIEW_FUNCTIONS = {np.reshape, np.ravel, np.transpose, np.squeeze, np.swapaxes, np.diagonal,
                   np.expand_dims, np.broadcast_to, np.asarray, np.moveaxis}


def _sole_definition(name, copy_stmt, stmts, params):
    """The one assignment of ``name`` when ``copy_stmt`` (``x = name``) is its only
    use, else None.  Then ``x`` is the array's only name from there on: ``x = x *
    0.5`` computes into a temporary and renames it, and the array is a view only if
    the temporary's own definition makes one."""
    if name in params:
        return None
    readers = [st for st in ir.walk(stmts) if name in st.reads()]
    sites = [st for st in ir.walk(stmts) if name in st.writes()]
    if readers == [copy_stmt] and len(sites) == 1 and isinstance(sites[0], ir.Assign):
        return sites[0]
    return None


def view_made_by(s, kind, stmts, params):
    """``(base, how, expr)`` when the assignment ``s`` makes ``s.target`` share memory
    with the array named ``base``: ``s.target = expr`` ``how`` ("is a view", ...)
    says why, for messages.  None when ``s`` makes a new array."""
    e = s.expr
    if isinstance(e, ast.Name) and kind(e).ndim != 0:
        d = _sole_definition(e.id, s, stmts, params)
        if d is None:
            return e.id, "makes no copy", e
        return view_made_by(ir.Assign(d.line, s.target, d.expr, d.callee, d.method), kind,
                            stmts, params)
    if isinstance(e, ast.Subscript) and kind(ast.Name(s.target)).ndim != 0:
        return _root(e.value), "is a view", e
    if isinstance(e, ast.Attribute) and e.attr in ("T", "mT", "real", "imag"):
        return _root(e.value), "is a view", e
    if isinstance(e, ast.Call) and s.method in _VIEW_METHODS:
        return _root(e.func.value), "may be a view", e
    if isinstance(e, ast.Call) and s.callee in _VIEW_FUNCTIONS and e.args:
        return _root(e.args[0]), "may be a view", e
    return None


def _root(atom):
    return atom.id if isinstance(atom, ast.Name) else None


def _enclosing_loops(stmts) -> dict:
    """sid -> sids of the loops around the statement."""
    loops = {}

    def visit(block, enclosing):
        for st in block:
            loops[st.sid] = enclosing
            for sub in st.blocks():
                visit(sub, enclosing | ({st.sid} if isinstance(st, (ir.For, ir.While))
                                        else frozenset()))
    visit(stmts, frozenset())
    return loops


def check_aliasing(stmts, kind, location, params=()) -> None:
    """Refuse in-place writes into an array that may share memory with another
    name: the write would change the other array behind the transform's back
    (or the caller's array, which we never mutate).

    ``stmts`` is numbered (sids in program order); ``kind(atom)`` gives an
    atom's kind, ``location(line)`` the user's source location, ``params`` the
    function's parameters."""
    loops = _enclosing_loops(stmts)
    sets = [st for st in ir.walk(stmts) if isinstance(st, ir.SetItem)]
    for s in ir.walk(stmts):
        if not isinstance(s, ir.Assign):
            continue
        # Writes into s.target that may run while it still aliases another array.
        later = [w for w in sets if w.array == s.target and (
            w.sid > s.sid or loops[w.sid] & loops[s.sid])]
        view = view_made_by(s, kind, stmts, params) if later else None
        if view is not None:
            _, how, e = view
            raise UnsupportedSyntaxError(
                f"a write into {s.target!r}, which shares memory with another array "
                f"({s.target} = {ast.unparse(e)} {how})", location(later[0].line),
                f"write `{s.target} = {ast.unparse(e)}.copy()` to work on a copy, or "
                "write through the original array")
