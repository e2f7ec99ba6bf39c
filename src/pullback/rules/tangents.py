"""Forward mode's rules: how a primitive's tangent follows from its arguments' tangents.

A tangent rule is one of three forms, recorded in the primitive's registry
record (:class:`Tangent`, through :func:`deftangent`) beside its derivative:

* **linear** in some parameters, jointly (``sum``, ``reshape``, ``concatenate``,
  ``copy``): the tangent is the primal call with each of those arguments replaced
  by its tangent (zeros for an argument nothing differentiated flows into);
* **multilinear**, linear in each of some parameters separately (``dot``,
  ``matmul``, ``outer``, ``einsum``'s operands): the product rule, one primal call
  per differentiated argument with that argument replaced by its tangent, summed;
* **templates**, one per parameter, written like a derivative rule's with ``t``
  (that argument's tangent) where a derivative rule has ``g``, summed over the
  differentiated arguments.

An elementwise primitive (a Python scalar function or operator, a NumPy ufunc)
needs no registration: its Jacobian is diagonal, so its derivative rule's
templates, read with ``t`` for ``g``, are its tangent templates.  Nor does a
reduction along an axis (``max``, ``var``, ``norm``): each result entry
depends on its own slice alone, so its tangent is ``sum(t * w, axis)`` with ``w``
the derivative rule's contribution for a cotangent of ones (:func:`tangent_of`).
``prod`` registers its own (:mod:`.prod_second`), a helper that reverse mode
differentiates again, exactly, for Hessians taken reverse over forward.
A primitive with none of these has no forward mode yet: the forward transform
refuses it by name, never with a zero tangent.
"""
from __future__ import annotations

import ast
import copy
import operator
import sys
import types
from dataclasses import dataclass, field

import numpy as np

from . import registry, results
from .templates import read_templates

#: The tangent's name in a template (the derivative rule's ``g``).
TANGENT = "t"


@dataclass(frozen=True)
class Tangent:
    """A primitive's forward-mode rule (see the module docstring for the forms)."""

    linear: tuple = ()              # parameter names it is jointly linear in
    multilinear: tuple = ()         # parameter names it is linear in one at a time
    templates: dict = field(default_factory=dict)   # parameter -> tangent template
    helpers: dict = field(default_factory=dict)     # free name in a template -> object
    uses_g: bool = False            # templates say ``g`` for the tangent (derived ones)
    reduction: str = ""             # a reduction's differentiated parameter (see tangent_of)
    shaped: bool = False            # the templates give the result's shape (no broadcast)
    constant: tuple = ()            # parameters read for their shape only: no tangent flows

    def covers(self, param: str) -> bool:
        """Whether the rule gives a tangent for ``param`` (``operands[k]`` counts as
        ``operands``); an argument of any other parameter must be held fixed."""
        base = param.split("[", 1)[0]
        return base in self.constant or base in self.linear or base in self.multilinear \
            or base in self.templates or base == self.reduction


def deftangent(fn, *, linear: str = "", multilinear: str = "", elementwise: bool = False,
               shaped: bool = False, constant: str = "", **templates: str) -> Tangent:
    """Register ``fn``'s tangent rule beside its derivative rule.

    ``linear`` / ``multilinear``: comma lists of the parameter names of its
    derivative rule's signature.  ``elementwise=True``: ``fn`` acts entry by entry
    though it is no ufunc (``clip``, ``sinc``), so its derivative templates serve.
    Templates name the derivative rule's parameters, ``ans`` and ``t``.
    ``shaped=True``: the templates' sum has the result's shape and a floating dtype
    whatever the arguments (a reduction's helper), so forward mode need not fit it
    to the result (a broadcast, which reverse mode could not differentiate again).
    ``constant``: parameters read for their shape or dtype only, whose tangent
    contributes nothing (forward mode of forward mode's own ``fit``)."""
    rule = registry.lookup(fn)
    if rule is None:
        raise ValueError(f"register {registry.describe(fn)}'s derivative before its tangent")
    names = {p.name for p in rule.params}
    lin, multi, fixed = _names(linear), _names(multilinear), _names(constant)
    unknown = (set(lin) | set(multi) | set(fixed)) - names
    if unknown:
        raise ValueError(f"tangent of {rule.name}: no parameter {sorted(unknown)}")
    if elementwise:
        form = Tangent(templates=dict(rule.adjoints), helpers=dict(rule.helpers), uses_g=True)
    else:
        sig = ", ".join(("*" if p.variadic else "") + p.name for p in rule.params)
        _, trees, helpers = read_templates(f"{sig}, {TANGENT}=None", templates,
                                           sys._getframe(1).f_globals, rule.name) \
            if templates else ((), {}, {})
        form = Tangent(lin, multi, trees, helpers, shaped=shaped, constant=fixed)
    registry.amend(fn, tangent=form)
    return form


def _names(text: str) -> tuple:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def tangent_of(rule) -> Tangent | None:
    """``rule``'s tangent: registered, or derived from an elementwise derivative
    rule's templates; None when forward mode has none."""
    if rule.tangent is not None:
        return rule.tangent
    if not rule.adjoints or rule.call_signature is not None:
        return None
    if elementwise(rule.fn):
        return Tangent(templates=dict(rule.adjoints), helpers=dict(rule.helpers), uses_g=True)
    names = {p.name for p in rule.params}
    if rule.result is results.reduction and {"axis", "keepdims"} <= names:
        # Each entry of a reduction depends on its own slice alone, so its tangent is
        # that slice's tangent weighted by the derivative, summed: the derivative
        # rule's contribution for a cotangent of ones is that weight, zero-safe as it is.
        return Tangent(helpers=dict(rule.helpers), reduction=rule.params[0].name)
    return None


_NOT_ELEMENTWISE = {operator.matmul, operator.getitem}


def elementwise(fn) -> bool:
    """Whether ``fn`` acts entry by entry (its Jacobian is diagonal): a NumPy ufunc
    without a core signature, a ``math`` function, a Python operator, ``abs``,
    ``min``, ``max``, ``pow`` and ``float`` of numbers."""
    if isinstance(fn, np.ufunc):
        return fn.signature is None
    if fn in _NOT_ELEMENTWISE:
        return False
    if fn is float:
        return True
    if isinstance(fn, types.BuiltinFunctionType):
        module = getattr(fn, "__module__", None)
        return module in ("math", "_operator", "operator") or fn in (abs, min, max, pow)
    return False


def replace_args(node: ast.expr, swap: dict) -> ast.expr:
    """A copy of the call or operator ``node`` with each argument node ``a`` (by
    identity; also the object of a method call) replaced by ``swap[id(a)]``."""
    def sub(a):
        return copy.deepcopy(swap.get(id(a), a))
    if isinstance(node, ast.BinOp):
        return ast.BinOp(sub(node.left), node.op, sub(node.right))
    if isinstance(node, ast.UnaryOp):
        return ast.UnaryOp(node.op, sub(node.operand))
    func = node.func
    func = ast.Attribute(sub(func.value), func.attr, ast.Load()) \
        if isinstance(func, ast.Attribute) else copy.deepcopy(func)
    return ast.Call(func, [sub(a) for a in node.args],
                    [ast.keyword(k.arg, sub(k.value)) for k in node.keywords])
