"""Every pass that dispatches on IR statement classes does so through a total table.

A statement class that a pass does not know must fail loudly, never be
dropped from the output (a wrong value, not an error).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import pytest

import pullback  # noqa: F401  (imports every pass, which builds its tables)
from pullback.core import ir
from pullback.core.errors import InternalError

# The passes known to dispatch on statements; a new one adds its table here.
EXPECTED_TABLES = {"forward sweep", "reverse sweep", "pushes per iteration", "adjoints",
                   "loop bookkeeping", "primal lowering", "saves", "kind inference"}


def test_every_expected_table_exists():
    assert EXPECTED_TABLES <= set(ir.TABLES)


@pytest.mark.parametrize("name", sorted(EXPECTED_TABLES))
def test_table_covers_every_statement_class(name):
    assert set(ir.TABLES[name]) == set(ir.STATEMENTS)


def test_every_statement_class_is_listed():
    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)
    assert set(subclasses(ir.Stmt)) - {Unknown} <= set(ir.STATEMENTS)


@dataclass
class Unknown(ir.Stmt):
    def reads(self):
        return set()


def test_a_table_missing_a_class_is_refused_when_built():
    handlers = {c: None for c in ir.STATEMENTS if c is not ir.While}
    with pytest.raises(InternalError, match="While"):
        ir.table("incomplete", handlers)


def test_dispatch_on_an_unknown_statement_raises_with_its_line():
    with pytest.raises(InternalError, match="Unknown.*line 7"):
        ir.dispatch(ir.TABLES["forward sweep"], Unknown(7))


def test_statements_own_their_traversal():
    inner = ir.Assign(2, "y", ast.Name("x"))
    loop = ir.For(1, "i", ast.Constant(0), ast.Name("n"), ast.Constant(1), [inner])
    assert loop.blocks() == [[inner]]
    assert loop.reads() == {"n"} and loop.writes() == {"i"}
    assert inner.reads() == {"x"} and inner.writes() == {"y"}
    assert list(ir.walk([loop])) == [loop, inner]
