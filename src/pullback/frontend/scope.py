"""What the normalizer knows while it lowers one function: scopes, loops, local names."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..core.errors import UnsupportedSyntaxError
from .parse import ParsedFunction


@dataclass
class Scope:
    """One function being lowered (the top function or an inlined callee)."""

    parsed: ParsedFunction
    rename: dict                    # local name -> name in the output
    local_defs: dict = field(default_factory=dict)   # name -> (ast node, Scope)
    parent: "Scope | None" = None   # lexically enclosing scope (for nested defs)
    ret_flag: str | None = None     # set by a return that is not the last statement
    ret_value: str | None = None
    depth: int = 0
    loop_depth: int = 0             # loops of this function around the statement being lowered
    # Locals whose value is known when transforming: an array namespace
    # (``xp = array_namespace(x)`` is NumPy), read as that object, never assigned.
    constants: dict = field(default_factory=dict)
    none_params: set = field(default_factory=set)   # parameters bound to None (a default)
    # A function inlined from another file: the line, in the top function, of the
    # call that led here; its statements carry it (lines index the top's file).
    site_line: int | None = None
    # Locals bound to a pytree's static structure (frontend/structures.py), and those
    # bound before the branch or loop being lowered (not rebound inside it).
    structures: dict = field(default_factory=dict)
    frozen: frozenset = frozenset()
    # A function returning a pytree: the structure, whose leaves are the names every
    # return assigns (an inlined callee), and whether a return gave a plain value.
    ret_tree: object = None
    ret_plain: bool = False

    def unsupported(self, what, node, hint="") -> UnsupportedSyntaxError:
        """The error refusing ``what`` (a construct, at ``node`` of this function)."""
        return UnsupportedSyntaxError(what, self.parsed.location(node), hint)

    def lookup_constant(self, name):
        """The known value of the local ``name``, or UNRESOLVED."""
        s = self
        while s is not None:
            if name in s.constants:
                return s.constants[name]
            if name in s.rename:          # a plain local
                return UNRESOLVED
            s = s.parent
        return UNRESOLVED

    def lookup_local(self, name):
        s = self
        while s is not None:
            if name in s.rename:
                return s.rename[name], s
            s = s.parent
        return None, None

    def assigned_name(self, name) -> str:
        """The output name of the local ``name`` an assignment writes; refused
        when ``name`` is not local."""
        local, _ = self.lookup_local(name)
        if local is None:
            raise self.unsupported(f"assignment to the non-local name {name!r}", self.parsed.node)
        return local

    def all_locals(self) -> set:
        """The output names of the locals of this scope and of those enclosing it."""
        out = set()
        s = self
        while s is not None:
            out |= set(s.rename.values())
            s = s.parent
        return out

    def lookup_def(self, name):
        s = self
        while s is not None:
            if name in s.local_defs:
                return s.local_defs[name]
            if name in s.rename:          # shadowed by a plain local
                return None
            s = s.parent
        return None


@dataclass
class Loop:
    stop: str           # skip the rest of this iteration
    exit: str           # leave the loop after this iteration


class _Unresolved:
    pass


UNRESOLVED = _Unresolved()


def local_names(fn: ast.FunctionDef) -> set[str]:
    """Names bound in fn's own scope (params, assignment targets, loop targets, defs)."""
    out = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}

    def visit(nodes):
        for node in nodes:
            for n in walk_same_scope(node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.add(n.id)
                elif isinstance(n, ast.FunctionDef):
                    out.add(n.name)
    visit(fn.body)
    return out


def walk_same_scope(node):
    """ast.walk that does not enter nested functions or lambdas (but yields them)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))
