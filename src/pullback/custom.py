"""Custom derivatives of one function: :func:`rule` (a VJP for any callable),
``custom_vjp``, ``custom_jvp``, ``stop_gradient``; :func:`unregister` removes one.

``@custom_vjp`` and ``@custom_jvp`` return a function of the decorated one's
parameters, made from source, that calls a *primitive* standing for it (which
calls the user's function; its ``__wrapped__``).  ``defvjp`` / ``defjvp`` registers
a user rule for the primitive (:func:`.rules.registry.defvjp`), as
:func:`pullback.rule` does, so a call of the function inside differentiated code,
or ``grad(f)`` of it, meets the rule.  Registering again, or
:func:`pullback.unregister` of the function (``custom_primitive`` says where its
rule is), tells the registry's listeners, and the pipeline drops every
derivative made with the old rule.  Without a rule (before ``defvjp``, after
``unregister``) the primitive is inlined from the source of the user's function.

``custom_vjp``: the rule's VJP calls ``fwd`` again at the call's arguments and
hands its residuals to ``bwd``: one extra ``fwd`` call per call in the reverse
sweep.  The forward sweep calls the function itself: a user rule's forward part
is the primal call, whose one result the transform follows, so residuals
returned beside it would need a tuple-valued primitive of their own.  ``None``
from ``bwd`` is a zero of the argument's shape.  Under Numba (``jit=True``), when
``fwd`` and ``bwd`` are both ``numba.njit`` functions, the forward sweep takes the
value as ``fwd(...)[0]`` (the primitive's Numba twin) and the VJP is compiled
(its twin); plain Python ones are called through Numba's object mode
(:mod:`.backends.object_mode`: the VJP says its cotangents are like the call's
arguments, ``object_mode``).

``custom_jvp``: forward mode calls the user's jvp once per differentiated
argument, with that argument's tangent and zeros for the others (the tangent
is linear in the tangents, so the terms add up), through a helper that is a
primitive with a rule of its own, so reverse mode over forward mode (``hessian``)
differentiates the jvp again.  Reverse mode transposes it: the cotangents are the
gradient of ``<g, tangent_out(v)>`` in ``v``, which the reverse transform of the
jvp function gives (plain Python, at run time: one gradient function per rule,
made once, which takes the primals as arguments).  Each call of the function in
the reverse sweep then runs that derivative, about 5 µs of interpreted Python
(the rule, its (value, tangent) pair taken apart, the call around it): 30 times
a 0.17 µs softplus, less for a function that costs more.  Under Numba it is
refused at the call's line.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from . import api
from .backends.object_mode import cotangents_like_arguments
from .core.names import identifier
from .core.runtime import cotangent_or_zero
from .frontend.parse import unwrap
from .rules import forms, registry
from .rules.nondiff import stop_gradient
from .rules.tangents import Tangent
from .rules.templates import read_templates
from .rules.twins import function_from_source
from .user_errors import cut_for_user

__all__ = ["custom_vjp", "custom_jvp", "stop_gradient"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _wrap(fun, decorator):
    """The function that stands for ``fun`` (it calls it), and ``fun``'s positional
    parameters with their defaults: a custom rule receives a cotangent for each."""
    if not callable(fun):
        raise TypeError(f"@pullback.{decorator} decorates a function, got {fun!r}")
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        raise TypeError(f"@pullback.{decorator}: cannot read the signature of {fun!r}; "
                        "decorate a Python function") from None
    params = list(sig.parameters.values())
    if not params or any(p.kind not in _POSITIONAL for p in params):
        raise TypeError(f"@pullback.{decorator}: {getattr(fun, '__name__', fun)}{sig} must "
                        "take one or more positional parameters, and no *args, **kwargs "
                        "or keyword-only ones (each gets one cotangent)")

    names, defaults = _source_params(params)
    # fun's own parameters (no *args, **kwargs): Numba compiles it where it compiles fun.
    primitive = _from_source(identifier(_name(fun)), names, [f"return fun({', '.join(names)})"],
                             {"fun": fun}, defaults)
    # Not fun's __dict__: a Numba dispatcher's py_func there would make either look
    # like a Numba function, whose Python source the frontend reads instead.
    functools.update_wrapper(primitive, fun, updated=())
    # What the user calls: a function of fun's parameters that calls the primitive,
    # from source, so that grad(f) itself reads it and meets the primitive's rule.
    wrapper = _from_source(identifier(_name(fun)), names,
                           [f"return primitive({', '.join(names)})"],
                           {"primitive": primitive}, defaults)
    functools.update_wrapper(wrapper, fun, updated=())
    del wrapper.__wrapped__             # the frontend would read fun's source instead
    wrapper.custom_primitive = primitive    # where the rule is (pullback.unregister)
    return wrapper, primitive, params


#: The module the generated functions name: never None (code reading ``__module__``
#: expects a string), nor ``pullback.*``, whose functions the compile cache keys by
#: name alone, as pullback's versioned source; these are made afresh per rule.
GENERATED = "pullback_custom_generated"


def _from_source(name, params, body, namespace, defaults=None):
    """:func:`.twins.function_from_source`, its module :data:`GENERATED`."""
    return function_from_source(name, params, body, {"__name__": GENERATED, **namespace},
                                defaults)


def _name(fun) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def _source_params(params):
    """Parameter names, and the defaults of the trailing ones, for function_from_source."""
    names = [p.name for p in params]
    defaults = [p.default for p in params if p.default is not p.empty]
    return names, defaults


# ---------------------------------------------------------------------------
# custom_vjp

def custom_vjp(fun):
    """Decorator: ``fun`` with a derivative of your own, given by ``f.defvjp(fwd, bwd)``.

    ``fwd(*args)`` returns ``(fun(*args), residuals)``; ``bwd(residuals, g)`` returns
    a tuple of one cotangent per positional parameter of ``fun`` (``None``: no
    cotangent).  Called directly, the function is ``fun``.  In differentiated code
    the reverse sweep calls ``fwd`` again at the call's arguments (one extra call),
    then ``bwd``.  Under ``jit=True`` both must be ``numba.njit`` functions."""
    try:
        wrapper, primitive, params = _wrap(fun, "custom_vjp")

        def defvjp(fwd, bwd):
            """Use ``fwd`` and ``bwd`` for the derivative (again: they replace the last)."""
            try:
                _define_vjp(primitive, params, fwd, bwd)
            except Exception as exc:
                cut_for_user(exc)
                raise
        wrapper.defvjp = defvjp
        return wrapper
    except Exception as exc:
        cut_for_user(exc)
        raise


def _define_vjp(primitive, params, fwd, bwd):
    fname = _name(primitive)
    for what, fn in (("fwd", fwd), ("bwd", bwd)):
        if not callable(fn):
            raise TypeError(f"{fname}.defvjp: {what} must be a function, got {fn!r}")
    names, defaults = _source_params(params)
    call = f"fwd({', '.join(names)})"
    vjp_name = identifier(f"{fname}_vjp")
    vjp = _from_source(
        vjp_name, ["g", "ans", *names],
        [f"return cotangents(bwd(residuals({call}, fwd_name), g), ({', '.join(names)},), "
         "bwd_name, fname)"],
        {"fwd": fwd, "bwd": bwd, "residuals": _residuals, "cotangents": _cotangents,
         "fwd_name": _name(fwd), "bwd_name": _name(bwd), "fname": fname}, defaults)
    if unwrap(fwd)[1] and unwrap(bwd)[1]:     # both numba.njit functions
        _numba_forms(primitive, vjp, names, defaults, fwd, bwd)
    else:   # under Numba, called from compiled code through object mode
        vjp.object_mode = cotangents_like_arguments(many=len(names) > 1)
        vjp.object_mode_name = fname
    registry.defvjp(primitive, vjp)     # replaces the last; the pipeline drops derivatives


def _residuals(out, fwd_name):
    """What ``fwd`` returned, checked: ``(value, residuals)``."""
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{fwd_name}, a custom_vjp fwd, must return a pair (value, "
                        f"residuals), got {type(out).__name__}")
    return out[1]


def _cotangents(out, primals, bwd_name, fname):
    """What ``bwd`` returned, checked to be one cotangent per primal, ``None`` made a
    zero of the primal's shape (the transform would add None as NaN); the one itself
    when there is one primal (a user rule with one parameter returns its cotangent)."""
    n = len(primals)
    if not isinstance(out, (tuple, list)) or len(out) != n:
        got = f"{len(out)} items" if isinstance(out, (tuple, list)) else type(out).__name__
        raise TypeError(f"{bwd_name}, the custom_vjp bwd of {fname}, must return a tuple of "
                        f"{n} cotangent(s), one per positional parameter of {fname} (None "
                        f"for no cotangent), got {got}")
    out = tuple(cotangent_or_zero(c, p) for c, p in zip(out, primals))
    return out[0] if n == 1 else out


def _numba_forms(primitive, vjp, names, defaults, fwd, bwd):
    """Under Numba the VJP is ``bwd(fwd(...)[1], g)`` compiled, without the checks
    (a wrong result fails to compile), and the forward sweep's value is ``fwd(...)[0]``."""
    args = ", ".join(names)
    items = ", ".join(f"or_zero(out[{k}], {p})" for k, p in enumerate(names))
    fast_vjp = _from_source(f"{vjp.__name__}_numba", ["g", "ans", *names],
                            [f"out = bwd(fwd({args})[1], g)",
                             f"return {items}" if len(names) == 1 else f"return ({items})"],
                            {"fwd": fwd, "bwd": bwd, "or_zero": cotangent_or_zero}, defaults)
    forms.numba_twin(vjp)(_from_source(
        f"{vjp.__name__}_typer", ["g", "ans", *names], ["return impl"], {"impl": fast_vjp},
        defaults))
    value = _from_source(f"{vjp.__name__}_value", names, [f"return fwd({args})[0]"],
                         {"fwd": fwd}, defaults)
    forms.numba_twin(primitive, always=True)(_from_source(
        f"{vjp.__name__}_value_typer", names, ["return impl"], {"impl": value}, defaults))


# ---------------------------------------------------------------------------
# custom_jvp

def custom_jvp(fun):
    """Decorator: ``fun`` with a tangent rule of your own, given by ``@f.defjvp``.

    The rule is ``jvp(primals, tangents) -> (fun(*primals), tangent_out)``, the
    tuples holding one item per positional parameter of ``fun``.  Forward mode
    calls it once per differentiated argument; reverse mode transposes it by
    :func:`pullback.vjp` of the rule at run time (plain Python; refused under
    ``jit=True``)."""
    try:
        wrapper, primitive, params = _wrap(fun, "custom_jvp")

        def defjvp(jvp):
            """Use ``jvp`` for the tangent (again: it replaces the last); returns ``jvp``."""
            try:
                _define_jvp(primitive, params, jvp)
                return jvp
            except Exception as exc:
                cut_for_user(exc)
                raise
        wrapper.defjvp = defjvp
        return wrapper
    except Exception as exc:
        cut_for_user(exc)
        raise


def _define_jvp(primitive, params, jvp):
    fname = _name(primitive)
    if not callable(jvp):
        raise TypeError(f"{fname}.defjvp: the rule must be a function, got {jvp!r}")
    names, defaults = _source_params(params)
    n, args = len(names), ", ".join(names) + ","
    refusal = (f"{fname}, a pullback.custom_jvp function, under the Numba backend "
               "(jit=True): its jvp rule runs as plain Python", "Use jit=False.")

    def tangent_along(k, t, primals):
        """The tangent of the call along argument ``k``'s tangent ``t`` alone."""
        tangents = tuple(t if i == k else _zero(p) for i, p in enumerate(primals))
        return _pair(jvp(primals, tangents), jvp, fname)[1]

    def transpose(g, ans, primals):
        """Cotangents of the primals: the gradient of <g, tangent_out(v)> in v (linear,
        so taken at v = 0).  For a float or float array output ``ans``, one gradient
        function per rule serves every call (:func:`_transposer`: the primals are its
        arguments); for a tuple or pytree output, a vjp of the tangent map."""
        if isinstance(ans, (float, np.floating)) and isinstance(g, (float, np.floating)):
            return _transposer(jvp, n, True)(*map(_zero, primals), g, *primals)
        if isinstance(ans, np.ndarray) and ans.dtype.kind == "f" and np.isrealobj(g):
            return _transposer(jvp, n, False)(*map(_zero, primals), g, *primals)
        _, back = api.vjp(_tangent_map(n)(jvp, primals), *map(_zero, primals), jit=False)
        out = back(g)
        return out[0] if n == 1 else out

    def tangent_cotangents(g, k, t, primals):
        """Cotangents of ``tangent_along``'s ``t`` and primals (reverse mode over forward
        mode, as hessian takes it): the reverse transform of the jvp rule itself."""
        _, back = api.vjp(_along_map(n, k)(jvp, tuple(map(_zero, primals))), t, *primals,
                          jit=False)
        return (None, *back(g))

    vjp = _from_source(identifier(f"{fname}_vjp"), ["g", "ans", *names],
                       [f"return transpose(g, ans, ({args}))"], {"transpose": transpose},
                       defaults)
    # The forward sweep's helper (one per differentiated argument), a primitive with a
    # rule of its own, so that reverse mode can differentiate forward mode's code.
    tangent = _from_source(identifier(f"{fname}_tangent"), ["k", "t", *names],
                           [f"return tangent_along(k, t, ({args}))"],
                           {"tangent_along": tangent_along})
    tangent_vjp = _from_source(
        identifier(f"{fname}_tangent_vjp"), ["g", "ans", "k", "t", *names],
        [f"return tangent_cotangents(g, k, t, ({args}))"],
        {"tangent_cotangents": tangent_cotangents})
    vjp.numba_refusal = tangent.numba_refusal = tangent_vjp.numba_refusal = refusal
    sig = ", ".join(names) + ", t=None"
    templates = {p: f"custom_tangent({k}, t, {', '.join(names)})" for k, p in enumerate(names)}
    _, trees, helpers = read_templates(sig, templates, {"custom_tangent": tangent}, fname)
    for old in getattr(primitive, "custom_helpers", ()):
        registry.unregister(old)            # the last defjvp's helper
    primitive.custom_helpers = (tangent,)   # pullback.unregister removes its rule too
    registry.defvjp(tangent, tangent_vjp)
    registry.defvjp(primitive, vjp)
    registry.amend(primitive, tangent=Tangent(templates=trees, helpers=helpers, shaped=True))


def _zero(primal):
    """A zero tangent of ``primal``: 0.0 for a number, float zeros for an array."""
    if np.ndim(primal) == 0 and not isinstance(primal, np.ndarray):
        return 0.0
    a = np.asarray(primal)
    return np.zeros(a.shape, dtype=a.dtype if a.dtype.kind in "fc" else float)


def _pair(out, jvp, fname):
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{_name(jvp)}, the custom_jvp rule of {fname}, must return a pair "
                        f"(value, tangent_out), got {type(out).__name__}")
    return out


@functools.cache
def _tangent_map(n):
    """``make(jvp, primals)``: the function of ``n`` tangents giving ``jvp``'s tangent
    output, from source (the reverse transform reads it; its closure holds the
    primals, read live, so one derivative serves every call of the same kinds)."""
    ts = ", ".join(f"t{k}" for k in range(n))
    return _from_source(
        "make_tangent_map", ["jvp", "primals"],
        [f"def tangent_map({ts}):",
         f"    return jvp(primals, ({ts},))[1]",
         "return tangent_map"], {})


@functools.cache
def _transposer(jvp, n, scalar):
    """``grad`` of ``(t..., g, p...) -> sum(g * jvp(p, t)[1])`` in the tangents ``t``
    (``g * ...`` for a ``scalar`` output):
    the transposed tangent map of the rule ``jvp`` at the primals ``p``, as one
    gradient function that every call reuses (its derivative is made once)."""
    ts = [f"t{k}" for k in range(n)]
    ps = [f"p{k}" for k in range(n)]
    inner = _from_source(
        f"{identifier(_name(jvp))}_transposed", ts + ["g"] + ps,
        [f"return {'' if scalar else 'np.sum'}(g * jvp(({', '.join(ps)},), "
         f"({', '.join(ts)},))[1])"],
        {"jvp": jvp, "np": np})
    return api.grad(inner, argnums=0 if n == 1 else tuple(range(n)), jit=False)


@functools.cache
def _along_map(n, k):
    """``make(jvp, zeros)``: the function ``(t, *primals)`` giving ``jvp``'s tangent
    output along argument ``k``'s tangent ``t`` (the others' are ``zeros``)."""
    ps = ", ".join(f"p{i}" for i in range(n))
    ts = ", ".join("t" if i == k else f"zeros[{i}]" for i in range(n))
    return _from_source(
        "make_tangent_along", ["jvp", "zeros"],
        [f"def tangent_along(t, {ps}):",
         f"    return jvp(({ps},), ({ts},))[1]",
         "return tangent_along"], {})


def rule(fn, *, argnums=None):
    """Register the derivative of ``fn``: any callable (your own function, a NumPy
    ufunc, a SciPy function, a Numba function).

    Decorate its vector-Jacobian product.  Where differentiated code calls
    ``fn(*args, **kwargs)``, the derivative calls ``vjp(g, ans, *args, **kwargs)``:
    the cotangent ``g`` of the result, the result ``ans``, then exactly the
    arguments that call passed, positional and keyword, as written (defaults
    are never filled in, so a ufunc's ``out=``, ``where=``... are not passed
    unless the call passes them)::

        @pullback.rule(softplus, argnums=0)       # softplus(x, beta=1.0)
        def softplus_vjp(g, ans, x, beta=1.0):    # beta: the call's, or this default
            return g / (1.0 + math.exp(-beta * x)), None

        @pullback.rule(scipy.special.gammaln)     # a ufunc: x, /, out=None, *, where=...
        def gammaln_vjp(g, ans, x):
            return g * scipy.special.digamma(x)

    So the VJP's parameters after ``g, ans`` mirror those of ``fn`` that calls
    use; a call it cannot take is refused (a MissingRuleError naming the VJP and
    the call's line) before anything runs.  It returns one cotangent per
    positional parameter of its own after ``g, ans``, in that argument's shape
    (``None`` where there is no derivative): the cotangent itself when it has
    one such parameter, a tuple when it has several (anything else is a
    TypeError naming it and the call).  ``argnums`` says which of those
    parameters may carry a derivative (default: all); differentiating through
    any other, or a keyword-only one, is refused up front.

    The transform then calls ``fn`` and this VJP instead of reading ``fn``'s
    source; a user's rule replaces a built-in one.  On the Numba backend both
    ``fn`` and the VJP must be Numba-compilable.
    """
    def register(vjp):
        try:
            registry.defvjp(fn, vjp, argnums=argnums)   # drops the derivatives built before
            return vjp
        except Exception as exc:
            cut_for_user(exc)
            raise
    return register


def unregister(fn) -> None:
    """Remove the rule registered for ``fn`` with :func:`rule`: a library rule it
    replaced applies again, and your own function is differentiated from its
    source again.  Every derivative generated before is dropped, also those of
    gradient functions made before, which generate theirs again at their next
    call.  Nothing happens when ``fn`` has no rule of yours.  For a
    ``custom_vjp`` / ``custom_jvp`` function, its ``defvjp`` / ``defjvp`` is removed."""
    fn = getattr(fn, "custom_primitive", fn)     # where pullback.custom put the rule
    rule = registry.lookup(fn)
    if rule is None:
        return
    if rule.call_signature is None:
        raise ValueError(f"the rule for {rule.name} is pullback's own; pullback.unregister "
                         "removes rules registered with pullback.rule")
    registry.unregister(fn)
    for helper in getattr(fn, "custom_helpers", ()):     # a custom_jvp's tangent helper
        registry.unregister(helper)
