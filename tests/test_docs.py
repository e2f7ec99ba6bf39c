"""The documentation under docs/: every Python example runs and says what it does.

Each page's ```python blocks run in order in one fresh namespace, with the
function the site build uses (docs/hooks.py, ``run_page``); a line
``EXPR  # -> EXPECTED`` in an example is checked, and so is every ``assert``.
A block that imports a package that is not installed (JAX, PyTorch, autograd)
is skipped, and reported.  The generated parts of the pages (the table of
primitives, the outputs shown after blocks) are rendered as the build renders
them, and ``mkdocs build --strict`` runs when MkDocs is installed (the ``docs``
extra).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import pullback

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))


def _hooks():
    spec = importlib.util.spec_from_file_location("pullback_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s*([\w-]+\.md)\s*$", nav, re.M))
    assert listed == set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page):
    text = (DOCS / page).read_text()
    ran = hooks.run_page(text, f"docs/{page}")
    skipped = [f"line {r.block.line}: {r.skipped}" for r in ran if r.skipped]
    marked = [r for r in ran if r.skipped == "marked no-run"]
    assert not marked, f"{page}: blocks marked no-run: every example must run"
    if skipped:
        warnings.warn(f"docs/{page}: examples skipped: {'; '.join(skipped)}", stacklevel=1)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders(page):
    """What the build shows: markers replaced, none left over."""
    text = (DOCS / page).read_text()
    out = hooks.render(text, f"docs/{page}")
    assert "<!-- output" not in out and "<!-- primitives -->" not in out


def test_readme_examples_run():
    """README.md's examples run and their ``# ->`` comments hold, as the pages' do."""
    ran = hooks.run_page((ROOT / "README.md").read_text(), "README.md")
    assert ran and not [r for r in ran if r.skipped]


def _cubes(x):
    return np.sum(x ** 3)


def test_readme_api_table_says_what_each_call_returns():
    """Each row of README.md's API table says what the call returns; where a result
    is a tuple to index (hvp's, back's, one entry per argument even for one), the
    table says so, and it is true (a user once wrote hv[1] for one primal)."""
    import pullback
    text = (ROOT / "README.md").read_text()
    table = text.split("## API", 1)[1].split("\n\n", 2)[1]
    rows = [line.split(" | ") for line in table.splitlines()]
    assert rows[0] == ["| call", "returns |"] and all(len(r) == 2 and r[1].strip(" |")
                                                     for r in rows[2:])
    x, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    hv = pullback.hvp(_cubes, (x,), (v,))
    assert type(hv) is tuple and len(hv) == 1
    np.testing.assert_allclose(hv[0], 6.0 * x * v)      # the Hessian of sum(x**3): 6 diag(x)
    assert "returns a tuple with one entry per primal" in table
    assert "`hvp(f, (x,), (v,))[0]`" in table
    _, back = pullback.vjp(_cubes, x)
    assert type(back(1.0)) is tuple and len(back(1.0)) == 1
    assert "one cotangent per positional argument, also for one argument (`back(g)[0]`)" in table


def test_readme_is_a_short_guide_with_its_two_commands():
    """README.md is a user's guide; the history and the long tables live in docs/.
    Its two commands stay as they are: .ci/run runs the test command."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "\npip install -e . && python -m pullback demo\n" in text
    assert ("\npip install -e '.[test,peers,dask,docs,bench]' && "
            "python -m pytest -q -n auto --dist worksteal\n") in text


def test_no_source_file_exceeds_500_lines():
    """The library's modules stay small enough to read whole.  Test files are not
    bound: the ported peer suites and the corpus are data."""
    over = {path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "src").rglob("*.py"))
            if len(path.read_text().splitlines()) > 500}
    assert over == set()


def _classes():
    """(module path, class name, lines) of every class of the library."""
    out = []
    for path in sorted((ROOT / "src" / "pullback").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                out.append((path.relative_to(ROOT / "src").as_posix(), node.name,
                            node.end_lineno - node.lineno + 1))
    return out


@pytest.mark.parametrize("module,name,lines", [pytest.param(*c, id=f"{c[0]}:{c[1]}")
                                               for c in _classes()])
def test_no_class_exceeds_200_lines(module, name, lines):
    """Each class has one job, small enough to read whole."""
    assert lines <= 200, f"{module}: class {name} has {lines} lines"


def test_expected_value_comments_are_checked():
    page = "```python\nx = 2.0\nx * 3  # -> 6.0\n```\n"
    hooks.run_page(page, "ok.md")
    with pytest.raises(RuntimeError, match=r"bad\.md, the python block at line 2"):
        hooks.run_page(page.replace("6.0", "7.0"), "bad.md")
    printed = "```python\nprint([1.0, 2.5])  # -> [1.0,   2.5]\n```\n"
    hooks.run_page(printed, "print.md")
    with pytest.raises(RuntimeError, match="printed"):
        hooks.run_page(printed.replace("print([1.0, 2.5])", "print([1.0, 2.25])"), "print.md")


def test_a_page_cannot_leave_rules_behind():
    """A page's registrations, new ones and replacements of library rules alike, are
    undone after it."""
    import math

    from pullback.rules import registry
    before = dict(registry._RULES)
    gamma_rule = registry.lookup(math.gamma)
    assert gamma_rule is not None            # the library's rule, which the page replaces
    page = ("```python\nimport math\nimport pullback\n"
            "@pullback.rule(math.gamma)\ndef gamma_vjp(g, ans, x):\n    return g\n\n"
            "def mine(x):\n    return x\n\n"
            "@pullback.rule(mine)\ndef mine_vjp(g, ans, x):\n    return 2.0 * g\n\n"
            "assert pullback.grad(lambda x: math.gamma(x))(1.5) == 1.0\n```\n")
    hooks.run_page(page, "rule.md")
    assert registry._RULES == before
    assert registry.lookup(math.gamma) is gamma_rule
    # The library's derivative again: gamma'(x) = gamma(x) digamma(x).
    assert pullback.check_grad(lambda x: math.gamma(x), 1.5)


def test_output_markers_need_output():
    """An example whose output is shown must print something: an error example whose
    error is no longer raised fails the build instead of showing an empty box."""
    page = ("```python\ntry:\n    pass\nexcept ValueError as err:\n    print(err)\n```\n\n"
            "<!-- output -->\n")
    with pytest.raises(RuntimeError, match="printed nothing"):
        hooks.render(page, "silent.md")


def test_output_markers_show_what_the_block_printed():
    page = "```python\nprint('hello')\n```\n\n<!-- output -->\n\nafter\n"
    assert hooks.render(page, "out.md") == (
        "```python\nprint('hello')\n```\n\n```text title=\"output\"\nhello\n```\n\nafter\n")


def test_the_primitives_table_is_the_registry():
    from pullback.rules import registry
    table = hooks.primitives_markdown()
    listed = hooks.catalogue()
    assert {p.status for p in listed} == set(hooks.STATUS)
    # Everything registered is listed, except pullback's own helpers and the
    # private plumbing of libraries whose functions are inlined (scipy._lib).
    helpers = hooks.internal()
    assert len(listed) + len(helpers) == len(registry._RULES)
    assert all(fn.__module__.startswith("pullback.") or "._" in fn.__module__
               or fn.__module__.startswith("array_api_compat.") for fn in helpers)
    for line in ("| `np.prod` | derivative rule | `a` | `a.prod()` |",
                 "| `len` | no derivative flows (non-differentiable) |",
                 "| `a.view()` | kind only, no rule yet |",
                 "| `np.full` | derivative rule | `fill_value` |",
                 "| `np.reshape` | derivative rule | `a` |  | yes |",
                 "| `np.absolute` (also `np.abs`) | derivative rule | `x` |",
                 "| `np.logaddexp` | derivative rule | `x1`, `x2` |",
                 "| `math.atan2` | derivative rule | `y`, `x` |",
                 "| `np.tensordot` | derivative rule | `a`, `b` |",
                 "| `np.linalg.cholesky` | derivative rule | `a` |",
                 "| `np.linalg.svd` | derivative rule | `a` |"):
        assert line in table
    if importlib.util.find_spec("scipy") is not None:
        for line in ("| `scipy.special.psi` (also `scipy.special.digamma`) | derivative rule |",
                     "| `scipy.special.logsumexp` | derivative rule | `a`, `b` |",
                     "| `scipy.linalg.solve_triangular` | derivative rule | `a`, `b` |"):
            assert line in table


def test_every_library_rule_is_listed_under_its_public_name():
    """A rule added to the library appears in the table by the name its namespace
    gives it (found by identity), never under "Other", which is for your own rules."""
    import math

    from pullback.rules import registry
    with hooks.isolated_registry():
        for key, rule in list(registry._RULES.items()):
            if rule.vjp_tuple is not None:          # pullback.rule: a user's rule
                del registry._RULES[key]
        others = [p.name for p in hooks.catalogue() if p.group == "Other"]
        assert not others, f"library rules with no public name on the page: {others}"

        def mine(x):
            return 2.0 * x
        pullback.rule(mine)(lambda g, ans, x: 2.0 * g)
        assert [p.group for p in hooks.catalogue() if "mine" in p.name] == ["Other"]
    names = {p.name.split("`")[1] for p in hooks.catalogue()}
    for fn, name in ((math.lgamma, "math.lgamma"), (np.hypot, "np.hypot"),
                     (np.kron, "np.kron"), (np.linalg.eigh, "np.linalg.eigh")):
        assert registry.lookup(fn) is not None and name in names


def test_how_it_works_shows_each_stage():
    out = hooks.render((DOCS / "how-it-works.md").read_text(), "docs/how-it-works.md")
    assert "dp[i] += dex" in out                   # the generated derivative
    assert "_t4 = p[i]" in out                      # the normalized statements


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None
                    or importlib.util.find_spec("material") is None,
                    reason="MkDocs and mkdocs-material are not installed (pip install -e '.[docs]')")
def test_mkdocs_build_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")     # mkdocs-material's banner
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "index.html").exists()
