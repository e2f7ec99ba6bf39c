"""Forward mode: every active value's tangent, computed right after the value.

``forward`` reads the same final IR, kinds and active set as the reverse
transform (:func:`pullback.pipeline.prepare`) and returns the function's
statements with, after each one that gives an active variable a value, the
statement that gives its tangent (``x_dot``) the matching value.  Nothing is
saved: loops stay loops and run once, ``p[i]`` reads ``p_dot[i]`` and ``h[i] = v``
writes ``h_dot[i] = v_dot``.  Each primitive's tangent comes from its record
(:mod:`pullback.rules.tangents`); a primitive without one is refused by name and
line, never given a zero tangent.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..analysis.activity import NO_DERIVATIVE_ATTRIBUTES
from ..core import index_sets, ir
from ..core.errors import MissingRuleError, UnsupportedSyntaxError, located
from ..core.kinds import MISSING, Kind, kind_of_atom
from ..core.names import HelperNames, Helpers, Names
from ..core.runtime import fit, zeros_tangent
from ..reverse.adjoints import refused_attribute
from ..reverse.ops import from_line
from ..rules import registry, strong_zero, tangents
from ..rules.scalar import OPERATORS, numpy_form
from ..rules.templates import substitute


@dataclass(frozen=True)
class Tangents:
    """The forward-mode function's parts, for the emitter."""

    name: str
    params: tuple
    wrt: tuple                    # the parameters given a tangent
    tangent_params: Mapping       # parameter -> its tangent parameter's name
    body: list                    # ast statements: the primal's, each with its tangent's
    value: ast.expr               # the returned value
    tangent: ast.expr             # its tangent
    helpers: Mapping              # name -> object the generated code calls
    copied_params: frozenset      # parameters (and so their tangents) written in place


def forward(fn: ir.Function, kinds: Mapping, active: frozenset, wrt: list, location,
            lookup=lambda name: MISSING, helpers: HelperNames = HelperNames(),
            backend=None, pattern: bool = False) -> Tangents:
    """The tangent program of ``fn`` for the tangents of ``wrt``; ``backend``, when
    given, refuses (located) a tangent template it cannot run.  With ``pattern``,
    its zero tangents and broadcasts are those of :mod:`pullback.core.index_sets`,
    so that it runs on index sets to trace a sparsity pattern."""
    return _Writer(fn, kinds, active, location, lookup, helpers, backend, pattern).run(wrt)


class _Writer:
    def __init__(self, fn, kinds, active, location, lookup, helpers, backend=None,
                 pattern=False):
        self.fn, self.kinds, self.active, self.location = fn, kinds, active, location
        self.backend, self.pattern = backend, pattern
        # A pattern program's helpers for those that need floats (core/index_sets.py).
        self.swap = {fit: index_sets.fit, strong_zero.scaled: index_sets.product,
                     strong_zero.divided: index_sets.quotient} if pattern else {}
        self.names = Names(set(fn.names) | set(kinds))
        assigned = set(fn.params) | {n for s in ir.walk(fn.body) for n in s.writes()}
        self.helpers = Helpers(self.names, lookup, assigned.__contains__, helpers)
        self.dots: dict[str, str] = {}

    def helper(self, obj, name: str) -> str:
        """The name the generated code calls ``obj`` (its pattern twin) by."""
        return self.helpers.name(self.swap.get(obj, obj), name)

    def dot(self, name: str) -> str:
        if name not in self.dots:
            self.dots[name] = self.names.reserve(name + "_dot")
        return self.dots[name]

    def run(self, wrt) -> Tangents:
        tangent_params = {p: self.dot(p) for p in wrt}
        # A parameter held fixed that a differentiated value is written into
        # (``p[0] = x``) starts with a zero tangent.
        held = [_assign(self.dot(p), self.zero(ast.Name(p))) for p in self.fn.params
                if p in self.active and p not in tangent_params]
        body = held + self.block(self.fn.body)
        ret = self.fn.body[-1].value
        copied = frozenset(self.fn.copied_params)
        return Tangents(self.fn.name, tuple(self.fn.params), tuple(wrt), tangent_params, body,
                        ret, self.tangent_of_atom(ret), dict(self.helpers.bound), copied)

    # ---------------------------------------------------------------- statements
    def block(self, stmts) -> list:
        """The statements' code, each run of them from one line of the user's after a
        ``# from:`` comment naming it (an error raised there names it too)."""
        out = []
        last_line = None
        for s in stmts:
            code = ir.dispatch(_STATEMENTS, s)(self, s)
            if code and s.line != last_line and s.line in self.fn.source_lines \
                    and not isinstance(s, ir.Return):
                out.append(from_line(self.fn.source_lines[s.line], s.line))
                last_line = s.line
            out += code
        return out

    def assign(self, s: ir.Assign) -> list:
        primal = _assign(s.target, copy.deepcopy(s.expr))
        if s.target not in self.active:
            return [primal]
        tangent = self.expression(s, s.expr)
        target = ast.Name(s.target)
        if tangent is None:
            return [primal, _assign(self.dot(s.target), self.zero(target))]
        if s.target not in ir.atom_names(s.expr):
            return [primal, _assign(self.dot(s.target), tangent(target))]
        # x = f(x): the tangent reads the old x, so the new value waits in a temporary.
        new = self.names.fresh("_new")
        return [_assign(new, copy.deepcopy(s.expr)),
                _assign(self.dot(s.target), tangent(ast.Name(new))), _assign(s.target, ast.Name(new))]

    def setitem(self, s: ir.SetItem) -> list:
        primal = ast.Assign([ast.Subscript(ast.Name(s.array), copy.deepcopy(s.index), ast.Store())],
                            copy.deepcopy(s.value))
        if s.array not in self.active:
            return [primal]
        self.refuse_active_index(s, s.index)
        value = self.tangent_of_atom(s.value) if self.is_active(s.value) else ast.Constant(0.0)
        return [primal, ast.Assign([ast.Subscript(ast.Name(self.dot(s.array)),
                                                  copy.deepcopy(s.index), ast.Store())], value)]

    def if_(self, s: ir.If) -> list:
        return [ast.If(ast.Name(s.test), self.block(s.body) or [ast.Pass()], self.block(s.orelse))]

    def for_(self, s: ir.For) -> list:
        body = self.block(s.body)
        if s.exit_flag is not None:
            body.append(ast.If(ast.Name(s.exit_flag), [ast.Break()], []))
        return [ast.For(ast.Name(s.var, ast.Store()),
                        ast.Call(ast.Name("range"), copy.deepcopy([s.start, s.stop, s.step]), []),
                        body or [ast.Pass()], [])]

    def while_(self, s: ir.While) -> list:
        body = self.block(s.body)
        if s.exit_flag is not None:
            body.append(ast.If(ast.Name(s.exit_flag), [ast.Break()], []))
        return [ast.While(ast.Name(s.test), body + self.block(s.cond), [])]

    # --------------------------------------------------------------- expressions
    def expression(self, s, e):
        """``ans -> tangent expression`` of ``e`` (``ans``: the node naming its value),
        or None when nothing differentiated flows into it."""
        if isinstance(e, ast.Name):
            return (lambda ans: ast.Name(self.dot(e.id))) if self.is_active(e) else None
        if isinstance(e, (ast.Constant, ast.Compare, ast.BoolOp)):
            return None
        if isinstance(e, ast.Attribute):
            if not self.is_active(e.value) or e.attr in NO_DERIVATIVE_ATTRIBUTES:
                return None
            if e.attr in ("T", "mT", "real"):
                return lambda ans: ast.Attribute(ast.Name(self.dot(e.value.id)), e.attr, ast.Load())
            raise self.refuse(s, *refused_attribute(e))
        if isinstance(e, ast.Subscript):
            if not self.is_active(e.value):
                return None
            self.refuse_active_index(s, e.slice)
            return lambda ans: ast.Subscript(ast.Name(self.dot(e.value.id)), copy.deepcopy(e.slice),
                                             ast.Load())
        if isinstance(e, (ast.Tuple, ast.List)):
            if not any(self.is_active(x) for x in e.elts):
                return None
            return lambda ans: ast.Tuple([self.tangent_of_atom(x) for x in e.elts], ast.Load())
        if isinstance(e, (ast.BinOp, ast.UnaryOp)):
            fn = OPERATORS.get(type(e.op).__name__)
            operands = [e.left, e.right] if isinstance(e, ast.BinOp) else [e.operand]
            return self.call(s, fn, operands, {}, e)
        if isinstance(e, ast.Call):
            if s.method is not None:
                return self.call(s, registry.method(s.method), [e.func.value] + e.args,
                                 {k.arg: k.value for k in e.keywords}, e)
            return self.call(s, s.callee, e.args, {k.arg: k.value for k in e.keywords}, e)
        raise self.refuse(s, f"the expression {ast.unparse(e)} in forward mode")

    def call(self, s, fn, args, kwargs, node):
        """The tangent of ``fn(*args, **kwargs)`` (``node``: the call as written)."""
        given = list(args) + list(kwargs.values())
        if not any(self.is_active(a) for a in given):
            return None
        array = any(self.kind(a).ndim != 0 for a in args) or self.kind(ast.Name(s.target)).ndim != 0
        fn = numpy_form(fn, [self.kind(a) for a in args], len(kwargs), array)
        rule = registry.lookup(fn) if fn is not None else None
        if rule is not None and not rule.differentiable:
            return None
        form = tangents.tangent_of(rule) if rule is not None else None
        if form is None:
            name = rule.name if rule is not None else \
                registry.describe(fn) if fn is not None else "this call"
            raise self.refuse(s, f"forward mode has no tangent rule for {name}",
                              "use vjp/grad (reverse mode) for this function, or write the call "
                              "with primitives that have one", MissingRuleError)
        bound = rule.bind(args, kwargs, f"\n  {self.location(s.line)}")
        active = {p: a for p, a in bound.items() if self.is_active(a)}
        for p in active:
            if not form.covers(p):
                raise self.refuse(s, f"a differentiated argument {p!r} of {rule.name} in "
                                  "forward mode", "pass a constant there", MissingRuleError)
        active = {p: a for p, a in active.items() if p.split("[", 1)[0] not in form.constant}
        if not active:
            return None
        if form.reduction:
            return _reduced(self, rule, form, bound, active)
        if form.templates:
            if self.backend is not None:
                # The backend's check of a derivative's helpers, on the tangent's templates.
                self.backend.check_rule(self, s, dataclasses.replace(
                    rule, adjoints=form.templates, helpers=form.helpers), bound)
            unary = len(args) == 1 and not kwargs
            return _templated(self, form, bound, active, array and not unary and not form.shaped)
        return _replaced(self, form, bound, active, node)

    # ----------------------------------------------------------------- helpers
    def tangent_of_atom(self, atom) -> ast.expr:
        if self.is_active(atom):
            return ast.Name(self.dot(atom.id))
        return self.zero(atom)

    def zero(self, atom) -> ast.expr:
        """The tangent of a value nothing differentiated flows into."""
        k = self.kind(atom)
        if k.ndim == 0 and k.items is None:
            return ast.Constant(0.0)
        if self.pattern:
            return ast.Call(ast.Name(self.helper(index_sets.zeros, "pattern_zeros")),
                            [copy.deepcopy(atom)], [])
        if k.ndim is not None and k.ndim > 0 and k.dtype == "f":
            np_name = ast.Name(self.helpers.name(np, "np"))
            return ast.Call(ast.Attribute(np_name, "zeros_like", ast.Load()), [copy.deepcopy(atom)], [])
        return ast.Call(ast.Name(self.helpers.name(zeros_tangent, "zeros_tangent")),
                        [copy.deepcopy(atom)], [])

    def is_active(self, atom) -> bool:
        return isinstance(atom, ast.Name) and atom.id in self.active

    def kind(self, atom) -> Kind:
        return kind_of_atom(atom, self.kinds)

    def refuse_active_index(self, s, index):
        if any(n in self.active for n in ir.atom_names(index)):
            raise self.refuse(s, "an index built from differentiated values",
                              "index with integers or slices")

    def refuse(self, s, what, hint="", cls=UnsupportedSyntaxError):
        return located(what, self.location(s.line), hint, cls)

    error = refuse      # the name a backend's checks call


def _templated(w, form, bound, active, fitted):
    names = {n: w.helper(obj, n) for n, obj in form.helpers.items()}
    t_name = "g" if form.uses_g else tangents.TANGENT

    def build(ans):
        terms = [substitute(form.templates[_base(p)], dict(bound, **{
            t_name: ast.Name(w.dot(a.id)), "ans": ans}), names)
            for p, a in active.items()]
        out = _sum(terms)
        if fitted:      # an operand may have been broadcast: the tangent takes ans's shape
            out = ast.Call(ast.Name(w.helper(fit, "fit")), [out, ans], [])
        return out
    return build


def _reduced(w, rule, form, bound, active):
    """``sum(t * w, axis, keepdims)``, ``w`` the derivative for a cotangent of ones."""
    (param, arg), = active.items()
    names = {n: w.helper(obj, n) for n, obj in form.helpers.items()}
    np_name = w.helpers.name(np, "np")

    def build(ans):
        ones = ast.Constant(1.0) if w.kind(ans).ndim == 0 else \
            ast.Call(ast.Attribute(ast.Name(np_name), "ones_like", ast.Load()), [ans], [])
        weight = substitute(rule.adjoints[param], dict(bound, g=ones, ans=ans), names)
        product = ast.BinOp(ast.Name(w.dot(arg.id)), ast.Mult(), weight)
        whole = _constant(bound["axis"], None) and _constant(bound["keepdims"], False)
        # The whole array's sum is written without keywords: Numba's np.sum takes none.
        return ast.Call(ast.Attribute(ast.Name(np_name), "sum", ast.Load()), [product],
                        [] if whole else
                        [ast.keyword("axis", copy.deepcopy(bound["axis"])),
                         ast.keyword("keepdims", copy.deepcopy(bound["keepdims"]))])
    return build


def _sum(terms) -> ast.expr:
    """The tangent's terms added up; ``a + -b`` written ``a - b``, to the bit (IEEE
    subtraction adds the negation): one operation fewer here and in a Hessian's
    reverse sweep of it."""
    out = terms[0]
    for t in terms[1:]:
        out = ast.BinOp(out, ast.Sub(), t.operand) if isinstance(t, ast.UnaryOp) \
            and isinstance(t.op, ast.USub) else ast.BinOp(out, ast.Add(), t)
    return out


def _replaced(w, form, bound, active, node):
    def build(ans):
        if form.linear:     # every linear argument by its tangent, a number's is 0
            return tangents.replace_args(node, {
                id(a): w.tangent_of_atom(a) if isinstance(a, ast.Name) else ast.Constant(0.0)
                for p, a in bound.items() if _base(p) in form.linear and (
                    isinstance(a, ast.Name) or _number(a))})
        terms = [tangents.replace_args(node, {id(a): ast.Name(w.dot(a.id))})
                 for a in active.values()]
        return _sum(terms)
    return build


def _number(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)


def _base(param: str) -> str:
    """``operands`` for the ``operands[k]`` a ``*operands`` parameter binds."""
    return param.split("[", 1)[0]


def _assign(name, value):
    return ast.Assign([ast.Name(name, ast.Store())], value)


_STATEMENTS = ir.table("forward mode", {
    ir.Assign: _Writer.assign, ir.SetItem: _Writer.setitem, ir.If: _Writer.if_,
    ir.For: _Writer.for_, ir.While: _Writer.while_, ir.Return: lambda w, s: []})


def _constant(node, value) -> bool:
    """Whether ``node`` is the constant ``value`` (None, False: compared by identity)."""
    return isinstance(node, ast.Constant) and node.value is value
