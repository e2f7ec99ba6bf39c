"""Calls lowered: to library functions (primitives with rules), methods of local
values and builtins folded into the operations they perform; a call to a user
function is handed to the :class:`~.inline.Inliner`, the checks of what a call
may do are :mod:`.callees`'."""
from __future__ import annotations

import ast
import copy
import math
import types

from ..core import ir
from ..core.trees import Tree
from .callees import refuse_in_place, refuse_in_place_method, rule_for_call
from .expressions import Primitive
from .folds import is_fold, lower_fold
from .parse import unwrap
from .resolve import copy_expr, is_library, root_name, stores
from .scope import UNRESOLVED

# Builtins that the normalizer lowers itself, never inlines.
_ITER_BUILTINS = (range, enumerate, zip, reversed)


class Calls:
    """Mixin of the Normalizer: lowering a call to the primitive or the statements
    it is."""

    def lower_method_call(self, e: ast.Call, scope):
        """A method of a local value: x.sum(axis=0), A.dot(v), x.copy()."""
        tree = self.static_tree(e.func.value, scope)
        if isinstance(tree, Tree):
            raise self.error(f"the method call `{ast.unparse(e)}` on a pytree "
                             f"({tree.describe()})", e, scope,
                             "read its leaves with constant keys or fields, or write the "
                             "method as a function of it (`predict(model, x)`), which is inlined")
        refuse_in_place_method(e, scope)
        recv = self.lower_expr(e.func.value, scope)
        args = [self.lower_expr(a, scope) for a in e.args]
        kws = [ast.keyword(k.arg, self.lower_expr(k.value, scope)) for k in e.keywords]
        call = ast.Call(ast.Attribute(recv, e.func.attr, ast.Load()), args, kws)
        return Primitive(call, method=e.func.attr)

    def unknown_call_hint(self, e: ast.Call, scope) -> str:
        """What to write instead of ``pullback.vmap(f, ...)(args)`` in differentiated code."""
        if isinstance(e.func, ast.Call):
            maker = self.resolver.resolve(e.func.func, scope)
            if getattr(maker, "__module__", None) == "pullback.vmap":
                return ("inside a differentiated function, write the batch as a loop, which "
                        "pullback differentiates (`for b in range(n): out[b] = f(w, X[b])`); "
                        "vmap the derivative instead (`vmap(grad(f), in_axes=(None, 0))`)")
        return ""

    def lower_call(self, e: ast.Call, scope):
        for a in e.args:
            if isinstance(a, ast.Starred):
                raise self.error("a starred argument", a, scope, "pass arguments one by one")
        # A local def or lambda: inline it.
        if isinstance(e.func, ast.Name):
            local_def = scope.lookup_def(e.func.id)
            if local_def is not None:
                node, def_scope = local_def
                return self.inliner.inline(node, def_scope.parsed, e, scope, enclosing=def_scope)
        fn = self.resolver.resolve(e.func, scope)
        if fn is UNRESOLVED:
            if isinstance(e.func, ast.Attribute):
                return self.lower_method_call(e, scope)
            raise self.error(f"a call to {ast.unparse(e.func)}, which is not a known function",
                             e, scope, self.unknown_call_hint(e, scope))
        built = self.tree_call(e, fn, scope)    # len() of a pytree, a NamedTuple built...
        if built is not None:
            return built
        rewritten = self.rewrite_transform(e, fn, scope)
        if rewritten is not None:
            return self.lower_expr(rewritten, scope)
        folded = self.fold_builtin(e, fn, scope)
        if folded is not None:
            return folded
        self.refuse_misplaced(e, fn, scope)
        if fn in (sum, math.fsum) and len(e.args) == 1 and not e.keywords \
                and isinstance(e.args[0], (ast.GeneratorExp, ast.ListComp)):
            return self.lower_sum(e, fn, scope)
        namespace = self.resolver.picked_namespace(e, scope)
        if namespace is not UNRESOLVED:
            return self.resolver.bind_value(namespace, "xp")
        target, is_numba = unwrap(fn)
        rule = rule_for_call(e, fn, target, scope)
        refuse_in_place(e, fn, rule, scope)
        if rule is None and isinstance(target, types.FunctionType) and not is_library(target):
            self.resolver.depend_on(scope, root_name(e.func))
            if not self.inliner.recursive(target):
                return self.inliner.inline(None, None, e, scope, fn=target)
            # A recursive call: its depth is not known here, so it stays a call, and
            # the reverse sweep takes its vector-Jacobian product at run time.
            if e.keywords:
                raise self.error("a recursive call with keyword arguments", e, scope,
                                 "pass the arguments by position")
        func = self.resolver.external_ref(e.func, fn, scope)
        args = [self.lower_expr(a, scope) for a in e.args]
        kws = [ast.keyword(k.arg, self.lower_expr(k.value, scope)) for k in e.keywords]
        return Primitive(ast.Call(func, args, kws), callee=fn)

    def rewritten(self, e, scope):
        """``e`` rewritten when it is a call of a transform that rewrites
        (:meth:`rewrite_transform`), else None: ``value, back = vjp(f, x)`` unpacks
        the rewritten pair, whose ``back`` is a local function."""
        if not isinstance(e, ast.Call) or not isinstance(e.func, (ast.Name, ast.Attribute)):
            return None
        fn = self.resolver.resolve(e.func, scope)
        return None if fn is UNRESOLVED else self.rewrite_transform(e, fn, scope)

    def rewrite_transform(self, e: ast.Call, fn, scope):
        """A pullback transform that is ordinary code once rewritten (``jvp(f, (x,),
        (v,))`` is ``(f(x), tangent(x, v))``, see :mod:`pullback.nesting`), or None.
        The objects the rewriting calls are constants of this scope; ``assigned_once``
        says whether a name keeps the value it has (assigned at most once here)."""
        rewrite = getattr(fn, "rewrite_in_code", None)
        if rewrite is None:
            return None

        def constant(obj, hint):
            name = self.names.fresh(hint)
            scope.constants[name] = obj
            return ast.Name(name, ast.Load())
        def assigned_once(name):
            return stores(name, scope.parsed.node) <= 1
        try:
            return rewrite(e, lambda node: self.resolver.resolve(node, scope), constant,
                           assigned_once)
        except ValueError as exc:
            raise self.error(f"`{ast.unparse(e)}`", e, scope, str(exc)) from None

    def refuse_misplaced(self, e: ast.Call, fn, scope):
        """A call that is meaningful elsewhere only: ``range()`` outside a ``for``, and
        a pullback transform that is no primitive (``jvp``) inside differentiated code."""
        if fn in _ITER_BUILTINS:
            raise self.error(f"{fn.__name__}() outside a for statement", e, scope,
                             f"use {fn.__name__}() directly in `for ... in {fn.__name__}(...)`")
        refused = getattr(fn, "refused_in_code", None)
        if refused is not None:
            raise self.error(f"a call to pullback.{fn.__name__} inside the function "
                             "differentiated", e, scope, refused)

    def fold_builtin(self, e: ast.Call, fn, scope):
        """A builtin call written as the two-argument operations it performs, or None:
        ``max(a, b, c)`` is ``max(max(a, b), c)`` (the two-argument rule applies), and
        ``sum([a, b])`` is ``(start + a) + b``, as Python adds them (start 0).  The
        loop primitives (``scan``, ``foldl``, ...) are the loops they run (:mod:`.folds`)."""
        if is_fold(fn):
            return lower_fold(self, e, fn, scope)
        if fn in (min, max) and len(e.args) > 2 and not e.keywords:
            acc = self.lower_expr(e.args[0], scope)
            for a in e.args[1:]:
                b = self.lower_expr(a, scope)
                acc = self.out.temp(e, ast.Call(copy_expr(e.func), [acc, b], []), scope,
                                    callee=fn)
            return acc
        if fn in (sum, math.fsum) and e.args and isinstance(e.args[0], (ast.List, ast.Tuple)) \
                and not any(isinstance(x, ast.Starred) for x in e.args[0].elts):
            # (math.fsum's value is then rounded as the additions round, as for a
            # generator: its derivative is the same.)
            start = e.args[1] if len(e.args) > 1 else \
                next((k.value for k in e.keywords if k.arg == "start"),
                     ast.Constant(0.0 if fn is math.fsum else 0))
            acc = self.lower_expr(start, scope)
            for item in e.args[0].elts:
                acc = self.out.temp(e, ast.BinOp(acc, ast.Add(), self.lower_expr(item, scope)),
                                    scope)
            return acc
        return None

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
        line = self.out.line(e, scope)
        body = [ast.copy_location(ast.Assign([ast.Name(acc, ast.Store())], ast.BinOp(
            ast.Name(acc, ast.Load()), ast.Add(), Rename().visit(copy.deepcopy(gen.elt)))), e)]
        for comp in reversed(gen.generators):
            for cond in reversed(comp.ifs):
                body = [ast.copy_location(ast.If(Rename().visit(copy.deepcopy(cond)), body, []), e)]
            iter_ = comp.iter if comp is gen.generators[0] else Rename().visit(copy.deepcopy(comp.iter))
            body = [ast.copy_location(ast.For(Rename().visit(copy.deepcopy(comp.target)), iter_,
                                              body, []), e)]
        self.out.emit(ir.Assign(line, acc, ast.Constant(0.0 if fn is math.fsum else 0)))
        for st in body:
            self.lower_stmt(st, scope)
        return ast.Name(acc)
