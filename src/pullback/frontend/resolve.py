"""Names that are not local: globals, closure cells, builtins, attributes of modules.

The top function's own globals and closure variables stay names in the output,
read when the derivative runs, as the primal reads them.  Those of an inlined
function from elsewhere are bound by value (``externals``) and recorded as
dependencies, so the cached derivative is dropped when they change.
"""
from __future__ import annotations

import ast
import builtins

from .scope import UNRESOLVED


class Resolver:
    """Mixin of the Normalizer: resolving and referring to non-local names."""

    def name_ref(self, e: ast.Name, scope) -> ast.expr:
        local, _ = scope.lookup_local(e.id)
        if local is not None:
            return ast.Name(local)
        obj = self.resolve(e, scope)
        if obj is UNRESOLVED:
            raise self.error(f"the undefined name {e.id!r}", e, scope)
        return self.external_ref(e, obj, scope)

    def external_ref(self, e, obj, scope) -> ast.expr:
        """A reference to a global, closure variable or builtin, read as the primal reads it."""
        root = e
        while isinstance(root, ast.Attribute):
            root = root.value
        if scope.parsed is self.top or (scope.parsed.globals is self.top.globals
                                        and root.id not in scope.parsed.closure
                                        and root.id not in self.top_locals
                                        and root.id not in self.top.closure):
            # The top function's own globals and closure: read live at run time.
            if scope.parsed is not self.top:
                self._depend_on(scope, root.id)
            return copy_expr(e)
        # Another module's global or an inlined closure's cell: bind it by value.
        value = self._resolve_root(root, scope)
        key = (id(scope.parsed.globals), root.id, id(value))
        name = self._aliases.get(key)
        if name is None:
            name = self._aliases[key] = self.names.reserve(root.id)
            self.externals[name] = value
            self._depend_on(scope, root.id)
        if isinstance(e, ast.Name):
            return ast.Name(name)
        out = copy_expr(e)
        r = out
        while isinstance(r.value, ast.Attribute):
            r = r.value
        r.value = ast.Name(name)
        return out

    def _depend_on(self, scope, name):
        p = scope.parsed
        if name in p.closure:
            self.dependencies.append((p.closure[name], None, self._resolve_root(ast.Name(name), scope)))
        elif name in p.globals:
            self.dependencies.append((p.globals, name, p.globals[name]))

    def _resolve_root(self, root: ast.Name, scope):
        p = scope.parsed
        if root.id in p.closure:
            try:
                return p.closure[root.id].cell_contents
            except ValueError:
                return UNRESOLVED
        if root.id in p.globals:
            return p.globals[root.id]
        if hasattr(builtins, root.id):
            return getattr(builtins, root.id)
        return UNRESOLVED

    def resolve(self, e, scope):
        """The object a Name/Attribute chain names, if it is not local."""
        if isinstance(e, ast.Name):
            if scope.lookup_local(e.id)[0] is not None:
                return UNRESOLVED
            return self._resolve_root(e, scope)
        if isinstance(e, ast.Attribute):
            base = self.resolve(e.value, scope)
            if base is UNRESOLVED:
                return UNRESOLVED
            try:
                return getattr(base, e.attr)
            except AttributeError:
                raise self.error(f"the attribute {ast.unparse(e)!r}, which does not exist",
                                 e, scope) from None
        return UNRESOLVED

    def resolve_callee(self, func, scope):
        if isinstance(func, ast.Name) and scope.lookup_def(func.id) is not None:
            return scope.lookup_def(func.id)
        return self.resolve(func, scope)


_LIBRARIES = ("numpy", "scipy", "numba", "math", "torch", "jax", "pullback", "array_api_compat")


def is_library(fn) -> bool:
    """Library functions are primitives (they need a rule), never inlined: their
    source is an implementation detail written for speed, not for us."""
    mod = getattr(fn, "__module__", "") or ""
    return mod.split(".")[0] in _LIBRARIES


def root_name(e):
    while isinstance(e, ast.Attribute):
        e = e.value
    return e.id if isinstance(e, ast.Name) else None


def copy_expr(e):
    return ast.parse(ast.unparse(e), mode="eval").body
