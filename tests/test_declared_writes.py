"""The forward sweep rebinds a program variable only where an IR statement says
it writes it, as often as they say: the analyses (the save plan above all) see
the program's writes only through ``Stmt.writes``.  A loop's iteration counter
was once counted up by the sweep alone, so the save plan took it for a value
that never changes and an inner loop's count was lost across outer iterations."""
from __future__ import annotations

import ast

import pytest

from pullback.core import ir
from pullback.core.errors import InternalError
from pullback.reverse.declared import check_declared_writes


def _assign(target, src):
    return ir.Assign(1, target, ast.parse(src, mode="eval").body)


def _forward(src):
    return ast.parse(src).body


def test_a_rebinding_the_program_does_not_declare_is_an_internal_error():
    # n = 0 is the only IR statement writing n; the sweep adds n += 1 in a loop.
    body = [_assign("n", "0"), ir.For(1, "i", ast.Constant(0), ast.Name("m"), ast.Constant(1),
                                      [_assign("s", "s * x")]), ir.Return(2, ast.Name("s"))]
    with pytest.raises(InternalError, match=r"rebinds \['n'\]"):
        check_declared_writes(body, _forward("n = 0\nfor i in range(m):\n    n += 1\n"
                                              "    s = s * x\n"))


def test_declared_rebindings_and_bookkeeping_names_pass():
    # The counter as an IR statement of the body; the tape's own names are not
    # program variables; a subscript store rebinds nothing.
    loop = ir.For(1, "i", ast.Constant(0), ast.Name("m"), ast.Constant(1),
                  [_assign("n", "n + 1"), _assign("s", "s * x")])
    body = [_assign("n", "0"), loop, ir.Return(2, ast.Name("s"))]
    check_declared_writes(body, _forward(
        "n = 0\nfor i in range(m):\n    n = n + 1\n    _tape_s[_k_s] = s\n    _k_s += 1\n"
        "    s = s * x\n"))


def test_every_loop_left_early_counts_its_trips_in_the_ir():
    # End to end: the derivative of a double loop with an inner break counts the
    # inner loop's iterations by an assignment the IR holds (n = n + 1).
    import pullback

    def f(x):
        s = 0.0
        for i in range(len(x)):
            for j in range(i + 1, len(x)):
                if x[j] > 5.0:
                    break
                s += x[i] * x[j]
        return s

    src = pullback.grad(f).source
    assert any(line.strip().startswith("_n") and "= _n" in line and "+ 1" in line
               for line in src.splitlines())
    assert "+= 1" not in "\n".join(line for line in src.splitlines()
                                   if line.strip().startswith("_n"))
