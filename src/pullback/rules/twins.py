"""What Numba twins (:func:`.forms.numba_twin`) ask of the Numba types they receive.

A twin is called by the Numba backend while it compiles, with the Numba types
of the arguments, and returns an implementation for those types.  These
predicates import Numba only when a twin calls them, so the rule modules that
define twins stay importable (and fast to import) without Numba.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import linecache
from types import CodeType, FunctionType

import numpy as np


def _types():
    from numba import types
    return types


def rank(t):
    """The number of dimensions of an array type, 0 for a number, None otherwise."""
    types = _types()
    if isinstance(t, types.Array):
        return t.ndim
    if isinstance(t, (types.Number, types.Boolean)):
        return 0
    return None


def is_array(t, ndim=None) -> bool:
    r = rank(t)
    return r is not None and r > 0 and (ndim is None or r == ndim)


def is_number(t) -> bool:
    return rank(t) == 0


def is_none(t) -> bool:
    types = _types()
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) or t == types.none


def is_int(t) -> bool:
    types = _types()
    return isinstance(t, types.Integer)


def is_float_array(t) -> bool:
    """An array of real floats (float32, float64)."""
    types = _types()
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Float)


def is_tuple(t) -> bool:
    types = _types()
    return isinstance(t, types.BaseTuple)


def literal(t, default=None):
    """The value of a literal type (or of an omitted argument's default), else ``default``."""
    types = _types()
    if not isinstance(t, types.Type):
        return t            # an omitted argument: its default, as the twin declares it
    if isinstance(t, types.Literal):
        return t.literal_value
    if isinstance(t, types.Omitted):
        return t.value
    return default


def unsupported(what: str):
    """Refuse, from inside a twin, a case it has no implementation for."""
    from numba.core.errors import TypingError
    raise TypingError(f"pullback (Numba backend): {what} is not supported under jit=True; "
                      "use jit=False")


def _arrays_in(ts):
    """The array types among ``ts`` and among the items of the tuples in ``ts``."""
    for t in ts:
        if is_array(t):
            yield t
        elif is_tuple(t):
            yield from (item for item in t if is_array(item))


def _cast_source(p, t):
    """Source text: parameter ``p`` (of Numba type ``t``) cast to ``_cast``, item by
    item for a tuple."""
    if is_array(t):
        return f"{p}.astype(_cast)"
    if is_tuple(t):
        return "(" + "".join((f"{p}[{i}].astype(_cast)" if is_array(item) else f"{p}[{i}]")
                             + ", " for i, item in enumerate(t)) + ")"
    return p


def one_dtype(fn, *ts):
    """``fn``, or ``fn`` with its array arguments cast to their common dtype first when
    their dtypes differ (``ts`` their Numba types, in order): a float32 operand with the
    float64 cotangent Numba computes for it, or an int array); a tuple's arrays too.
    Numba's ``@``, ``np.dot`` and ``np.linalg`` (BLAS, LAPACK) take operands of one
    dtype, and branches that return arrays of different dtypes do not unify."""
    names = {str(t.dtype) for t in _arrays_in(ts)}
    if len(names) <= 1:
        return fn
    from numba import njit
    cast = np.result_type(*names).type
    params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    args = ", ".join(_cast_source(p, t) for p, t in zip(params, ts))
    args += "".join(f", {p}" for p in params[len(ts):])
    # The wrapper has fn's parameters (names and defaults): Numba's overload wants them.
    return function_from_source("impl", params, [f"return _inner({args})"],
                                {"_inner": njit(fn), "_cast": cast}, fn.__defaults__)


def float64_of(t):
    """A compiled ``f(x)`` for an array of Numba type ``t``: ``x`` itself when it is
    float64, else a float64 copy (a kernel over float64 need not copy its argument)."""
    types = _types()
    if isinstance(t, types.Array) and t.dtype == types.float64:
        return jitted(lambda x: x)
    return jitted(lambda x: x.astype(np.float64))


def keeps_dtype(*params):
    """Decorator for a twin whose implementation computes in float64: its result
    takes float32 where every one of ``params`` (parameter names of the target) is
    float32, a number or an array, as NumPy's result and the Python rule's do.
    Anything else (a float64 or integer argument among them) keeps the result as
    the implementation gives it."""
    def wrap(typer):
        signature = inspect.signature(typer)

        def typed(*args, **kwargs):
            impl = typer(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            if impl is None or not all(_is_float32(bound.arguments.get(p)) for p in params):
                return impl
            names = impl.__code__.co_varnames[:impl.__code__.co_argcount]
            return function_from_source(
                "impl", names, [f"return _float32(_impl({', '.join(names)}))"],
                {"_impl": jitted(impl), "_float32": _float32_of()}, impl.__defaults__)
        typed.__signature__ = signature     # what Numba's overload reads
        typed.__name__ = typer.__name__
        return typed
    return wrap


def _is_float32(t) -> bool:
    """A float32 number or array, or a tuple of them (``np.select``'s choices)."""
    types = _types()
    if isinstance(t, types.BaseTuple):
        return len(t) > 0 and all(_is_float32(item) for item in t)
    return t is not None and (t == types.float32 or (
        isinstance(t, types.Array) and t.dtype == types.float32))


@functools.cache
def _float32_of():
    """A compiled ``f(v)``: ``v`` as float32, an array (copied) or a number; anything
    else (a tuple) as it is."""
    from numba import njit
    from numba.extending import overload

    def float32_of(v):
        return v

    @overload(float32_of)
    def _typer(v):
        types = _types()
        if isinstance(v, types.Array):
            return lambda v: v.astype(np.float32)
        if isinstance(v, (types.Float, types.Integer)):
            return lambda v: np.float32(v)
        return lambda v: v
    return njit(lambda v: float32_of(v))


_SOURCES = itertools.count()


def function_from_source(name: str, params, body, namespace: dict, defaults=None):
    """The function ``def name(*params): *body`` (``body`` its lines), its globals
    ``namespace``, its trailing parameters defaulting to ``defaults``.

    For a wrapper whose parameter list is known only when a twin runs: Numba's
    overload wants an implementation's parameters named (and defaulted) as its
    typer's, the parameters of a rule's signature or of the function wrapped, which
    no closure can vary.  The source is compiled under a file name of its own,
    registered with ``linecache`` so that tracebacks and Numba's messages quote it."""
    src = f"def {name}({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body)
    filename = f"<pullback twin {next(_SOURCES)}: {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    module = compile(src, filename, "exec")
    code = next(c for c in module.co_consts if isinstance(c, CodeType))
    return FunctionType(code, namespace, name, tuple(defaults) if defaults else None)


def tuple_of(n: int, item):
    """A compiled ``f(*args)`` returning ``(item(0)(*args), ..., item(n - 1)(*args))``,
    ``item(k)`` a function in Numba's subset (a closure over ``k``, so that it may
    index a tuple of items of different types).  Each item is appended by a compiled
    function of its own, over the one before: the items may differ in type."""
    from numba import njit
    build = njit(lambda *args: ())
    for k in range(n):
        build = _appending(build, njit(item(k)))
    return build


def _appending(before, last):
    from numba import njit
    return njit(lambda *args: before(*args) + (last(*args),))


# ---------------------------------------------------------------------------
# Building blocks the twins' implementations call (compiled by Numba on first use).

_JITTED: dict = {}


def jitted(fn):
    """``fn`` compiled with Numba (once), for an implementation to call."""
    if fn not in _JITTED:
        from numba import njit
        _JITTED[fn] = njit(cache=False, inline="always")(fn)
    return _JITTED[fn]


def sum_rows(m):
    """The sum of the rows of a C-contiguous matrix, in row order (as NumPy's sum
    over axis 0); a loop, not Numba's ``np.sum(m, axis=0)``, whose bounds check
    formats an error message that costs a second to compile."""
    out = np.zeros(m.shape[1], m.dtype)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[j] += m[i, j]
    return out


def resized_shape(nd):
    """A compiled ``f(shape, ax, k)``: ``shape`` (of ``nd`` dimensions) with axis
    ``ax`` of length ``k``."""
    from numba.cpython.unsafe.tuple import tuple_setitem

    def f(shape, ax, k):
        out = shape
        for i in range(nd):         # (tuple_setitem checks no bounds: i, not ax)
            if i == ax:
                out = tuple_setitem(out, i, k)
        return out
    return jitted(f)


def _split_shape(shape, ax):
    """(pre, n, post): the sizes before, at and after axis ``ax`` of ``shape``."""
    pre = 1
    post = 1
    for i in range(len(shape)):
        if i < ax:
            pre *= shape[i]
        elif i > ax:
            post *= shape[i]
    return pre, shape[ax], post


def split_shape():
    return jitted(_split_shape)


_SHAPERS: dict = {}


def reduced_shape(nd: int, keepdims: bool):
    """A compiled ``f(shape, ax)``: ``shape`` without axis ``ax`` (1 there with
    ``keepdims``), for arrays of rank ``nd`` (a tuple of static length)."""
    key = (nd, keepdims)
    if key not in _SHAPERS:
        from numba.cpython.unsafe.tuple import tuple_setitem
        if keepdims:
            def f(shape, ax):
                out = shape
                for i in range(nd):         # (tuple_setitem checks no bounds: i, not ax)
                    if i == ax:
                        out = tuple_setitem(out, i, 1)
                return out
        elif nd == 1:
            def f(shape, ax):
                return ()
        else:
            def f(shape, ax):
                out = shape[1:]             # a tuple of nd - 1 sizes, each set below
                for i in range(nd - 1):
                    out = tuple_setitem(out, i, shape[i if i < ax else i + 1])
                return out
        _SHAPERS[key] = jitted(f)
    return _SHAPERS[key]


_PLANS: dict = {}


def axes_count(axis):
    """The number of axes in ``axis`` when it is the Numba type of a tuple of ints, else None."""
    types = _types()
    if isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer) for t in axis):
        return len(axis)
    return None


def axes_plan(nd: int, r: int):
    """A compiled ``f(shape, axis)`` for a tuple ``axis`` of ``r`` ints (negative ones
    too) reducing an array of rank ``nd``: ``(perm, back, pre, n, kept, rest)``, where
    ``np.transpose(a, perm)`` puts the reduced axes last (each group in its order),
    ``back`` undoes it, ``pre`` and ``n`` are the sizes of the kept and of the reduced
    axes together, ``kept`` is ``shape`` with 1 at each reduced axis (keepdims) and
    ``rest`` is ``shape`` without them.  Raises ValueError, as NumPy does, for an axis
    out of range or repeated."""
    key = (nd, r)
    if key not in _PLANS:
        _PLANS[key] = jitted(_axes_plan(nd, r))
    return _PLANS[key]


def _axes_plan(nd, r):
    from numba import literal_unroll, njit
    from numba.np.unsafe.ndarray import to_fixed_tuple
    if r:
        def marks(axis):
            red = np.zeros(nd, np.bool_)
            for ax in literal_unroll(axis):     # (the ints' types may differ)
                if ax < -nd or ax >= nd:
                    raise ValueError('axis is out of bounds for the array')
                red[ax % nd] = True
            return red
        marked = njit(marks)        # not inlined: Numba unrolls only in a function it compiles
    else:
        marked = jitted(lambda axis: np.zeros(nd, np.bool_))    # (no loop over an empty tuple)

    kept_axes = nd - r         # (to_fixed_tuple takes a constant: a name, not an expression)

    def f(shape, axis):
        red = marked(axis)
        perm = np.empty(nd, np.int64)
        back = np.empty(nd, np.int64)
        kept = np.empty(nd, np.int64)
        k = 0
        pre = 1
        n = 1
        for i in range(nd):
            kept[i] = 1 if red[i] else shape[i]
            if not red[i]:
                perm[k] = i
                back[i] = k
                k += 1
                pre *= shape[i]
        if k != nd - r:
            raise ValueError('repeated axis')
        for i in range(nd):
            if red[i]:
                perm[k] = i
                back[i] = k
                k += 1
                n *= shape[i]
        rest = np.empty(kept_axes, np.int64)
        for i in range(kept_axes):
            rest[i] = shape[perm[i]]
        return (to_fixed_tuple(perm, nd), to_fixed_tuple(back, nd), pre, n,
                to_fixed_tuple(kept, nd), to_fixed_tuple(rest, kept_axes))
    return f


def ones_shape(nd: int) -> tuple:
    return (1,) * nd


def signature_twin(signature: str, decide):
    """A twin for a callable whose parameter list is ``signature`` (Python source, as
    :func:`.registry.defrule` takes it; keyword-only markers are dropped, Numba has
    none).  ``decide(types)`` gets the Numba type of each parameter by name and
    returns a body function in Numba's NumPy subset taking the parameters
    positionally (or as ``*args``), or None; the twin compiles the body and calls it."""
    signature = signature.replace("*, ", "").replace("/, ", "")
    import ast as _ast
    fn = _ast.parse(f"def _({signature}): pass").body[0]
    names = [a.arg for a in fn.args.args]
    defaults = tuple(_ast.literal_eval(d) for d in fn.args.defaults)
    made: dict = {}         # the types -> the implementation: each is compiled once

    def make(types):
        key = tuple(types.items())
        if key not in made:
            body = decide(types)
            made[key] = None if body is None else function_from_source(
                "impl", names, [f"return _body({', '.join(names)})"], {"_body": _compiled(body)},
                defaults)
        return made[key]
    pairs = ", ".join(f"{n}={n}" for n in names)
    return function_from_source("twin", names, [f"return _make(dict({pairs}))"], {"_make": make},
                                defaults)


def _compiled(body):
    """``body`` compiled, inlined unless it takes ``*args`` (Numba inlines no such function)."""
    return _called(body) if body.__code__.co_flags & inspect.CO_VARARGS else jitted(body)


def stack3(x):
    """A stack of matrices (or one matrix) as a C-contiguous (batch, n, m) array."""
    return np.ascontiguousarray(x).reshape((-1, x.shape[-2], x.shape[-1]))


_BOUND: dict = {}
_CALLED: dict = {}


def _called(fn):
    """``fn`` compiled with Numba (once), called rather than inlined: a kernel for one
    matrix is typed once, not again in each loop that calls it."""
    if fn not in _CALLED:
        from numba import njit
        _CALLED[fn] = njit(cache=False)(fn)
    return _CALLED[fn]


def compiled_with(kernel, **bound):
    """``kernel`` compiled with Numba, the globals it names in ``bound`` bound to those
    functions compiled (a function Numba compiles cannot call a plain Python one).
    A kernel looping over a stack of matrices names :func:`stack3` (as ``_s3``, say)
    and the compiled kernel for one matrix; each pairing is compiled once."""
    key = (kernel,) + tuple(sorted(bound.items(), key=lambda kv: kv[0]))
    if key not in _BOUND:
        import types as _types
        g = dict(kernel.__globals__)
        g.update({name: _called(fn) for name, fn in bound.items()})
        _BOUND[key] = jitted(_types.FunctionType(
            kernel.__code__, g, kernel.__name__, kernel.__defaults__, kernel.__closure__))
    return _BOUND[key]
