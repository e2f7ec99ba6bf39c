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
import types

from ..core import ir
from ..core.errors import PullbackError
from ..core.kinds import BOOL, INT, MISSING, OTHER, SHAPE, Kind, broadcast, index_rank, join, kind_of_value
from ..frontend import resolve
from ..frontend.bookkeeping import insert_bookkeeping
from ..frontend.normalize import normalize
from ..frontend.parse import parse_function, unwrap
from ..rules import registry, results


class KindInference:
    """Forward inference of every variable's kind.

    ``lookup_value``: name -> the value of a non-local name (or MISSING), see
    :func:`pullback.frontend.resolve.value_lookup`; ``given``: the kinds of names
    known by construction (the loop bookkeeping's counters), kept as they are."""

    def __init__(self, fn: ir.Function, arg_kinds: dict, lookup_value, given: dict | None = None):
        self.fn = fn
        self.given = dict(given or {})
        self.env: dict[str, Kind] = {**arg_kinds, **self.given}
        self.lookup_value = lookup_value
        self.local = set(fn.params) | {n for st in ir.walk(fn.body) for n in st.writes()}

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
        if s.target not in self.given:
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
        handler = _EXPRESSION_KINDS.get(type(e))
        return handler(self, e, stmt) if handler is not None else OTHER

    def _constant(self, e, stmt):
        return kind_of_value(e.value) if e.value is not None else OTHER

    def _name(self, e, stmt):
        if e.id in self.env:
            return self.env[e.id]
        k = self.value_kind(e.id)
        if k is None or (k.dtype == "o" and k.items is None):
            return OTHER
        self.env[e.id] = k      # a global or closure number or array: its kind now
        return k

    def _binop(self, e, stmt):
        a, b = self.expr(e.left), self.expr(e.right)
        if a.dtype in "ot" or b.dtype in "ot":
            if a.dtype == "t" and b.dtype == "t":
                # Two shapes joined, ``(n,) + np.shape(y)``: the lengths add.
                known = isinstance(e.op, ast.Add) and all(
                    k.ndim is not None and k.ndim >= 0 for k in (a, b))
                return Kind(a.ndim + b.ndim, "t") if known else SHAPE
            return OTHER if (a.ndim is None or b.ndim is None) else broadcast([a, b], "o")
        if isinstance(e.op, ast.MatMult):
            return self._matmul(a, b)
        k = broadcast([a, b])
        if isinstance(e.op, ast.Div):
            return Kind(k.ndim, "f" if k.dtype in "bi" else k.dtype)
        if isinstance(e.op, ast.Pow) and k.dtype in "bi":
            exp_const = isinstance(e.right, ast.Constant) and isinstance(e.right.value, int) \
                and e.right.value >= 0
            return Kind(k.ndim, "i" if exp_const or k.ndim != 0 else "f")
        if k.dtype == "b" and not isinstance(e.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return Kind(k.ndim, "i")
        return k

    def _unaryop(self, e, stmt):
        a = self.expr(e.operand)
        if isinstance(e.op, ast.Not):
            return BOOL
        if isinstance(e.op, ast.Invert):
            return a
        return Kind(a.ndim, "i" if a.dtype == "b" else a.dtype)

    def _compare(self, e, stmt):
        a, b = self.expr(e.left), self.expr(e.comparators[0])
        if a.ndim == 0 and b.ndim == 0 or isinstance(e.ops[0], (ast.Is, ast.IsNot, ast.In,
                                                                 ast.NotIn)):
            return BOOL
        return Kind(broadcast([a, b]).ndim, "b")

    def _tuple(self, e, stmt):
        kinds = [self.expr(x) for x in e.elts]
        # A tuple of ints (a shape) keeps its length in ndim.
        return Kind(len(kinds), "t") if all(k.dtype in "bi" and k.ndim == 0
                                            for k in kinds) else Kind(None, "o", tuple(kinds))

    def _matmul(self, a, b):
        if a.ndim in (None, -1) or b.ndim in (None, -1):
            return Kind(-1, broadcast([a, b]).dtype)
        nd = {(1, 1): 0, (2, 1): 1, (1, 2): 1}.get((a.ndim, b.ndim), max(a.ndim, b.ndim))
        return Kind(nd, broadcast([a, b]).dtype)

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
        rank = index_rank(base.ndim, [None if isinstance(i, ast.Slice) else
                                      "none" if isinstance(i, ast.Constant) and i.value is None
                                      else "..." if isinstance(i, ast.Constant) and i.value is Ellipsis
                                      else self.expr(i) for i in idx])
        return Kind(-1 if rank is None else rank, base.dtype)

    def call(self, e, stmt):
        """The result kind of a call: its primitive's abstract evaluation (a method
        is its primitive with the receiver as the first argument)."""
        fn = getattr(stmt, "callee", None) if stmt is not None else None
        method = getattr(stmt, "method", None) if stmt is not None else None
        args = [self.expr(a) for a in e.args]
        kws = {k.arg: self.expr(k.value) for k in e.keywords}
        if method is not None:
            fn = registry.method(method)
            args = [self.expr(e.func.value)] + args
            e = ast.Call(e.func, [e.func.value] + e.args, e.keywords)
        if fn is None:
            return OTHER
        e = self._constants_in(e)
        rule = registry.lookup(fn)
        if rule is not None and rule.result is results.unknown and not kws:
            known = returned_kind(fn, tuple(args))
            if known is not None:
                return known
        return (rule.result if rule is not None else results.generic)(fn, args, kws, e)

    def _constants_in(self, call: ast.Call) -> ast.Call:
        """``call`` with each argument that names a global or closure int, bool, None
        or tuple of ints (``axis=AXIS``, ``keepdims=KEEP``) written as that constant,
        as the rules' result kinds read literals.  The derivative depends on those
        values (pipeline.ValueOf): a new value makes a new one."""
        def constant(a):
            if not isinstance(a, ast.Name) or a.id in self.local:
                return a
            v = self.lookup_value(a.id)
            if v is None or isinstance(v, (bool, int)) or (
                    isinstance(v, tuple) and all(type(x) is int for x in v)):
                return ast.Constant(v)
            return a
        args = [constant(a) for a in call.args]
        kws = [ast.keyword(k.arg, constant(k.value)) for k in call.keywords]
        if all(x is y for x, y in zip(args, call.args)) and \
                all(x.value is y.value for x, y in zip(kws, call.keywords)):
            return call
        return ast.Call(call.func, args, kws)


# Expression class -> its kind; anything else is of unknown kind (OTHER).
_EXPRESSION_KINDS = {
    ast.Constant: KindInference._constant, ast.Name: KindInference._name,
    ast.Attribute: lambda self, e, stmt: self.attribute(e),
    ast.Subscript: lambda self, e, stmt: self.subscript(e),
    ast.BinOp: KindInference._binop, ast.UnaryOp: KindInference._unaryop,
    ast.Compare: KindInference._compare, ast.Tuple: KindInference._tuple,
    ast.Call: lambda self, e, stmt: self.call(e, stmt),
}


_INFER = ir.table("kind inference", {
    ir.Assign: KindInference._assign, ir.SetItem: KindInference._nothing, ir.If: KindInference._if,
    ir.For: KindInference._for, ir.While: KindInference._while, ir.Return: KindInference._nothing})


# ---------------------------------------------------------------- activity
#: Attributes of an array or number that carry no derivative (``imag`` of the real
#: values pullback differentiates is 0).
NO_DERIVATIVE_ATTRIBUTES = frozenset({"shape", "size", "ndim", "dtype", "itemsize", "nbytes",
                                      "strides", "flags", "imag"})
COMPLEX_UNSUPPORTED = "complex differentiation is not supported yet"


def refuse_complex(fn: ir.Function, kinds: dict, active: set, qualname: str, location) -> None:
    """Refuse a function that computes an active complex value, at its first such line."""
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and s.target in active \
                and getattr(kinds.get(s.target), "dtype", None) == "c":
            raise TypeError(f"{qualname} computes a complex value from the arguments it is "
                            f"differentiated with respect to, and {COMPLEX_UNSUPPORTED}. "
                            f"Write this step with real floats (the real and imaginary parts "
                            f"as separate values).\n{location(s.line)}")

def _differentiable_operands(s, kinds) -> set[str]:
    """Names through which a derivative can flow into the statement's target."""
    e = s.expr if isinstance(s, ir.Assign) else s.value
    if isinstance(e, (ast.Compare,)):
        return set()
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.Not, ast.Invert)):
        return set()
    if isinstance(e, ast.Subscript):
        # A float in an index (np.r_[x, y]) carries a derivative too: the reverse
        # sweep refuses it with its line rather than drop it.
        return ir.atom_names(e.value) | {n for n in ir.atom_names(e.slice)
                                         if kinds.get(n) is not None and kinds[n].dtype in "fc"}
    if isinstance(e, ast.Attribute):
        # An attribute that is not a number's shape or type (a field of a named tuple,
        # np.linalg.slogdet(S).logabsdet) carries the derivative: the transforms
        # differentiate it or refuse it by line, never drop it.
        return set() if e.attr in NO_DERIVATIVE_ATTRIBUTES else ir.atom_names(e.value)
    if isinstance(e, ast.Call):
        fn = registry.method(s.method) if s.method is not None else s.callee
        rule = registry.lookup(fn) if fn is not None else None
        if rule is not None and not rule.differentiable:
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


def _float_like(kind: Kind | None) -> bool:
    return kind is None or kind.dtype in ("f", "c", "o")


def activity(fn: ir.Function, kinds: dict, wrt: set[str],
             first_only=None) -> set[str]:
    """The set of active variable names.  ``first_only``: tuple name -> n, for the
    tuples ``t = (out..., aux...)`` of a ``has_aux`` result whose first n items alone
    are differentiated: nothing is useful for being an item of the aux."""
    first_only = first_only or {}
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
                if s.target in first_only and isinstance(s.expr, ast.Tuple):
                    new = set().union(*(ir.atom_names(e) for e in
                                        s.expr.elts[:first_only[s.target]])) - useful
            elif isinstance(s, ir.SetItem) and s.array in useful:
                new = ir.atom_names(s.value) - useful
            else:
                continue
            if new:
                useful |= new
                changed = True
    return {v for v in varied & useful if _float_like(kinds.get(v))}


@functools.lru_cache(maxsize=256)
def returned_kind(fn, arg_kinds: tuple) -> Kind | None:
    """What the user's Python function ``fn`` (or the one a ``custom_vjp`` wraps, its
    ``__wrapped__``) returns for arguments of ``arg_kinds``: kind inference over its
    own body, as for the function differentiated.  A rule of the user's that says
    nothing of its result is called with a result of this kind (a number stays a
    number, under Numba too).  None when the source cannot be read or transformed,
    or the returns disagree: the rule's own guess then stands."""
    py, _ = unwrap(getattr(fn, "__wrapped__", fn))
    if not isinstance(py, types.FunctionType) or resolve.is_library(py) \
            or py.__code__.co_argcount != len(arg_kinds) or fn in _INFERRING:
        return None
    _INFERRING.add(fn)
    try:
        parsed = parse_function(py)
        fn_ir, norm = normalize(parsed)
        lookup = resolve.value_lookup(parsed, norm.externals)
        book = insert_bookkeeping(fn_ir, lookup)
        env = KindInference(book.fn, dict(zip(book.fn.params, arg_kinds)), lookup,
                            book.kinds).run()
    except PullbackError:
        return None
    finally:
        _INFERRING.discard(fn)
    kinds = {env.get(r.value.id) if isinstance(r.value, ast.Name) else None
             for r in ir.walk(book.fn.body) if isinstance(r, ir.Return)}
    if len(kinds) != 1 or None in kinds:
        return None
    (kind,) = kinds
    return kind if kind.dtype in "bif" and kind.ndim is not None and kind.ndim >= 0 \
        or kind.items is not None else None


_INFERRING: set = set()     # the functions whose result is being inferred (recursion)
