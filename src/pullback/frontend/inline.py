"""Inlining a call to a Python function: the callee's body lowered in place, in a
scope of its own whose locals are renamed, its parameters assigned from the
call's arguments, keywords and defaults."""
from __future__ import annotations

import ast
import types

from ..core import ir
from ..core.errors import MissingRuleError, PullbackError
from ..core.trees import Tree
from . import fence
from .parse import ParsedFunction, parse_function
from .resolve import inlined_library
from .scope import UNRESOLVED, Scope, local_names, walk_same_scope

MAX_INLINE_DEPTH = 32


class Inliner:
    """Inlines calls into the function ``lowering`` (the normalizer) lowers, and
    knows which functions are being inlined (a call to one of them is recursive)."""

    def __init__(self, lowering, top_code):
        self.lowering = lowering
        self.stack = [top_code]         # code objects of the functions being inlined

    def recursive(self, fn) -> bool:
        """A call to ``fn`` here calls a function being lowered: it cannot be inlined."""
        return fn.__code__ in self.stack

    def inline(self, node, parsed, call: ast.Call, scope, enclosing=None, fn=None):
        """Inline a call to a Python function; return an atom holding its result.

        A library function (SciPy's, see :mod:`.resolve`) called from the user's
        code that cannot be inlined is refused at the user's call, naming it and
        how to give it a rule."""
        if fn is None or not inlined_library(fn) or inlined_library(scope.parsed.fn):
            return self._inline(node, parsed, call, scope, enclosing, fn)
        try:
            return self._inline(node, parsed, call, scope, enclosing, fn)
        except PullbackError as exc:
            name = f"{fn.__module__}.{fn.__qualname__}"
            reason = "\n    ".join(str(exc).splitlines())
            raise MissingRuleError(
                f"pullback cannot differentiate {name}: it has no derivative rule, and its "
                f"source cannot be inlined because {reason}\nRegister a rule with "
                f"@pullback.rule({fn.__name__}) on a function "
                f"`def {fn.__name__}_vjp(g, ans, <the call's arguments>)` that returns one "
                f"cotangent per positional parameter, or call a function that has one."
                f"\n  {scope.parsed.location(call)}") from None

    def _inline(self, node, parsed, call: ast.Call, scope, enclosing=None, fn=None):
        low = self.lowering
        if scope.depth >= MAX_INLINE_DEPTH:
            raise scope.unsupported("recursion (or calls nested too deeply to inline)", call,
                                    "give the recursive function a rule with @pullback.rule")
        if fn is not None:
            parsed = parse_function(fn)
            fence.check(parsed)
            node = parsed.node
        if isinstance(node, ast.Lambda):
            fdef = ast.FunctionDef(name="_lambda", args=node.args,
                                   body=[ast.copy_location(ast.Return(node.body), node.body)],
                                   decorator_list=[], returns=None, type_params=[])
            node = ast.copy_location(fdef, node)
        else:
            fence.check(ParsedFunction(parsed.fn, node, parsed.filename, parsed.lines,
                                       parsed.globals, parsed.closure))
        a = node.args
        if a.vararg or a.kwarg:
            raise scope.unsupported(f"a call to {node.name}, which takes *args or **kwargs", call)
        # Evaluate arguments in the caller's scope first.
        # A pytree argument binds the parameter to its structure (frontend/structures.py).
        args = [low.lower_tree(x, scope) for x in call.args]
        kwargs = {k.arg: low.lower_tree(k.value, scope) for k in call.keywords}
        prefix = (node.name if node.name != "_lambda" else "lam").lstrip("_")
        rename = {}
        for local in sorted(local_names(node)):
            rename[local] = low.names.fresh(f"_{prefix}_{local}_")
        line = low.out.line(call, scope)
        site = scope.site_line if scope.site_line is not None else \
            line if parsed.filename != low.top.filename else None
        callee = Scope(parsed, rename=rename, parent=enclosing, depth=scope.depth + 1,
                       site_line=site)
        self._bind_arguments(node, call, scope, callee)
        self._assign_parameters(node, parsed, call, scope, callee, args, kwargs, line)
        callee.ret_value = low.names.fresh(f"_{prefix}_result")
        body = node.body
        returns = [n for st in body for n in walk_same_scope(st) if isinstance(n, ast.Return)]
        if not (len(returns) == 1 and body and body[-1] is returns[0]):
            callee.ret_flag = low.names.fresh(f"_{prefix}_returned")
            low.out.emit(ir.Assign(line, callee.ret_flag, ast.Constant(False)))
        code = getattr(parsed.fn, "__code__", None) if fn is not None else None
        if code is not None:
            self.stack.append(code)
        try:
            low.lower_inlined(body, callee)
        finally:
            if code is not None:
                self.stack.pop()
        if callee.ret_tree is not None:
            if callee.ret_plain:
                raise scope.unsupported(f"a call to {node.name}, whose returns give a pytree "
                                        "and a plain value", call,
                                        "make every return give the same structure")
            return callee.ret_tree
        return ast.Name(callee.ret_value)

    def _bind_arguments(self, node, call, scope, callee):
        """A parameter given an array namespace (``xp=xp``) is that namespace, a
        constant of the callee."""
        a = node.args
        resolver = self.lowering.resolver
        given = dict(zip(range(len(call.args)), call.args))
        given.update({k.arg: k.value for k in call.keywords})
        params = a.posonlyargs + a.args
        for k, p in enumerate(params + a.kwonlyargs):
            src = given.get(k if k < len(params) and k < len(call.args) else p.arg)
            value = UNRESOLVED if src is None else resolver.resolve(src, scope)
            if isinstance(value, types.ModuleType) and resolver.only_namespace_stores(p.arg, callee):
                callee.constants[p.arg] = value

    def _assign_parameters(self, node, parsed, call, scope, callee, args, kwargs, line):
        """Assign the callee's (renamed) parameters from the call's argument atoms,
        its keywords and its defaults (evaluated in the defining scope)."""
        a = node.args
        low = self.lowering
        enclosing = callee.parent
        params = a.posonlyargs + a.args
        defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
        if len(args) > len(params):
            raise scope.unsupported(f"a call to {node.name} with too many arguments", call)
        missing = f"a call to {node.name} missing the argument {{!r}}"
        for k, (p, d) in enumerate(zip(params, defaults)):
            if k < len(args):
                value = args[k]
            elif p.arg in kwargs:
                value = kwargs.pop(p.arg)
            elif d is not None:
                value = low.lower_expr(d, enclosing or Scope(parsed, rename={}))
            else:
                raise scope.unsupported(missing.format(p.arg), call)
            self._assign_parameter(callee, p.arg, value, line)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            value = kwargs.pop(p.arg, None)
            if value is None:
                if d is None:
                    raise scope.unsupported(missing.format(p.arg), call)
                value = low.lower_expr(d, enclosing or Scope(parsed, rename={}))
            self._assign_parameter(callee, p.arg, value, line)
        if kwargs:
            raise scope.unsupported(
                f"a call to {node.name} with unknown keyword {next(iter(kwargs))!r}", call)

    def _assign_parameter(self, callee, name, value, line):
        if name in callee.constants:
            return                      # a namespace: read as the constant it is
        if isinstance(value, Tree):
            callee.structures[name] = value
            return
        if isinstance(value, ast.Constant) and value.value is None:
            callee.none_params.add(name)
        self.lowering.out.emit(ir.Assign(line, callee.rename[name], value))
