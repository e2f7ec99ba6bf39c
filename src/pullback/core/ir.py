"""The normalized program that the passes exchange.

Every statement does one thing to atoms (names and constants); control flow is
structured (no break/continue/return inside bodies: the normalizer turns them
into flags and guards), so the reverse transform only needs one adjoint per
statement kind.  Expressions stay ``ast`` nodes so the emitter can print them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .errors import InternalError


def atom_names(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


@dataclass
class Stmt:
    line: int                    # source line in the user's file (for comments and errors)
    #: Stable id, unique within one transform, given in program order by :func:`number`
    #: once the program's statements are final.  Analyses key their results on it.
    sid: int = field(default=0, kw_only=True, compare=False)

    def blocks(self) -> list:
        """The statement lists nested in this one, in program order."""
        return []

    def reads(self) -> set[str]:
        """Names this statement itself reads (not those of nested blocks)."""
        raise NotImplementedError

    def writes(self) -> set[str]:
        """Names this statement itself (re)binds; a SetItem changes its array in place."""
        return set()


@dataclass
class Assign(Stmt):
    """``target = expr`` where expr is one primitive over atoms."""

    target: str
    expr: ast.expr
    callee: object = None        # the resolved callable when expr is a Call
    method: str | None = None    # ``x.name(...)`` called on a local value
    #: Written ``target op= e``: on an array NumPy updates ``target`` in place, which
    #: another name for the same memory (a view) sees; the analyses check that none does.
    augmented: bool = False

    def reads(self):
        return atom_names(self.expr)

    def writes(self):
        return {self.target}


@dataclass
class SetItem(Stmt):
    """``array[index] = value`` with atoms in index and value."""

    array: str
    index: ast.expr
    value: ast.expr

    def reads(self):
        return atom_names(self.value) | atom_names(self.index) | {self.array}


@dataclass
class If(Stmt):
    test: str                    # a name holding the condition
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)

    def blocks(self):
        return [self.body, self.orelse]

    def reads(self):
        return {self.test}


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
    #: The name that holds the iteration count (loop bookkeeping): set before the
    #: loop, and counted by a statement of the body when the loop may be left early.
    trips: str | None = None
    #: Marked ``checkpointed(..., every)``: the atom giving the iterations per segment
    #: (``None`` for the square root of the trip count), else None.
    checkpoint: ast.expr | None = None

    def blocks(self):
        return [self.body]

    def reads(self):
        return atom_names(self.start) | atom_names(self.stop) | atom_names(self.step) | (
            atom_names(self.checkpoint) if self.checkpoint is not None else set())

    def writes(self):
        return {self.var}


@dataclass
class While(Stmt):
    """``while test`` where ``cond`` recomputes ``test`` after each iteration."""

    test: str
    cond: list = field(default_factory=list)
    body: list = field(default_factory=list)
    exit_flag: str | None = None
    trips: str | None = None     # counts the iterations, by a statement of the body

    def blocks(self):
        return [self.cond, self.body]

    def reads(self):
        return {self.test}


@dataclass
class Return(Stmt):
    value: ast.expr

    def reads(self):
        return atom_names(self.value)


@dataclass
class Function:
    name: str
    params: list                 # parameter names
    body: list                   # statements; the last one is a Return
    names: set = field(default_factory=set)   # every name in use (for fresh names)
    copied_params: set = field(default_factory=set)  # params written in place: copied first
    source_lines: dict = field(default_factory=dict)  # line -> stripped source text


#: Every statement class of the IR.  A pass that dispatches on statements does
#: so through a :func:`table`, which must cover all of them.
STATEMENTS = (Assign, SetItem, If, For, While, Return)

#: Every table made by :func:`table`, by name (checked by the tests).
TABLES: dict[str, dict] = {}


def table(name: str, handlers: dict) -> dict:
    """A dispatch table ``{statement class: handler}`` that covers every class.

    Made at import time, so a new statement class that a pass forgets fails
    when pullback is imported, not by being dropped from the output.
    """
    missing = [c.__name__ for c in STATEMENTS if c not in handlers]
    extra = [c for c in handlers if c not in STATEMENTS]
    if missing or extra:
        raise InternalError(f"dispatch table {name!r} does not match the IR: missing "
                            f"{missing}, unknown {extra}")
    TABLES[name] = handlers
    return handlers


def dispatch(handlers: dict, stmt: Stmt):
    """The handler for ``stmt``; an unknown class is an internal error, never a skip."""
    try:
        return handlers[type(stmt)]
    except KeyError:
        raise InternalError(f"no handler for {type(stmt).__name__} (line {stmt.line})") from None


def operands(s: Stmt) -> set[str]:
    """Names a statement reads, apart from the variable an Assign rebinds."""
    return s.reads() - ({s.target} if isinstance(s, Assign) else set())


def mentions(s: Stmt) -> set[str]:
    """Names a statement reads, and the variable an Assign rebinds."""
    return s.reads() | ({s.target} if isinstance(s, Assign) else set())


def var_read_in(loop: For) -> bool:
    """Whether the body of ``loop`` names its loop variable (conservative: any
    statement that reads or assigns it), so the reverse loop must bind it too."""
    return any(loop.var in mentions(t) for t in walk(loop.body))


def number(stmts) -> None:
    """Give every statement its ``sid``, 1, 2, ... in program order."""
    for k, s in enumerate(walk(stmts), start=1):
        s.sid = k


def walk(stmts):
    """Every statement, depth first, in program order."""
    for s in stmts:
        yield s
        for block in s.blocks():
            yield from walk(block)


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


def selects_element(index, ndim, kind) -> bool:
    """Whether ``a[index]`` is one element of an array ``a`` of rank ``ndim``: an int
    for every axis.  Fewer ints than axes select a row (``h[1]`` of a 2-D ``h``), a
    view whose adjoint and saved value are arrays; an unknown rank (-1, None) is
    not taken for an element."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return ndim is not None and len(parts) == ndim and all(
        is_basic_scalar_index(i, kind) for i in parts)
