"""The save plan: an assignment saves the value it overwrites exactly when an
adjoint read that value since it was last assigned."""
from __future__ import annotations

import ast

from pullback.analysis import saves
from pullback.core import ir


def _assign(line, target, src):
    return ir.Assign(line, target, ast.parse(src, mode="eval").body)


def _plan(body, params, reads_at, loop_reads=None):
    ir.number(body)
    names = {s.target for s in ir.walk(body) if isinstance(s, ir.Assign)} | set(params)
    return saves.plan(body, params, names, reads_at(body), loop_reads(body) if loop_reads else {})


def test_an_overwritten_value_that_an_adjoint_reads_is_saved():
    # y = x * x; z = y * x; y = z + 1.0  -- z's adjoint reads the first y, which the
    # third statement overwrites: it must save it.
    body = [_assign(1, "y", "x * x"), _assign(2, "z", "y * x"), _assign(3, "y", "z + 1.0"),
            ir.Return(4, ast.Name("y"))]
    plan = _plan(body, ["x"], lambda b: {b[0].sid: {"x"}, b[1].sid: {"y", "x"}, b[2].sid: set()})
    assert plan.sites == {body[2].sid}
    assert not plan.undefined


def test_a_value_no_adjoint_reads_is_not_saved():
    # y = x + 1; y = y + x: additions read nothing in reverse.
    body = [_assign(1, "y", "x + 1.0"), _assign(2, "y", "y + x"), ir.Return(3, ast.Name("y"))]
    plan = _plan(body, ["x"], lambda b: {b[0].sid: set(), b[1].sid: set()})
    assert plan.sites == frozenset()


def test_a_value_read_in_a_loop_is_saved_when_the_next_iteration_overwrites_it():
    # for i in range(n): t = s * x; s = t  -- t's adjoint reads s, which the loop's
    # next iteration overwrites: the assignment to s saves; t itself is never read.
    loop = ir.For(1, "i", ast.Constant(0), ast.Name("n"), ast.Constant(1),
                  [_assign(2, "t", "s * x"), _assign(2, "s", "t")])
    body = [loop, ir.Return(3, ast.Name("s"))]
    plan = _plan(body, ["x", "n", "s"], lambda b: {loop.body[0].sid: {"s", "x"},
                                                   loop.body[1].sid: set()})
    assert plan.sites == {loop.body[1].sid}


def test_the_plan_is_frozen():
    body = [_assign(1, "y", "x * x"), ir.Return(2, ast.Name("y"))]
    plan = _plan(body, ["x"], lambda b: {b[0].sid: {"x"}})
    assert isinstance(plan.sites, frozenset) and isinstance(plan.undefined, frozenset)


def _setitem(line, array, index, value):
    return ir.SetItem(line, array, ast.parse(index, mode="eval").body,
                      ast.parse(value, mode="eval").body)


def test_an_in_place_write_saves_only_what_an_earlier_adjoint_read():
    # u[0] = x  (nothing read u yet: no save);  y = u[1] * u[1];  u[1] = y
    # (y's adjoint read u since: the write must save what it overwrites).
    body = [_setitem(1, "u", "0", "x"), _assign(2, "y", "u[1] * u[1]"),
            _setitem(3, "u", "1", "y"), ir.Return(4, ast.Name("y"))]
    plan = _plan(body, ["x", "u"], lambda b: {b[0].sid: set(), b[1].sid: {"u"},
                                              b[2].sid: set()})
    assert plan.sites == {body[2].sid}


def test_an_in_place_write_in_a_loop_saves_for_the_reads_of_the_previous_iteration():
    # for i in range(n): u[0] = y;  y = u[0] * x  -- the next iteration's write
    # destroys what this iteration's product read, over the back edge.
    loop = ir.For(1, "i", ast.Constant(0), ast.Name("n"), ast.Constant(1),
                  [_setitem(2, "u", "0", "y"), _assign(3, "y", "u[0] * x")])
    body = [loop, ir.Return(4, ast.Name("y"))]
    plan = _plan(body, ["x", "n", "u", "y"], lambda b: {loop.body[0].sid: set(),
                                                        loop.body[1].sid: {"u", "x"}})
    assert plan.sites == {loop.body[0].sid}


def test_a_loop_invariant_local_is_not_saved():
    # for i in range(n): c = h / 6.0;  s = s * c  -- c holds the same value on every
    # iteration, so overwriting it destroys nothing; s is saved.
    loop = ir.For(1, "i", ast.Constant(0), ast.Name("n"), ast.Constant(1),
                  [_assign(2, "c", "h / 6.0"), _assign(3, "s", "s * c")])
    body = [loop, ir.Return(4, ast.Name("s"))]
    plan = _plan(body, ["h", "n", "s"], lambda b: {loop.body[0].sid: set(),
                                                   loop.body[1].sid: {"s", "c"}})
    assert plan.sites == {loop.body[1].sid}


def test_a_local_computed_from_a_rebound_parameter_is_saved():
    # h = h * 2.0 in the loop: c = h / 6.0 changes every iteration.
    loop = ir.For(1, "i", ast.Constant(0), ast.Name("n"), ast.Constant(1),
                  [_assign(2, "c", "h / 6.0"), _assign(3, "s", "s * c"),
                   _assign(4, "h", "h * 2.0")])
    body = [loop, ir.Return(5, ast.Name("s"))]
    plan = _plan(body, ["h", "n", "s"], lambda b: {loop.body[0].sid: set(),
                                                   loop.body[1].sid: {"s", "c"},
                                                   loop.body[2].sid: {"h"}})
    assert loop.body[0].sid in plan.sites


def _loop(line, var, start, stop, body, **kw):
    return ir.For(line, var, ast.parse(start, mode="eval").body,
                  ast.parse(stop, mode="eval").body, ast.Constant(1), body, **kw)


def test_a_while_loops_trip_counter_is_not_taken_for_a_constant():
    # The loop counts its iterations by a statement of its body (n = n + 1), so
    # n = 0 is not its only assignment.
    loop = ir.While(2, "go", [_assign(3, "go", "s > 1.0")],
                    [_assign(2, "n", "n + 1"), _assign(3, "s", "s * x")], trips="n")
    outer = _loop(1, "i", "0", "m", [_assign(1, "n", "0"), loop])
    body = [outer, ir.Return(4, ast.Name("s"))]
    assert "n" not in saves.invariant(body, ["x", "m", "s"])


def test_an_inner_loops_counter_is_saved_across_outer_iterations():
    # for i in range(m): n = 0; for j in range(i + 1, m): n = n + 1; ...
    # (an inner loop left early counts its trips; the reverse reads n at the inner
    # loop, after the outer loop's next iteration reset it: n = 0 must save).
    inner = _loop(2, "j", "i + 1", "m", [_assign(2, "n", "n + 1"), _assign(3, "s", "s * x")],
                  exit_flag="leave", trips="n")
    outer = _loop(1, "i", "0", "m", [_assign(2, "n", "0"), inner])
    body = [outer, ir.Return(4, ast.Name("s"))]
    plan = _plan(body, ["x", "m", "s"], lambda b: {inner.body[0].sid: set(),
                                                  inner.body[1].sid: {"s", "x"},
                                                  outer.body[0].sid: set()},
                 lambda b: {inner.sid: {"n"}, outer.sid: set()})
    assert outer.body[0].sid in plan.sites
    assert inner.body[0].sid not in plan.sites       # read only after the inner loop


def test_an_inner_loops_start_that_depends_on_the_outer_index_is_saved():
    # for i in range(m): lo = i + 1; for j in range(lo, m): ...  -- the reverse
    # runs the inner loop from lo, which the next outer iteration overwrote.
    inner = _loop(2, "j", "lo", "m", [_assign(3, "s", "s * x")], trips="n")
    outer = _loop(1, "i", "0", "m", [_assign(2, "lo", "i + 1"), inner])
    body = [outer, ir.Return(4, ast.Name("s"))]
    plan = _plan(body, ["x", "m", "s"], lambda b: {inner.body[0].sid: {"s", "x"},
                                                  outer.body[0].sid: set()},
                 lambda b: {inner.sid: {"lo", "n"}})
    assert outer.body[0].sid in plan.sites
    assert "lo" not in saves.invariant(body, ["x", "m", "s"])


def test_a_value_set_in_an_outer_loop_and_read_in_an_inner_one_is_saved():
    # for i in range(m): w = x * x; for j in range(m): s = s + w * y  -- the
    # inner products' adjoints read w, which the next outer iteration overwrites...
    # unless it is the same value every time: x is never rebound, so it is.
    inner = _loop(2, "j", "0", "m", [_assign(3, "t", "w * y"), _assign(3, "s", "s + t")])
    outer = _loop(1, "i", "0", "m", [_assign(2, "w", "x * x"), inner])
    body = [outer, ir.Return(4, ast.Name("s"))]
    def reads(b):
        return {outer.body[0].sid: {"x"}, inner.body[0].sid: {"w", "y"}, inner.body[1].sid: set()}

    assert outer.body[0].sid not in _plan(body, ["x", "y", "m", "s"], reads).sites
    # ... and when x changes in the outer loop, w holds another value each time.
    outer.body.append(_assign(4, "x", "x * s"))
    plan = _plan(body, ["x", "y", "m", "s"], lambda b: {**reads(b), outer.body[2].sid: {"x", "s"}})
    assert outer.body[0].sid in plan.sites


def test_an_assignment_in_a_branch_taken_before_an_early_exit_is_saved():
    # for i in range(m): if c: s = s * x; leave = True  -- s's product reads s;
    # the branch's next run (an outer loop around) overwrites it.
    branch = ir.If(2, "c", [_assign(3, "s", "s * x"), _assign(3, "leave", "True")])
    inner = _loop(2, "j", "0", "i", [_assign(2, "n", "n + 1"), branch],
                  exit_flag="leave", trips="n")
    outer = _loop(1, "i", "0", "m", [_assign(2, "n", "0"), inner])
    body = [outer, ir.Return(4, ast.Name("s"))]
    plan = _plan(body, ["x", "m", "s", "c"], lambda b: {branch.body[0].sid: {"s", "x"}},
                 lambda b: {inner.sid: {"n", "i"}, branch.sid: {"c"}})
    assert branch.body[0].sid in plan.sites and outer.body[0].sid in plan.sites


def test_the_reference_plan_saves_every_overwrite_of_a_read_name():
    # The loop-invariant c is saved too, and the first assignment of y is not
    # (it overwrites nothing).
    loop = _loop(1, "i", "0", "n", [_assign(2, "c", "h / 6.0"), _assign(3, "s", "s * c")])
    body = [_assign(0, "y", "h * h"), loop, ir.Return(4, ast.Name("s"))]
    ir.number(body)
    names = {"c", "s", "y", "h", "n"}
    reads = {body[0].sid: {"h"}, loop.body[0].sid: set(), loop.body[1].sid: {"s", "c"}}
    plan = saves.plan(body, ["h", "n", "s"], names, reads, {}, flow=False)
    assert plan.sites == {loop.body[0].sid, loop.body[1].sid}
    assert plan.undefined == {"c"}
