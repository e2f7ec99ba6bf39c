"""The arguments of the API's functions: binding them to the parameters, checking
them (argnums, complex and non-float values), example arguments for showing
source before any call, and the gradients given back in each argument's type."""
from __future__ import annotations

import ast
import numbers
import types

import numpy as np

from .analysis.activity import COMPLEX_UNSUPPORTED
from .core.kinds import kind_of_value
from .frontend.parse import parse_function, unwrap


def _split_method(f):
    """A bound method is its function with the object it is bound to as a leading
    argument that is never differentiated: ``(function, (obj,))``; anything else
    ``(f, ())``.  ``argnums`` and the cotangents count the caller's arguments only."""
    if isinstance(f, types.MethodType):
        return f.__func__, (f.__self__,)
    return f, ()


def _signature(f):
    """(number of positional parameters, names of the keyword-only ones) of f."""
    code = getattr(unwrap(f)[0], "__code__", None)
    if code is None:
        return -1, ()
    n = code.co_argcount
    return n, code.co_varnames[n:n + code.co_kwonlyargcount]


def _param_names(f):
    """f's parameter names, positional then keyword-only (for leaf paths in errors)."""
    code = getattr(unwrap(f)[0], "__code__", None)
    return () if code is None else code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def _check_argnums(argnums, nargs, fname):
    single = isinstance(argnums, numbers.Integral) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, tuple) or not nums or not all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in nums):
        raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(f"argnums={a} is out of range: {fname} was called with "
                             f"{nargs} positional argument{'s' if nargs != 1 else ''}")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"argnums {argnums!r} names an argument twice")
    return tuple(out), single




def _refuse_complex(args, fname):
    """Complex arguments are refused: the rules are written for real inputs, and a
    complex gradient would need conjugation conventions they do not follow."""
    for i, v in enumerate(args):
        if kind_of_value(v).dtype == "c":
            what = f"an array of dtype {v.dtype}" if np.ndim(v) else f"a {type(v).__name__}"
            raise TypeError(f"{fname}: argument {i} is {what}, and {COMPLEX_UNSUPPORTED}. "
                            "Split it into its real and imaginary parts, passed as float "
                            "arguments (x.real, x.imag), and write the function with real "
                            "arithmetic on them")


def _check_differentiable(args, nums, fname):
    for i in nums:
        v = args[i]
        k = kind_of_value(v)
        if k.dtype not in "fc":
            what = type(v).__name__
            if k.dtype in "bi":
                hint = (f"pass a float (e.g. {float(v) if k.ndim == 0 else 'x.astype(float)'})"
                        " to differentiate it, or leave it out of argnums")
            else:
                hint = "gradients are taken with respect to floats and float arrays"
            dt = f" of dtype {v.dtype}" if hasattr(v, "dtype") else ""
            article = "an" if what[:1] in "aeiou" else "a"
            raise TypeError(f"cannot differentiate {fname} with respect to argument {i}: "
                            f"it is {article} {what}{dt}; {hint}")


def _name(f):
    py, _ = unwrap(f)
    return getattr(py, "__qualname__", repr(f))


def _full_args(f, args, kwargs):
    """All of f's positional parameters, filled from keywords and defaults, so the
    generated function (which also takes the seed) gets every one by position."""
    py, _ = unwrap(f)
    code = getattr(py, "__code__", None)
    if code is None:
        return args
    n = code.co_argcount
    kwonly = code.co_varnames[n:n + code.co_kwonlyargcount]
    if len(args) == n and not kwargs and not kwonly:
        return args
    if len(args) > n:
        raise TypeError(f"{py.__qualname__}() takes {n} positional arguments but "
                        f"{len(args)} were given")
    names = code.co_varnames[:n]
    defaults = py.__defaults__ or ()
    first_default = n - len(defaults)
    out = list(args)
    kwargs = dict(kwargs)
    for k in range(len(args), n):
        if names[k] in kwargs:
            out.append(kwargs.pop(names[k]))
        elif k >= first_default:
            out.append(defaults[k - first_default])
        else:
            raise TypeError(f"{py.__qualname__}() missing required argument {names[k]!r}")
    kwdefaults = py.__kwdefaults__ or {}
    for name in kwonly:
        if name in kwargs:
            out.append(kwargs.pop(name))
        elif name in kwdefaults:
            out.append(kwdefaults[name])
        else:
            raise TypeError(f"{py.__qualname__}() missing required keyword-only argument "
                            f"{name!r}")
    if kwargs:
        raise TypeError(f"{py.__qualname__}() got an unexpected keyword argument "
                        f"{next(iter(kwargs))!r}")
    return tuple(out)


def _example_args(f):
    """Example arguments for showing source before any call: a parameter that is
    indexed (or has len() taken) is a float array of that many dimensions."""
    py, _ = unwrap(f)
    parsed = parse_function(py)
    node = parsed.node
    params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    kwdefaults = py.__kwdefaults__ or {}
    dims = {p: 0 for p in params}
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in dims:
            k = len(n.slice.elts) if isinstance(n.slice, ast.Tuple) else 1
            dims[n.value.id] = max(dims[n.value.id], k)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
            for a in n.args:
                if isinstance(a, ast.Name) and a.id in dims:
                    dims[a.id] = max(dims[a.id], 1)
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Name) and n.iter.id in dims:
            dims[n.iter.id] = max(dims[n.iter.id], 1)
    return tuple(kwdefaults[p] if p in kwdefaults else 0.5 if dims[p] == 0
                 else np.full((3,) * dims[p], 0.5) for p in params)


def _to_user(grad, arg):
    """The gradient in the type and shape of its argument."""
    t = type(arg)
    if t is float:
        return _float_grad(grad, arg)
    if t is np.ndarray or isinstance(arg, np.ndarray):
        return _array_grad(grad, arg)
    if isinstance(arg, (float, np.floating)) and not isinstance(arg, np.ndarray):
        return type(arg)(grad) if isinstance(arg, np.floating) else float(grad)
    if isinstance(arg, complex):
        return complex(grad)
    return grad


def _float_grad(grad, arg):
    """The gradient of a Python float argument: a Python float."""
    return grad if type(grad) is float else float(grad)


def _array_grad(grad, arg):
    """The gradient of an array argument: a fresh, writeable, C-contiguous array of
    its dtype (a float dtype for an integer array) and shape."""
    if type(grad) is np.ndarray and grad.dtype == arg.dtype and grad.shape == arg.shape:
        if grad.flags.carray and grad is not arg:     # C-contiguous, aligned, writeable
            return grad
        return np.array(grad)    # never a read-only broadcast view, never the input
    g = np.asarray(grad, dtype=np.result_type(arg.dtype, np.float64) if arg.dtype.kind != "f"
                   else arg.dtype)
    if g.shape != arg.shape:
        g = np.broadcast_to(g, arg.shape).copy()
    return g


def _unshared(grads: list) -> tuple:
    """The gradients, none sharing memory with another: ``f(a, b) = sum(a + b)``
    gives ``a`` and ``b`` one cotangent array, and a user who scales one gradient in
    place must not change the other."""
    for k in range(1, len(grads)):
        g = grads[k]
        if type(g) is np.ndarray and any(type(o) is np.ndarray and np.may_share_memory(g, o)
                                         for o in grads[:k]):
            grads[k] = g.copy()
    return tuple(grads)


def _converter(arg):
    """The function that gives the user the gradient of an argument like ``arg``
    (chosen once per argument kinds, so a call skips the type tests)."""
    t = type(arg)
    return _float_grad if t is float else _array_grad if t is np.ndarray else _to_user
