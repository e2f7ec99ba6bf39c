"""The normalized program that the passes exchange.

Every statement does one thing to atoms (names and constants); control flow is
structured (no break/continue/return inside bodies: the normalizer turns them
into flags and guards), so the reverse transform only needs one adjoint per
statement kind.  Expressions stay ``ast`` nodes so the emitter can print them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class Stmt:
    line: int                    # source line in the user's file (for comments and errors)


@dataclass
class Assign(Stmt):
    """``target = expr`` where expr is one primitive over atoms."""

    target: str
    expr: ast.expr
    callee: object = None        # the resolved callable when expr is a Call
    method: str | None = None    # ``x.name(...)`` called on a local value


@dataclass
class SetItem(Stmt):
    """``array[index] = value`` with atoms in index and value."""

    array: str
    index: ast.expr
    value: ast.expr


@dataclass
class If(Stmt):
    test: str                    # a name holding the condition
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)


@dataclass
class For(Stmt):
    """``for var in range(start, stop, step)``; ``exit_flag`` leaves the loop
    after an iteration that set it (a lowered break or return)."""

    var: str
    start: ast.expr
    stop: ast.expr
    step: ast.expr
    body: list = field(default_factory=list)
    exit_flag: str | None = None


@dataclass
class While(Stmt):
    """``while test`` where ``cond`` recomputes ``test`` after each iteration."""

    test: str
    cond: list = field(default_factory=list)
    body: list = field(default_factory=list)
    exit_flag: str | None = None


@dataclass
class Return(Stmt):
    value: ast.expr


@dataclass
class Function:
    name: str
    params: list                 # parameter names
    body: list                   # statements; the last one is a Return
    names: set = field(default_factory=set)   # every name in use (for fresh names)
    copied_params: set = field(default_factory=set)  # params written in place: copied first
    source_lines: dict = field(default_factory=dict)  # line -> stripped source text


def walk(stmts):
    """Every statement, depth first, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk(s.body)
            yield from walk(s.orelse)
        elif isinstance(s, For):
            yield from walk(s.body)
        elif isinstance(s, While):
            yield from walk(s.cond)
            yield from walk(s.body)


def atom_names(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def is_basic_index(i, kind) -> bool:
    """An index NumPy applies as a view: a slice, None, Ellipsis or an int
    (``kind(atom)`` gives an atom's kind)."""
    if isinstance(i, ast.Slice):
        return True
    if isinstance(i, ast.Constant):
        return i.value is None or i.value is Ellipsis or isinstance(i.value, int)
    k = kind(i)
    return k.ndim == 0 and k.dtype == "i"


def is_basic_scalar_index(i, kind) -> bool:
    """An index that picks one position along its axis (an int)."""
    return not isinstance(i, ast.Slice) and is_basic_index(i, kind) and not (
        isinstance(i, ast.Constant) and i.value in (None, Ellipsis))
