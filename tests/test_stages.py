"""The stages that rewrite the IR come first, each returning a new IR; after them
nothing edits the IR, the kinds or the activity."""
from __future__ import annotations

import ast
import dataclasses

import numpy as np
import pytest

from pullback.analysis.activity import KindInference, activity
from pullback.backends.numba import NUMBA
from pullback.backends.primal import lower_primal
from pullback.backends.python import PYTHON
from pullback.core import ir
from pullback.core.kinds import INT, kind_of_value
from pullback.frontend.bookkeeping import insert_bookkeeping
from pullback.frontend.normalize import normalize
from pullback.frontend.parse import parse_function
from pullback.frontend.resolve import value_lookup
from pullback.reverse.transform import ReverseTransform


def loops(x, p, n):
    s = 0.0
    for i in range(1, len(p), 2):
        for i in range(i):              # rebinds the outer loop's variable
            s = s + x * p[i]
    k = 0
    while s < 10.0 and k < n:
        s = s * 1.5 + np.mean([x, s])   # a tuple of numbers: an array under Numba
        k += 1
    for j in range(n):
        if s > 100.0:
            break
        s = s + p[j]
    ok = s > 0.0 and x > 0.0            # a branch that rebinds its condition
    return s if ok else -s


ARGS = (0.5, np.linspace(0.1, 1.0, 7), 3)


def dump(stmts) -> list:
    """Every statement's fields, expressions as ast.dump, nested blocks by length."""
    def field(v):
        if isinstance(v, ast.AST):
            return ast.dump(v)
        if isinstance(v, list):
            return [field(x) for x in v] if not v or not isinstance(v[0], ir.Stmt) else len(v)
        return repr(v)
    return [(type(s).__name__, {f.name: field(getattr(s, f.name)) for f in dataclasses.fields(s)})
            for s in ir.walk(stmts)]


def stages(f, args, backend):
    parsed = parse_function(f)
    fn, norm = normalize(parsed)
    lookup = value_lookup(parsed, norm.externals)
    normalized = dump(fn.body)
    book = insert_bookkeeping(fn, lookup)
    kinds = KindInference(book.fn, dict(zip(book.fn.params, map(kind_of_value, args))), lookup,
                          book.kinds).run()
    low = lower_primal(book.fn, kinds, backend, lookup, parsed.at_line, book.helpers)
    assert dump(fn.body) == normalized, "a stage edited the IR it was given"
    return parsed, lookup, book, low, {**kinds, **low.kinds}


@pytest.mark.parametrize("backend", [PYTHON, NUMBA], ids=["python", "numba"])
def test_nothing_edits_the_final_ir_kinds_or_activity(backend):
    parsed, lookup, _, low, kinds = stages(loops, ARGS, backend)
    active = activity(low.fn, kinds, {"x", "p"})
    before = (dump(low.fn.body), dict(kinds), set(active))
    ReverseTransform(low.fn, kinds, active, ["x", "p"], backend, parsed.at_line, lookup,
                     helpers=low.helpers).run()
    assert (dump(low.fn.body), dict(kinds), set(active)) == before


def test_bookkeeping_counters_are_ints_and_named_by_the_loops():
    _, _, book, low, kinds = stages(loops, ARGS, PYTHON)
    counted = [s for s in ir.walk(low.fn.body) if isinstance(s, (ir.For, ir.While))]
    assert len(counted) == 4 and all(s.trips in book.kinds for s in counted)
    assert all(kinds[name] == INT for name in book.kinds)
    assert [s.sid for s in ir.walk(low.fn.body)] == list(range(1, len(dump(low.fn.body)) + 1))


def test_numbers_made_arrays_for_numba_are_float_arrays_active_like_any_variable():
    _, _, _, low, kinds = stages(loops, ARGS, NUMBA)
    made = [s.target for s in ir.walk(low.fn.body)
            if isinstance(s, ir.Assign) and s.callee is np.array and s.target in low.kinds]
    assert made and all(kinds[n].dtype == "f" and kinds[n].ndim == 1 for n in made)
    assert set(made) <= activity(low.fn, kinds, {"x"})


def test_helper_names_chosen_by_the_stages_reach_the_transform():
    from pullback.core.runtime import trip_count
    parsed, lookup, book, low, kinds = stages(loops, ARGS, PYTHON)
    assert book.helpers.bound == {"trip_count": trip_count}
    assert low.helpers.bound["trip_count"] is trip_count
    active = activity(low.fn, kinds, {"x"})
    gen = ReverseTransform(low.fn, kinds, active, ["x"], PYTHON, parsed.at_line, lookup,
                           helpers=low.helpers).run()
    assert gen.helpers["trip_count"] is trip_count


def test_the_adjoints_are_a_frozen_record_of_every_statement():
    from pullback.reverse.adjoints import Adjoints
    parsed, lookup, _, low, kinds = stages(loops, ARGS, PYTHON)
    tr = ReverseTransform(low.fn, kinds, activity(low.fn, kinds, {"x", "p"}), ["x", "p"],
                          PYTHON, parsed.at_line, lookup, helpers=low.helpers)
    tr.run()
    adj = tr.adjoints
    assert isinstance(adj, Adjoints)
    with pytest.raises(dataclasses.FrozenInstanceError):
        adj.contribs = {}
    statements = [s for s in ir.walk(low.fn.body) if isinstance(s, (ir.Assign, ir.SetItem))]
    headers = [s for s in ir.walk(low.fn.body) if isinstance(s, (ir.If, ir.For, ir.While))]
    assert set(adj.code) == set(adj.stmt_reads) == {s.sid for s in statements}
    assert set(adj.header_reads) == {s.sid for s in headers}
    assert all(isinstance(c, tuple) for c in adj.code.values())
    assert all(isinstance(r, frozenset) for r in [*adj.stmt_reads.values(),
                                                  *adj.header_reads.values()])
    # What the save plan reads: the adjoints' reads, with recomputed temporaries
    # replaced by their operands, never edited in place.
    assert set(tr.recomputation.stmt_reads) == set(adj.stmt_reads)
    assert adj.contribs["p"] >= 1 and "p" in adj.updated_in_place
