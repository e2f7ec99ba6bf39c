"""Kinds and activity: which variables carry derivatives.

A kind is what the transform needs to know of a value: how many dimensions
(0 for a scalar, -1 for "an array or a scalar, not known", None for "not a
number") and its dtype family ('b' bool, 'i' integer, 'f' float, 'c' complex,
't' a tuple of ints such as a shape, 'o' anything else).  Kinds are inferred
forward from the kinds of the arguments, which is why the transform is cached
per argument kind.

A variable is *active* when it is a float (or complex, or unknown) value that
depends on a differentiated argument (varied) and reaches the returned value
through differentiable operations (useful).  Integers, indices, lengths,
shapes and booleans are never active.
"""
from __future__ import annotations

import ast
import functools
import math

import numpy as np

from ..core import ir
from ..core.kinds import (BOOL, FLOAT, INT, OTHER, SHAPE, _DTYPE_ORDER, MISSING, Kind,  # noqa: F401
                          join, kind_of_value)
from ..core.runtime import trip_count
from ..rules import registry


def _broadcast(kinds, dtype=None) -> Kind:
    ndims = [k.ndim for k in kinds]
    if any(n is None for n in ndims):
        return OTHER
    if any(n == -1 for n in ndims):
        ndim = -1
    else:
        ndim = max(ndims) if ndims else 0
    if dtype is None:
        dtypes = [k.dtype for k in kinds]
        dtype = max(dtypes, key=lambda d: _DTYPE_ORDER.index(d) if d in _DTYPE_ORDER else 5)
        if dtype not in _DTYPE_ORDER:
            dtype = "o"
    return Kind(ndim, dtype)


# Functions whose result kind is known without a derivative rule.
_INT_FUNCS = {len, int, round, math.floor, math.ceil, math.trunc, math.factorial, math.comb,
              np.argmax, np.argmin, np.count_nonzero, np.searchsorted}
_BOOL_FUNCS = {bool, math.isnan, math.isinf, math.isfinite, isinstance, np.isnan, np.isinf,
               np.isfinite, np.any, np.all}
_ARRAY_FACTORIES = {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like,
                    np.empty_like, np.full_like, np.array, np.asarray, np.copy, np.linspace,
                    np.arange, np.eye, np.identity}


class KindInference:
    """Forward inference of every variable's kind."""

    def __init__(self, fn: ir.Function, arg_kinds: dict, lookup_value):
        self.fn = fn
        self.env: dict[str, Kind] = dict(arg_kinds)
        self.lookup_value = lookup_value

    def run(self) -> dict:
        for _ in range(20):
            before = dict(self.env)
            self.block(self.fn.body)
            if self.env == before:
                break
        return self.env

    def set(self, name, kind):
        self.env[name] = join(self.env.get(name), kind)

    def block(self, stmts):
        for s in stmts:
            ir.dispatch(_INFER, s)(self, s)

    def _assign(self, s: ir.Assign):
        self.set(s.target, self.expr(s.expr, s))

    def _for(self, s: ir.For):
        self.set(s.var, join(self.expr(s.start), self.expr(s.step)) or INT)
        self.block(s.body)

    def _if(self, s: ir.If):
        self.block(s.body)
        self.block(s.orelse)

    def _while(self, s: ir.While):
        self.block(s.body)
        self.block(s.cond)

    def _nothing(self, s):
        """SetItem keeps its array's kind; Return binds nothing."""

    def value_kind(self, name):
        v = self.lookup_value(name)
        return None if v is MISSING else kind_of_value(v)

    def expr(self, e, stmt=None) -> Kind:
        if isinstance(e, ast.Constant):
            return kind_of_value(e.value) if e.value is not None else OTHER
        if isinstance(e, ast.Name):
            if e.id in self.env:
                return self.env[e.id]
            k = self.value_kind(e.id)
            if k is None or k.dtype == "o":
                return OTHER
            self.env[e.id] = k      # a global or closure number or array: its kind now
            return k
        if isinstance(e, ast.Attribute):
            return self.attribute(e)
        if isinstance(e, ast.Subscript):
            return self.subscript(e)
        if isinstance(e, ast.BinOp):
            a, b = self.expr(e.left), self.expr(e.right)
            if a.dtype in "ot" or b.dtype in "ot":
                if a.dtype == "t" and b.dtype == "t":
                    return SHAPE
                return OTHER if (a.ndim is None or b.ndim is None) else _broadcast([a, b], "o")
            if isinstance(e.op, ast.MatMult):
                return self._matmul(a, b)
            k = _broadcast([a, b])
            if isinstance(e.op, ast.Div):
                return Kind(k.ndim, "f" if k.dtype in "bi" else k.dtype)
            if isinstance(e.op, ast.Pow) and k.dtype in "bi":
                exp_const = isinstance(e.right, ast.Constant) and isinstance(e.right.value, int) \
                    and e.right.value >= 0
                return Kind(k.ndim, "i" if exp_const or k.ndim != 0 else "f")
            if k.dtype == "b" and not isinstance(e.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
                return Kind(k.ndim, "i")
            return k
        if isinstance(e, ast.UnaryOp):
            a = self.expr(e.operand)
            if isinstance(e.op, ast.Not):
                return BOOL
            if isinstance(e.op, ast.Invert):
                return a
            return Kind(a.ndim, "i" if a.dtype == "b" else a.dtype)
        if isinstance(e, ast.Compare):
            a, b = self.expr(e.left), self.expr(e.comparators[0])
            if a.ndim == 0 and b.ndim == 0 or isinstance(e.ops[0], (ast.Is, ast.IsNot, ast.In,
                                                                     ast.NotIn)):
                return BOOL
            return Kind(_broadcast([a, b]).ndim, "b")
        if isinstance(e, ast.Tuple):
            kinds = [self.expr(x) for x in e.elts]
            # A tuple of ints (a shape) keeps its length in ndim.
            return Kind(len(kinds), "t") if all(k.dtype in "bi" and k.ndim == 0
                                                for k in kinds) else Kind(None, "o", tuple(kinds))
        if isinstance(e, ast.Call):
            return self.call(e, stmt)
        return OTHER

    def _matmul(self, a, b):
        if a.ndim in (None, -1) or b.ndim in (None, -1):
            return Kind(-1, _broadcast([a, b]).dtype)
        nd = {(1, 1): 0, (2, 1): 1, (1, 2): 1}.get((a.ndim, b.ndim), max(a.ndim, b.ndim))
        return Kind(nd, _broadcast([a, b]).dtype)

    def attribute(self, e):
        base = self.expr(e.value)
        if e.attr == "shape":
            return Kind(base.ndim, "t") if base.ndim is not None and base.ndim >= 0 else SHAPE
        if e.attr in ("size", "ndim", "itemsize", "nbytes"):
            return INT
        if e.attr in ("T", "mT", "real", "imag", "conj"):
            return Kind(base.ndim, "f" if e.attr in ("real", "imag") else base.dtype)
        if e.attr == "dtype":
            return OTHER
        # An attribute of a module or global object: its value decides.
        root = e
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id not in self.env:
            try:
                v = eval(compile(ast.fix_missing_locations(ast.Expression(e)), "<kind>", "eval"),
                         {root.id: self.lookup_value(root.id)})
                return kind_of_value(v)
            except Exception:
                return OTHER
        return OTHER

    def subscript(self, e):
        base = self.expr(e.value)
        k = e.slice.value if isinstance(e.slice, ast.Constant) else None
        if base.items is not None and isinstance(k, int) and -len(base.items) <= k < len(base.items):
            return base.items[k]
        if base.items and self.expr(e.slice) == INT:
            return functools.reduce(join, base.items)       # t[i]: any of its items
        if base.dtype == "t":
            return Kind(None, "t") if isinstance(e.slice, ast.Slice) else INT
        if base.ndim is None:
            return OTHER
        idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        removed, added, unknown = 0, 0, False
        for i in idx:
            if isinstance(i, ast.Slice):
                continue
            if isinstance(i, ast.Constant) and i.value is None:
                added += 1
                continue
            if isinstance(i, ast.Constant) and i.value is Ellipsis:
                unknown = True
                continue
            k = self.expr(i)
            if k.ndim == 0 and k.dtype in "i":
                removed += 1
            else:
                unknown = True
        if base.ndim == -1 or unknown:
            return Kind(-1, base.dtype)
        return Kind(max(base.ndim - removed, 0) + added, base.dtype)

    def call(self, e, stmt):
        fn = getattr(stmt, "callee", None) if stmt is not None else None
        method = getattr(stmt, "method", None) if stmt is not None else None
        args = [self.expr(a) for a in e.args]
        kws = {k.arg: self.expr(k.value) for k in e.keywords}
        if method is not None:
            recv = self.expr(e.func.value)
            if method in ("copy", "conj", "conjugate", "flatten", "ravel", "reshape",
                          "transpose", "astype", "squeeze", "cumsum", "cumprod", "clip"):
                nd = recv.ndim if method in ("copy", "conj", "conjugate", "clip", "astype") \
                    else (1 if method in ("flatten", "ravel") else -1)
                return Kind(nd, recv.dtype if method != "astype" else "o")
            if method in ("sum", "prod", "mean", "max", "min", "var", "std", "dot", "trace"):
                no_axis = not e.args and "axis" not in kws
                return Kind(0 if no_axis and method != "dot" else -1,
                            "f" if method in ("mean", "var", "std") else recv.dtype)
            if method in ("argmax", "argmin"):
                return INT if not e.args else Kind(-1, "i")
            if method in ("item",):
                return Kind(0, recv.dtype)
            if method in ("any", "all"):
                return BOOL
            return OTHER
        if fn is None:
            return OTHER
        if fn in _INT_FUNCS:
            return INT
        if fn is float:
            return FLOAT
        if fn in _BOOL_FUNCS:
            return BOOL
        if fn in (abs, min, max):
            k = None
            for a in args:
                k = join(k, a)
            return k or OTHER
        if fn in _ARRAY_FACTORIES:
            dtype = "f"
            shape_arg = e.args[0] if e.args else None
            if fn in (np.zeros, np.ones, np.empty, np.full) and shape_arg is not None:
                k0 = args[0]
                dt = "o" if "dtype" in kws else "f"
                if k0 == INT:
                    return Kind(1, dt)
                if isinstance(shape_arg, ast.Tuple):
                    return Kind(len(shape_arg.elts), dt)
                if k0.dtype == "t":
                    return Kind(k0.ndim if k0.ndim is not None else -1, dt)
            if fn in (np.linspace, np.arange) and "dtype" not in kws:
                return Kind(1, "i" if fn is np.arange and all(a.dtype == "i" for a in args)
                            else "f")
            if fn in (np.eye, np.identity) and "dtype" not in kws:
                return Kind(2, "f")
            if fn in (np.arange,) and all(a.dtype == "i" for a in args):
                dtype = "i"
            if "dtype" in kws or fn in (np.array, np.asarray, np.copy, np.zeros_like, np.ones_like,
                                        np.empty_like, np.full_like):
                src = args[0] if args else OTHER
                if fn in (np.array, np.asarray, np.copy, np.zeros_like, np.ones_like,
                          np.empty_like, np.full_like) and src.ndim is not None:
                    return Kind(src.ndim if src.ndim != 0 or fn in (np.array, np.asarray)
                                else 0, src.dtype)
                return Kind(-1, "o")
            return Kind(-1, dtype)
        if fn is trip_count:
            return INT
        rule = registry.lookup(fn)
        if rule is not None:
            res = rule.result
            if res == "like":
                numeric = [a for a in args if a.dtype in _DTYPE_ORDER]
                k = _broadcast(numeric) if numeric else FLOAT
                return Kind(k.ndim, "f" if k.dtype in "bi" else k.dtype)
            return {"scalar": FLOAT, "array": Kind(-1, "f"), "int": INT, "bool": BOOL}.get(
                res, _any_result(fn, args, kws, e))
        if isinstance(fn, np.ufunc):
            k = _broadcast([a for a in args if a.dtype in _DTYPE_ORDER] or [FLOAT])
            return k
        if getattr(fn, "__module__", "") == "math" or fn in vars(math).values():
            return FLOAT
        if callable(fn) and args and all(a.ndim == 0 and a.dtype in "bif" for a in args):
            return FLOAT        # a (recursive) user function of scalars
        return OTHER


_INFER = ir.table("kind inference", {
    ir.Assign: KindInference._assign, ir.SetItem: KindInference._nothing, ir.If: KindInference._if,
    ir.For: KindInference._for, ir.While: KindInference._while, ir.Return: KindInference._nothing})


def _any_result(fn, args, kws, call):
    """The kind of a rule's result when the rule does not fix it."""
    if fn in _TUPLE_RESULTS:
        return OTHER
    first = args[0] if args else OTHER
    if fn in _REDUCTIONS:
        axis_given = len(call.args) > 1 or any(k.arg in ("axis", "ord") for k in call.keywords)
        if first.ndim == 0 or (not axis_given and not kws.get("keepdims")):
            return FLOAT
        return Kind(-1, "f")
    if fn in _MATRIX_SCALARS:
        return FLOAT if first.ndim == 2 else Kind(-1, "f")
    if fn in _SAME_SHAPE:
        return Kind(first.ndim, "f") if first.ndim is not None else Kind(-1, "f")
    if args and all(a.ndim == 0 for a in args):
        return FLOAT        # a function of scalars (a user rule, say) gives a scalar
    return Kind(-1, "f")


_TUPLE_RESULTS = {np.linalg.slogdet, np.linalg.eigh, np.linalg.svd, np.linalg.qr}
_REDUCTIONS = {np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var, np.std,
               np.linalg.norm, np.nansum, np.average}
_MATRIX_SCALARS = {np.linalg.det, np.trace}
_SAME_SHAPE = {np.linalg.inv, np.cumsum, np.cumprod, np.copy, np.sort}





# ---------------------------------------------------------------- activity
def _reads(s) -> set[str]:
    if isinstance(s, ir.Assign):
        return ir.atom_names(s.expr)
    if isinstance(s, ir.SetItem):
        return ir.atom_names(s.value) | ir.atom_names(s.index)
    return set()


def _differentiable_operands(s, kinds) -> set[str]:
    """Names through which a derivative can flow into the statement's target."""
    e = s.expr if isinstance(s, ir.Assign) else s.value
    if isinstance(e, (ast.Compare,)):
        return set()
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.Not, ast.Invert)):
        return set()
    if isinstance(e, ast.Subscript):
        return ir.atom_names(e.value)
    if isinstance(e, ast.Attribute):
        return ir.atom_names(e.value) if e.attr in ("T", "mT", "real", "imag") else set()
    if isinstance(e, ast.Call):
        if getattr(s, "callee", None) in NON_DIFFERENTIABLE:
            return set()
        names = set()
        for a in e.args:
            names |= ir.atom_names(a)
        for k in e.keywords:
            names |= ir.atom_names(k.value)
        if isinstance(e.func, ast.Attribute) and getattr(s, "method", None):
            names |= ir.atom_names(e.func.value)
        return names
    return ir.atom_names(e)


# Functions whose result carries no derivative from their arguments: shapes,
# counts, indices, fresh arrays.
NON_DIFFERENTIABLE = {len, int, round, bool, isinstance, range, math.floor, math.ceil,
                      math.trunc, math.isnan, math.isinf, math.isfinite,
                      np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
                      np.arange, np.linspace, np.eye, np.identity, np.shape, np.size, np.ndim,
                      np.argmax, np.argmin, np.argsort, np.searchsorted, np.count_nonzero,
                      np.isnan, np.isinf, np.isfinite, np.sign, np.floor, np.ceil, np.round,
                      np.any, np.all}


def _float_like(kind: Kind | None) -> bool:
    return kind is None or kind.dtype in ("f", "c", "o")


def activity(fn: ir.Function, kinds: dict, wrt: set[str]) -> set[str]:
    """The set of active variable names."""
    stmts = list(ir.walk(fn.body))
    varied = set(wrt)
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, ir.Assign):
                tgt = s.target
                src = _differentiable_operands(s, kinds)
            elif isinstance(s, ir.SetItem):
                tgt = s.array
                src = ir.atom_names(s.value)
            else:
                continue
            if tgt not in varied and src & varied and _float_like(kinds.get(tgt)):
                varied.add(tgt)
                changed = True
    ret = fn.body[-1]
    useful = set(ir.atom_names(ret.value)) if isinstance(ret, ir.Return) else set()
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, ir.Assign) and s.target in useful:
                new = _differentiable_operands(s, kinds) - useful
            elif isinstance(s, ir.SetItem) and s.array in useful:
                new = ir.atom_names(s.value) - useful
            else:
                continue
            if new:
                useful |= new
                changed = True
    return {v for v in varied & useful if _float_like(kinds.get(v))}
