"""The sweeps' typed statements: what the cleanup recognises by type (a reset of
an adjoint to zero, a comment) and by structure (``same``), never by printed
text, and how the emitter prints them."""
from __future__ import annotations

import ast

import numpy as np

import pullback
from pullback import emit
from pullback.reverse.cleanup import drop_dead_resets, keep_element_adjoints
from pullback.reverse.ops import Comment, ZeroAdjoint, from_line, same, zero_adjoint


def _e(src):
    return ast.parse(src, mode="eval").body


def test_same_compares_node_types_and_fields_not_contexts():
    assert same(_e("dv[i, 1:-1]"), ast.parse("dv[i, 1:-1] = 0").body[0].targets[0])
    assert not same(_e("dv[i]"), _e("dv[j]"))
    assert not same(_e("a + 1"), _e("a + 1.0"))       # 1 and 1.0 print differently
    assert not same(_e("x * 0.0"), _e("x * -0.0"))
    assert not same(_e("f(a)"), _e("f(a, b)"))
    assert same(_e("f(a, k=b)"), _e("f(a, k=b)"))


def test_a_reset_to_zero_is_dropped_by_its_type_when_nothing_reads_it():
    reset = zero_adjoint("dv", _e("zeros_like(v)"))
    other = ast.parse("dv = like_zeros(v)").body[0]         # a call of another name
    kept = drop_dead_resets([other, reset], {"dv"})
    assert kept == [other]
    assert isinstance(reset, ZeroAdjoint) and isinstance(reset, ast.Assign)


def test_an_element_zeroed_and_re_added_is_matched_by_structure():
    block = ast.parse("g = dy[i + 1]\ndy[i + 1] = 0.0\nc = g * 2.0\ndy[(i + 1)] += g").body
    assert [ast.unparse(s) for s in keep_element_adjoints(block)] == ["g = dy[i + 1]", "c = g * 2.0"]
    block = ast.parse("g = dy[i + 1]\ndy[i + 1] = 0.0\ndy[i - 1] += g").body
    assert len(keep_element_adjoints(block)) == 3


def test_the_emitter_prints_comments_and_zero_resets_at_any_depth():
    loop = ast.parse("for i in range(3):\n    pass").body[0]
    loop.body = [from_line("y = x * 2"), zero_adjoint("dy", ast.Constant(-0.0))]
    origins: list = []
    lines = emit._lines([Comment("a note"), loop], "    ", origins)
    assert lines == ["    # a note", "    for i in range(3):", "        # from: y = x * 2",
                     "        dy = -0.0"]
    assert origins == [None, None, "y = x * 2", "y = x * 2"]
    assert isinstance(loop.body[0], Comment)            # printing leaves the sweep as it was


def horner(x, p):
    ex = 0.0
    for i in range(len(p)):
        ex = x * ex + p[i]
    return ex


def test_each_compiled_line_knows_the_user_line_it_comes_from():
    """What the Numba backend quotes for the generated line Numba names in an error."""
    c = pullback.grad(horner, argnums=(0, 1), jit=True).compiled(0.5, np.ones(3))[0]
    lines = c.source.splitlines()
    origins = c.fn.origins                  # by line of the compiled code: line 1 is the maker's
    assert len(origins) == len(lines) + 2
    loop = lines.index("        # from: ex = x * ex + p[i]") + 2
    assert origins[loop] == origins[loop + 1] == "ex = x * ex + p[i]"
    assert origins[:4] == [None] * 4
    marked = [line.strip()[len("# from: "):] for line in lines if line.strip().startswith("# from: ")]
    assert [o for k, o in enumerate(origins) if k >= 2 and lines[k - 2].strip().startswith("# from")] \
        == marked


def _tape(backend, kinds, values_read=()):
    from pullback.core.names import Names
    from pullback.reverse.ops import TapeNeeds
    needs = TapeNeeds(kinds, Names(set(kinds)), lambda obj, name: name,
                      lambda array, index: isinstance(index, ast.Name), frozenset(values_read))
    return backend.tape(needs)


def test_pushes_and_pops_are_typed_statements_holding_the_tape_code():
    from pullback.backends.numba import NUMBA
    from pullback.backends.python import PYTHON
    from pullback.core.kinds import Kind
    from pullback.reverse.ops import Pop, Push

    kinds = {"x": Kind(0, "f"), "v": Kind(1, "f"), "a": Kind(1, "f")}
    tape = _tape(PYTHON, kinds)
    [push], [pop] = tape.push("x"), tape.pop_element("a", ast.Name("i"))
    assert isinstance(push, Push) and push.name == "x" and isinstance(pop, Pop) and pop.name == "a"
    assert emit._lines([push, pop], "", []) == ["_fpush(x)", "a[i] = _pop()"]
    tape = _tape(NUMBA, kinds, values_read={"v"})
    code = tape.push("x") + tape.push_element("a", ast.parse("a[1:]").body[0].value.slice)
    tape.reserved = {"x"}
    code += tape.push("x") + tape.pop("x") + tape.reserve({"x": 2}, ast.Name("n"))
    assert emit._lines(code, "", []) == [
        "if _k_x_1 == _tape_x_1.shape[0]:", "    _tape_x_1 = reserve(_tape_x_1, _k_x_1 + 1)",
        "_tape_x_1[_k_x_1] = x", "_k_x_1 += 1",
        "_tape_a_rows_1.append(a[1:].copy())",
        "_tape_x_1[_k_x_1] = x", "_k_x_1 += 1",
        "_k_x_1 -= 1", "x = _tape_x_1[_k_x_1]",
        "_tape_x_1 = reserve(_tape_x_1, _k_x_1 + n * 2)"]
    assert [line.strip() for line in emit._lines(tape.setup_code(), "", [])] == [
        "_tape_x_1 = _ws[0]", "_k_x_1 = 0", "_tape_a_rows_1 = []"]


def test_an_array_whose_shape_only_is_read_saves_its_shape():
    from pullback.backends.numba import NUMBA
    from pullback.core.kinds import Kind

    tape = _tape(NUMBA, {"w": Kind(2, "f")})
    assert emit._lines(tape.push("w") + tape.pop("w"), "", []) == [
        "if _k_w_1 + 2 > _tape_w_1.shape[0]:", "    _tape_w_1 = reserve(_tape_w_1, _k_w_1 + 2)",
        "_tape_w_1[_k_w_1] = w.shape[0]", "_tape_w_1[_k_w_1 + 1] = w.shape[1]", "_k_w_1 += 2",
        "_k_w_1 -= 2", "w = with_shape(w, (_tape_w_1[_k_w_1], _tape_w_1[_k_w_1 + 1]))"]
    assert emit._lines(tape.setup_code(), "", []) == ["_tape_w_1 = _ws[0]", "_k_w_1 = 0"]
    assert tape.workspace() == [("_tape_w_1", np.int64)]      # a tape of ints
