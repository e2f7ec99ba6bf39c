"""The fusion peephole (reverse/fusion.fuse_elementwise): an
arithmetic temporary read once moves into its reader only when that computes
the same values; and fused derivatives still match finite differences."""
from __future__ import annotations

import ast

import numpy as np

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback.reverse.fusion import fuse_elementwise
from pullback.reverse.ops import Comment, from_line


def _fused(forward: str, reverse: str = "", also_read=()) -> tuple[str, str]:
    blocks = [ast.parse(forward).body, ast.parse(reverse).body]
    fuse_elementwise(blocks, also_read)
    return tuple(ast.unparse(ast.Module(b, [])) for b in blocks)


def test_a_chain_of_temporaries_becomes_one_expression():
    fwd, _ = _fused("d_t4 = -d_t7\nd_t3 = d_t4 * 2.0\nadd_into(du[1:-1], d_t3)")
    assert fwd == "add_into(du[1:-1], d_t7 * -2.0)"  # the negation folded into the number


def test_views_and_pushes_in_between_do_not_stop_it():
    src = ("_t1 = u[1:-1]\n_t2 = u[2:]\n_t4 = 2.0 * _t1\ntape.append(_t7)\n"
           "_t7 = _t2 - _t4\nrows.append(u[1:-1].copy())\nv = _t7")
    fwd, _ = _fused(src)
    assert fwd.splitlines() == ["tape.append(_t7)", "_t7 = u[2:] - 2.0 * u[1:-1]",
                                "rows.append(u[1:-1].copy())", "v = _t7"]


def test_never_across_a_write_to_memory_or_to_an_input():
    for between in ("a[0] = 5.0", "a = b", "add_into(a[1:], b)", "k += 1"):
        src = f"_t1 = a * 2.0\n{between}\nc = _t1 + 1.0"
        assert _fused(src)[0] == ast.unparse(ast.parse(src))


def test_never_a_temporary_read_twice_or_by_the_other_sweep_or_the_result():
    assert _fused("_t1 = a * 2.0\nc = _t1 + _t1")[0] == "_t1 = a * 2.0\nc = _t1 + _t1"
    assert _fused("_t1 = a * 2.0\nc = _t1 + 1.0", "d = _t1")[0] == "_t1 = a * 2.0\nc = _t1 + 1.0"
    assert _fused("_t1 = a * 2.0", also_read={"_t1"})[0] == "_t1 = a * 2.0"


def test_never_into_another_source_line_or_after_a_call_runs():
    block = ast.parse("_t1 = a * 2.0\nc = _t1 + 1.0").body
    block.insert(1, from_line("y = 1"))      # as the sweeps mark a source line
    fuse_elementwise([block])
    assert [s.text if isinstance(s, Comment) else ast.unparse(s) for s in block] == \
        ["_t1 = a * 2.0", "from: y = 1", "c = _t1 + 1.0"]
    src = "_t1 = a * 2.0\nc = f(a) + _t1"
    assert _fused(src)[0] == src


def stencil(u0, c):
    u = u0.copy()
    for k in range(3):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2]) - 0.5 * c * (u[1:-1] * u[1:-1])
    return np.sum(u * u * u)


def test_a_fused_stencil_matches_finite_differences(jit):
    args = (np.random.default_rng(2).standard_normal(7), 0.15)
    grads = pullback.grad(stencil, argnums=(0, 1), jit=jit)(*args)
    for k in range(2):
        assert_fd_close(grads[k], fd_estimate(stencil, args, k), rtol=1e-6, atol=1e-8)
