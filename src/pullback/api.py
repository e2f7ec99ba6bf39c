"""The public functions: grad, value_and_grad, vjp, show; argument handling and caching."""
from __future__ import annotations

import ast
import copy
import dataclasses
import numbers
import types
from dataclasses import dataclass, field

import numpy as np

from .analysis import activity as act
from .backends.numba import NUMBA
from .backends.python import PYTHON
from .core import ir
from .core.errors import Location
from .core.runtime import install_recursive_vjp
from .emit import build, rebind
from .frontend.normalize import normalize
from .frontend.parse import parse_function, unwrap
from .reverse.transform import ReverseTransform
from .rules import registry


@dataclass
class Compiled:
    fn: object                # the generated callable (value, grads) = fn(*args, _seed)
    source: str
    dependencies: list        # (namespace, key, object) that must not have changed
    wrt: tuple
    closure: dict = field(default_factory=dict)   # the user's free variable -> the cell fn reads
    pins: tuple = ()          # what the cache key names by id(): closure values, globals
    rebound: dict = field(default_factory=dict)   # Numba: cell ids -> this derivative rebound


_CACHE: dict = {}


def _backend(fn, jit):
    _, is_numba = unwrap(fn)
    if jit is None:
        return NUMBA if is_numba else PYTHON
    return NUMBA if jit else PYTHON


def _valid(compiled: Compiled) -> bool:
    for ns, key, obj in compiled.dependencies:
        if key is None:
            try:
                if ns.cell_contents is not obj:
                    return False
            except ValueError:
                return False
        elif ns.get(key, _MISSING) is not obj:
            return False
    return True


_MISSING = object()


def _closure_key(cells) -> tuple[tuple, tuple]:
    """What a derivative assumes about the closure cells it was generated for.  Numbers
    and arrays are read live, so only their kind matters; anything else (a function that
    was inlined, an object whose attributes were read) by identity, pinned so that its
    id() cannot be reused while the cache entry exists."""
    key, pins = [], []
    for cell in cells:
        try:
            v = cell.cell_contents
        except ValueError:
            key.append(None)
            continue
        k = act.kind_of_value(v)
        if k.dtype in "bifct":
            key.append(k)
        else:
            key.append(id(v))
            pins.append(v)
    return tuple(key), tuple(pins)


def _rebound(c: Compiled, py, backend) -> Compiled:
    """The cached derivative ``c`` of another closure of ``py``'s code, reading ``py``'s cells."""
    cells = py.__closure__ or ()
    if all(a is b for a, b in zip(c.closure.values(), cells)):
        return c
    ids = tuple(map(id, cells))
    out = c.rebound.get(ids)
    if out is None:
        closure = dict(zip(py.__code__.co_freevars, cells))
        by_cell = {id(cell): closure[name] for name, cell in c.closure.items()}
        deps = [(by_cell.get(id(ns), ns) if key is None else ns, key, obj)
                for ns, key, obj in c.dependencies]
        out = Compiled(rebind(c.fn, c.source, c.closure, closure, backend), c.source, deps, c.wrt,
                       closure, c.pins)
        if not isinstance(out.fn, types.FunctionType):
            c.rebound[ids] = out        # keeps the cells alive, so their ids stay theirs
    return out


def transform(f, wrt_index: tuple, kinds: tuple, backend) -> Compiled:
    """Generate (or fetch from the cache) the derivative of f for these argument kinds.

    Closures of one code object share a derivative: it is rebound to each closure's
    cells, which it reads when it runs, as the primal does."""
    py, _ = unwrap(f)
    cells = getattr(py, "__closure__", None) or ()
    closure_key, pins = _closure_key(cells)
    namespace = getattr(py, "__globals__", None)    # the derivative reads these globals
    pins += (namespace,)
    key = (getattr(py, "__code__", py), wrt_index, kinds, backend, closure_key, id(namespace))
    hit = _CACHE.get(key)
    if hit is not None and all(a is b for a, b in zip(hit.pins, pins)):
        hit = _rebound(hit, py, backend)
        if _valid(hit):
            return hit
    parsed = parse_function(py)
    if parsed.node.args.kwonlyargs:
        parsed = _keyword_only_as_positional(parsed)
    fn_ir, norm = normalize(parsed)
    params = fn_ir.params
    arg_kinds = dict(zip(params, kinds))

    def lookup_value(name):
        if name in norm.externals:
            return norm.externals[name]
        if name in parsed.closure:
            try:
                return parsed.closure[name].cell_contents
            except ValueError:
                return act._MISSING
        if name in parsed.globals:
            return parsed.globals[name]
        import builtins
        return getattr(builtins, name, act._MISSING)

    kinds_env = act.KindInference(fn_ir, arg_kinds, lookup_value).run()
    wrt = [params[i] for i in wrt_index]
    active = act.activity(fn_ir, kinds_env, set(wrt))

    def location(line):
        text = parsed.lines[line - 1].rstrip("\n") if 0 < line <= len(parsed.lines) else ""
        return Location(parsed.filename, line, text, parsed.fn.__qualname__)

    for s in ir.walk(fn_ir.body):
        if isinstance(s, ir.Assign) and s.target in active \
                and getattr(kinds_env.get(s.target), "dtype", None) == "c":
            raise TypeError(f"{parsed.fn.__qualname__} computes a complex value from the arguments "
                            f"it is differentiated with respect to, and {_COMPLEX}. "
                            f"Write this step with real floats (the real and imaginary parts "
                            f"as separate values).\n{location(s.line)}")

    def resolve(name):
        v = lookup_value(name)
        return None if v is act._MISSING else v

    gen = ReverseTransform(fn_ir, kinds_env, active, wrt, backend, location, resolve).run()
    fname = f"{fn_ir.name}_grad".replace("<", "").replace(">", "")
    compiled_fn, src = build(gen, fname, parsed.globals, parsed.closure, norm.externals, backend)
    compiled = Compiled(compiled_fn, src, list(norm.dependencies), tuple(wrt),
                        dict(parsed.closure), pins)
    _CACHE[key] = compiled
    return compiled


def _keyword_only_as_positional(parsed):
    """The derivative takes every parameter by position (``_full_args`` fills keyword-only
    ones from keywords and defaults), so keyword-only parameters follow the others."""
    a = parsed.node.args
    node = copy.copy(parsed.node)       # the parsed tree is shared: never edit it in place
    node.args = ast.arguments(posonlyargs=a.posonlyargs, args=a.args + a.kwonlyargs,
                              vararg=a.vararg, kwonlyargs=[], kw_defaults=[], kwarg=a.kwarg,
                              defaults=[])     # every value is passed
    return dataclasses.replace(parsed, node=node)


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


_COMPLEX = "complex differentiation is not supported yet"


def _refuse_complex(args, fname):
    """Complex arguments are refused: the rules are written for real inputs, and a
    complex gradient would need conjugation conventions they do not follow."""
    for i, v in enumerate(args):
        if act.kind_of_value(v).dtype == "c":
            what = f"an array of dtype {v.dtype}" if np.ndim(v) else f"a {type(v).__name__}"
            raise TypeError(f"{fname}: argument {i} is {what}, and {_COMPLEX}. "
                            "Split it into its real and imaginary parts, passed as float "
                            "arguments (x.real, x.imag), and write the function with real "
                            "arithmetic on them")


def _check_differentiable(args, nums, fname):
    for i in nums:
        v = args[i]
        k = act.kind_of_value(v)
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
    if type(arg) is float:
        return float(grad)
    if isinstance(arg, np.ndarray):
        if type(grad) is np.ndarray and grad.dtype == arg.dtype and grad.shape == arg.shape:
            flags = grad.flags
            if flags.writeable and flags.c_contiguous and grad is not arg:
                return grad
            return np.array(grad)    # never a read-only broadcast view, never the input
        g = np.asarray(grad, dtype=np.result_type(arg.dtype, np.float64) if arg.dtype.kind != "f"
                       else arg.dtype)
        if g.shape != arg.shape:
            g = np.broadcast_to(g, arg.shape).copy()
        return g
    if isinstance(arg, (float, np.floating)) and not isinstance(arg, np.ndarray):
        return type(arg)(grad) if isinstance(arg, np.floating) else float(grad)
    if isinstance(arg, complex):
        return complex(grad)
    return grad


def _name(f):
    py, _ = unwrap(f)
    return getattr(py, "__qualname__", repr(f))


class GradientFunction:
    """``grad(f)`` / ``value_and_grad(f)``: call it like f."""

    def __init__(self, f, argnums=0, jit=None, with_value=False):
        if not callable(f):
            raise TypeError(f"grad expects a function, got {type(f).__name__}")
        self.f, self._bound = _split_method(f)      # _bound: (self,) for a bound method
        self.argnums = argnums
        self.jit = jit
        self.with_value = with_value
        self.backend = _backend(self.f, jit)
        self._last: Compiled | None = None
        self._fast: dict = {}
        self._npos, kwonly = _signature(self.f)
        # With keyword-only parameters every call goes through _full_args.
        self._nparams = -1 if kwonly else self._npos
        self.__name__ = f"grad({_name(self.f)})"
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
        kinds = tuple(act.kind_of_value(a) for a in args)
        c = transform(self.f, nums, kinds, self.backend)
        self._last = c
        return c, nums, single

    def __call__(self, *args, **kwargs):
        if self._bound:
            args = self._bound + args
        if kwargs or len(args) != self._nparams:
            args = _full_args(self.f, args, kwargs)
        # Fast path: the same argument types as a previous call.
        key = tuple(map(_type_key, args))
        entry = self._fast.get(key)
        if entry is None or (entry[0].dependencies and not _valid(entry[0])):
            entry = self._fast[key] = self.compiled(*args)
        c, nums, single = entry
        value, grads = c.fn(*args, 1.0)
        if type(c.fn) is not types.FunctionType and getattr(c.fn, "ok", False):
            c.fn = c.fn.dispatcher
        if not self.with_value and type(value) is not float:
            _check_scalar(value, self.f)
        if single:
            out = _to_user(grads[0], args[nums[0]])
        else:
            out = tuple([_to_user(g, args[i]) for g, i in zip(grads, nums)])
        return (value, out) if self.with_value else out

    @property
    def source(self) -> str:
        """The generated derivative source (of the last call's argument kinds; before
        the first call, for float scalars and 1-D float arrays guessed from use)."""
        if self._last is None:
            args = _example_args(self.f)
            self.compiled(*(self._bound + args[len(self._bound):]))
        return self._last.source

    def __repr__(self):
        return f"<pullback {self.__name__} ({self.backend.name} backend)>"


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


def _type_key(a):
    t = type(a)
    if t is np.ndarray:
        return (t, a.dtype.char, a.ndim)
    return t


def _check_scalar(value, f):
    if np.ndim(value) != 0:
        raise TypeError(f"grad requires {_name(f)} to return a scalar, but it returned "
                        f"shape {np.shape(value)}; use vjp for non-scalar outputs")


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
    nums = tuple(i for i in range(nb, npos) if act.kind_of_value(args[i]).dtype == "f")
    backend = _backend(f, jit)
    args = _copy_arrays(args)           # a snapshot: the point back() differentiates at
    primal = backend.primal(f, unwrap(f)[0])
    call = _copy_arrays(args)           # f may write into its arguments
    value = primal(*call[:npos], **dict(zip(kwonly, call[npos:])))
    if not nums:
        return value, lambda ct: tuple(None for _ in range(npos - nb))
    kinds = tuple(act.kind_of_value(a) for a in args)
    c = transform(f, nums, kinds, backend)

    def back(cotangent):
        _, grads = c.fn(*args, cotangent)
        out = [None] * npos
        for g, i in zip(grads, nums):
            out[i] = _to_user(g, args[i])
        return tuple(out[nb:])
    back.source = c.source
    return value, back


def _copy_arrays(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


install_recursive_vjp(vjp)


def show(g, *args) -> None:
    """Print the derivative source of ``g = grad(f)`` (for ``args`` if given)."""
    if args:
        full = g._bound + args
        g.compiled(*(full if len(full) == g._nparams else _full_args(g.f, full, {})))
        print(g._last.source)
    else:
        print(g.source)


def rule(fn, *, argnums=None):
    """Register the derivative of ``fn`` (your own function or a third-party one).

    Decorate its vector-Jacobian product, which receives the cotangent ``g`` of
    the result, the result ``ans`` and ``fn``'s arguments, and returns one
    cotangent per parameter (a tuple when ``fn`` has several; ``None`` where a
    parameter has no derivative)::

        @pullback.rule(softplus)
        def softplus_vjp(g, ans, x):
            return g / (1.0 + math.exp(-x))

    The transform then calls ``fn`` and this VJP instead of reading ``fn``'s
    source.  ``argnums`` limits which parameters may carry a derivative.  On the
    Numba backend both ``fn`` and the VJP must be Numba-compilable.
    """
    def register(vjp):
        registry.defvjp(fn, vjp, argnums=argnums)
        _CACHE.clear()      # derivatives built before now may have inlined fn
        return vjp
    return register
