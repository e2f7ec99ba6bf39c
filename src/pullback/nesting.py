"""Transforms of transforms: ``grad`` of ``grad`` to any order, and ``grad(f)``
called inside code that is differentiated again.

The partial derivative ``df/dx_k`` along a scalar argument is the tangent output
of f's forward program along ``e_k`` (:func:`partial`): generated Python, which
every transform reads as it reads user code.  So ``grad(grad(f, k), j)`` is
``grad`` of that function (reverse mode over forward mode), and each further
``grad`` adds one forward sweep under the reverse one (:class:`HigherGradient`).
The functions are generated per argument kinds, when a call first has them.

A call of ``grad(f, i)`` inside differentiated code is a primitive (:func:`rule`):

* its cotangent is ``H g``, one :func:`~pullback.hessians.hvp` of f along ``g``
  in argument ``i`` (the Hessian is symmetric);
* its tangent along argument ``k``'s tangent ``t`` is ``grad(phi, i)`` of
  ``phi = <df/dx_k, t>`` (:func:`partial` with the tangent a parameter), a
  primitive too (:class:`GradientTangent`), whose cotangents are one hvp of ``phi``.

A call ``jvp(f, (x, ...), (v, ...))`` inside differentiated code is rewritten
(:func:`rewrite_jvp`) as ``(f(x, ...), JvpTangent(f)(x, ..., v, ...))``: f is
inlined as any call is, and its tangent is a primitive whose cotangents are one
``vjp`` of the tangent output of f's forward program (:class:`JvpTangent`).
``value, back = vjp(f, x, ...)`` is rewritten (:func:`rewrite_vjp`) as
``f(x, ...)`` and a local function ``back``, whose call is a primitive
(:class:`VjpApply`): ``J^T c``, linear in ``c``, its cotangents again one reverse
sweep of f's tangent function.

So ``hessian``, ``jvp`` and ``grad`` of a function that calls ``grad(f)`` work,
each rule running the public transforms again at run time, as Python: under
``jit=True`` the compiled derivative makes these calls through Numba's object
mode (:mod:`pullback.backends.object_mode`; each says what its result is like,
``object_mode``).
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import inspect

import numpy as np

from . import api
from .api import GradientFunction, _name, for_user, vjp
from .arguments import _full_args
from .backends.object_mode import cotangents_like_arguments
from .backends.python import PYTHON
from .core.errors import PullbackError
from .core.kinds import Kind, kind_of_value
from .core.names import identifier
from .frontend.parse import unwrap
from .frontend.scope import UNRESOLVED
from .jacobians import _NOT_NESTED, hvp, jvp
from .pipeline import derivative
from .rules import registry
from .rules.tangents import Tangent
from .rules.templates import read_templates
from .rules.twins import function_from_source
from .user_errors import cut_for_user

#: The module the generated partial derivatives name (never ``pullback.*``, whose
#: functions the compile cache keys by name alone).
GENERATED = "pullback_nesting_generated"


def _one_int(argnums) -> bool:
    return isinstance(argnums, int) and not isinstance(argnums, bool)


def _one_gradient(G) -> bool:
    """Whether ``G`` (``grad(f, i)`` or a :class:`HigherGradient`) returns one gradient
    and nothing else: only then is its call a primitive."""
    return not (G.with_value or G.has_aux or G._bound) and _one_int(G.argnums)


def _names(f):
    """f's parameters, all positional (a function with ``*args`` or keyword-only
    parameters has none: None)."""
    try:
        params = inspect.signature(unwrap(f)[0]).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind not in kinds for p in params):
        return None
    return [p.name for p in params]


# (id of the forward program, parameters, tangents passed) -> (program, the function)
_TANGENT_OUTPUTS: dict = {}


def tangent_output(f, nums, kinds, params, tangents, name):
    """A generated function of ``params`` returning the tangent output of f's forward
    program along the arguments ``nums``, for arguments of ``kinds``: it passes its
    first ``len(kinds)`` parameters as f's arguments and ``tangents`` (source text)
    as their tangents.

    Invariant: the function is plain Python whose source pullback reads (it calls
    the forward program, itself generated source), so every transform
    differentiates it as user code; it is made once per forward program (per f,
    ``nums`` and argument kinds) and kept beside it."""
    try:
        program = derivative(f, tuple(nums), tuple(kinds), PYTHON, mode="forward")
    except PullbackError as exc:
        raise for_user(exc) from None
    key = (id(program), tuple(params), tuple(tangents))
    hit = _TANGENT_OUTPUTS.get(key)
    if hit is not None and hit[0] is program:
        return hit[1]
    passed = ", ".join([_passed(params[:len(kinds)], kinds), *tangents])
    body = [f"_value_out, _tangent_out = _forward({passed})", "return _tangent_out"]
    fn = function_from_source(identifier(name), list(params), body,
                              {"__name__": GENERATED, "_forward": program.fn})
    _TANGENT_OUTPUTS[key] = (program, fn)
    return fn


def partial(f, k, args, with_tangent=False):
    """``D(*params) = df/dx_k`` at ``args``' kinds (``x_k`` a number), or with
    ``with_tangent``, ``D(*params, tangent) = <df/dx_k, tangent>``: the tangent
    output of f's forward program along argument ``k`` (:func:`tangent_output`)."""
    names = _names(f)
    if names is None or len(names) != len(args):
        raise TypeError(f"a derivative of {_name(f)} inside another: {_name(f)} must take "
                        "positional parameters only (no *args or keyword-only ones)")
    params = [f"{n}_" if n.startswith("_tangent") else n for n in names]
    tangent = ["_tangent"] if with_tangent else []
    return tangent_output(f, (k,), [kind_of_value(a) for a in args], params + tangent,
                          tangent or ["1.0"], f"d{_name(f)}_d{names[k]}")


def _passed(params, kinds) -> str:
    """The arguments a generated function passes to a forward program: each array a
    copy, which the program may write into (it copies what it writes, but inlined
    into the generated function a write would change that function's argument)."""
    return ", ".join(f"{p}.copy()" if k.ndim and k.items is None else p
                     for p, k in zip(params, kinds))


class HigherGradient:
    """``grad(g, argnums)`` (or ``value_and_grad``) of ``g = grad(... grad(f, i1) ...,
    im)``: the gradient of the partial derivative ``d^m f / dx_im ... dx_i1``, by
    reverse mode over m forward sweeps of f (each ``x_i`` a number, as ``grad``
    needs).  Call it like f; ``grad`` of it nests once more."""

    def __init__(self, f, inner: tuple, argnums, jit, with_value):
        self.f, self.inner, self.argnums = f, inner, argnums
        self.jit, self.with_value = jit, with_value
        self._bound, self.has_aux = (), False
        self.__name__ = ("value_and_grad(" if with_value else "grad(") * (len(inner) + 1) \
            + _name(f) + ")" * (len(inner) + 1)
        self._gradients: dict = {}      # the partial derivative -> its GradientFunction

    def partial(self, args):
        """The function whose gradient this is, for ``args`` (every parameter)."""
        fn, name = self.f, _name(self.f)
        for depth, i in enumerate(self.inner):
            i %= max(len(args), 1)
            if np.ndim(args[i]) != 0:
                raise TypeError(
                    f"grad of {'grad(' * (depth + 1)}{name}{')' * (depth + 1)} needs its "
                    f"value to be a number, but it is a gradient of shape "
                    f"{np.shape(args[i])}; use pullback.hessian({name}) or "
                    f"jvp(grad({name}), ...)")
            fn = partial(fn, i, args)
        return fn

    def gradient_function(self, args) -> GradientFunction:
        """The :class:`GradientFunction` that computes this at ``args``' kinds."""
        fn = self.partial(args)
        gf = self._gradients.get(fn)
        if gf is None:
            gf = self._gradients[fn] = GradientFunction(fn, self.argnums, self.jit,
                                                        self.with_value)
        return gf

    def __call__(self, *args, **kwargs):
        try:
            args = _full_args(self.f, args, kwargs)
            return self.gradient_function(args)(*args)
        except Exception as exc:
            cut_for_user(exc)
            raise

    def __repr__(self):
        return f"<pullback {self.__name__}>"

    def object_mode(self, n):
        """Called inside compiled code, the result is like argument ``argnums``
        (:mod:`pullback.backends.object_mode`)."""
        return object_mode(self, n)


def object_mode(G, n):
    """A call of ``G`` with ``n`` arguments under Numba gives the gradient of one of
    them, or None when ``G`` is no primitive (see :func:`rule`)."""
    return ((G.argnums % n,), False) if _one_gradient(G) else None


def grad(f, argnums=0, jit=None, has_aux=False):
    """:func:`pullback.api.grad`, and a higher derivative when ``f`` is itself
    ``grad(g)`` of a ``g`` whose gradient is a number (``grad(grad(g))``: reverse
    mode over forward mode, nesting to any order, see :mod:`pullback.nesting`).

    >>> import pullback
    >>> pullback.grad(pullback.grad(lambda x: x ** 3))(2.0)
    12.0
    """
    try:
        if isinstance(f, (GradientFunction, HigherGradient)) and not has_aux:
            return grad_of(f, argnums, jit, with_value=False)
        return api.grad(f, argnums, jit, has_aux)
    except Exception as exc:
        cut_for_user(exc)
        raise


def value_and_grad(f, argnums=0, jit=None, has_aux=False):
    """:func:`pullback.api.value_and_grad`, nesting as :func:`grad` does."""
    try:
        if isinstance(f, (GradientFunction, HigherGradient)) and not has_aux:
            return grad_of(f, argnums, jit, with_value=True)
        return api.value_and_grad(f, argnums, jit, has_aux)
    except Exception as exc:
        cut_for_user(exc)
        raise


def grad_of(g, argnums, jit, with_value):
    """``grad(g, argnums)`` of ``g``, itself ``grad(f, i)`` or a :class:`HigherGradient`."""
    if g.with_value or g.has_aux or g._bound:
        what = ("value_and_grad" if g.with_value else "grad(..., has_aux=True)"
                if g.has_aux else "grad of a bound method")
        raise TypeError(f"grad of {g.__name__}: {what} returns more than a gradient; "
                        f"differentiate grad({_name(g.f)}) of a plain function instead")
    if not _one_int(g.argnums):
        raise TypeError(f"grad of {g.__name__} needs its argnums to be one int, so that it "
                        f"returns one gradient; got argnums={g.argnums!r}")
    inner = g.inner if isinstance(g, HigherGradient) else ()
    if jit is None:
        jit = g.jit if g.jit is not None else (unwrap(g.f)[1] or None)
    return HigherGradient(g.f, inner + (g.argnums,), argnums, jit, with_value)


def _target(G, args):
    """``(fn, i)``: the call ``G(*args)`` is the gradient of ``fn`` in argument ``i``."""
    i = G.argnums % len(args)
    return (G.partial(args), i) if isinstance(G, HigherGradient) else (G.f, i)


def _hvp(fn, args, i, g, jit):
    return hvp(fn, tuple(args), tuple(g if k == i else None for k in range(len(args))), jit)


def _signature(names, leading):
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    taken = set(leading)
    return inspect.Signature([inspect.Parameter(n, positional) for n in leading] + [
        inspect.Parameter(n + "_" if n in taken else n, positional) for n in names])


def rule(G):
    """The rule of a call of ``G`` (``grad(f, i)`` or a :class:`HigherGradient`)
    inside differentiated code, when ``G`` gives one gradient, else None."""
    names = _names(G.f) if _one_gradient(G) else None
    if names is None:
        return None

    def gradient_vjp(g, ans, *args):
        fn, i = _target(G, args)
        out = _hvp(fn, args, i, g, G.jit)
        return out if len(out) > 1 else out[0]
    gradient_vjp.__signature__ = _signature(names, ["g", "ans"])
    gradient_vjp.__name__ = f"{G.__name__}_vjp"
    gradient_vjp.object_mode = cotangents_like_arguments()
    gradient_vjp.object_mode_name = G.__name__
    made = dataclasses.replace(registry.vjp_rule(G, gradient_vjp, name=G.__name__),
                               result=_gradient_kind(lambda n: G.argnums % n))
    if {"t", "g", "ans"} & set(names):
        return made         # its templates could not name them: no forward mode (refused)
    tangent = GradientTangent(G, names)
    templates = {p: f"gradient_tangent({k}, t, {', '.join(names)})"
                 for k, p in enumerate(names)}
    _, trees, helpers = read_templates(", ".join(names) + ", t=None", templates,
                                       {"gradient_tangent": tangent}, G.__name__)
    return dataclasses.replace(made, tangent=Tangent(templates=trees, helpers=helpers,
                                                     shaped=True))


class GradientTangent:
    """``(k, t, *args)``: the tangent of ``G(*args)`` along argument ``k``'s tangent
    ``t``, which is ``grad(phi, i)(*args, t)`` for ``phi = <df/dx_k, t>``.  A
    primitive (:func:`tangent_rule`), so that reverse mode differentiates forward
    mode's code again (a Hessian of a function that calls ``grad``)."""

    def __init__(self, G, names):
        self.G, self.names = G, names
        self.__name__ = f"{G.__name__}_tangent"
        self.object_mode_name = G.__name__
        self._gradients: dict = {}

    def object_mode(self, n):
        """Called ``(k, t, *args)``, its result is like the argument ``G`` differentiates."""
        return (2 + self.G.argnums % (n - 2),), False

    def phi(self, k, args):
        fn, i = _target(self.G, args)
        return partial(fn, k, args, with_tangent=True), i

    def __call__(self, k, t, *args):
        phi, i = self.phi(k, args)
        gf = self._gradients.get((phi, i))
        if gf is None:
            gf = self._gradients[phi, i] = GradientFunction(phi, i, self.G.jit)
        return gf(*args, t)


def tangent_rule(T):
    """The rule of :class:`GradientTangent` ``T``: its cotangents (of the tangent and
    of the arguments) are one hvp of ``phi``, along ``g`` in argument ``i``."""
    def tangent_vjp(g, ans, k, t, *args):
        phi, i = T.phi(k, args)
        out = _hvp(phi, (*args, t), i, g, T.G.jit)
        return (None, out[-1], *out[:-1])
    tangent_vjp.__signature__ = _signature(T.names, ["g", "ans", "k", "t"])
    tangent_vjp.__name__ = f"{T.__name__}_vjp"
    tangent_vjp.object_mode = cotangents_like_arguments(many=True)     # k, t, *args
    tangent_vjp.object_mode_name = T.G.__name__
    return dataclasses.replace(registry.vjp_rule(T, tangent_vjp, name=T.__name__),
                               result=_gradient_kind(lambda n: 2 + T.G.argnums % (n - 2)))


def _gradient_kind(position):
    """The result kind of a gradient of argument ``position(n)`` of a call with ``n``
    arguments: a float of that argument's rank (a number for a number, so that
    ``s += grad(f)(x)`` stays a number's update)."""
    def gradient(fn, args, kws, call) -> Kind:
        a = args[position(len(args))]
        return Kind(a.ndim if a.ndim is not None else -1, "f")
    return gradient


class JvpTangent:
    """``(*primals, *tangents) -> jvp(f, primals, tangents)[1]``: the tangent of a
    ``jvp`` written in differentiated code, a primitive (:func:`jvp_rule`)."""

    def __init__(self, f, n):
        self.f, self.n = f, n
        self.__name__ = f"jvp({_name(f)})"

    def __call__(self, *args):
        return jvp(self.f, args[:self.n], args[self.n:])[1]

    def function(self, args):
        """``T(*primals, *tangents)``, the tangent, for the kinds of ``args``: a
        generated function calling f's forward program (a None tangent, or one of an
        argument that is no float, holds that argument fixed)."""
        n, names = self.n, _names(self.f)
        if names is None or len(names) != n:
            raise TypeError(f"jvp of {_name(self.f)} inside a differentiated function: "
                            f"{_name(self.f)} must take its {n} arguments by position only")
        kinds = [kind_of_value(a) for a in args[:n]]
        nums = [i for i in range(n) if args[n + i] is not None and kinds[i].dtype == "f"]
        dots = [f"{names[i]}_dot" for i in range(n)]
        return tangent_output(self.f, nums, kinds, names + dots, [dots[i] for i in nums],
                              f"{_name(self.f)}_tangent")


def jvp_rule(J):
    """The rule of :class:`JvpTangent` ``J``: the cotangents of the primals and the
    tangents are one reverse sweep of its generated function."""
    names = _names(J.f) or [f"x{i}" for i in range(J.n)]

    def jvp_tangent_vjp(g, ans, *args):
        _, back = vjp(J.function(args), *args)
        return back(g)
    jvp_tangent_vjp.__signature__ = _signature(names + [f"{n}_dot" for n in names],
                                               ["g", "ans"])
    jvp_tangent_vjp.__name__ = f"{J.__name__}_vjp"
    jvp_tangent_vjp.numba_refusal = (
        f"{J.__name__} written inside the function differentiated, under the Numba backend "
        "(jit=True): its derivative runs pullback's transforms at run time, as Python",
        "Use jit=False for the outer transform.")
    return registry.vjp_rule(J, jvp_tangent_vjp, name=J.__name__)


def rewrite_jvp(e, resolve, constant, assigned_once=None):
    """``jvp(f, (x, ...), (v, ...))`` written in differentiated code, as
    ``(f(x, ...), JvpTangent(f)(x, ..., v, ...))`` (``constant(obj, hint)`` names
    an object for the code); ValueError says why a call cannot be rewritten."""
    if len(e.args) != 3 or any(k.arg != "jit" for k in e.keywords):
        raise ValueError("write jvp(f, (x, ...), (v, ...)) there, without has_aux")
    f_node, primals, tangents = e.args
    if not (isinstance(primals, ast.Tuple) and isinstance(tangents, ast.Tuple)
            and len(primals.elts) == len(tangents.elts)) \
            or any(isinstance(a, ast.Starred) for a in primals.elts + tangents.elts):
        raise ValueError("write its primals and tangents as two tuples of one item per "
                         "argument, `(x, y), (v, None)`")
    f = resolve(f_node)
    if f is UNRESOLVED or not callable(f):
        raise ValueError("its function must be one defined outside (a module-level def)")
    tangent = constant(JvpTangent(f, len(primals.elts)), "jvp_tangent")
    value = ast.Call(copy.deepcopy(f_node), [copy.deepcopy(a) for a in primals.elts], [])
    return ast.Tuple([value, ast.Call(tangent, [copy.deepcopy(a) for a in primals.elts]
                                      + [copy.deepcopy(a) for a in tangents.elts], [])],
                     ast.Load())


class VjpApply:
    """``(*primals, cotangent) -> vjp(f, *primals)[1](cotangent)``: what ``back(ct)``
    of a ``vjp`` written in differentiated code gives, a tuple of one cotangent per
    primal (:func:`rewrite_vjp`); a primitive (:func:`vjp_apply_rule`)."""

    def __init__(self, f, n):
        self.f, self.n = f, n
        self.__name__ = f"vjp({_name(f)})"
        self.tangents = JvpTangent(f, n)

    def __call__(self, *args):
        return tuple(vjp(self.f, *args[:self.n])[1](args[self.n]))


def _cotangent_kinds(fn, args, kws, call):
    """The result of a :class:`VjpApply` call: a tuple of a float cotangent of each
    primal's rank (the last argument is the cotangent given)."""
    return Kind(None, "o", tuple(Kind(a.ndim, "f") if a.dtype in "fib" else Kind(0, "o")
                                 for a in args[:-1]))


def vjp_apply_rule(A):
    """The rule of :class:`VjpApply` ``A``: ``J^T c`` is linear in ``c`` and its
    cotangent ``u`` gives ``J u`` for ``c`` and the gradient of ``<c, J(x) u>`` for
    the primals, both from one reverse sweep of f's tangent function at ``(x, u)``."""
    names = _names(A.f) or [f"x{i}" for i in range(A.n)]

    def vjp_apply_vjp(g, ans, *args):
        primals, c = args[:A.n], args[A.n]
        items = list(g) if isinstance(g, (list, tuple)) else [g] * A.n
        u = tuple(None if kind_of_value(x).dtype != "f" else
                  np.broadcast_to(np.asarray(t, dtype=float), np.shape(x)).copy()
                  if np.ndim(x) else float(t) for t, x in zip(items, primals))
        value, back = vjp(A.tangents.function(primals + u), *primals, *u)
        return (*back(c)[:A.n], value)
    vjp_apply_vjp.__signature__ = _signature(names + ["cotangent"], ["g", "ans"])
    vjp_apply_vjp.__name__ = f"{A.__name__}_vjp"
    vjp_apply_vjp.numba_refusal = (
        f"{A.__name__} written inside the function differentiated, under the Numba backend "
        "(jit=True): its derivative runs pullback's transforms at run time, as Python",
        "Use jit=False for the outer transform.")
    return dataclasses.replace(registry.vjp_rule(A, vjp_apply_vjp, name=A.__name__),
                               result=_cotangent_kinds)


def rewrite_vjp(e, resolve, constant, assigned_once):
    """``vjp(f, x, ...)`` written in differentiated code, as ``(f(x, ...), lambda c:
    VjpApply(f)(x, ..., c))``: unpacked into ``value, back``, ``back`` is a local
    function, inlined where it is called.  Its primals must be names (or constants)
    that keep their values: ``back`` reads them when it is called."""
    if len(e.args) < 2 or any(k.arg != "jit" for k in e.keywords):
        raise ValueError("write value, back = vjp(f, x, ...) there, without has_aux")
    f_node, primals = e.args[0], e.args[1:]
    if not all(isinstance(a, ast.Constant) or isinstance(a, ast.Name)
               and assigned_once(a.id) for a in primals):
        raise ValueError("pass vjp its arguments as names that are not assigned again (x, "
                         "not x + 1): back reads them when it is called")
    f = resolve(f_node)
    if f is UNRESOLVED or not callable(f):
        raise ValueError("its function must be one defined outside (a module-level def)")
    apply = constant(VjpApply(f, len(primals)), "vjp_apply")
    cotangent = "_vjp_cotangent"
    back = ast.Lambda(ast.arguments([], [ast.arg(cotangent)], None, [], [], None, []),
                      ast.Call(apply, [copy.deepcopy(a) for a in primals]
                               + [ast.Name(cotangent, ast.Load())], []))
    value = ast.Call(copy.deepcopy(f_node), [copy.deepcopy(a) for a in primals], [])
    return ast.Tuple([value, back], ast.Load())


GradientFunction.object_mode = object_mode
registry.provide(GradientFunction, rule)
registry.provide(HigherGradient, rule)
registry.provide(GradientTangent, tangent_rule)
registry.provide(JvpTangent, jvp_rule)
registry.provide(VjpApply, vjp_apply_rule)

# Written in differentiated code, grad(f) of a known f is built when transforming, a
# primitive with its own rule (frontend.resolve.built_transform, rule above);
# jvp(f, (x,), (v,)) is (f(x), a primitive's call), and vjp(f, x) is (f(x), a local
# function calling one).
grad.builds_primitive = api.grad.builds_primitive = True
value_and_grad.refused_in_code = _NOT_NESTED
jvp.rewrite_in_code = rewrite_jvp
api.vjp.rewrite_in_code = rewrite_vjp
