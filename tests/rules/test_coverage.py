"""Every rule is tested: each module of ``src/pullback/rules/`` that registers a
derivative has a mirrored ``tests/rules/test_<module>.py``, and each primitive
with a derivative rule is named in a ``check_vjp`` case of ``tests/rules/``.

"Named in a check_vjp case" is read from the test files' source with ``ast``
(no record kept at run time, which would depend on which tests ran and on
which worker).  In a test function that calls ``check_vjp`` or ``check_rule``
(or a function of the same file that calls one, such as a local ``_check``),
the dotted names (``np.logaddexp``, ``math.sin``, ``abs``) in those calls'
arguments and in the test's ``parametrize`` decorators count, and so do, for a
name bound in the test or at module level, the names in what binds it: an
assigned value (``f = lambda x: np.sin(x)``, a list of cases), a nested or
module-level ``def``, the iterable of a ``for``.  Each name is resolved in the
test module's namespace, so ``np.max`` and ``np.amax`` are told apart by
identity.  This errs on the side of counting (a name used only in a forward
function passed to check_vjp counts too): it finds primitives with no case at
all, it does not prove a case is thorough.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import sys
from pathlib import Path

import pullback.rules
from pullback.rules import registry

RULES_DIR = Path(pullback.rules.__file__).parent
TESTS_DIR = Path(__file__).parent

#: Modules of rules/ that register no derivative, and why.
NO_RULES = {
    "__init__": "imports the domain modules so that their registrations run",
    "registry": "the table of rules itself (tests/rules/test_registry.py)",
    "templates": "reads rule templates; every rule's test exercises it",
    "results": "result kinds (abstract evaluation), no derivative",
    "twins": "type predicates for the Numba twins, no derivative",
    "nondiff": "registers only primitives no derivative flows through",
    "decomposition_kernels": "the Numba kernels of decompositions.py's twins (its tests)",
}

REGISTERS_A_DERIVATIVE = {"defrule", "defvjp"}


def _called_name(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _registers_rules(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.Call) and _called_name(n) in REGISTERS_A_DERIVATIVE
               for n in ast.walk(tree))


def test_every_rule_module_has_a_mirrored_test_file():
    missing, stale = [], []
    for path in sorted(RULES_DIR.glob("*.py")):
        module = path.stem
        if module in NO_RULES:
            if _registers_rules(path):
                stale.append(module)
        elif not (TESTS_DIR / f"test_{module}.py").exists():
            missing.append(f"tests/rules/test_{module}.py (for rules/{module}.py)")
    assert not missing, f"rule modules without a test file: {missing}"
    assert not stale, f"{stale} register derivatives now: give them a test file, not an exemption"


# ---------------------------------------------------------------------------
# Which primitives the test files check with check_vjp

def _dotted(node) -> str | None:
    """``np.linalg.solve`` for that expression, or None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _names_in(node) -> set[str]:
    return {d for n in ast.walk(node) if (d := _dotted(n)) is not None}


def _checkers(tree: ast.Module) -> set[str]:
    """``check_vjp`` (and ``check_rule`` of checks.py, which calls it on each parameter)
    and the module's functions that call one, directly or through another."""
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    found = {"check_vjp", "check_rule"}
    grew = True
    while grew:
        grew = False
        for name, fn in funcs.items():
            if name not in found and any(isinstance(c, ast.Call) and _called_name(c) in found
                                         for c in ast.walk(fn)):
                found.add(name)
                grew = True
    return found


def _definitions(scope) -> dict[str, list]:
    """Name -> what binds it directly in ``scope``: assigned values, ``def``s and the
    iterables of ``for`` loops (a module's top level, or a whole test function)."""
    nodes = scope.body if isinstance(scope, ast.Module) else ast.walk(scope)
    out: dict[str, list] = {}
    for n in nodes:
        if isinstance(n, ast.Assign):
            for t in n.targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        out.setdefault(name.id, []).append(n.value)
        elif isinstance(n, ast.FunctionDef) and n is not scope:
            out.setdefault(n.name, []).append(n)
        elif isinstance(n, (ast.For, ast.comprehension)):
            for name in ast.walk(n.target):
                if isinstance(name, ast.Name):
                    out.setdefault(name.id, []).append(n.iter)
    return out


def _checked_names(tree: ast.Module) -> set[str]:
    """Dotted names a check_vjp case of this test file names (see the module docstring)."""
    checkers = _checkers(tree)
    module_defs = _definitions(tree)
    names: set[str] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        roots = [arg for c in ast.walk(fn) if isinstance(c, ast.Call) and _called_name(c) in checkers
                 for arg in [*c.args, *(k.value for k in c.keywords)]]
        if not roots:
            continue
        roots += [d for d in fn.decorator_list
                  if isinstance(d, ast.Call) and _called_name(d) == "parametrize"]
        defs = {**module_defs, **_definitions(fn)}
        seen: set[int] = set()
        while roots:       # a name bound in the test or at module level: what binds it too
            node = roots.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            found = _names_in(node)
            names |= found
            roots.extend(v for n in found for v in defs.get(n, ()))
    return names


def _resolve(dotted: str, namespace: dict):
    head, *rest = dotted.split(".")
    obj = namespace[head] if head in namespace else getattr(builtins, head, None)
    for part in rest:
        obj = getattr(obj, part, None)
    return obj


def checked_primitives() -> set:
    """Registry keys of the primitives some check_vjp case of tests/rules/ names."""
    keys = set()
    for path in sorted(TESTS_DIR.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        module = importlib.import_module(f"{__package__}.{path.stem}")
        for name in _checked_names(tree):
            obj = _resolve(name, vars(module))
            if obj is not None and registry.lookup(obj) is not None:
                keys.add(registry.key(obj))
    return keys


def _defined_by_a_test(fn) -> bool:
    """``fn`` is a test's own function (a module under tests/, or code run by exec)."""
    module = getattr(fn, "__module__", None)
    if module is None:
        return False
    if module not in sys.modules:
        return True
    path = getattr(sys.modules[module], "__file__", None)
    return path is not None and Path(path).resolve().is_relative_to(TESTS_DIR.parent.resolve())


def _checkable(rule) -> bool:
    """A built-in rule with a derivative.  Not checkable by category: primitives no
    derivative flows through (``defnondiff``), namespace pickers, primitives known by
    their result kind only, users' rules and rules a test registered for its own
    function (while that test runs, in the same process)."""
    return (rule.differentiable and rule.has_derivative and rule.call_signature is None
            and not _defined_by_a_test(rule.fn))


def test_every_primitive_with_a_rule_has_a_check_vjp_case():
    checked = checked_primitives()
    unchecked = sorted(r.name for k, r in list(registry._RULES.items())
                       if _checkable(r) and k not in checked)
    assert not unchecked, f"primitives with a rule but no check_vjp case in tests/rules: {unchecked}"


def test_the_static_reading_finds_check_vjp_cases():
    """The reader itself, on a small source: names in the call, the decorators, a loop,
    a constant, and a local checker count; a name elsewhere in the file does not."""
    source = '''
FNS = [np.sin, np.cos]
def _check(fn, x):
    check_vjp(fn, rule_vjp(fn, "x"), [x], 0)
@pytest.mark.parametrize("fn", FNS)
def test_a(fn):
    for f in (np.tan,):
        _check(f, 1.0)
def test_b():
    check_vjp(np.exp, None, [1.0], 0)
def test_c():
    assert np.log(1.0) == 0.0
def test_d():
    f = lambda x: np.sqrt(x)
    def vjp(g, ans, x):
        return rule_vjp(np.sinh, "x")(g, ans, x)
    check_vjp(f, vjp, [1.0], 0)
'''
    names = _checked_names(ast.parse(source))
    assert {"np.sin", "np.cos", "np.tan", "np.exp", "np.sqrt", "np.sinh"} <= names
    assert "np.log" not in names
