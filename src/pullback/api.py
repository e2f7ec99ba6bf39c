"""The public functions: grad, value_and_grad, vjp, show, rule; argument handling.

The transform itself, and its cache, live in :mod:`pullback.pipeline`.
"""
from __future__ import annotations

import numbers
import os
import types

import numpy as np

from .analysis.activity import COMPLEX_UNSUPPORTED
from .core.errors import PullbackError
from .core.kinds import kind_of_value
from .frontend.parse import parse_function, unwrap
from .pipeline import Compiled, choose_backend, derivative, still_valid
from .rules import registry


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


def _converter(arg):
    """The function that gives the user the gradient of an argument like ``arg``
    (chosen once per argument kinds, so a call skips the type tests)."""
    t = type(arg)
    return _float_grad if t is float else _array_grad if t is np.ndarray else _to_user


def _name(f):
    py, _ = unwrap(f)
    return getattr(py, "__qualname__", repr(f))


class GradientFunction:
    """``grad(f)`` / ``value_and_grad(f)``: call it like f."""

    def __init__(self, f, argnums=0, jit=None, with_value=False):
        if not callable(f):
            raise TypeError(f"grad expects a function, got {type(f).__name__}")
        self._given = f                              # what the user passed (for pickling)
        self.f, self._bound = _split_method(f)      # _bound: (self,) for a bound method
        self.argnums = argnums
        self.jit = jit
        self.with_value = with_value
        self.backend = choose_backend(self.f, jit)
        self._last: Compiled | None = None
        self._fast: dict = {}
        self._npos, kwonly = _signature(self.f)
        # With keyword-only parameters every call goes through _full_args.
        self._nparams = -1 if kwonly else self._npos
        self.__name__ = f"grad({_name(self.f)})"
        self._api = "value_and_grad" if with_value else "grad"
        self.__doc__ = getattr(f, "__doc__", None)

    def compiled(self, *args) -> tuple[Compiled, tuple, bool]:
        """``args``: every parameter by position (the bound object first, keyword-only
        parameters last)."""
        nb, name = len(self._bound), _name(self.f)
        npos = self._npos if self._npos >= 0 else len(args)
        nums, single = _check_argnums(self.argnums, npos - nb, name)
        _refuse_complex(args[nb:], name)
        _check_differentiable(args[nb:], nums, name)
        nums = tuple(i + nb for i in nums)
        kinds = tuple(kind_of_value(a) for a in args)
        c = derivative(self.f, nums, kinds, self.backend, call_vjp)
        if c.result_items is not None:   # refused before it runs (Numba would not compile it)
            _check_scalar((None,) * c.result_items, self.f, self._api)
        self._last = c
        return c, nums, single

    def __call__(self, *args, **kwargs):
        if self._bound:
            args = self._bound + args
        if kwargs or len(args) != self._nparams:
            args = _full_args(self.f, args, kwargs)
        # Fast path: the same argument kinds as a previous call.  (This runs on every
        # call: a list comprehension over the arrays' dtype objects costs least.)
        key = tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a) for a in args])
        entry = self._fast.get(key)
        try:
            if entry is None or entry[0].stale or (entry[0].dependencies
                                                   and not still_valid(entry[0])):
                c, nums, single = self.compiled(*args)
                # (index in the gradients, index in args, converter) per gradient
                plan = tuple([(k, i, _converter(args[i])) for k, i in enumerate(nums)])
                entry = self._fast[key] = (c, plan, single)
            c, plan, single = entry
            fn = c.fn
            value, grads = fn(*args, 1.0)
            if type(fn) is not types.FunctionType and getattr(fn, "ok", False):
                c.fn = fn.dispatcher
        except PullbackError as exc:
            raise for_user(exc) from None
        if type(value) is not float and type(value) is not np.float64:
            _check_scalar(value, self.f, self._api)
        if single:
            _, i, convert = plan[0]
            out = convert(grads[0], args[i])
        else:   # (a plain loop: a comprehension costs a function call in Python 3.11)
            out = []
            for k, i, convert in plan:
                out.append(convert(grads[k], args[i]))
            out = tuple(out)
        return (value, out) if self.with_value else out

    @property
    def source(self) -> str:
        """The generated derivative source (of the last call's argument kinds; before
        the first call, for float scalars and 1-D float arrays guessed from use)."""
        if self._last is None:
            args = _example_args(self.f)
            try:
                self.compiled(*(self._bound + args[len(self._bound):]))
            except PullbackError as exc:
                raise for_user(exc) from None
        return self._last.source

    def __repr__(self):
        return f"<pullback {self.__name__} ({self.backend.name} backend)>"

    def __reduce__(self):
        # The function and the options, not the generated code: a new process
        # transforms again (once) on its first call.
        return (GradientFunction, (self._given, self.argnums, self.jit, self.with_value))


def for_user(exc: PullbackError) -> PullbackError:
    """``exc`` without pullback's internal frames: its message already names the
    user's file, line and the fix.  ``PULLBACK_DEBUG=1`` keeps the frames."""
    if os.environ.get("PULLBACK_DEBUG", "") not in ("", "0"):
        return exc
    return exc.with_traceback(None)


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


def _check_scalar(value, f, api):
    """``grad`` and ``value_and_grad`` differentiate a scalar result: a tuple or an
    array is refused, never summed."""
    if isinstance(value, (tuple, list)):
        raise TypeError(f"{api} requires {_name(f)} to return a scalar, but it returned "
                        f"a {type(value).__name__} of {len(value)} values, such as "
                        f"(loss, aux). {_NO_AUX}: return the loss alone (compute the "
                        "other values in a second function), or use vjp and give back() "
                        "one cotangent per item")
    if np.ndim(value) != 0:
        raise TypeError(f"{api} requires {_name(f)} to return a scalar, but it returned "
                        f"shape {np.shape(value)}; use vjp for non-scalar outputs")


_NO_AUX = "pullback has no has_aux option, so it does not know which item to differentiate"


def _check_cotangent(value, cotangent, f):
    """``back(cotangent)`` of a tuple result takes one cotangent per item: a single
    one would differentiate the sum of the items."""
    if isinstance(value, (tuple, list)) and not (
            isinstance(cotangent, (tuple, list)) and len(cotangent) == len(value)):
        n = len(value)
        raise TypeError(f"vjp: {_name(f)} returned a {type(value).__name__} of {n} values, "
                        f"so back() takes a tuple of {n} cotangents, one per item (e.g. "
                        f"({', '.join(['1.0'] + ['0.0'] * (n - 1))}) for the first item "
                        f"alone), but got {type(cotangent).__name__} {cotangent!r}; "
                        f"{_NO_AUX}")


def _example_args(f):
    """Example arguments for showing source before any call: a parameter that is
    indexed (or has len() taken) is a float array of that many dimensions."""
    import ast as _ast
    py, _ = unwrap(f)
    parsed = parse_function(py)
    node = parsed.node
    params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    kwdefaults = py.__kwdefaults__ or {}
    dims = {p: 0 for p in params}
    for n in _ast.walk(node):
        if isinstance(n, _ast.Subscript) and isinstance(n.value, _ast.Name) and n.value.id in dims:
            k = len(n.slice.elts) if isinstance(n.slice, _ast.Tuple) else 1
            dims[n.value.id] = max(dims[n.value.id], k)
        if isinstance(n, _ast.Call) and isinstance(n.func, _ast.Name) and n.func.id == "len":
            for a in n.args:
                if isinstance(a, _ast.Name) and a.id in dims:
                    dims[a.id] = max(dims[a.id], 1)
        if isinstance(n, _ast.For) and isinstance(n.iter, _ast.Name) and n.iter.id in dims:
            dims[n.iter.id] = max(dims[n.iter.id], 1)
    return tuple(kwdefaults[p] if p in kwdefaults else 0.5 if dims[p] == 0
                 else np.full((3,) * dims[p], 0.5) for p in params)


def grad(f, argnums=0, jit=None):
    """The gradient of a scalar function ``f``.

    ``argnums`` (an int or a tuple of ints) says which positional arguments to
    differentiate; a tuple gives a tuple of gradients.  Each gradient has the
    type and shape of its argument.  ``jit=None`` uses Numba when ``f`` is a
    ``numba.njit`` function and plain Python otherwise; ``jit=True`` / ``False``
    force one.

    >>> import pullback
    >>> pullback.grad(lambda x: x * x)(3.0)
    6.0
    """
    return GradientFunction(f, argnums, jit, with_value=False)


def value_and_grad(f, argnums=0, jit=None):
    """Like :func:`grad`, but the function returns ``(value, gradient)``."""
    return GradientFunction(f, argnums, jit, with_value=True)


def vjp(f, *args, jit=None, **kwargs):
    """``(value, back)`` where ``back(cotangent)`` returns one cotangent per
    positional argument (``None`` for arguments that cannot carry one, such as
    ints).

    ``back`` reruns the forward sweep together with the reverse sweep, so each
    call costs one gradient evaluation.  The caller's arrays are never mutated,
    even if ``f`` writes into its arguments, and ``back`` differentiates at the
    arguments as they were when ``vjp`` was called.
    """
    f, bound = _split_method(f)
    args = _full_args(f, bound + args, kwargs)
    nb = len(bound)
    npos, kwonly = _signature(f)
    if npos < 0:
        npos = len(args)
    _refuse_complex(args[nb:], _name(f))
    nums = tuple(i for i in range(nb, npos) if kind_of_value(args[i]).dtype == "f")
    backend = choose_backend(f, jit)
    args = _copy_arrays(args)           # a snapshot: the point back() differentiates at
    primal = backend.primal(f, unwrap(f)[0])
    call = _copy_arrays(args)           # f may write into its arguments
    value = primal(*call[:npos], **dict(zip(kwonly, call[npos:])))
    if not nums:
        return value, lambda ct: tuple(None for _ in range(npos - nb))
    kinds = tuple(kind_of_value(a) for a in args)
    try:
        c = derivative(f, nums, kinds, backend, call_vjp)
    except PullbackError as exc:
        raise for_user(exc) from None

    def back(cotangent):
        _check_cotangent(value, cotangent, f)
        try:
            _, grads = c.fn(*args, cotangent)
        except PullbackError as exc:
            raise for_user(exc) from None
        out = [None] * npos
        for g, i in zip(grads, nums):
            out[i] = _to_user(g, args[i])
        return tuple(out[nb:])
    back.source = c.source
    return value, back


def _copy_arrays(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def call_vjp(f, g, *args):
    """Cotangents of a call ``f(*args)`` whose result has cotangent ``g``: what the
    derivative of a recursive function calls, at run time, for its recursive call
    (each level differentiates the next).  Passed to the pipeline for that."""
    _, back = vjp(f, *args, jit=False)
    return back(g)


def show(g, *args) -> None:
    """Print the derivative source of ``g = grad(f)`` (for ``args`` if given)."""
    if args:
        full = g._bound + args
        try:
            g.compiled(*(full if len(full) == g._nparams else _full_args(g.f, full, {})))
        except PullbackError as exc:
            raise for_user(exc) from None
        print(g._last.source)
    else:
        print(g.source)


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
        registry.defvjp(fn, vjp, argnums=argnums)   # drops the derivatives built before
        return vjp
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
