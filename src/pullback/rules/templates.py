"""How a template rule is written, and how it is read when it is registered.

A rule is the primal's parameter list as Python source
(``"x, axis=None, keepdims=False"``) and, for each differentiable parameter,
a small Python expression written like the maths for that parameter's
cotangent contribution::

    defrule(math.sin, "x", x="g * math.cos(x)")
    defrule(operator.truediv, "x, y", x="g / y", y="-g * ans / y")

In a template, ``g`` is the cotangent of the result, ``ans`` the result and the
parameter names are the call's arguments.  Every other name is resolved once,
when the rule is registered, in the namespace of the module that registers it
(so ``math`` above is the math module and a helper function is that function).
A ``*name`` parameter takes any number of arguments: its template is the
cotangent of the one at position ``k`` within ``*name``, instantiated once per
position.

:func:`read_templates` turns a signature and its templates into the
parameters, the expression trees and the helpers they name, which
:mod:`.registry` records.  A user's rule is a VJP function instead of
templates: :func:`read_vjp` reads its signature into the templates that take
each cotangent from the one call of it.
"""
from __future__ import annotations

import ast
import builtins
import copy
import inspect
from dataclasses import dataclass

__all__ = ["Param", "read_templates", "read_vjp", "vjp_name", "VARIADIC_POSITION", "MAX_VARIADIC"]


# Names every template may use without defining them.
_TEMPLATE_INPUTS = ("g", "ans")
#: In the template of a ``*name`` parameter, the argument's position within ``*name``.
VARIADIC_POSITION = "k"
#: How many arguments a ``*name`` parameter of a template rule takes: its template
#: is instantiated once per position (NumPy's limit is 64 arrays; einsum's sublist
#: form passes two arguments per operand).
MAX_VARIADIC = 128


@dataclass(frozen=True)
class Param:
    name: str
    default: object = inspect.Parameter.empty
    kw_only: bool = False
    variadic: bool = False          # ``*name``: takes the remaining positional arguments

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


def read_templates(signature: str, adjoints: dict, namespace: dict, what: str):
    """``(params, trees, helpers)`` of a rule for ``what`` (its name in messages):
    the parameters of ``signature``, each template of ``adjoints`` (parameter
    name -> source) parsed (a ``*name`` parameter's once per position, keyed
    ``name[k]``), and the objects their free names mean in ``namespace``."""
    params = parse_params(signature)
    by_name = {p.name: p for p in params}
    if VARIADIC_POSITION in by_name and any(p.variadic for p in params):
        raise ValueError(f"rule for {what}: {VARIADIC_POSITION!r} names the position "
                         f"in a *parameter's template; rename the parameter of {signature!r}")
    taken = [n for n in _TEMPLATE_INPUTS if n in by_name]
    if taken:
        raise ValueError(f"rule for {what}: {taken[0]!r} in a template is the "
                         f"{'cotangent' if taken[0] == 'g' else 'result'}; rename the parameter "
                         f"of {signature!r}")
    trees = {}
    for pname, src in adjoints.items():
        if pname not in by_name:
            raise ValueError(f"rule for {what}: {pname!r} is not a parameter of {signature!r}")
        trees[pname] = ast.parse(src, mode="eval").body
    helpers = _resolve_helpers(trees.values(), params, namespace, what)
    for pname in [p for p in trees if by_name[p].variadic]:
        template = trees.pop(pname)
        trees.update({f"{pname}[{k}]": _at_position(template, k) for k in range(MAX_VARIADIC)})
    return params, trees, helpers


def read_vjp(vjp, argnums, what: str):
    """A user's VJP for ``what`` (its name in messages) read as a rule:
    ``(call_signature, adjoints, marker, n)``, its parameters after ``g, ans``,
    the template of each cotangent it may return (item k of its result, or the
    result itself when it returns one), the call that computes them all, and
    how many it returns.  See :func:`.registry.defvjp`."""
    if not callable(vjp):
        raise TypeError(f"the VJP given for {what} is not callable: {vjp!r}")
    target = getattr(vjp, "py_func", vjp)      # a numba dispatcher's Python function
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        raise TypeError(f"cannot read the signature of the VJP {vjp!r} given for "
                        f"{what}; give it one as a Python function "
                        "`def vjp(g, ans, x, ...)`") from None
    params = list(sig.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(params) < 2 or any(p.kind not in positional for p in params[:2]):
        raise TypeError(f"the VJP {vjp_name(vjp)} given for {what} must take the "
                        f"cotangent g and the result ans first, then {what}'s "
                        f"arguments: `def {vjp_name(vjp)}(g, ans, x, ...)`; its signature is "
                        f"{sig}")
    rest = params[2:]
    call_signature = sig.replace(parameters=rest)
    names = [p.name for p in rest if p.kind in positional]
    if argnums is None:
        argnums = tuple(range(len(names)))
    elif isinstance(argnums, int):
        argnums = (argnums,)
    for k in argnums:
        if not 0 <= k < len(names):
            raise ValueError(f"argnums {k} is out of range: {vjp_name(vjp)} has {len(names)} "
                             "positional parameter(s) after g, ans")
    if not names:
        raise TypeError(f"the VJP {vjp_name(vjp)} given for {what} has no "
                        "positional parameter after g, ans to return a cotangent for; name "
                        f"{what}'s parameters: `def {vjp_name(vjp)}(g, ans, x, ...)`")
    single = len(names) == 1
    # The call runs once; each parameter's cotangent is its item of the result, a
    # zero of the argument's shape where the VJP says None (no derivative).
    adjoints = {names[k]: ast.parse(
        f"cotangent_or_zero({'__cotangents__' if single else f'__cotangents__[{k}]'}, "
        f"{names[k]})", mode="eval").body for k in argnums}
    marker = ast.parse(f"__vjp__(g, ans, {', '.join(names)})", mode="eval").body
    return call_signature, adjoints, marker, len(names)


def vjp_name(vjp) -> str:
    """A user's VJP as messages name it."""
    return getattr(vjp, "__name__", None) or type(vjp).__name__


def parse_params(signature: str) -> tuple[Param, ...]:
    fn = ast.parse(f"def _({signature}): pass").body[0]
    a = fn.args
    if a.kwarg is not None:
        raise ValueError(f"a rule's signature takes no **{a.kwarg.arg}: {signature!r}")
    out = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(pos, defaults):
        out.append(Param(arg.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d)))
    if a.vararg is not None:
        out.append(Param(a.vararg.arg, variadic=True))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append(Param(arg.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d),
                         kw_only=True))
    return tuple(out)


def _free_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _resolve_helpers(templates, params, namespace, what):
    helpers = {}
    local = {p.name for p in params} | set(_TEMPLATE_INPUTS)
    if any(p.variadic for p in params):
        local.add(VARIADIC_POSITION)
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

def substitute(template: ast.expr, mapping: dict, helper_names: dict) -> ast.expr:
    """``template`` instantiated at a call: each name of ``mapping`` (``g``, ``ans``,
    the parameters) replaced by a copy of its atom, each helper by the name the
    generated code calls it by.  ``f(*operands)`` gets the call's arguments spliced
    in one by one, so that Numba types a constant among them (einsum's subscripts)
    as a literal."""
    class Sub(ast.NodeTransformer):
        def visit_Name(_, node):
            if node.id in mapping:
                return copy.deepcopy(mapping[node.id])
            if node.id in helper_names:
                return ast.Name(helper_names[node.id], ast.Load())
            return node

        def visit_Call(self, node):
            self.generic_visit(node)
            node.args = [b for a in node.args
                         for b in (a.value.elts if isinstance(a, ast.Starred)
                                   and isinstance(a.value, ast.Tuple) else [a])]
            return node
    return Sub().visit(copy.deepcopy(template))


def _at_position(template: ast.expr, k: int) -> ast.expr:
    """A ``*name`` parameter's template for its argument at position ``k``."""
    class Position(ast.NodeTransformer):
        def visit_Name(self, node):
            return (ast.copy_location(ast.Constant(k), node) if node.id == VARIADIC_POSITION
                    else node)
    return Position().visit(copy.deepcopy(template))
