"""The package's imports point one way, down a declared layer order.

core -> rules -> frontend -> analysis -> reverse -> forward -> backends -> emit -> pipeline -> api.
A module may import from its own layer or a lower one; no module imports
another part of pullback inside a function (a lazy import hides a cycle).
"""
from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "pullback"

LAYERS = ["core", "rules", "frontend", "analysis", "reverse", "forward", "backends", "emit",
          "pipeline", "api"]
# Top-level modules that are not a layer of their own belong to the API layer.
API_MODULES = {"api", "arguments", "trees", "jacobians", "jacobian_trees", "nesting", "custom",
               "check", "__init__", "__main__", "examples", "ensemble", "bench", "user_errors",
               "vmap", "parallel_map", "sparse_jacobians", "columns", "hessians",
               "tangent_calls", "interop", "torch", "jax", "export"}
# Modules that may be imported inside a function, and why (never to dodge a cycle).
DEFERRED = {"backends.numba_twins": "imports numba (0.2 s): loaded when Numba first compiles"}


def layer_of(module: str) -> int:
    """module: dotted path below pullback (``reverse.transform``)."""
    head = module.split(".")[0]
    if head in API_MODULES:
        return LAYERS.index("api")
    assert head in LAYERS, f"pullback.{module} is in no declared layer: add it to LAYERS"
    return LAYERS.index(head)


def modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package and len(parts) > 1:
            parts = parts[:-1]
        yield ".".join(parts), path, is_package


def internal_imports(module, path, is_package):
    """(imported module, line, at top level?) for each import of pullback code."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    package = module.split(".") if is_package else module.split(".")[:-1]
    if module == "__init__":
        package = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] if node.module else [".".join(base + [a.name]) for a in node.names]
            elif node.module and node.module.split(".")[0] == "pullback":
                names = [node.module.partition(".")[2] or "__init__"]
            else:
                continue
            for name in names:
                yield name, node.lineno, id(node) in top
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "pullback":
                    yield a.name.partition(".")[2] or "__init__", node.lineno, id(node) in top


ALL = list(modules())


@pytest.mark.parametrize("module,path,is_package", ALL, ids=[m for m, _, _ in ALL])
def test_imports_point_down_the_layers(module, path, is_package):
    mine = layer_of(module)
    for target, line, at_top in internal_imports(module, path, is_package):
        if not target:
            continue
        assert layer_of(target) <= mine, (
            f"pullback.{module} (layer {LAYERS[mine]}) imports pullback.{target} "
            f"(layer {LAYERS[layer_of(target)]}) at line {line}: imports must point down")
        assert at_top or target in DEFERRED, (
            f"pullback.{module} imports pullback.{target} inside a function "
                        f"(line {line}): import at the top of the module")


def test_no_import_cycles():
    graph = {m: set() for m, _, _ in ALL}
    for module, path, is_package in ALL:
        for target, _, _ in internal_imports(module, path, is_package):
            if target in graph and target != module:
                graph[module].add(target)
    # A package's __init__ importing its own modules is not a cycle through them.
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(graph[m]):
            if t.startswith(m + ".") or m == "__init__":
                continue
            if state.get(t) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [m, t]))
            if t not in state:
                visit(t, stack + [m])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
