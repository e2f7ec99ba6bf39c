"""Scatter loops of the compiled reverse sweep rewritten as gathers
(pullback.reverse.gather): random stencil loops give bit-identical arrays after
the rewrite, whatever their offsets, direction and length (shorter than the
stencil, or empty); the loops it must leave alone are left alone; and the heat
step's Numba gradient equals the reference derivative's exactly."""
from __future__ import annotations

import ast
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pullback
from pullback.core.optimise import reference
from pullback.reverse.gather import gather_scatters

PAD = 4


def _rewritten(src):
    """``(original f, rewritten f, whether the rewrite fired)`` of ``def f``."""
    tree = ast.parse(src)
    fn = tree.body[0]
    before = ast.unparse(tree)
    counter = itertools.count()
    gather_scatters([fn.body], lambda stem: f"{stem}{next(counter)}")
    after = ast.unparse(ast.fix_missing_locations(tree))
    spaces = [{}, {}]
    exec(compile(before, "<before>", "exec"), spaces[0])
    exec(compile(after, "<after>", "exec"), spaces[1])
    return spaces[0]["f"], spaces[1]["f"], before != after


def _arrays(rng, n):
    return [rng.normal(size=n + 2 * PAD) for _ in range(5)]


def _same_effect(src, lo, hi, seed=0):
    f, g, fired = _rewritten(src)
    rng = np.random.default_rng(seed)
    a = _arrays(rng, hi + 3)
    b = [x.copy() for x in a]
    f(*a, lo, hi)
    g(*b, lo, hi)
    for x, y in zip(a, b):
        assert np.array_equal(x, y), src
    return fired


@st.composite
def stencils(draw):
    """A reverse stencil loop: read ``du[i]`` (reset to 0 after, maybe), add terms
    into ``dun`` and ``dk`` at offsets, reading ``un`` and ``k`` around ``i``."""
    step = draw(st.sampled_from([1, -1]))
    reset = draw(st.booleans())
    lines = ["    d = du[i + %d]" % PAD]
    if reset:
        lines.append("    du[i + %d] = 0.0" % PAD)
    lines.append("    t = d * 0.5 - un[i + %d]" % (PAD + draw(st.integers(-2, 2))))
    for _ in range(draw(st.integers(2, 6))):
        target = draw(st.sampled_from(["dun", "dk"]))
        c = draw(st.integers(-2, 2))
        read = draw(st.integers(-2, 2))
        term = draw(st.sampled_from(["t * k[i + %d]", "-(d * k[i + %d])", "t + un[i + %d] * d",
                                     "d"]))
        term = term % (PAD + read) if "%d" in term else term
        lines.append(f"    {target}[i + {PAD + c}] += {term}")
    header = "for i in range(lo, hi + 1, 1):" if step == 1 else \
        "for i in range(hi, lo - 1, -1):"
    body = "\n".join("    " + line for line in lines)
    return f"def f(du, un, k, dun, dk, lo, hi):\n    {header}\n{body}\n"


@settings(max_examples=150, deadline=None)
@given(src=stencils(), lo=st.integers(0, 3), length=st.integers(-1, 8))
def test_a_rewritten_loop_leaves_every_array_as_the_scatter_did(src, lo, length):
    _same_effect(src, lo, lo + length)


def test_the_heat_stencil_is_rewritten():
    src = """def f(du, un, k, dun, dk, lo, hi):
    for i in range(hi, lo - 1, -1):
        d = du[i]
        du[i] = 0.0
        e = d * 0.2
        dun[i - 1] += e * k[i - 1]
        dun[i] += d - e * (k[i] + k[i - 1])
        dun[i + 1] += e * k[i]
        dk[i - 1] += e * (un[i - 1] - un[i])
        dk[i] += e * (un[i + 1] - un[i])
"""
    for lo, hi in [(1, 20), (1, 1), (2, 3), (5, 4)]:
        assert _same_effect(src.replace("[i", "[4 + i"), lo, hi)


@pytest.mark.parametrize("body, why", [
    ("dun[i + 4] += dun[i + 3] * 0.5\n        dun[i + 5] += du[i + 4]",
     "an array added into is read"),
    ("d = du[i + 5]\n        du[i + 4] = 0.0\n        dun[i + 3] += d\n        dun[i + 5] += d",
     "a reset array read at another element"),
    ("dun[i + 3] += du[i + 4]\n        du[i + 4] = 0.0\n        d = du[i + 4]\n"
     "        dun[i + 5] += d", "a reset array read after its reset"),
    ("dun[i + 3] += s\n        s = du[i + 4]\n        dun[i + 5] += s",
     "a temporary carried from the iteration before"),
    ("dun[i + 4] += du[i + 4]\n        dk[i + 4] += du[i + 5]", "no array added at two offsets"),
    ("dun[i + 4, 0] += du[i + 4]\n        dun[i + 5, 0] += du[i + 4]", "a 2-D index"),
])
def test_loops_it_must_leave_alone(body, why):
    src = f"""def f(du, un, k, dun, dk, lo, hi):
    s = 0.0
    for i in range(lo, hi + 1, 1):
        {body}
"""
    assert not _rewritten(src)[2], why


@pytest.mark.parametrize("before", ["", "    d = 0.0\n"], ids=["unset", "assigned before"])
def test_a_temporary_read_after_the_loop_keeps_the_loop(before):
    # The read after the loop sees the loop's last value (not the one before it).
    src = f"""def f(du, un, k, dun, dk, lo, hi):
{before}    for i in range(lo, hi + 1, 1):
        d = du[i + 4]
        dun[i + 3] += d
        dun[i + 5] += d
    k[0] = d
"""
    assert not _rewritten(src)[2]


def test_a_step_of_two_keeps_the_loop():
    src = """def f(du, un, k, dun, dk, lo, hi):
    for i in range(lo, hi + 1, 2):
        dun[i + 3] += du[i + 4]
        dun[i + 5] += du[i + 4]
"""
    assert not _rewritten(src)[2]


def heat(u0, k, c, n):
    m = u0.shape[0]
    u = u0.copy()
    for s in range(n):
        un = u.copy()
        for i in range(1, m - 1):
            u[i] = un[i] + c * (k[i] * (un[i + 1] - un[i]) - k[i - 1] * (un[i] - un[i - 1]))
    loss = 0.0
    for i in range(m):
        loss += (u[i] - 0.3) ** 2
    return loss


def test_the_heat_gradient_is_the_reference_s_bit_for_bit():
    rng = np.random.default_rng(0)
    for m in (3, 4, 12):
        args = (np.exp(-np.linspace(-2, 2, m) ** 2), rng.uniform(0.5, 1.5, m - 1), 0.2, 7)
        g = pullback.grad(heat, argnums=(0, 1), jit=True)
        got = g(*args)
        with reference():
            want = pullback.grad(heat, argnums=(0, 1), jit=True)(*args)
        for a, b in zip(got, want):
            assert np.array_equal(a, b)
    assert "_m" in g.source and "dun[i + 1] +=" not in g.source
