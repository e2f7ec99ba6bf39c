"""Aliasing refusals and the choice of temporaries recomputed in the reverse sweep."""
from __future__ import annotations

import ast

import pytest

from pullback.analysis import aliasing, recompute
from pullback.core import ir
from pullback.core.errors import Location, UnsupportedSyntaxError
from pullback.core.kinds import FLOAT, INT, Kind

KINDS = {"a": Kind(1, "f"), "b": Kind(1, "f"), "x": FLOAT, "i": INT, "_t1": FLOAT,
         "_t2": FLOAT, "y": FLOAT}


def _kind(atom):
    return KINDS.get(atom.id, FLOAT) if isinstance(atom, ast.Name) else FLOAT


def _loc(line):
    return Location("prog.py", line, "b[0] = x")


def _e(src):
    return ast.parse(src, mode="eval").body


def test_a_write_through_a_second_name_is_refused_with_its_line():
    body = [ir.Assign(1, "b", ast.Name("a")), ir.SetItem(2, "b", ast.Constant(0), ast.Name("x")),
            ir.Return(3, _e("x"))]
    ir.number(body)
    with pytest.raises(UnsupportedSyntaxError, match="makes no copy") as err:
        aliasing.check_aliasing(body, _kind, _loc)
    assert err.value.lineno == 2


def test_a_copy_is_not_an_alias():
    body = [ir.Assign(1, "b", _e("a.copy()"), method="copy"),
            ir.SetItem(2, "b", ast.Constant(0), ast.Name("x")), ir.Return(3, _e("x"))]
    ir.number(body)
    aliasing.check_aliasing(body, _kind, _loc)


def test_a_registered_view_is_refused():
    import numpy as np
    body = [ir.Assign(1, "b", _e("np.reshape(a, (2, 2))"), callee=np.reshape),
            ir.SetItem(2, "b", ast.Constant(0), ast.Name("x")), ir.Return(3, _e("x"))]
    ir.number(body)
    with pytest.raises(UnsupportedSyntaxError, match="may be a view"):
        aliasing.check_aliasing(body, _kind, _loc)


def test_a_one_operation_temporary_read_once_is_recomputed():
    body = [ir.Assign(1, "_t1", _e("x * x")), ir.Assign(1, "y", _e("_t1 * x")),
            ir.Return(2, _e("y"))]
    sites = {"_t1": 1, "y": 1}
    found = recompute.find_cheap(body, set(), sites, KINDS, array_reads=False)
    assert set(found) == {"_t1"}


def test_a_temporary_whose_operand_changes_before_its_use_is_not_recomputed():
    body = [ir.Assign(1, "_t1", _e("x * x")), ir.Assign(2, "x", _e("x + 1.0")),
            ir.Assign(3, "y", _e("_t1 * x")), ir.Return(4, _e("y"))]
    sites = {"_t1": 1, "y": 1, "x": 2}
    assert recompute.find_cheap(body, set(), sites, KINDS, array_reads=False) == {}


def test_array_reads_are_recomputed_only_when_the_backend_asks():
    body = [ir.Assign(1, "_t2", _e("a[i]")), ir.Assign(1, "y", _e("_t2 * x")),
            ir.Return(2, _e("y"))]
    sites = {"_t2": 1, "y": 1, "a": 1}
    assert recompute.find_cheap(body, set(), sites, KINDS, array_reads=False) == {}
    assert set(recompute.find_cheap(body, set(), sites, KINDS, array_reads=True)) == {"_t2"}


def test_a_chain_of_temporaries_is_recomputed_in_program_order():
    # _t1 = a[k] is read only by _t2 = x - _t1, itself recomputed: both are,
    # the first before the second.
    body = [ir.Assign(1, "_t1", _e("a[k]")), ir.Assign(1, "_t2", _e("x - _t1")),
            ir.Assign(1, "y", _e("_t2 * _t2")), ir.Return(2, _e("y"))]
    sites = {"_t1": 1, "_t2": 1, "y": 1, "a": 1}
    found = recompute.find_cheap(body, set(), sites, KINDS, array_reads=True)
    assert list(found) == ["_t1", "_t2"]


def test_a_chain_is_not_recomputed_when_an_operand_changes_before_its_last_reader():
    # x changes between _t2 and its reader y: _t2 cannot be recomputed, so _t1,
    # read by it, has a reader that is not recomputed either, and stays too.
    body = [ir.Assign(1, "_t1", _e("a[k]")), ir.Assign(1, "_t2", _e("x - _t1")),
            ir.Assign(2, "x", _e("x + 1.0")), ir.Assign(3, "y", _e("_t2 * _t2")),
            ir.Return(4, _e("y"))]
    sites = {"_t1": 1, "_t2": 1, "y": 1, "a": 1, "x": 2}
    found = recompute.find_cheap(body, set(), sites, KINDS, array_reads=True)
    assert "_t2" not in found


def _for(line, var, start, stop, body):
    return ir.For(line, var, _e(start), _e(stop), ast.Constant(1), body)


def test_a_temporary_of_an_outer_loop_read_in_an_inner_loop_is_not_recomputed():
    # for i: _t1 = x * x; for j: y = _t1 * y  -- the reader is in another block
    # (the inner loop, whose reverse runs before the outer body's): not recomputed.
    inner = _for(2, "j", "0", "i", [ir.Assign(3, "y", _e("_t1 * y"))])
    outer = _for(1, "i", "0", "n", [ir.Assign(2, "_t1", _e("x * x")), inner])
    body = [outer, ir.Return(4, _e("y"))]
    sites = {"_t1": 1, "y": 1, "i": 1, "j": 1}
    assert recompute.find_cheap(body, set(), sites, KINDS, array_reads=True) == {}


def test_a_temporary_read_after_a_nested_loop_is_not_recomputed():
    # _t1 = x * x; for j: x = x * 0.5; y = _t1 * y  -- an operand changes inside a
    # loop between the temporary and its reader.
    loop = _for(2, "j", "0", "i", [ir.Assign(2, "x", _e("x * 0.5"))])
    body = [ir.Assign(1, "_t1", _e("x * x")), loop, ir.Assign(3, "y", _e("_t1 * y")),
            ir.Return(4, _e("y"))]
    sites = {"_t1": 1, "y": 1, "x": 2, "j": 1}
    assert recompute.find_cheap(body, set(), sites, KINDS, array_reads=True) == {}


def test_an_element_of_an_array_written_in_a_loop_is_not_recomputed():
    # _t2 = a[i] with a written in place elsewhere: the reverse sweep would read a
    # later value.
    body = [ir.Assign(1, "_t2", _e("a[i]")), ir.Assign(1, "y", _e("_t2 * x")),
            ir.SetItem(2, "a", _e("i"), _e("y")), ir.Return(3, _e("y"))]
    sites = {"_t2": 1, "y": 1, "a": 1}
    assert recompute.find_cheap(body, set(), sites, KINDS, array_reads=True) == {}
