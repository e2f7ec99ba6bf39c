"""Calls: to library functions (primitives with rules), methods of local values,
and user functions, which are inlined with their locals renamed."""
from __future__ import annotations

import ast
import copy
import math
import types

from ..core import ir
from ..core.errors import MissingRuleError, PullbackError
from ..rules import registry
from . import fence
from .expressions import Primitive
from .parse import ParsedFunction, parse_function, unwrap
from .resolve import copy_expr, inlined_library, is_library, root_name
from .scope import UNRESOLVED, Scope, local_names, walk_same_scope

# Builtins that the normalizer lowers itself, never inlines.
_ITER_BUILTINS = (range, enumerate, zip, reversed)
MAX_INLINE_DEPTH = 32


# Methods that change their receiver in place (lists, dicts, sets, ndarrays).  The
# transform follows values by name, so a value put into a container and taken out
# again would lose its derivative: such calls are refused, never run unseen.
IN_PLACE_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "update",
    "setdefault", "popitem", "add", "discard", "fill", "put", "itemset", "resize",
    "partition", "setfield", "__setitem__", "__iadd__", "__isub__", "__imul__"})


class Calls:
    """Mixin of the Normalizer: lowering calls and inlining user functions."""

    def lower_method_call(self, e: ast.Call, scope):
        """A method of a local value: x.sum(axis=0), A.dot(v), x.copy()."""
        if e.func.attr in IN_PLACE_METHODS:
            raise self.error(
                f"`{ast.unparse(e.func)}(...)`, which changes `{ast.unparse(e.func.value)}` "
                "in place", e, scope,
                "pullback follows values by name, not containers changed in place (a list "
                "used as a stack, an array sorted in place); write into a NumPy array "
                "instead (`out = np.zeros(n)`, then `out[i] = v`), or build a tuple")
        recv = self.lower_expr(e.func.value, scope)
        args = [self.lower_expr(a, scope) for a in e.args]
        kws = [ast.keyword(k.arg, self.lower_expr(k.value, scope)) for k in e.keywords]
        call = ast.Call(ast.Attribute(recv, e.func.attr, ast.Load()), args, kws)
        return Primitive(call, method=e.func.attr)

    def lower_call(self, e: ast.Call, scope):
        for a in e.args:
            if isinstance(a, ast.Starred):
                raise self.error("a starred argument", a, scope, "pass arguments one by one")
        # A local def or lambda: inline it.
        if isinstance(e.func, ast.Name):
            local_def = scope.lookup_def(e.func.id)
            if local_def is not None:
                node, def_scope = local_def
                return self.inline(node, def_scope.parsed, e, scope, enclosing=def_scope)
        fn = self.resolve(e.func, scope)
        if fn is UNRESOLVED:
            if isinstance(e.func, ast.Attribute):
                return self.lower_method_call(e, scope)
            raise self.error(f"a call to {ast.unparse(e.func)}, which is not a known function",
                             e, scope)
        folded = self.fold_builtin(e, fn, scope)
        if folded is not None:
            return folded
        if fn in _ITER_BUILTINS:
            raise self.error(f"{fn.__name__}() outside a for statement", e, scope,
                             f"use {fn.__name__}() directly in `for ... in {fn.__name__}(...)`")
        if fn in (sum, math.fsum) and len(e.args) == 1 and not e.keywords \
                and isinstance(e.args[0], (ast.GeneratorExp, ast.ListComp)):
            return self.lower_sum(e, fn, scope)
        namespace = self.picked_namespace(e, scope)
        if namespace is not UNRESOLVED:
            return self.bind_value(namespace, "xp")
        target, is_numba = unwrap(fn)
        rule = self._rule_for_call(e, fn, target, scope)
        self._refuse_in_place(e, fn, rule, scope)
        if rule is None and isinstance(target, types.FunctionType) and not is_library(target):
            self._depend_on(scope, root_name(e.func))
            if target.__code__ not in self.inline_stack:
                return self.inline(None, None, e, scope, fn=target)
            # A recursive call: its depth is not known here, so it stays a call, and
            # the reverse sweep takes its vector-Jacobian product at run time.
            if e.keywords:
                raise self.error("a recursive call with keyword arguments", e, scope,
                                 "pass the arguments by position")
        func = self.external_ref(e.func, fn, scope)
        args = [self.lower_expr(a, scope) for a in e.args]
        kws = [ast.keyword(k.arg, self.lower_expr(k.value, scope)) for k in e.keywords]
        return Primitive(ast.Call(func, args, kws), callee=fn)

    def fold_builtin(self, e: ast.Call, fn, scope):
        """A builtin call written as the two-argument operations it performs, or None:
        ``max(a, b, c)`` is ``max(max(a, b), c)`` (the two-argument rule applies), and
        ``sum([a, b])`` is ``(start + a) + b``, as Python adds them (start 0)."""
        if fn in (min, max) and len(e.args) > 2 and not e.keywords:
            acc = self.lower_expr(e.args[0], scope)
            for a in e.args[1:]:
                b = self.lower_expr(a, scope)
                acc = self.temp(e, ast.Call(copy_expr(e.func), [acc, b], []), scope, callee=fn)
            return acc
        if fn is sum and e.args and isinstance(e.args[0], (ast.List, ast.Tuple)) \
                and not any(isinstance(x, ast.Starred) for x in e.args[0].elts):
            start = e.args[1] if len(e.args) > 1 else \
                next((k.value for k in e.keywords if k.arg == "start"), ast.Constant(0))
            acc = self.lower_expr(start, scope)
            for item in e.args[0].elts:
                acc = self.temp(e, ast.BinOp(acc, ast.Add(), self.lower_expr(item, scope)), scope)
            return acc
        return None

    def _rule_for_call(self, e, fn, target, scope):
        """The rule of the called function, if any.  A user's rule receives the call's
        own arguments: a call its VJP cannot take is refused before anything runs."""
        rule = registry.lookup(fn) or registry.lookup(target)
        why = None if rule is None else rule.call_mismatch(
            e.args, {k.arg: k.value for k in e.keywords})
        if why is None:
            return rule
        vjp = rule.helpers["__vjp__"]
        name = getattr(vjp, "__name__", None) or type(vjp).__name__
        raise MissingRuleError(
            f"the rule {name} registered for {rule.name} cannot take the arguments of this "
            f"call ({why}).  A rule is called as {name}(g, ans, <the call's arguments as "
            f"written>): its parameters after g, ans must accept exactly what this call "
            f"passes, positional and keyword, with the defaults it needs for the rest"
            f"\n  {scope.parsed.location(e)}")

    def _refuse_in_place(self, e, fn, rule, scope):
        """A library call that writes into an array (``np.copyto(a, x)``,
        ``np.add.at(a, i, x)``, ``out=a``) is refused: the transform follows values
        by name, and would not see the array change."""
        out = next((k.value for k in e.keywords if k.arg == "out"), None)
        if isinstance(out, ast.Constant) and out.value is None:
            out = None
        if out is not None and (rule is None or rule.call_signature is None):
            what = f"`out={ast.unparse(out)}`, which writes into `{ast.unparse(out)}` in place"
        elif registry.writes_in_place(fn) and e.args:
            what = (f"`{ast.unparse(e.func)}(...)`, which writes into "
                    f"`{ast.unparse(e.args[0])}` in place")
        else:
            return
        raise self.error(what, e, scope,
                         "pullback follows values by name and does not see an array "
                         "changed inside a library call: assign the result to a name "
                         "instead (`a = a + x`, `a[i] = v`), or put the call in a function "
                         "of your own that returns a new array and register a rule for "
                         "it with @pullback.rule")

    def picked_namespace(self, e, scope):
        """The array namespace a call to a namespace picker (``array_namespace(x)``)
        returns for the values pullback differentiates (NumPy), or UNRESOLVED."""
        if not isinstance(e, ast.Call) or (not isinstance(e.func, ast.Name)
                                           and not isinstance(e.func, ast.Attribute)):
            return UNRESOLVED
        rule = registry.lookup(self.resolve(e.func, scope))
        return registry.NUMPY_NAMESPACE if rule is not None and rule.namespace else UNRESOLVED

    def assign_constant(self, name, value, scope) -> bool:
        """``xp = array_namespace(x)``: ``xp`` is NumPy when transforming, a constant
        of this scope (no statement).  Only when every assignment to ``xp`` in the
        function picks a namespace, and a parameter ``xp`` was given a namespace or
        None: otherwise its value would not be known."""
        namespace = self.picked_namespace(value, scope)
        if namespace is UNRESOLVED:
            return False
        node = scope.parsed.node
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        if not self._only_namespace_stores(name, scope) or (
                name in params and name not in scope.constants
                and name not in scope.none_params):
            raise self.error(f"the array namespace {name!r}, which is also assigned another "
                             "value", value, scope,
                             "give the array namespace a name of its own")
        scope.constants[name] = namespace
        return True

    def _only_namespace_stores(self, name, scope) -> bool:
        """Every assignment to ``name`` in the function of ``scope`` picks a namespace."""
        stores = picks = 0
        for st in scope.parsed.node.body:
            for n in walk_same_scope(st):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name:
                    stores += 1
                elif isinstance(n, ast.Assign) and len(n.targets) == 1 \
                        and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name \
                        and self.picked_namespace(n.value, scope) is not UNRESOLVED:
                    picks += 1
        return stores == picks

    def lower_sum(self, e, fn, scope):
        """sum(f(v) for v in xs if c) as the loop it is: acc = 0; for v in xs: if c: acc += f(v)."""
        gen = e.args[0]
        rename = {}
        for comp in gen.generators:
            for n in ast.walk(comp.target):
                if isinstance(n, ast.Name):
                    rename.setdefault(n.id, self.names.fresh(f"_{n.id}_"))

        class Rename(ast.NodeTransformer):
            def visit_Name(_, node):
                return ast.copy_location(ast.Name(rename.get(node.id, node.id), node.ctx), node)
        acc = self.names.fresh("_sum")
        for new in list(rename.values()) + [acc]:
            scope.rename[new] = new
        line = self._line(e, scope)
        body = [ast.copy_location(ast.Assign([ast.Name(acc, ast.Store())], ast.BinOp(
            ast.Name(acc, ast.Load()), ast.Add(), Rename().visit(copy.deepcopy(gen.elt)))), e)]
        for comp in reversed(gen.generators):
            for cond in reversed(comp.ifs):
                body = [ast.copy_location(ast.If(Rename().visit(copy.deepcopy(cond)), body, []), e)]
            iter_ = comp.iter if comp is gen.generators[0] else Rename().visit(copy.deepcopy(comp.iter))
            body = [ast.copy_location(ast.For(Rename().visit(copy.deepcopy(comp.target)), iter_,
                                              body, []), e)]
        self.emit(ir.Assign(line, acc, ast.Constant(0.0 if fn is math.fsum else 0)))
        for st in body:
            self.lower_stmt(st, scope)
        return ast.Name(acc)

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
        if scope.depth >= MAX_INLINE_DEPTH:
            raise self.error("recursion (or calls nested too deeply to inline)", call, scope,
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
            raise self.error(f"a call to {node.name}, which takes *args or **kwargs", call, scope)
        # Evaluate arguments in the caller's scope first.
        args = [self.lower_expr(x, scope) for x in call.args]
        kwargs = {k.arg: self.lower_expr(k.value, scope) for k in call.keywords}
        prefix = (node.name if node.name != "_lambda" else "lam").lstrip("_")
        rename = {}
        for local in sorted(local_names(node)):
            rename[local] = self.names.fresh(f"_{prefix}_{local}_")
        line = self._line(call, scope)
        site = scope.site_line if scope.site_line is not None else \
            line if parsed.filename != self.top.filename else None
        callee = Scope(parsed, rename=rename, parent=enclosing, depth=scope.depth + 1,
                       site_line=site)
        self._bind_arguments(node, parsed, call, scope, callee, args, kwargs, line)
        callee.ret_value = self.names.fresh(f"_{prefix}_result")
        body = node.body
        returns = [n for st in body for n in walk_same_scope(st) if isinstance(n, ast.Return)]
        if not (len(returns) == 1 and body and body[-1] is returns[0]):
            callee.ret_flag = self.names.fresh(f"_{prefix}_returned")
            self.emit(ir.Assign(line, callee.ret_flag, ast.Constant(False)))
        saved_loops, self.loops = self.loops, []
        saved_exits = self.exits
        code = getattr(parsed.fn, "__code__", None) if fn is not None else None
        if code is not None:
            self.inline_stack.append(code)
        try:
            self.lower_block(body, callee)
        finally:
            self.loops = saved_loops
            self.exits = saved_exits
            if code is not None:
                self.inline_stack.pop()
        return ast.Name(callee.ret_value)

    def _bind_arguments(self, node, parsed, call, scope, callee, args, kwargs, line):
        """Assign the callee's (renamed) parameters from the call's argument atoms,
        its keywords and its defaults (evaluated in the defining scope).  A parameter
        given an array namespace (``xp=xp``) is that namespace, a constant."""
        a = node.args
        given = dict(zip(range(len(call.args)), call.args))
        given.update({k.arg: k.value for k in call.keywords})
        params = a.posonlyargs + a.args
        for k, p in enumerate(params + a.kwonlyargs):
            src = given.get(k if k < len(params) and k < len(call.args) else p.arg)
            value = UNRESOLVED if src is None else self.resolve(src, scope)
            if isinstance(value, types.ModuleType) and self._only_namespace_stores(p.arg, callee):
                callee.constants[p.arg] = value
        self._assign_parameters(node, parsed, call, scope, callee, args, kwargs, line)

    def _assign_parameters(self, node, parsed, call, scope, callee, args, kwargs, line):
        a = node.args
        enclosing = callee.parent
        params = a.posonlyargs + a.args
        defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
        if len(args) > len(params):
            raise self.error(f"a call to {node.name} with too many arguments", call, scope)
        missing = f"a call to {node.name} missing the argument {{!r}}"
        for k, (p, d) in enumerate(zip(params, defaults)):
            if k < len(args):
                value = args[k]
            elif p.arg in kwargs:
                value = kwargs.pop(p.arg)
            elif d is not None:
                value = self.lower_expr(d, enclosing or Scope(parsed, rename={}))
            else:
                raise self.error(missing.format(p.arg), call, scope)
            self._assign_parameter(callee, p.arg, value, line)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            value = kwargs.pop(p.arg, None)
            if value is None:
                if d is None:
                    raise self.error(missing.format(p.arg), call, scope)
                value = self.lower_expr(d, enclosing or Scope(parsed, rename={}))
            self._assign_parameter(callee, p.arg, value, line)
        if kwargs:
            raise self.error(f"a call to {node.name} with unknown keyword {next(iter(kwargs))!r}",
                             call, scope)

    def _assign_parameter(self, callee, name, value, line):
        if name in callee.constants:
            return                      # a namespace: read as the constant it is
        if isinstance(value, ast.Constant) and value.value is None:
            callee.none_params.add(name)
        self.emit(ir.Assign(line, callee.rename[name], value))
