"""The check that the forward sweep rebinds only what the IR declares it writes."""
from __future__ import annotations

import ast

from ..core import ir
from ..core.errors import InternalError


def check_declared_writes(body, forward) -> None:
    """The forward sweep rebinds a variable of the program only where an IR
    statement says it writes it (``Stmt.writes``), as often as they say.  The
    analyses (the save plan above all) see a program's writes only there: a
    rebinding a sweep added on its own (a loop's iteration counter) would make a
    variable look assigned once, holding one value for the whole call, and its
    overwritten values would not be saved."""
    declared = {}
    for s in ir.walk(body):
        for name in s.writes():
            declared[name] = declared.get(name, 0) + 1
    mentioned = set().union(*(ir.mentions(s) for s in ir.walk(body)))
    stored = {}
    for node in ast.walk(ast.Module(forward, [])):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.For)) else []
        for name in _bound_names(targets):
            stored[name] = stored.get(name, 0) + 1
    extra = sorted(n for n in stored if n in mentioned and stored[n] > declared.get(n, 0))
    if extra:
        raise InternalError(f"the forward sweep rebinds {extra} at more places than the "
                            "program's statements declare (Stmt.writes)")


def _bound_names(targets) -> list:
    """The names an assignment's targets rebind (not those of a subscript's index)."""
    out = []
    for t in targets:
        if isinstance(t, ast.Name):
            out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            out += _bound_names(t.elts)
    return out
