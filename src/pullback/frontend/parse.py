"""Find a function's source and parse it into a standalone ``ast.FunctionDef``.

The whole source file is parsed (once per file) and the function's node is
found by its code object's position, so nested functions, decorated functions
and several lambdas on one line all resolve to the right node with their real
line numbers.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import types
from dataclasses import dataclass, field

from ..core.errors import Location, SourceUnavailableError


@dataclass
class ParsedFunction:
    """A user function, its AST and the names it can see."""

    fn: types.FunctionType
    node: ast.FunctionDef            # a lambda is rewritten as ``def <lambda>(...): return body``
    filename: str
    lines: list[str]                 # the source file's lines, for error messages
    globals: dict
    closure: dict = field(default_factory=dict)   # free variable name -> cell

    @property
    def name(self) -> str:
        return self.fn.__name__

    def location(self, node: ast.AST | None) -> Location:
        return self.at_line(getattr(node, "lineno", None) or self.node.lineno)

    def at_line(self, lineno: int) -> Location:
        """The location of a line of the source file (an IR statement's ``line``)."""
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return Location(self.filename, lineno, line.rstrip("\n"), self.fn.__qualname__)


def unwrap(fn):
    """The plain Python function behind ``fn`` (a numba dispatcher's ``py_func``)."""
    py_func = getattr(fn, "py_func", None)
    if py_func is not None and isinstance(py_func, types.FunctionType):
        return py_func, True
    return inspect.unwrap(fn) if isinstance(fn, types.FunctionType) else fn, False


_FILE_TREES: dict[tuple[str, int], ast.Module] = {}


def _file_tree(filename: str, lines: list[str]) -> ast.Module | None:
    key = (filename, hash(tuple(lines)))
    tree = _FILE_TREES.get(key)
    if tree is None:
        try:
            tree = ast.parse("".join(lines), filename=filename)
        except SyntaxError:
            return None
        _FILE_TREES[key] = tree
    return tree


def _code_span(code: types.CodeType):
    """(first, last) source positions of the code's instructions, ignoring the
    position-less prologue."""
    pts = [(ln, c, el, ec) for (ln, el, c, ec) in code.co_positions()
           if ln is not None and c is not None and not (c == 0 and ec == 0)]
    if not pts:
        return None
    return min((ln, c) for ln, c, _, _ in pts), max((el, ec) for _, _, el, ec in pts)


def _contains(node: ast.AST, span) -> bool:
    (l0, c0), (l1, c1) = span
    return ((node.lineno, node.col_offset) <= (l0, c0)
            and (node.end_lineno, node.end_col_offset) >= (l1, c1))


def _find_node(tree: ast.Module, code: types.CodeType):
    first = code.co_firstlineno
    if code.co_name == "<lambda>":
        span = _code_span(code)
        candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                      and n.lineno == first and (span is None or _contains(n.body, span))]
        # The innermost lambda whose body holds every instruction is ours.
        candidates.sort(key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))
        return candidates[0] if candidates else None
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name:
            start = n.decorator_list[0].lineno if n.decorator_list else n.lineno
            if start == first or n.lineno == first:
                return n
    return None


def _as_def(node: ast.AST, name: str) -> ast.FunctionDef:
    if isinstance(node, ast.FunctionDef):
        return node
    ret = ast.Return(node.body)
    ast.copy_location(ret, node.body)
    fdef = ast.FunctionDef(name=name, args=node.args, body=[ret], decorator_list=[],
                           returns=None, type_comment=None, type_params=[])
    return ast.copy_location(fdef, node)


def parse_function(fn) -> ParsedFunction:
    """Parse ``fn`` (a def, a nested def, a lambda, or a numba dispatcher)."""
    fn, _ = unwrap(fn)
    if not isinstance(fn, types.FunctionType):
        raise SourceUnavailableError(
            f"pullback differentiates Python functions by reading their source, but {fn!r} "
            f"is a {type(fn).__name__}. Give it a rule with @pullback.rule, or wrap it in a "
            "Python function.")
    code = fn.__code__
    filename = code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise SourceUnavailableError(
            f"the source of {fn.__qualname__} cannot be read (defined in {filename!r}, "
            "e.g. an interactive prompt or a string passed to exec). Define it in a file "
            "or a notebook cell, or give it a rule with @pullback.rule.")
    tree = _file_tree(filename, lines)
    node = _find_node(tree, code) if tree is not None else None
    if node is None:
        raise SourceUnavailableError(
            f"cannot find the source of {fn.__qualname__} in {filename!r} at line "
            f"{code.co_firstlineno}; the file may have changed since it was imported.")
    node = _as_def(node, "_lambda" if code.co_name == "<lambda>" else code.co_name)
    closure = dict(zip(code.co_freevars, fn.__closure__ or ()))
    return ParsedFunction(fn=fn, node=node, filename=filename, lines=lines,
                          globals=fn.__globals__, closure=closure)
