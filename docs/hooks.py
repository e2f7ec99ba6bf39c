"""MkDocs hooks for pullback's documentation (``hooks: [docs/hooks.py]`` in mkdocs.yml).

Everything a page shows that pullback itself can say is produced by running
pullback while the site is built, so the pages cannot drift from the code:

``<!-- primitives -->``
    is replaced by the tables of registered primitives, read from the rule
    registry (``pullback.rules.registry``).  Each is named as its public
    namespace spells it (``np.linalg.svd``, ``scipy.special.psi``), found by
    identity, so a new library rule appears without a change here.  The build
    warns (and so fails, being strict) when SciPy, whose rules are registered
    only when it is installed, is missing.

``<!-- output -->`` or ``<!-- output LANG -->`` right after a ```python block
    is replaced by what that block printed, as a ``LANG`` block (``text`` if
    not given); a block that prints nothing there is an error.  A page with
    such a marker has its ```python blocks run in order, in one fresh
    namespace, up to its last marker.

``tests/test_docs.py`` runs every block of every page with :func:`run_page`,
the same function the build uses, and checks the expected results written in
the examples: a line ``EXPR  # -> EXPECTED`` asserts that ``EXPR`` evaluates to
``EXPECTED`` (a Python literal, compared numerically), or, when ``EXPR`` prints
(``print(...)``), that it prints ``EXPECTED`` (whitespace normalized).

A block is not run when a ``<!-- no-run -->`` line precedes it or its fence
has a ``title="..."`` (the test fails on those: every example must run), or
when it imports a package that is not installed (JAX, PyTorch, autograd), which
the test reports.  The rules a page registers are forgotten after it.
"""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import logging
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

log = logging.getLogger("mkdocs.plugins.pullback_docs")

# --------------------------------------------------------------------- code blocks

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.M | re.S)
_OUTPUT = re.compile(r"^[ \t]*<!--\s*output(?:\s+(?P<lang>\w+))?\s*-->[ \t]*$")
_NO_RUN = re.compile(r"^[ \t]*<!--\s*no-run\s*-->[ \t]*$")
_EXPECT = re.compile(r"^(?P<indent>[ \t]*)(?P<code>\S.*?)\s+# -> (?P<expected>.*?)\s*$")


@dataclass
class Block:
    """One ```python block of a page."""

    line: int                 # the page line of the block's first code line
    code: str                 # dedented
    no_run: bool              # a <!-- no-run --> line precedes it, or a title=
    output: str | None        # the language of an <!-- output --> marker after it
    marker: tuple | None      # (start, end) offsets of that marker in the page
    indent: str               # the fence's indentation (a block inside a tab)


def _line_around(text: str, pos: int, step: int) -> tuple[str, int, int]:
    """The nearest non-blank line before (step -1) or after (step 1) offset pos,
    with its (start, end) offsets; ("", pos, pos) if none."""
    if step < 0:
        end = text.rfind("\n", 0, pos)
        while end > 0:
            start = text.rfind("\n", 0, end) + 1
            line = text[start:end]
            if line.strip():
                return line, start, end
            end = start - 1
        return "", pos, pos
    start = text.find("\n", pos)
    while start != -1 and start < len(text):
        start += 1
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        line = text[start:end]
        if line.strip():
            return line, start, end
        start = end
    return "", pos, pos


def blocks(markdown: str) -> list[Block]:
    """The page's ```python blocks, in order."""
    out = []
    for m in _FENCE.finditer(markdown):
        info = m.group("info").split()
        if not info or info[0] != "python":
            continue
        indent = m.group("indent")
        body = "".join(line[len(indent):] if line.startswith(indent) else line.lstrip()
                       for line in m.group("body").splitlines(keepends=True))
        before, _, _ = _line_around(markdown, m.start(), -1)
        after, start, end = _line_around(markdown, m.end(), 1)
        om = _OUTPUT.match(after)
        out.append(Block(line=markdown.count("\n", 0, m.start("body")) + 1, code=body,
                         no_run=bool(_NO_RUN.match(before)) or any(w.startswith("title=") for w in info),
                         output=(om.group("lang") or "text") if om else None,
                         marker=(start, end) if om else None, indent=indent))
    return out


def missing_imports(code: str) -> list[str]:
    """Top-level packages the code imports that are not installed."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


def _not_installed(exc: Exception) -> str:
    """The package whose absence ``exc`` reports, if it is one that is not installed."""
    if not isinstance(exc, ModuleNotFoundError):
        return ""
    top = (exc.name or "").split(".")[0]
    return top if top and importlib.util.find_spec(top) is None else ""


def _with_expectations(code: str, where: str, first_line: int) -> str:
    """``EXPR  # -> EXPECTED`` lines become calls of ``__expect__`` (same line count, so
    line numbers in tracebacks and in pullback's messages stay those of the page)."""
    lines = code.splitlines(keepends=True)
    for k, line in enumerate(lines):
        m = _EXPECT.match(line.rstrip("\n"))
        if m is None:
            continue
        expr = m.group("code")
        try:
            ast.parse(expr, mode="eval")
        except SyntaxError:
            raise SyntaxError(f"{where}:{first_line + k}: a '# ->' comment must follow an "
                              f"expression, not {expr!r}") from None
        lines[k] = (f"{m.group('indent')}__expect__(lambda: ({expr}), {m.group('expected')!r}, "
                    f"{f'{where}:{first_line + k}'!r})\n")
    return "".join(lines)


def _same(value, want) -> bool:
    if isinstance(want, (tuple, list)) and isinstance(value, (tuple, list)):
        return len(value) == len(want) and all(_same(v, w) for v, w in zip(value, want))
    if isinstance(want, (bool, str, bytes, type(None))) or isinstance(value, (bool, str)):
        return type(value) is type(want) and value == want
    try:
        return np.shape(value) == np.shape(want) and bool(
            np.allclose(np.asarray(value, dtype=float), np.asarray(want, dtype=float),
                        rtol=1e-6, atol=1e-12))
    except (TypeError, ValueError):
        return value == want


def _words(s: str) -> str:
    return " ".join(s.split())


def expect(thunk, expected: str, where: str) -> None:
    """Check one ``EXPR  # -> EXPECTED`` line (see the module docstring)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        value = thunk()
    printed = buf.getvalue()
    sys.stdout.write(printed)
    if value is None and printed:
        if _words(printed) != _words(expected):
            raise AssertionError(f"{where}: the example says it prints\n    {expected}\n"
                                 f"but it printed\n    {printed.strip()}")
        return
    try:
        want = ast.literal_eval(expected)
    except (ValueError, SyntaxError):
        ok = _words(str(value)) == _words(expected)
    else:
        ok = _same(value, want)
    if not ok:
        raise AssertionError(f"{where}: the example says {expected}, but the value is {value!r}")


@dataclass
class Ran:
    """What running one block gave."""

    block: Block
    stdout: str = ""
    skipped: str = ""         # why it was not run


@contextlib.contextmanager
def isolated_registry():
    """Rules that a page registers (``pullback.rule``, ``defrule``) are forgotten after it."""
    from pullback.pipeline import clear_cache
    from pullback.rules import registry
    saved = dict(registry._RULES), dict(registry._METHODS)
    try:
        yield
    finally:
        registry._RULES.clear()
        registry._RULES.update(saved[0])
        registry._METHODS.clear()
        registry._METHODS.update(saved[1])
        clear_cache()


def run_page(markdown: str, name: str, upto: int | None = None) -> list[Ran]:
    """Run the page's ```python blocks in order in one fresh namespace (the first
    ``upto`` of them, or all).  Each block is written to its own file, which pullback
    needs to read the functions it defines; the file is named ``example.py`` and
    pullback's messages name it so.  Raises on the first failing block, naming the
    page and line."""
    page_blocks = blocks(markdown)[:upto]
    namespace = {"__name__": "__main__", "__expect__": expect}
    results = []
    tmp = tempfile.mkdtemp(prefix="pullback-docs-")
    try:
        with isolated_registry():
            for k, block in enumerate(page_blocks):
                missing = missing_imports(block.code)
                if block.no_run or missing:
                    why = "marked no-run" if block.no_run else f"needs {', '.join(missing)}"
                    results.append(Ran(block, skipped=why))
                    continue
                folder = os.path.join(tmp, f"{k}")
                os.mkdir(folder)
                path = os.path.join(folder, "example.py")
                code = _with_expectations(block.code, name, block.line)
                with open(path, "w") as fh:
                    fh.write(code)
                namespace["__file__"] = path
                buf = io.StringIO()
                try:
                    with contextlib.redirect_stdout(buf):
                        exec(compile(code, path, "exec"), namespace)
                except Exception as exc:
                    absent = _not_installed(exc)
                    if absent:          # a package the block's imports import
                        results.append(Ran(block, skipped=f"needs {absent}"))
                        continue
                    raise RuntimeError(f"{name}, the python block at line {block.line} failed "
                                       f"({type(exc).__name__}):\n{exc}") from exc
                results.append(Ran(block, buf.getvalue().replace(folder + os.sep, "")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def render_outputs(markdown: str, name: str) -> str:
    """``markdown`` with each ``<!-- output -->`` marker replaced by the output of the
    block before it."""
    page_blocks = blocks(markdown)
    last = max((k for k, b in enumerate(page_blocks) if b.output), default=None)
    if last is None:
        return markdown
    ran = run_page(markdown, name, upto=last + 1)
    pieces, pos = [], 0
    for r in ran:
        b = r.block
        if b.output is None:
            continue
        if r.skipped:
            raise RuntimeError(f"{name}: the block at line {b.line} has an output marker but "
                               f"was not run ({r.skipped})")
        text = r.stdout.rstrip("\n")
        if not text.strip():
            raise RuntimeError(f"{name}: the block at line {b.line} has an output marker but "
                               "printed nothing (an example of an error that is no longer "
                               "raised?)")
        fence = f'{b.indent}```{b.output} title="output"\n' + "".join(
            f"{b.indent}{line}\n" if line else "\n" for line in text.split("\n")) + f"{b.indent}```"
        start, end = b.marker
        pieces += [markdown[pos:start], fence]
        pos = end
    pieces.append(markdown[pos:])
    return "".join(pieces)


# --------------------------------------------------------------------- the primitives

# How the operators are written; which function each AST operator means comes
# from pullback (rules.scalar.OPERATORS), this only spells them.
_SYMBOLS = {"Add": "a + b", "Sub": "a - b", "Mult": "a * b", "Div": "a / b", "Pow": "a ** b",
            "USub": "-a", "UAdd": "+a", "Mod": "a % b", "MatMult": "a @ b", "FloorDiv": "a // b"}

# The public namespaces a registered function is looked up in, by identity, in
# this order: its group on the page and how it is spelled there.  SciPy's are
# there only when SciPy is installed (its rules are registered only then).
_NAMESPACES = [("math", "math", "math."), ("NumPy", "numpy", "np."),
               ("numpy.linalg", "numpy.linalg", "np.linalg."),
               ("scipy.special", "scipy.special", "scipy.special."),
               ("scipy.linalg", "scipy.linalg", "scipy.linalg.")]

_GROUPS = (["Python operators", "Python builtins"] + [g for g, _, _ in _NAMESPACES]
           + ["ndarray methods", "Other"])

STATUS = {
    "rule": "derivative rule",
    "nondiff": "no derivative flows (non-differentiable)",
    "kind": "kind only, no rule yet",
}


@dataclass(frozen=True)
class Primitive:
    group: str
    name: str
    status: str               # a key of STATUS
    wrt: tuple                # the parameters a cotangent flows to
    methods: tuple            # ndarray methods that mean this primitive
    view: bool                # the result may share memory with the first argument
    key: str = ""             # the dotted name, to sort by


def _public_names() -> dict:
    """id(function) -> (group, prefix, [its public names in that namespace]), for every
    function of the namespaces in ``_NAMESPACES`` that can be imported."""
    found: dict = {}
    for group, module_name, prefix in _NAMESPACES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            if callable(obj) and not isinstance(obj, type):
                entry = found.setdefault(id(obj), (group, prefix, []))
                if entry[0] == group:           # the first namespace that has it wins
                    entry[2].append(name)
    return found


def _spelled(fn, prefix: str, names: list) -> str:
    """``np.absolute`` (also ``np.abs``): its own name first when that is public."""
    own = getattr(fn, "__name__", None)
    first = own if own in names else names[0]
    extra = [n for n in names if n != first]
    return f"`{prefix}{first}`" + (f" (also {', '.join(f'`{prefix}{a}`' for a in extra)})"
                                   if extra else "")


def missing_namespaces() -> list[str]:
    """The namespaces of ``_NAMESPACES`` that cannot be imported (their rules are not
    registered, so the page would not list them)."""
    return [m for _, m, _ in _NAMESPACES if importlib.util.find_spec(m.split(".")[0]) is None]


def catalogue() -> list[Primitive]:
    """Every primitive in the rule registry, as the documentation lists it.

    A function is named as its public namespace spells it (``np.linalg.svd``,
    ``scipy.special.psi``), found by identity, so a rule added to the library is
    listed under its public name without any change here.  pullback's own helpers
    that user code never calls (the loop trip counter), and the private plumbing of
    libraries whose functions are inlined (``scipy._lib``), are left out:
    :func:`internal` lists them.  Functions that stand in for ndarray methods are
    listed as those methods.  Only a function outside every known namespace (a
    rule you registered for your own function) is listed under "Other"."""
    import operator

    from pullback.rules import registry
    from pullback.rules.scalar import OPERATORS

    spelled = {id(fn): _SYMBOLS.get(op, op) for op, fn in OPERATORS.items()}
    spelled[id(operator.getitem)] = "a[i]"
    public = _public_names()
    out = []
    for rule in registry._RULES.values():
        fn = rule.fn
        module = getattr(fn, "__module__", None) or ""
        if not rule.differentiable:
            status = "nondiff"
        else:
            status = "rule" if rule.has_derivative else "kind"
        if module in ("operator", "_operator"):
            group = "Python operators"
            name = f"`{spelled[id(fn)]}` (`operator.{fn.__name__}`)" if id(fn) in spelled \
                else f"`operator.{fn.__name__}`"
        elif module == "builtins":
            group, name = "Python builtins", f"`{fn.__name__}`"
        elif id(fn) in public:
            group, prefix, names = public[id(fn)]
            name = _spelled(fn, prefix, names)
        elif rule.methods:
            group, name = "ndarray methods", f"`a.{rule.methods[0]}()`"
        elif module.startswith("pullback."):
            continue        # pullback's own helpers (the loop trip counter)
        elif _private(module):
            continue        # a library's private plumbing (scipy._lib's array_namespace)
        else:
            group, name = "Other", f"`{rule.name}`"
        out.append(Primitive(group, name, status, tuple(rule.adjoints), tuple(rule.methods),
                             rule.view, name.lower()))
    return sorted(out, key=lambda p: (_GROUPS.index(p.group), p.key))


def _private(module: str) -> bool:
    """A module users do not import: a private part (``scipy._lib``) or a vendored
    array-API shim."""
    return any(part.startswith("_") for part in module.split(".")) \
        or module.startswith("array_api_compat.")


def internal() -> list:
    """The registered functions :func:`catalogue` leaves out: pullback's own helpers
    and libraries' private plumbing."""
    from pullback.rules import registry
    public = _public_names()
    out = []
    for r in registry._RULES.values():
        module = getattr(r.fn, "__module__", None) or ""
        if r.methods or id(r.fn) in public or module in ("operator", "_operator", "builtins"):
            continue
        if module.startswith("pullback.") or _private(module):
            out.append(r.fn)
    return out


def primitives_markdown() -> str:
    """The tables that replace ``<!-- primitives -->``."""
    prims = catalogue()
    counts = {s: sum(p.status == s for p in prims) for s in STATUS}
    lines = [f"{len(prims)} primitives are registered: {counts['rule']} with a derivative rule, "
             f"{counts['nondiff']} through which no derivative flows, and {counts['kind']} "
             "known by their result kind only.", ""]
    for group in _GROUPS:
        rows = [p for p in prims if p.group == group]
        if not rows:
            continue
        lines += [f"### {group}", "", "| primitive | status | derivative flows to | "
                  "ndarray method | may return a view |", "|---|---|---|---|---|"]
        for p in rows:
            wrt = ", ".join(f"`{w}`" for w in p.wrt) or "—"
            meth = ", ".join(f"`a.{m}()`" for m in p.methods) or ""
            lines.append(f"| {p.name} | {STATUS[p.status]} | {wrt} | {meth} | "
                         f"{'yes' if p.view else ''} |")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------- MkDocs


def render(markdown: str, name: str) -> str:
    """The page as the site shows it: markers replaced by what pullback says."""
    if "<!-- primitives -->" in markdown:
        markdown = markdown.replace("<!-- primitives -->", primitives_markdown())
    return render_outputs(markdown, name)


def on_page_markdown(markdown, page, config, files):
    if "<!-- primitives -->" in markdown:
        for module in missing_namespaces():
            # A warning fails the strict build: the published table must be complete.
            log.warning("docs/hooks.py: %s is not installed, so the table of primitives "
                        "would leave out its rules (pip install -e '.[docs]')", module)
    return render(markdown, page.file.src_path)
