"""The statements the normalizer emits, in order: the fresh temporaries they
assign, and the lines of the user's source they come from (the generated code's
comments quote them)."""
from __future__ import annotations

import ast
from contextlib import contextmanager

from ..core import ir


class Output:
    """Where lowered statements go: a list, swapped for another while a block
    (a loop's body, a branch) is collected on its own."""

    def __init__(self, top, names):
        self.top = top                  # the function being normalized
        self.names = names
        self.stmts: list = []
        self.source_lines: dict[int, str] = {}   # line of the top function -> its source

    def emit(self, stmt):
        self.stmts.append(stmt)
        return stmt

    def temp(self, node, expr, scope, **kw) -> ast.Name:
        """A fresh temporary assigned ``expr`` (an IR expression over atoms)."""
        name = self.names.fresh("_t")
        self.emit(ir.Assign(self.line(node, scope), name, expr, **kw))
        return ast.Name(name)

    def line(self, node, scope) -> int:
        """The line the statements lowered from ``node`` carry (the call's, in a
        function inlined from another file); records the top function's lines."""
        if scope.site_line is not None:
            return scope.site_line
        line = getattr(node, "lineno", None) or scope.parsed.node.lineno
        if scope.parsed is self.top and line not in self.source_lines:
            loc = scope.parsed.location(node)
            self.source_lines[line] = loc.line.strip()
        return line

    @contextmanager
    def into(self, stmts: list):
        """Emit into ``stmts`` while the ``with`` block runs."""
        saved, self.stmts = self.stmts, stmts
        try:
            yield stmts
        finally:
            self.stmts = saved

    def collect(self, fn):
        """Run fn() collecting the statements it emits into a separate list:
        ``(fn's result, the statements)``."""
        with self.into([]) as stmts:
            result = fn()
        return result, stmts

    def last(self):
        """The statement emitted last, or None."""
        return self.stmts[-1] if self.stmts else None
