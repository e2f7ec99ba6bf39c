"""The rules registry: one table from a primal callable to its derivative.

A rule says, for each differentiable parameter of a primitive, the expression
that gives that parameter's cotangent contribution: a small Python template
written like the maths (:mod:`.templates` says how one is written and read)::

    defrule(math.sin, "x", x="g * math.cos(x)")
    defrule(operator.truediv, "x, y", x="g / y", y="-g * ans / y")

The reverse transform substitutes the call's arguments for the parameter names
and inlines the expression into the generated code, so scalar rules compile
with Numba like hand-written code.  Array rules are the same mechanism with a
helper function in the template (``x="prod_vjp(g, ans, x, axis, keepdims)"``).

A user gives a rule for any callable (their own function, a NumPy ufunc, a
SciPy function) with :func:`pullback.rule`, which registers a VJP function
through :func:`defvjp`.  Such a rule is not a template: the generated code calls
the VJP as ``vjp(g, ans, *args, **kwargs)`` with exactly the arguments the call
site passed, as written (no defaults filled in), so the VJP's own signature,
after ``g`` and ``ans``, is what a call is checked against.

Everything the transforms know about a primitive is in its record here: its
derivative, its tangent (forward mode, :mod:`.tangents`), its result kind (an
abstract-evaluation function from :mod:`.results`), whether it is
differentiable at all (:func:`defnondiff`: comparisons, ``len``, array
factories), whether it may return a view of its argument, and the ndarray
method names that mean it (``x.sum()`` is ``np.sum(x)``).

Under the Numba backend a rule also needs a compiled form of what its
templates call: :func:`.forms.numba_twin`, placed beside a helper, registers it
(and :mod:`.forms` the other backend forms); ``Rule.twins`` reads them back.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import types
from dataclasses import dataclass

import numpy as np

from ..core.errors import MissingRuleError
from ..core.runtime import cotangent_or_zero, result_cotangent
from . import results
from .forms import twin
from .templates import MAX_VARIADIC, Param, read_templates, read_vjp, vjp_name

#: What a namespace picker (:func:`defnamespace`) returns for NumPy arrays and floats.
NUMPY_NAMESPACE = np


@dataclass(frozen=True)
class Rule:
    """The derivative of one primal callable."""

    fn: object
    name: str                       # readable name for messages
    params: tuple[Param, ...]       # signature of the primal, as the rule sees it
    adjoints: dict                  # param name -> ast.expr template
    helpers: dict                   # free name in a template -> object
    result: object = results.like   # the result's kind: a function of :mod:`.results`
    vjp_tuple: ast.expr | None = None   # a template returning all cotangents at once
    call_signature: inspect.Signature | None = None   # a user VJP's parameters after g, ans
    cotangents: int = 0             # how many a user VJP returns (1: one value, not a tuple)
    differentiable: bool = True     # False: no derivative flows through (zero cotangent)
    view: bool = False              # the result may share memory with the first argument
    methods: tuple = ()             # ndarray method names that call this primitive
    namespace: bool = False         # returns the array namespace of its arguments (NumPy)
    tangent: object = None          # forward mode's rule, a :class:`.tangents.Tangent`

    @property
    def twins(self) -> dict:
        """Numba twins of what this rule's code calls: template helper name (or
        ``"<primal>"`` for the primal call itself) -> twin (see :func:`.forms.numba_twin`)."""
        out = {name: twin(obj) for name, obj in self.helpers.items() if twin(obj) is not None}
        if twin(self.fn) is not None:
            out["<primal>"] = twin(self.fn)
        return out

    @property
    def has_derivative(self) -> bool:
        """A derivative rule is known (a primitive registered only for its kind has none)."""
        return bool(self.adjoints) or self.vjp_tuple is not None

    def bind(self, args, kwargs, where=""):
        """Map call arguments (AST nodes) to parameter names; fill defaults.

        Returns a dict name -> ast.expr; a ``*name`` parameter maps to the tuple
        of its arguments, and each of them is ``name[k]`` too.  A call the rule
        cannot take (more arguments than its signature, which NumPy may accept)
        raises MissingRuleError, a TypeError that says how to register one; a call that
        NumPy would refuse too (a missing argument) raises TypeError.  A user
        VJP's parameters are bound as Python binds them, without defaults: only
        what the call passes (an extra positional argument taken by ``*args`` is
        ``"*args[k]"``, an extra keyword taken by ``**kw`` is ``"**kw[name]"``).
        """
        if self.call_signature is not None:
            return self._bind_call(args, kwargs, where)
        bound = {}
        positional = [p for p in self.params if not p.kw_only and not p.variadic]
        star = next((p for p in self.params if p.variadic), None)
        most = len(positional) + (MAX_VARIADIC if star is not None else 0)
        if len(args) > most:
            raise MissingRuleError(
                f"{self.name}() takes at most {most} positional "
                f"arguments but {len(args)} were given{where}{self._register_hint()}")
        for p, a in zip(positional, args):
            bound[p.name] = a
        if star is not None:
            # ``*name``: the tuple for templates (``f(*name)``), and each argument
            # as ``name[k]``, the parameter its template's k-th instance differentiates.
            rest = list(args[len(positional):])
            bound[star.name] = ast.Tuple(rest, ast.Load())
            bound.update({f"{star.name}[{k}]": a for k, a in enumerate(rest)})
        names = {p.name for p in self.params if not p.variadic}
        for k, v in kwargs.items():
            if k not in names:
                raise self._mismatch(f"got an unexpected keyword argument {k!r}", where)
            if k in bound:
                raise TypeError(f"{self.name}() got multiple values for argument {k!r}{where}")
            bound[k] = v
        for p in self.params:
            if p.name not in bound:
                if p.required:
                    raise TypeError(f"{self.name}() missing required argument {p.name!r}{where}")
                bound[p.name] = ast.Constant(p.default)
        return bound

    def _mismatch(self, what, where) -> MissingRuleError:
        return MissingRuleError(f"{self.name}() {what}{where}{self._register_hint()}")

    def _register_hint(self) -> str:
        return (f"\npullback's rule for {self.name} does not take this call: register one "
                f"that does with @pullback.rule({self.name}), or write the call another way")

    def call_mismatch(self, args, kwargs) -> str | None:
        """Why a user VJP cannot take a call's arguments (``args``: a sequence,
        ``kwargs``: a dict by keyword), or None when it can."""
        if self.call_signature is None:
            return None
        try:
            self.call_signature.bind(*args, **kwargs)
        except TypeError as exc:
            return str(exc)
        return None

    def _bind_call(self, args, kwargs, where):
        try:
            ba = self.call_signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise MissingRuleError(f"the rule for {self.name} cannot take the arguments of this "
                            f"call: {exc}{where}{self._register_hint()}") from None
        bound = {}
        for name, value in ba.arguments.items():
            kind = self.call_signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                bound.update({f"*{name}[{k}]": v for k, v in enumerate(value)})
            elif kind is inspect.Parameter.VAR_KEYWORD:
                bound.update({f"**{name}[{k}]": v for k, v in value.items()})
            else:
                bound[name] = value
        return bound

    def vjp_call(self, args, kwargs, where=""):
        """A user VJP's call at one call site, forwarding the call's arguments as
        written: ``(template, inputs)`` where the template calls ``__vjp__(g, ans,
        ...)`` on placeholders and ``inputs`` maps each placeholder to its argument.
        With more than one cotangent expected, the result passes through
        :func:`checked_cotangents`, so a VJP that returns something else fails with
        a message naming it and ``where`` (the call site) instead of being indexed."""
        inputs = {f"__arg{k}__": a for k, a in enumerate(args)}
        inputs.update({f"__kw_{k}__": v for k, v in kwargs.items()})
        g = ast.Name("g", ast.Load())
        if "result_cotangent" in self.helpers:      # fn returns a tuple
            g = ast.Call(ast.Name("result_cotangent", ast.Load()), [g, ast.Name("ans", ast.Load())], [])
        call = ast.Call(ast.Name("__vjp__", ast.Load()),
                        [g, ast.Name("ans", ast.Load())]
                        + [ast.Name(f"__arg{k}__", ast.Load()) for k in range(len(args))],
                        [ast.keyword(k, ast.Name(f"__kw_{k}__", ast.Load())) for k in kwargs])
        if self.cotangents <= 1:
            return call, inputs     # one cotangent: used as it is
        what = f"{vjp_name(self.helpers['__vjp__'])}, the rule for {self.name},"
        checked = ast.Call(ast.Name("checked_cotangents", ast.Load()),
                           [call, ast.Constant(self.cotangents), ast.Constant(what),
                            ast.Constant(where)], [])
        return checked, inputs


_RULES: dict = {}                    # key(fn) -> its rule
_METHODS: dict[str, object] = {}     # ndarray method name -> the primitive it calls
_SHADOWED: dict = {}                 # key(fn) -> the built-in rule a user's rule replaced


def key(fn):
    """What the tables know ``fn`` by: its id, or for a method bound to an object
    (``np.add.reduce``, made afresh at each attribute access), the object's id and
    the method.  A rule keeps ``fn`` alive: the id is not reused while it stands."""
    owner = getattr(fn, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType) \
            or not isinstance(fn, (types.BuiltinMethodType, types.MethodType)):
        return id(fn)
    return ("method", id(owner), getattr(fn, "__func__", None) or fn.__name__)


# NumPy functions that write into an argument in place and return None: a rule
# (a VJP of the result) cannot describe them, and a call to one is refused.
_IN_PLACE = (np.copyto, np.fill_diagonal, np.put, np.place, np.putmask, np.put_along_axis)


def writes_in_place(fn) -> bool:
    """``fn`` writes into its first argument in place (``np.copyto``, ``np.add.at``)."""
    if isinstance(getattr(fn, "__self__", None), np.ufunc) and fn.__name__ == "at":
        return True
    return any(fn is f for f in _IN_PLACE)


def _same(rule: Rule, fn) -> bool:
    """``rule`` was registered for ``fn`` (its key, not an id reused since)."""
    return rule.fn is fn or not isinstance(key(fn), int)


def _register(rule: Rule, replace: bool = False) -> Rule:
    """Record ``rule``.  Built-in registrations never replace one another, so two
    modules cannot silently disagree about a primitive; a user's rule may."""
    old = lookup(rule.fn)
    if old is not None and not replace:
        raise ValueError(f"{rule.name} is registered twice; register each primitive once, "
                         "with everything about it")
    if old is not None and old.call_signature is None:
        _SHADOWED[key(rule.fn)] = old       # a built-in rule, back when the user's goes
    _RULES[key(rule.fn)] = rule
    for name in rule.methods:
        _METHODS[name] = rule.fn
    return rule


def amend(fn, **fields) -> Rule:
    """Add to ``fn``'s record what a later registration knows (its tangent rule)."""
    _RULES[key(fn)] = dataclasses.replace(lookup(fn), **fields)
    return _RULES[key(fn)]


def _result(result):
    return results.BY_NAME[result] if isinstance(result, str) else result


def describe(fn) -> str:
    """``fn``'s dotted name: ``numpy.maximum.accumulate`` for a method of a ufunc."""
    if not isinstance(key(fn), int):
        return f"{describe(fn.__self__)}.{fn.__name__}"
    mod = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{mod}.{name}" if mod and mod != "builtins" else name


def defrule(fn, signature: str, *, result="like", view: bool = False, methods: tuple = (),
            namespace: dict | None = None, name: str | None = None, **adjoints: str) -> Rule:
    """Register the derivative of ``fn`` as per-parameter template expressions.

    ``signature`` is the primal's parameter list as Python source
    (``"x, axis=None, keepdims=False"``).  Each keyword names a parameter and
    gives its cotangent expression.  Parameters without one are not
    differentiable (axes, flags, integer arguments).  ``result`` is the result
    kind (a function of :mod:`.results`, or one of its names in
    ``results.BY_NAME``); ``view``: the result may be a view of the first
    argument; ``methods``: ndarray methods that mean this function.

    A ``*name`` parameter takes any number of arguments (up to
    :data:`MAX_VARIADIC`); its template is the cotangent of one of them, the one
    at position ``k`` within ``*name`` (``"einsum_vjp(g, k, *operands)"``), and
    ``*name`` in any template passes them all.
    """
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    params, trees, helpers = read_templates(signature, adjoints, namespace, describe(fn))
    return _register(Rule(fn=fn, name=name or describe(fn), params=params, adjoints=trees,
                          helpers=helpers, result=_result(result), view=view,
                          methods=tuple(methods)))


def defnondiff(fn, *, result=results.generic, view: bool = False,
               methods: tuple = ()) -> Rule:
    """Register ``fn`` as non-differentiable: no derivative flows from its arguments
    to its result (comparisons, ``len``, ``floor``, ``argmax``, array factories).
    ``view``: the result may be its first argument itself (``stop_gradient``)."""
    return _register(Rule(fn=fn, name=describe(fn), params=(), adjoints={}, helpers={},
                          result=_result(result), differentiable=False, view=view,
                          methods=tuple(methods)))


def defnamespace(fn) -> Rule:
    """Register ``fn`` as a namespace picker (``array_namespace(*arrays)``): it
    returns the array namespace of its arguments, which for the values pullback
    differentiates is NumPy (:data:`NUMPY_NAMESPACE`).  The frontend binds its
    result when transforming, so ``xp.sum(...)`` is ``np.sum(...)`` and its rule."""
    return _register(Rule(fn=fn, name=describe(fn), params=(), adjoints={}, helpers={},
                          differentiable=False, namespace=True))


def defprimitive(fn, *, result, view: bool = False, methods: tuple = ()) -> Rule:
    """Register what is known of ``fn`` without a derivative rule yet (its result
    kind, whether it returns a view): differentiating through it still raises
    MissingRuleError, but kind inference and the aliasing check know it."""
    return _register(Rule(fn=fn, name=describe(fn), params=(), adjoints={}, helpers={},
                          result=_result(result), view=view, methods=tuple(methods)))


def defvjp(fn, vjp, *, argnums=None, result: str = "any") -> Rule:
    """Register ``vjp`` as the derivative of ``fn`` (any callable).

    Each call ``fn(*args, **kwargs)`` in differentiated code runs
    ``vjp(g, ans, *args, **kwargs)`` backwards: the cotangent ``g`` of the
    result, the result ``ans``, then exactly the arguments the call passed, as
    it passed them (no defaults filled in).  So ``vjp``'s parameters after the
    first two mirror ``fn``'s, with the defaults ``vjp`` itself gives; a call
    they cannot take is refused, naming the call's line, before anything runs.

    ``vjp`` returns one cotangent per positional parameter of its own after
    ``g, ans`` (``None`` for one without a derivative): that value itself when
    there is one such parameter, a tuple of them otherwise.  ``argnums``
    (default: every one) says which of those parameters may carry a derivative;
    keyword-only parameters and ``*args``/``**kwargs`` never do.
    """
    if writes_in_place(fn):
        raise ValueError(
            f"{describe(fn)} writes into its first argument in place and returns None, so "
            "a rule (the derivative of a result) cannot describe it: write a function of "
            "your own that returns the new array (`def add_at(a, i, b): a = a.copy(); "
            "np.add.at(a, i, b); return a`) and register the rule on that function")
    rule = _register(vjp_rule(fn, vjp, argnums=argnums, result=result), replace=True)
    _changed()
    return rule


def vjp_rule(fn, vjp, *, argnums=None, result: str = "any", name: str | None = None) -> Rule:
    """The rule :func:`defvjp` registers, made without registering it."""
    call_signature, adjoints, marker, n = read_vjp(vjp, argnums, name or describe(fn))
    helpers = {"__vjp__": vjp, "checked_cotangents": checked_cotangents,
               "cotangent_or_zero": cotangent_or_zero}
    if results.returned_tuple_length(fn) is not None:
        helpers["result_cotangent"] = result_cotangent
    return Rule(fn=fn, name=name or describe(fn), params=(), adjoints=adjoints,
                helpers=helpers,
                result=_result(result), vjp_tuple=marker, call_signature=call_signature,
                cotangents=n)


def checked_cotangents(cotangents, n, rule, where):
    """The tuple a user VJP returned, checked to hold its ``n`` cotangents (the
    generated code takes item k of it).  Under Numba a value that is not a tuple
    fails to compile instead."""
    if not isinstance(cotangents, tuple) or len(cotangents) != n:
        raise TypeError(rule + " did not return a tuple of " + str(n) + " cotangents, one per "
                        "positional parameter after g, ans (None where there is no "
                        "derivative)" + where)
    return cotangents


def lookup(fn) -> Rule | None:
    """The rule for ``fn``, or for its Python function if Numba compiled it, or the one
    a provider makes for it (:func:`provide`); or None."""
    rule = _RULES.get(key(fn))
    if rule is not None and _same(rule, fn):
        return rule
    py = getattr(fn, "py_func", None)     # the Numba backend binds helpers compiled
    if py is not None and py is not fn:
        return lookup(py)
    return next((make(fn) for cls, make in _PROVIDERS if isinstance(fn, cls)), None)


_PROVIDERS: list = []       # (class, make): the rule of an object of that class


def provide(cls, make) -> None:
    """Objects of ``cls`` (a transform's result, ``grad(f)``) are primitives: ``make(obj)``
    gives the rule of one when it is looked up (made afresh, never kept)."""
    _PROVIDERS.append((cls, make))


def method(name: str):
    """The primitive that the ndarray method ``name`` calls (receiver first), or None."""
    return _METHODS.get(name)


def unregister(fn) -> None:
    """Remove the rule of ``fn``; a user's rule that replaced a built-in one gives it back.
    Those told by :func:`on_change` hear of it (the pipeline drops its derivatives)."""
    if lookup(fn) is None:
        return
    del _RULES[key(fn)]
    shadowed = _SHADOWED.pop(key(fn), None)
    if shadowed is not None and _same(shadowed, fn):
        _RULES[key(fn)] = shadowed
    _changed()


# ---------------------------------------------------------------------------
# Who hears of a rule registered or removed after import

_LISTENERS: list = []


def on_change(callback) -> None:
    """Call ``callback()`` after each user rule registered (:func:`defvjp`) and each rule
    removed (:func:`unregister`): derivatives generated before may use the old rule."""
    _LISTENERS.append(callback)


def _changed() -> None:
    for callback in list(_LISTENERS):
        callback()
