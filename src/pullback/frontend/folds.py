"""``scan``, ``foldl``, ``foldr`` and ``accumulate`` (:mod:`pullback.core.folds`)
called in differentiated code: each call is written as the plain loop it runs,
calling ``f``, and that loop is lowered like the user's own.  ``f`` (a lambda,
a nested ``def`` or a function's name) is then inlined like any helper, so the
derivative is the plain loop's: one carry saved per step and ``dxs[i] += ...``,
never a dense array per step.  A lambda of two plain parameters is not even
called: its body takes the place of the call, with the arguments in place of
the parameters, so Horner's ``foldr(lambda c, y: x * y + c, p, 0.0)`` lowers to
exactly the statements of Horner's loop.

The loops are templates of Python source, parsed once; their capitalised
placeholders become fresh names, or the call's own arguments.  ``scan`` and
``accumulate`` stack one output per step: their first step is peeled, so the
output array is allocated from that step's value (``np.zeros((n,) +
np.shape(acc))``; scan's by ``runtime.scan_outputs``, which refuses a ``None``
output) before the loop writes the rest in place.
"""
from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect

import numpy as np

from ..core import folds, ir
from ..core.runtime import scan_outputs
from .scope import UNRESOLVED

FOLDS = (folds.scan, folds.foldl, folds.foldr, folds.accumulate)

# Index loops, as a person writes them: a lambda's body reads XS[I] in place.
_FOLDL = """
ACC = INIT
for I in range(len(XS)):
    ACC = F(ACC, XS[I])
"""
_FOLDR = """
ACC = INIT
for I in range(len(XS) - 1, -1, -1):
    ACC = F(XS[I], ACC)
"""
# The first step peeled: the stacked output is allocated from its value.
_ACCUMULATE = """
N = len(XS)
ACC = F(INIT, XS[0])
OUT = NP.zeros((N,) + NP.shape(ACC))
OUT[0] = ACC
for I in range(1, N):
    ACC = F(ACC, XS[I])
    OUT[I] = ACC
"""
_SCAN = """
N = LENGTH
CARRY, Y = F(INIT, X0)
YS = STACK(N, Y)
YS[FIRST] = Y
for I in range(START, STOP, STEP):
    CARRY, Y = F(CARRY, XI)
    YS[I] = Y
OUT = (CARRY, YS)
"""
# f returns (carry, None), seen in a lambda: nothing to stack, no step peeled.
_SCAN_NO_YS = """
N = LENGTH
CARRY = INIT
for I in range(ALL_START, ALL_STOP, STEP):
    CARRY, Y = F(CARRY, XI)
OUT = (CARRY, None)
"""
_RESULT = {folds.foldl: "ACC", folds.foldr: "ACC", folds.accumulate: "OUT", folds.scan: "OUT"}


def is_fold(fn) -> bool:
    """``fn`` is one of the loop primitives (compared by identity: any object may come)."""
    return any(fn is g for g in FOLDS)


@functools.lru_cache(maxsize=None)
def _parsed(template: str) -> tuple:
    return tuple(ast.parse(template).body)


def lower_fold(low, e: ast.Call, fn, scope):
    """Lower the call ``e`` to the fold ``fn`` with the normalizer ``low``; return
    the atom holding its result."""
    name = fn.__name__
    for a in e.args:
        if isinstance(a, ast.Starred):
            raise scope.unsupported(f"a starred argument to {name}()", a,
                                    "pass the arguments one by one")
    try:
        bound = inspect.signature(fn).bind(*e.args, **{k.arg: k.value for k in e.keywords})
    except TypeError as exc:
        raise scope.unsupported(f"a call to {name}() with these arguments ({exc})", e,
                                f"call it as {name}{inspect.signature(fn)}") from None
    args = bound.arguments
    for b in ("len", "range"):
        if low.resolver.resolve(ast.Name(b), scope) is not getattr(builtins, b):
            raise scope.unsupported(f"{name}() where the builtin {b!r} is redefined", e,
                                    f"rename your {b!r}")
    f = args["f"]
    subst = {} if _substitutable(f) else {"F": _callee(low, f, name, scope)}
    for key in ("xs", "init", "length"):
        given = args.get(key)
        if given is not None and not (key == "length" and _is_none(given)):
            subst[key.upper()] = _atom(low, given, scope)
    template = {folds.foldl: _FOLDL, folds.foldr: _FOLDR,
                folds.accumulate: _ACCUMULATE}.get(fn)
    if fn is folds.scan:
        _scan_placeholders(args, subst, name, e, scope)
        template = _SCAN_NO_YS if _no_outputs(f) else _SCAN
    for placeholder, obj in (("NP", np), ("STACK", scan_outputs)):
        bound = low.names.fresh("_" + placeholder.lower())
        scope.constants[bound] = obj
        subst[placeholder] = ast.Name(bound)
    fill = _Fill(low, subst, scope, f if "F" not in subst else None)
    body = [fill.visit(copy.deepcopy(st)) for st in _parsed(template)]
    for st in body:
        for node in ast.walk(st):
            if getattr(node, "user", False):
                continue
            node.lineno, node.col_offset = e.lineno, e.col_offset
            node.end_lineno, node.end_col_offset = e.end_lineno, e.end_col_offset
        low.lower_stmt(st, scope)
    return ast.Name(subst[_RESULT[fn]].id)


def _scan_placeholders(args, subst, name, e, scope):
    """scan's loop bounds: forward or from the last element; over xs or ``length`` steps."""
    reverse = args.get("reverse", ast.Constant(False))
    if not (isinstance(reverse, ast.Constant) and isinstance(reverse.value, bool)):
        raise scope.unsupported(f"{name}() with reverse={ast.unparse(reverse)}", reverse,
                                "write reverse=True or reverse=False")
    xs = args.get("xs")
    if isinstance(xs, (ast.Tuple, ast.List)):
        raise scope.unsupported(f"{name}() over a {type(xs).__name__.lower()} of arrays", xs,
                                "scan over one array (np.stack them, or index a second "
                                "array inside f)")
    if _is_none(xs):
        del subst["XS"]
        xs = None
    if (xs is None) == ("LENGTH" not in subst):
        raise scope.unsupported(f"{name}() with {'neither' if xs is None else 'both'} xs "
                                "and length", e, "give xs, or xs=None and length=n")
    n = ast.Name("N")
    if xs is not None:
        subst["LENGTH"] = ast.Call(ast.Name("len"), [subst["XS"]], [])
    one, two = ast.Constant(1), ast.Constant(2)
    if reverse.value:
        first = ast.BinOp(n, ast.Sub(), one)
        bounds = (ast.BinOp(n, ast.Sub(), two), ast.UnaryOp(ast.USub(), one),
                  ast.UnaryOp(ast.USub(), one))
    else:
        first, bounds = ast.Constant(0), (one, n, one)
    subst.update(FIRST=first, START=bounds[0], STOP=bounds[1], STEP=bounds[2],
                 ALL_START=first, ALL_STOP=ast.UnaryOp(ast.USub(), one) if reverse.value else n)
    none = ast.Constant(None)
    subst["X0"] = none if xs is None else ast.Subscript(subst["XS"], first)
    subst["XI"] = none if xs is None else ast.Subscript(subst["XS"], ast.Name("I"))


def _substitutable(f) -> bool:
    """``f`` is a lambda whose body can take the place of its calls: two plain
    parameters, and nothing in the body that binds a name (a nested lambda, a
    comprehension, ``:=``), so every parameter read is the argument.  The lambda
    is written in the call, so its other names mean what they mean there."""
    if not isinstance(f, ast.Lambda):
        return False
    a = f.args
    if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or len(a.args) != 2:
        return False
    binders = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
               ast.NamedExpr)
    return not any(isinstance(n, binders) for n in ast.walk(f.body))


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _no_outputs(f) -> bool:
    """``f`` is a lambda returning ``(carry, None)``: scan stacks nothing."""
    return isinstance(f, ast.Lambda) and isinstance(f.body, ast.Tuple) \
        and len(f.body.elts) == 2 and isinstance(f.body.elts[1], ast.Constant) \
        and f.body.elts[1].value is None


def _callee(low, f, name, scope):
    """``f`` as a name a call can be written to: a lambda gets a fresh one (a local
    def of this scope), a def or a function is called by its own name."""
    if isinstance(f, ast.Lambda):
        fresh = low.names.fresh("_fold_fn")
        scope.local_defs[fresh] = (f, scope)
        return ast.Name(fresh)
    if isinstance(f, ast.Name) and scope.lookup_def(f.id) is not None:
        return _users(f)
    if isinstance(f, (ast.Name, ast.Attribute)):
        value = low.resolver.resolve(f, scope)
        if value is not UNRESOLVED and callable(value):
            return _users(f)
    raise scope.unsupported(f"{name}() with f={ast.unparse(f)}, which is not a function "
                            "known when transforming", f,
                            "pass a lambda, a nested def or a function by its name")


def _atom(low, value, scope):
    """An argument as the template reads it: a name as written, anything else
    evaluated once, before the loop, into a fresh local."""
    if isinstance(value, (ast.Name, ast.Constant)):
        return _users(value)
    fresh = low.names.fresh("_fold_arg")
    scope.rename[fresh] = fresh
    line = low.out.line(value, scope)
    atom = low.lower_expr(value, scope)
    low.out.emit(ir.Assign(line, fresh, atom))
    return ast.Name(fresh)


def _users(node):
    """A copy of the user's expression ``node``, marked so that the template's
    placeholders are never looked for inside it (the user may call a list ``XS``)."""
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        n.user = True
    return node


class _Fill(ast.NodeTransformer):
    """A template's placeholders replaced: the call's arguments, fresh locals for the rest."""

    def __init__(self, low, subst, scope, lam=None):
        self.low, self.subst, self.scope = low, subst, scope
        self.lam = lam          # a lambda whose body replaces each call F(a, b)

    def visit_Call(self, node):
        if self.lam is None or not (isinstance(node.func, ast.Name) and node.func.id == "F"):
            return self.generic_visit(node)
        node.args = [self.visit(a) for a in node.args]
        # Without a copy of the lambda's parameters per step, the loop is the one a
        # person writes: Horner's foldr costs what Horner's loop costs.
        params = {p.arg: arg for p, arg in zip(self.lam.args.args, node.args)}
        return _Substitute(params).visit(_users(self.lam.body))

    def visit(self, node):
        return node if getattr(node, "user", False) else super().visit(node)

    def visit_Name(self, node):
        if node.id in self.subst:
            new = self.visit(copy.deepcopy(self.subst[node.id]))
            if isinstance(new, ast.Name) and not getattr(new, "user", False):
                new.ctx = getattr(node, "ctx", ast.Load())
            return new
        if node.id.isupper():
            fresh = self.low.names.fresh(f"_{node.id.lower()}")
            self.scope.rename[fresh] = fresh
            self.subst[node.id] = ast.Name(fresh)
            return ast.Name(fresh, getattr(node, "ctx", ast.Load()))
        return node


class _Substitute(ast.NodeTransformer):
    """A lambda's body with each read of a parameter replaced by its argument."""

    def __init__(self, params):
        self.params = params

    def visit_Name(self, node):
        return copy.deepcopy(self.params[node.id]) if node.id in self.params else node
