"""Assignment sites, single-use variables, local temporaries, and the reads a
recomputation narrows: pure functions returning frozen records."""
from __future__ import annotations

import ast
import dataclasses

import pytest

from pullback.analysis import recompute, sites
from pullback.core import ir
from pullback.core.kinds import FLOAT


def _e(src):
    return ast.parse(src, mode="eval").body


def _program():
    #   y = x * x
    #   for i in range(0, n, 1):  s = s + y * p[i]
    #   _t1 = s * x;  z = _t1 + y;  return z
    loop = ir.For(2, "i", ast.Constant(0), ast.Name("n"), ast.Constant(1),
                  [ir.Assign(3, "_t2", _e("p[i]")), ir.Assign(3, "_t3", _e("y * _t2")),
                   ir.Assign(3, "s", _e("s + _t3"))], trips="_n")
    body = [ir.Assign(1, "y", _e("x * x")), ir.Assign(1, "s", _e("0.0")), loop,
            ir.Assign(4, "_t1", _e("s * x")), ir.Assign(4, "z", _e("_t1 + y")),
            ir.Return(5, _e("z"))]
    ir.number(body)
    return body


def test_sites_count_each_assignment_and_a_parameter_once():
    found = sites.find(_program(), ["x", "p", "n"])
    assert found.count["s"] == 2 and found.count["y"] == 1 and found.count["x"] == 1
    assert found.in_loop == {"i", "_t2", "_t3", "s"}
    assert {"x", "p", "n", "y", "s", "_t1", "z"} <= found.top_level
    assert "i" not in found.top_level and "_t2" not in found.top_level
    # s = s + _t3 reads s to rebind it: not an operand, not counted.
    assert found.read_in_loop == {"p", "i", "y", "_t2", "_t3"}
    assert "x" in found and "w" not in found


def test_single_use_is_assigned_once_and_read_by_one_later_statement_of_its_block():
    found = sites.find(_program(), ["x", "p", "n"])
    # y is read in the loop and again after it; s is assigned twice; x is a parameter.
    assert found.single_use == {"_t1", "_t2", "_t3"}


def test_the_records_are_frozen():
    found = sites.find(_program(), ["x"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.single_use = frozenset()
    with pytest.raises(TypeError):
        found.count["x"] = 2


def test_local_temps_need_one_contribution_and_no_update_in_place():
    body = _program()
    found = sites.find(body, ["x", "p", "n"])
    active = {"x", "p", "y", "s", "_t1", "_t2", "_t3", "z"}
    contribs = {"_t1": 1, "_t2": 1, "_t3": 1}
    assert sites.local_temps(body, found, active, contribs, set()) == {"_t1", "_t2", "_t3"}
    assert sites.local_temps(body, found, active, dict(contribs, _t1=2), {"_t2"}) == {"_t3"}


def test_recomputation_narrows_the_reads_without_editing_them():
    body = [ir.Assign(1, "_t1", _e("x * x")), ir.Assign(1, "y", _e("_t1 * x")),
            ir.Return(2, _e("y"))]
    ir.number(body)
    reads = {2: {"_t1", "x"}}
    plan = recompute.plan(body, reads, set(), {"_t1": 1, "y": 1}, {"_t1": FLOAT, "y": FLOAT},
                          array_reads=False, value_reads=set())
    assert list(plan.exprs) == ["_t1"] and plan.reads == {"x"}
    assert plan.stmt_reads == {2: {"x"}} and reads == {2: {"_t1", "x"}}
    assert plan.needed_for({"_t1"}) == {"_t1", "x"}
    off = recompute.plan(body, reads, set(), {"_t1": 1, "y": 1}, {"_t1": FLOAT, "y": FLOAT},
                         array_reads=False, value_reads=set(), on=False)
    assert not off.exprs and off.stmt_reads == {2: {"_t1", "x"}}
