"""The rules registry: one table from a primal callable to its derivative.

A rule says, for each differentiable parameter of a primitive, the expression
that gives that parameter's cotangent contribution.  Expressions are small
Python templates written like the maths::

    defrule(math.sin, "x", x="g * math.cos(x)")
    defrule(operator.truediv, "x, y", x="g / y", y="-g * ans / y")

In a template, ``g`` is the cotangent of the result, ``ans`` the result and the
parameter names are the call's arguments.  Every other name is resolved once,
when the rule is registered, in the namespace of the module that registers it
(so ``math`` above is the math module and a helper function is that function).
The reverse transform substitutes the call's arguments for the parameter names
and inlines the expression into the generated code, so scalar rules compile
with Numba like hand-written code.  Array rules are the same mechanism with a
helper function in the template (``x="prod_vjp(g, ans, x, axis, keepdims)"``).

A user gives a rule for their own function with :func:`pullback.rule`, which
registers a VJP function through :func:`defvjp`.

Everything the transform knows about a primitive is in its record here, so a
new primitive is one registration: its derivative, its result kind (an
abstract-evaluation function from :mod:`.results`), whether it is
differentiable at all (:func:`defnondiff`: comparisons, ``len``, ``floor``,
array factories), whether it may return a view of its argument, and the
ndarray method names that mean it (``x.sum()`` is ``np.sum(x)``).

Under the Numba backend a rule also needs a compiled form of what its
templates call.  :func:`numba_twin`, placed beside a helper, registers the
helper's Numba implementation (and, for a primal whose call Numba cannot
compile with some arguments, such as ``np.max(a, axis=0)``, the forward
sweep's replacement); ``Rule.twins`` reads them back.  Nothing here imports
Numba: a twin is only called by the Numba backend, while it compiles.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import sys
from dataclasses import dataclass

from . import results

# Names every template may use without defining them.
_TEMPLATE_INPUTS = ("g", "ans")


@dataclass(frozen=True)
class Param:
    name: str
    default: object = inspect.Parameter.empty
    kw_only: bool = False

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


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
    differentiable: bool = True     # False: no derivative flows through (zero cotangent)
    view: bool = False              # the result may share memory with the first argument
    methods: tuple = ()             # ndarray method names that call this primitive

    @property
    def twins(self) -> dict:
        """Numba twins of what this rule's code calls: template helper name (or
        ``"<primal>"`` for the primal call itself) -> twin (see :func:`numba_twin`)."""
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

        Returns a dict name -> ast.expr.  Raises TypeError on a mismatch.
        """
        bound = {}
        positional = [p for p in self.params if not p.kw_only]
        if len(args) > len(positional):
            raise TypeError(
                f"{self.name}() takes at most {len(positional)} positional "
                f"arguments but {len(args)} were given{where}")
        for p, a in zip(positional, args):
            bound[p.name] = a
        names = {p.name for p in self.params}
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{self.name}() got an unexpected keyword argument {k!r}{where}")
            if k in bound:
                raise TypeError(f"{self.name}() got multiple values for argument {k!r}{where}")
            bound[k] = v
        for p in self.params:
            if p.name not in bound:
                if p.required:
                    raise TypeError(f"{self.name}() missing required argument {p.name!r}{where}")
                bound[p.name] = ast.Constant(p.default)
        return bound


_RULES: dict[int, Rule] = {}
_METHODS: dict[str, object] = {}     # ndarray method name -> the primitive it calls


def _register(rule: Rule, replace: bool = False) -> Rule:
    """Record ``rule``.  Built-in registrations never replace one another, so two
    modules cannot silently disagree about a primitive; a user's rule may."""
    old = lookup(rule.fn)
    if old is not None and not replace:
        raise ValueError(f"{rule.name} is registered twice; register each primitive once, "
                         "with everything about it")
    _RULES[id(rule.fn)] = rule
    for name in rule.methods:
        _METHODS[name] = rule.fn
    return rule


def _result(result):
    return results.BY_NAME[result] if isinstance(result, str) else result


def _parse_params(signature: str) -> tuple[Param, ...]:
    fn = ast.parse(f"def _({signature}): pass").body[0]
    a = fn.args
    out = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(pos, defaults):
        out.append(Param(arg.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d)))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append(Param(arg.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d),
                         kw_only=True))
    return tuple(out)


def _free_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _resolve_helpers(templates, params, namespace, what):
    helpers = {}
    local = {p.name for p in params} | set(_TEMPLATE_INPUTS)
    for tree in templates:
        for name in _free_names(tree) - local:
            if name in namespace:
                helpers[name] = namespace[name]
            elif hasattr(builtins, name):
                helpers[name] = getattr(builtins, name)
            else:
                raise NameError(f"rule for {what}: name {name!r} in a template is not defined "
                                "in the registering module")
    return helpers


def _describe(fn) -> str:
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
    """
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    params = _parse_params(signature)
    pnames = {p.name for p in params}
    trees = {}
    for pname, src in adjoints.items():
        if pname not in pnames:
            raise ValueError(f"rule for {_describe(fn)}: {pname!r} is not a parameter of {signature!r}")
        trees[pname] = ast.parse(src, mode="eval").body
    return _register(Rule(fn=fn, name=name or _describe(fn), params=params, adjoints=trees,
                          helpers=_resolve_helpers(trees.values(), params, namespace,
                                                   _describe(fn)),
                          result=_result(result), view=view, methods=tuple(methods)))


def defnondiff(fn, *, result=results.generic, methods: tuple = ()) -> Rule:
    """Register ``fn`` as non-differentiable: no derivative flows from its arguments
    to its result (comparisons, ``len``, ``floor``, ``argmax``, array factories)."""
    return _register(Rule(fn=fn, name=_describe(fn), params=(), adjoints={}, helpers={},
                          result=_result(result), differentiable=False,
                          methods=tuple(methods)))


def defprimitive(fn, *, result, view: bool = False, methods: tuple = ()) -> Rule:
    """Register what is known of ``fn`` without a derivative rule yet (its result
    kind, whether it returns a view): differentiating through it still raises
    MissingRuleError, but kind inference and the aliasing check know it."""
    return _register(Rule(fn=fn, name=_describe(fn), params=(), adjoints={}, helpers={},
                          result=_result(result), view=view, methods=tuple(methods)))


def defvjp(fn, vjp, *, signature: str | None = None, argnums=None, result: str = "any") -> Rule:
    """Register ``vjp(g, ans, *args)`` as the derivative of ``fn``.

    ``vjp`` returns one cotangent per positional parameter (a tuple when ``fn``
    has several); use ``None`` for a parameter that has no derivative.
    ``argnums`` (default: all parameters) says which parameters may carry a
    derivative.
    """
    if signature is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            raise TypeError(f"cannot read the signature of {_describe(fn)}; pass signature='x, y'") from None
        params = tuple(Param(p.name, p.default) for p in sig.parameters.values()
                       if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    else:
        params = _parse_params(signature)
    names = [p.name for p in params]
    if argnums is None:
        argnums = tuple(range(len(params)))
    elif isinstance(argnums, int):
        argnums = (argnums,)
    if not callable(vjp):
        raise TypeError(f"the VJP given for {_describe(fn)} is not callable: {vjp!r}")
    call = ast.parse(f"__vjp__(g, ans, {', '.join(names)})", mode="eval").body
    single = len(params) == 1
    # The call runs once; each parameter's cotangent is its item of the result.
    adjoints = {names[k]: ast.parse("__cotangents__" if single else f"__cotangents__[{k}]",
                                    mode="eval").body for k in argnums}
    return _register(Rule(fn=fn, name=_describe(fn), params=params, adjoints=adjoints,
                          helpers={"__vjp__": vjp}, result=_result(result), vjp_tuple=call),
                     replace=True)


def lookup(fn) -> Rule | None:
    """The rule registered for ``fn``, or None."""
    rule = _RULES.get(id(fn))
    if rule is not None and rule.fn is fn:
        return rule
    return None


def method(name: str):
    """The primitive that the ndarray method ``name`` calls (receiver first), or None."""
    return _METHODS.get(name)


# ---------------------------------------------------------------------------
# Numba twins, registered beside the helpers (and primals) they stand for.

_TWINS: dict[int, tuple] = {}     # id(target) -> (target, twin)
#: The twin of a helper that Numba compiles as it is (plain scalar code).
PLAIN = "plain"


def numba_twin(*targets):
    """Decorator: the function below is the Numba implementation of ``targets``.

    A target is a helper that rule templates call, or a primal (``np.max``) whose
    call Numba cannot compile with some arguments; the forward sweep then calls
    the twin instead.  The twin is written like ``numba.extending.overload``: it
    receives the Numba types of the arguments (same parameter names and
    defaults as the target) and returns a function over them in the NumPy
    subset Numba compiles, or None when it has none for those types.
    """
    def register(typer):
        for t in targets:
            _TWINS[id(t)] = (t, typer)
        return typer
    return register


def numba_plain(*helpers) -> None:
    """Mark ``helpers`` as compiling under Numba as they are (plain scalar code)."""
    for h in helpers:
        _TWINS[id(h)] = (h, PLAIN)


def twin(obj):
    """The Numba twin registered for ``obj`` (a typer, or :data:`PLAIN`), or None."""
    entry = _TWINS.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def all_twins() -> list:
    """Every (target, twin) pair registered so far."""
    return list(_TWINS.values())


def unregister(fn) -> None:
    _RULES.pop(id(fn), None)
