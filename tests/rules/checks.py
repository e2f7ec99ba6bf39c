"""One shared helper for testing VJP rules against central finite differences.

``check_vjp(fn, vjp_of_arg, args, argnum)`` evaluates ``ans = fn(*args)``,
draws a cotangent ``g`` of ``ans``'s shape, asks ``vjp_of_arg(g, ans, *args)``
for the cotangent of ``args[argnum]`` and compares it with finite differences
of ``phi(x) = <g, fn(..., x, ...)>``: the full gradient for small ``x``, and
``<ct, v>`` against the directional derivative along random ``v`` otherwise.

``rule_vjp(fn, param)`` turns a registered template into such a
``vjp_of_arg`` by evaluating it (with ``unbroadcast`` around elementwise
rules, as the transform does), so the templates themselves are tested.

``check_rule`` also checks the primitive's tangent rule (forward mode), where
it has one: ``<g, J v>`` from the tangent rule, evaluated as
:func:`rule_jvp` does, against ``<J^T g, v>`` from the derivative rule and
against the directional difference along ``v``.
"""
from __future__ import annotations

import ast
import inspect

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from pullback.rules import results
from pullback.rules.elementwise import unbroadcast
from pullback.rules.registry import lookup
from pullback.rules.tangents import TANGENT, tangent_of

SETTINGS = settings(max_examples=30, deadline=None)


def check_vjp(fn, vjp_of_arg, args, argnum, *, g=None, seed=0, eps=1e-6, rtol=1e-5, atol=1e-6,
              full_fd_max=36, directions=3):
    args = list(args)
    rng = np.random.default_rng(seed)
    ans = fn(*args)
    if g is None:
        g = rng.standard_normal(np.shape(ans))
        if np.ndim(ans) == 0:
            g = float(g)
    x = args[argnum]
    ct = vjp_of_arg(g, ans, *args)
    assert np.shape(ct) == np.shape(x), \
        f"cotangent shape {np.shape(ct)} != argument shape {np.shape(x)}"
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        assert np.ndim(ct) == 0 and not isinstance(ct, np.ndarray), \
            f"a scalar argument needs a scalar cotangent, got {type(ct)}"
    ct = np.asarray(ct, dtype=float)
    x_arr = np.asarray(x, dtype=float)

    def phi(step):
        moved = list(args)
        moved[argnum] = x_arr + step if isinstance(x, np.ndarray) else type(x)(x_arr + step)
        return float(np.sum(np.asarray(g) * np.asarray(fn(*moved), dtype=float)))

    def fd(direction):
        return (phi(eps * direction) - phi(-eps * direction)) / (2 * eps)

    if x_arr.size <= full_fd_max:
        expected = np.zeros(x_arr.shape)
        for i in np.ndindex(x_arr.shape):
            e = np.zeros(x_arr.shape)
            e[i] = 1.0
            expected[i] = fd(e)
        scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
        np.testing.assert_allclose(ct, expected, rtol=rtol, atol=atol * scale,
                                   err_msg="VJP differs from the finite-difference gradient")
    else:
        for _ in range(directions):
            v = rng.standard_normal(x_arr.shape)
            got, want = float(np.sum(ct * v)), fd(v)
            scale = max(1.0, abs(want))
            assert abs(got - want) <= rtol * abs(want) + atol * scale * 10, \
                f"<vjp, v> = {got} but the directional derivative is {want}"
    return ct


def rule_vjp(fn, param):
    """``vjp_of_arg(g, ans, *args, **kwargs)`` evaluating the registered template of ``param``."""
    rule = lookup(fn)
    assert rule is not None, f"no rule registered for {fn}"
    code = compile(ast.Expression(rule.adjoints[param]), f"<rule {rule.name}:{param}>", "eval")

    def vjp(g, ans, *args, **kwargs):
        env = bind_values(rule, args, kwargs)
        x = env[param]
        env.update(rule.helpers)
        env.update(g=g, ans=ans)
        ct = eval(code, env)
        return unbroadcast(ct, x) if rule.result is results.like else ct
    return vjp


def check_rule(fn, args, *, kwargs=None, only=None, **tolerances):
    """``check_vjp`` of ``fn``'s registered template for each differentiable parameter
    that ``args`` passes positionally (or those named in ``only``), with ``kwargs``
    passed to the primal and to the template alike."""
    rule = lookup(fn)
    assert rule is not None, f"no rule registered for {fn}"
    kwargs = kwargs or {}
    positional = [p.name for p in rule.params if not p.kw_only and not p.variadic]
    checked = 0
    for k, name in enumerate(positional[:len(args)]):
        if name in rule.adjoints and (only is None or name in only):
            r = rule_vjp(fn, name)
            ct = check_vjp(lambda *a: fn(*a, **kwargs),
                           lambda g, ans, *a, r=r: r(g, ans, *a, **kwargs), args, k, **tolerances)
            if tangent_of(rule) is not None and tangent_of(rule).covers(name):
                check_tangent(fn, args, kwargs, k, ct, tolerances.get("seed", 0))
            checked += 1
    assert checked, f"no differentiable parameter of {rule.name} among the arguments"


def check_tangent(fn, args, kwargs, k, ct, seed):
    """The tangent rule along a random ``v`` for argument ``k``: ``<g, J v>`` equals
    ``<J^T g, v>`` (``ct``: the derivative rule's cotangent for the cotangent ``g``
    that :func:`check_vjp` drew with ``seed``) to rounding."""
    rng = np.random.default_rng(seed)
    ans = fn(*args, **kwargs)
    g = rng.standard_normal(np.shape(ans))        # the draw check_vjp made first
    v = np.random.default_rng(seed + 1).standard_normal(np.shape(args[k]))
    if not isinstance(args[k], np.ndarray):
        v = float(v)        # a number's tangent is a number (a 0-d array's, a 0-d array)
    tangent = rule_jvp(fn)(list(args), {k: v}, kwargs)
    assert np.shape(tangent) == np.shape(ans), \
        f"tangent shape {np.shape(tangent)} != result shape {np.shape(ans)}"
    got, want = float(np.sum(g * np.asarray(tangent))), float(np.sum(ct * v))
    scale = max(float(np.sum(np.abs(g) * np.abs(np.asarray(tangent, dtype=float)))),
                float(np.sum(np.abs(ct * v))), 1e-300)
    assert abs(got - want) <= 1e-9 * scale, \
        f"tangent rule: <g, J v> = {got!r} but the derivative rule's <J^T g, v> = {want!r}"


def rule_jvp(fn):
    """``jvp(args, tangents, kwargs)``: ``fn``'s tangent rule evaluated on values, for
    ``tangents`` by argument position (the others held fixed)."""
    rule = lookup(fn)
    form = tangent_of(rule)
    assert form is not None, f"no tangent rule for {rule.name}"

    def jvp(args, tangents, kwargs):
        positional = [p.name for p in rule.params if not p.kw_only and not p.variadic]
        names = {positional[k] if k < len(positional) else f"{rule.params[-1].name}[{k}]": t
                 for k, t in tangents.items()}
        ans = fn(*args, **kwargs)
        env = dict(bind_values(rule, args, kwargs), ans=ans)
        if form.reduction:
            env.update(rule.helpers, g=np.ones_like(ans))
            weight = eval(compile(ast.Expression(rule.adjoints[form.reduction]), "<w>", "eval"), env)
            return np.sum(names[form.reduction] * weight, axis=env["axis"],
                          keepdims=env["keepdims"])
        if form.templates:
            env.update(form.helpers)
            total = None        # a tuple result's tangent is a tuple: nothing to add it to
            for name, t in names.items():
                env["g" if form.uses_g else TANGENT] = t
                tree = ast.Expression(form.templates[name.split("[")[0]])
                term = eval(compile(tree, "<tangent>", "eval"), env)
                total = term if total is None else total + term
            if isinstance(total, tuple):        # one tangent per item of a tuple result
                return total
            return np.broadcast_to(total, np.shape(ans)) if np.ndim(ans) else total
        swapped = [names.get(positional[k] if k < len(positional) else "", None)
                   for k in range(len(args))]
        if form.linear:
            return fn(*[t if t is not None else _zero_if_linear(rule, form, k, a)
                        for k, (a, t) in enumerate(zip(args, swapped))], **kwargs)
        return fn(*[t if t is not None else a for a, t in zip(args, swapped)], **kwargs)
    return jvp


def _zero_if_linear(rule, form, k, a):
    positional = [p.name for p in rule.params if not p.kw_only and not p.variadic]
    if k < len(positional) and positional[k] in form.linear:
        return np.zeros_like(a, dtype=float) if np.ndim(a) else 0.0
    return a


def bind_values(rule, args, kwargs):
    """Parameter name -> value for a call, defaults filled, as Rule.bind does for AST nodes."""
    positional = [p for p in rule.params if not p.kw_only and not p.variadic]
    star = next((p for p in rule.params if p.variadic), None)
    assert star is not None or len(args) <= len(positional), f"too many arguments for {rule.name}"
    env = {p.name: a for p, a in zip(positional, args)}
    if star is not None:        # *name: the tuple, and each argument as name[k]
        env[star.name] = tuple(args[len(positional):])
        env.update({f"{star.name}[{k}]": a for k, a in enumerate(env[star.name])})
    env.update(kwargs)
    for p in rule.params:
        if p.name not in env:
            assert p.default is not inspect.Parameter.empty, f"{p.name} missing"
            env[p.name] = p.default
    return env


# ---------------------------------------------------------------------------
# hypothesis strategies

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2**31 - 1)


@st.composite
def axes_for(draw, ndim, allow_none=True):
    """None, an int, a negative int or a tuple of distinct axes (possibly negative)."""
    choices = ["int", "tuple"] + (["none"] if allow_none else [])
    if ndim == 0:
        return None
    kind = draw(st.sampled_from(choices))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(a - ndim if draw(st.booleans()) else a for a in picked)


def values(seed, shape, low=None, high=None):
    """Random float64 values of ``shape`` (distinct with probability 1: no ties, no kinks).

    Shape () gives a Python float, so scalar arguments are exercised too.
    """
    rng = np.random.default_rng(seed)
    if low is None:
        return rng.standard_normal(shape)
    return rng.uniform(low, high, shape)


def array_values(seed, shape, low=None, high=None):
    """As :func:`values`, always an ndarray (0-d for shape ())."""
    return np.asarray(values(seed, shape, low, high))
