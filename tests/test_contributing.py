"""CONTRIBUTING.md's recipe for a derivative rule runs as written.

The fenced ``python`` blocks of its section "Adding a derivative rule" are run in
order in a fresh namespace (a module of the tests/rules package, so that the
recipe's ``from .checks import ...`` is the line a rule test has).  They define a
primitive of their own, register its rule and check it with ``check_vjp``; then
the gradient of a function calling the primitive, through the whole transform,
is compared with central finite differences.  The rule is removed afterwards, so
nothing else sees it.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from rules import checks

import pullback
from pullback.rules import registry

CONTRIBUTING = Path(__file__).resolve().parent.parent / "CONTRIBUTING.md"
SECTION = "## Adding a derivative rule"
FENCE = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)


def recipe_blocks(text: str) -> list[str]:
    """The python blocks of the recipe's section, dedented (they sit in a list)."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end != -1 else len(text)]
    return [textwrap.dedent(m.group(2)) for m in FENCE.finditer(section)]


def run_recipe(text: str) -> dict:
    ns = {"__name__": f"{checks.__package__}.contributing_recipe", "__package__": checks.__package__}
    for k, block in enumerate(recipe_blocks(text)):
        exec(compile(block, f"CONTRIBUTING.md, recipe block {k + 1}", "exec"), ns)
    return ns


def _loss(a, b):
    return np.sum(np.sin(smooth_max(a, b)) * WEIGHTS)      # noqa: F821 (set by the test)


WEIGHTS = np.linspace(0.5, 1.5, 4)


def _central_differences(f, args, argnum, eps=1e-6):
    x = np.array(args[argnum], dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        up, down = list(args), list(args)
        up[argnum], down[argnum] = x + step, x - step
        out[i] = (f(*up) - f(*down)) / (2 * eps)
    return out


def test_the_recipe_has_its_steps():
    blocks = recipe_blocks(CONTRIBUTING.read_text())
    source = "\n".join(blocks)
    assert len(blocks) >= 4
    for step in ("def smooth_max(", "defrule(smooth_max", "check_vjp(smooth_max"):
        assert step in source, f"the recipe lost {step!r}"


def test_the_recipe_runs_and_its_rule_is_right(monkeypatch):
    ns = run_recipe(CONTRIBUTING.read_text())
    fn = ns["smooth_max"]
    try:
        rule = registry.lookup(fn)
        assert rule is not None and set(rule.adjoints) == {"x1", "x2"}
        # Through the transform: a function that calls the primitive, broadcasting.
        monkeypatch.setitem(globals(), "smooth_max", fn)
        a = np.random.default_rng(3).standard_normal((3, 1))
        b = np.array([-1.0, 0.2, 0.9, 2.5])
        grads = pullback.grad(_loss, argnums=(0, 1))(a, b)
        for argnum, got in enumerate(grads):
            assert np.shape(got) == np.shape((a, b)[argnum])
            np.testing.assert_allclose(got, _central_differences(_loss, [a, b], argnum),
                                       rtol=1e-6, atol=1e-8)
    finally:
        registry.unregister(fn)
    assert registry.lookup(fn) is None


def test_a_broken_recipe_fails():
    """The runner notices: the helper of an older recipe called a name it never imported."""
    text = CONTRIBUTING.read_text().replace("return g * xp.exp(x - ans)",
                                            "return unbroadcast(g * xp.exp(x - ans), x)")
    assert text != CONTRIBUTING.read_text()
    with pytest.raises(NameError, match="unbroadcast"):
        ns = run_recipe(text)
        registry.unregister(ns["smooth_max"])
    for rule in list(registry._RULES.values()):       # the half-run recipe registered one
        if getattr(rule.fn, "__module__", "").endswith("contributing_recipe"):
            registry.unregister(rule.fn)
