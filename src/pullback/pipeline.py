"""The pipeline: the transform's stages in order, and the cache of their results.

    parse -> fence -> normalize -> loop bookkeeping -> kinds -> the primal as the
    backend runs it -> activity -> (reverse transform: aliasing, adjoints,
    recompute, saves, sweeps, lowering, cleanup, fusion; or the forward
    transform) -> emit -> backend

Only the stages up to the primal's lowering rewrite the IR, each returning a new
one; after it the IR and the kinds are final, activity runs on them, and nothing
edits the three again.

``derivative`` runs them for one function, set of differentiated arguments,
argument kinds and backend, and caches the result; a cached derivative is
dropped when a global or closure value it inlined changes.
"""
from __future__ import annotations

import ast
import dataclasses
import threading
import types
import warnings
from dataclasses import dataclass, field

from .analysis.activity import KindInference, activity, refuse_complex
from .backends.numba import NUMBA
from .backends.primal import lower_primal
from .backends.python import PYTHON
from .core import ir, optimise
from .core.errors import InternalError, PerformanceWarning, user_stacklevel
from .core.kinds import MISSING, kind_of_value
from .core.runtime import CALL_VJP
from .emit import build, build_forward, passed_in, rebind
from .forward.transform import forward
from .frontend.bookkeeping import insert_bookkeeping
from .frontend.normalize import normalize
from .frontend.parse import parse_function, unwrap
from .frontend.resolve import value_lookup
from .reverse.transform import ReverseTransform
from .rules import registry

# Bumped by clear_cache: a derivative made before it is stale, even one that a
# gradient function holds (it asks for a new one at its next call).
_EPOCH = [0]


@dataclass
class Compiled:
    fn: object                # the generated callable (value, grads) = fn(*args, _seed)
    source: str
    dependencies: list        # (namespace, key, object) that must not have changed
    wrt: tuple
    closure: dict = field(default_factory=dict)   # the user's free variable -> the cell fn reads
    pins: tuple = ()          # what the cache key names by id(): closure values, globals
    rebound: dict = field(default_factory=dict)   # Numba: cell ids -> this derivative rebound
    epoch: int = field(default_factory=lambda: _EPOCH[0])   # when it was made
    result_items: int | None = None   # the number of items of a tuple result, if known
    result_ndim: int | None = None    # the rank of the result, if known (-1 or None: not)
    # A pytree result (core/trees.py): fn returns the tuple of its leaves.
    out_tree: object = None
    lines: object = None      # where the generated lines come from (emit.LineMap)
    # The generated code run as Python, for compiled code (Numba's LazyNumba.as_python):
    # what names the user's line of an error the compiled code raises.
    python: object = None

    @property
    def stale(self) -> bool:
        """Made before the last :func:`clear_cache` (a rule changed since)."""
        return self.epoch != _EPOCH[0]


_CACHE: dict = {}


def clear_cache() -> None:
    """Forget every derivative, and mark those already handed out stale (a rule
    registered or removed may change what a call does).  Called by the registry
    whenever a user's rule comes or goes."""
    with _LOCK:
        _EPOCH[0] += 1
        _CACHE.clear()


def choose_backend(fn, jit, bound: bool = False):
    """Numba for a ``numba.njit`` function or ``jit=True``; plain Python otherwise.

    A bound method (``bound``: ``fn`` is its function, the object passed first)
    runs on the Python backend, with one PerformanceWarning naming it: Numba cannot
    type the object, so compiled code would fail, or freeze what it reads of it."""
    _, is_numba = unwrap(fn)
    backend = (NUMBA if is_numba else PYTHON) if jit is None else (NUMBA if jit else PYTHON)
    bound = bound or isinstance(fn, types.MethodType)
    if bound and backend is NUMBA:
        _warn_bound_method(getattr(fn, "__func__", fn))
        return PYTHON
    return backend


_WARNED_METHODS: set = set()


def _warn_bound_method(fn) -> None:
    code = getattr(fn, "__code__", None)
    if code is None or code in _WARNED_METHODS:
        return
    _WARNED_METHODS.add(code)
    warnings.warn(
        f"{fn.__qualname__} ({code.co_filename}, line {code.co_firstlineno}) is a bound "
        "method: under jit=True its derivative runs on the Python backend, as Numba cannot "
        "compile code that reads the object it is bound to. For compiled code, write a "
        "function that takes what it reads of the object as arguments.",
        PerformanceWarning, stacklevel=user_stacklevel())


@dataclass(frozen=True)
class KindOf:
    """A dependency on the kind of a value read at call time (a global or closure
    cell holding data), not on the value itself: the derivative was made for it."""
    kind: object


@dataclass(frozen=True)
class ValueOf:
    """A dependency on the value of an int, bool or tuple of them read from a global
    or closure cell, which compiled code holds as a constant (:func:`.emit.passed_in`)."""
    value: object


def _holds(obj, now) -> bool:
    if type(obj) is KindOf:
        return kind_of_value(now) == obj.kind
    if type(obj) is ValueOf:
        return type(now) is type(obj.value) and now == obj.value
    return False


def still_valid(compiled: Compiled) -> bool:
    """Whether every global and closure value the derivative inlined is unchanged,
    every one it reads at call time still has the kind it was made for, and every
    constant it compiled in still has its value."""
    for ns, key, obj in compiled.dependencies:
        if key is None:
            try:
                now = ns.cell_contents
            except ValueError:
                return False
        else:
            now = ns.get(key, MISSING)
        if now is not obj and not _holds(obj, now):
            return False
    return True


def _read_dependencies(read) -> list:
    """What a derivative assumes of the data it reads from the user's globals and
    closure cells (:func:`.emit.live_values`): its kind, for data read at call time,
    or the value of an int, bool or tuple of them (a constant of compiled code, or a
    value that decided a result's rank)."""
    out = []
    for _, holder, key in read:
        v = holder.cell_contents if key is None else holder[key]
        # An int or bool may be compiled in (Numba) or have decided a rank (axis=):
        # its value, on both backends.
        out.append((holder, key, KindOf(kind_of_value(v)) if passed_in(v) else ValueOf(v)))
    return out




def _closure_key(cells) -> tuple[tuple, tuple]:
    """What a derivative assumes about the closure cells it was generated for.  Numbers
    and arrays, and tuples of them, are read live, so only their kind matters; anything else (a function that
    was inlined, an object whose attributes were read) by identity, pinned so that its
    id() cannot be reused while the cache entry exists."""
    key, pins = [], []
    for cell in cells:
        try:
            v = cell.cell_contents
        except ValueError:
            key.append(None)
            continue
        k = kind_of_value(v)
        if k.dtype in "bifct" or k.items is not None:     # a tuple of numbers and arrays too
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
        fn = rebind(c.fn, c.source, c.closure, closure, backend)
        out = Compiled(fn, c.source, deps, c.wrt, closure, c.pins, result_items=c.result_items,
                       result_ndim=c.result_ndim, out_tree=c.out_tree, lines=c.lines,
                       python=getattr(fn, "as_python", None))
        if not isinstance(out.fn, types.FunctionType):
            c.rebound[ids] = out        # keeps the cells alive, so their ids stay theirs
    return out


# One transform at a time: CPython (3.11) can fail with "AST constructor recursion
# depth mismatch" when two threads build ASTs at once (Dask workers running as
# threads), and the cache is shared.  Re-entrant: a recursive function's
# derivative asks for its own while it runs.
_LOCK = threading.RLock()


registry.on_change(clear_cache)


def derivative(f, wrt_index: tuple, kinds: tuple, backend, call_vjp=None,
               mode: str = "reverse", structures: tuple = (), has_aux: bool = False) -> Compiled:
    """Generate (or fetch from the cache) the derivative of f for these argument kinds.

    ``call_vjp(f, g, *args)``, the API's run-time vjp of a call, is what the
    derivative of a recursive call calls (see :data:`.core.runtime.CALL_VJP`).
    Closures of one code object share a derivative: it is rebound to each closure's
    cells, which it reads when it runs, as the primal does.  ``mode="forward"``
    gives the tangent program instead (:mod:`.forward`): ``fn(*args, *tangents)``
    returns the value and its tangent; ``mode="pattern"`` that program made to run on
    index sets (:mod:`.core.index_sets`), on the Python backend.  ``structures``: per parameter, the
    structure of its pytree (:mod:`.core.trees`) or None; the derivative then takes
    each pytree's leaves in its place, and ``wrt_index`` and ``kinds`` count leaves.
    ``has_aux``: f returns ``(loss, aux)`` and only the loss is differentiated
    (nothing flows from the aux).  Thread-safe."""
    with _LOCK:
        return _derivative(f, wrt_index, kinds, backend, call_vjp, mode, tuple(structures),
                           has_aux)


def _derivative(f, wrt_index: tuple, kinds: tuple, backend, call_vjp, mode: str = "reverse",
                structures: tuple = (), has_aux: bool = False) -> Compiled:
    py, _ = unwrap(f)
    cells = getattr(py, "__closure__", None) or ()
    closure_key, pins = _closure_key(cells)
    namespace = getattr(py, "__globals__", None)    # the derivative reads these globals
    pins += (namespace,)
    optimisations = optimise.current()
    key = (getattr(py, "__code__", py), wrt_index, kinds, backend, closure_key, id(namespace),
           optimisations, mode, structures, has_aux)
    hit = _CACHE.get(key)
    if hit is not None and all(a is b for a, b in zip(hit.pins, pins)):
        hit = _rebound(hit, py, backend)
        if still_valid(hit):
            return hit
    p = prepare(py, wrt_index, kinds, backend, structures, has_aux)
    if mode in ("forward", "pattern"):
        made = forward(p.fn, p.kinds, p.active, p.wrt, p.parsed.at_line, p.lookup, p.helpers,
                       backend, pattern=mode == "pattern")
        fname = f"{p.fn.name}_{'jvp' if mode == 'forward' else 'pattern'}".replace(
            "<", "").replace(">", "")
        compiled_fn, src, read, lines = build_forward(made, fname, p.parsed.globals,
                                                      p.parsed.closure, p.externals, backend)
    else:
        gen = ReverseTransform(p.fn, p.kinds, p.active, p.wrt, backend, p.parsed.at_line,
                               p.lookup, optimisations, p.helpers).run()
        gen = dataclasses.replace(gen, helpers={
            name: _run_time(obj, call_vjp) for name, obj in gen.helpers.items()})
        fname = f"{p.fn.name}_grad".replace("<", "").replace(">", "")
        compiled_fn, src, read, lines = build(gen, fname, p.parsed.globals, p.parsed.closure,
                                              p.externals, backend)
    compiled = Compiled(compiled_fn, src, list(p.dependencies) + _read_dependencies(read), tuple(p.wrt),
                        dict(p.parsed.closure), pins,
                        result_items=_result_items(p.fn, p.kinds),
                        result_ndim=_result_ndim(p.fn, p.kinds), out_tree=p.out_tree,
                        lines=dataclasses.replace(lines, user_file=p.parsed.filename,
                                                  function=p.parsed.fn.__qualname__),
                        python=getattr(compiled_fn, "as_python", None))
    _CACHE[key] = compiled
    return compiled


@dataclass(frozen=True)
class Prepared:
    """What both transforms read: the final IR, its kinds and active set, and
    where its names come from."""
    parsed: object
    fn: ir.Function
    kinds: types.MappingProxyType
    active: frozenset
    wrt: list
    lookup: object
    helpers: object           # the helper names the stages chose (core.names.HelperNames)
    externals: dict
    dependencies: list
    out_tree: object = None   # the structure of a pytree result (core/trees.py)


def prepare(py, wrt_index: tuple, kinds: tuple, backend, structures: tuple = (),
            has_aux: bool = False) -> Prepared:
    """The stages every transform shares: parse, normalize, loop bookkeeping, kinds,
    the primal as the backend runs it, activity."""
    parsed = parse_function(py)
    fn_ir, norm = normalize(parsed, structures, has_aux)
    lookup = value_lookup(parsed, norm.externals)
    book = insert_bookkeeping(fn_ir, lookup, backend.calls_as_is)
    kinds_env = KindInference(book.fn, dict(zip(book.fn.params, kinds)), lookup, book.kinds).run()
    low = lower_primal(book.fn, kinds_env, backend, lookup, parsed.at_line, book.helpers)
    # Final from here on: read-only, so that no later step can edit them.
    fn_ir, kinds_env = low.fn, types.MappingProxyType({**kinds_env, **low.kinds})
    wrt = [fn_ir.params[i] for i in wrt_index]
    active = frozenset(activity(fn_ir, kinds_env, set(wrt), dict(norm.aux_tuples)))
    refuse_complex(fn_ir, kinds_env, active, parsed.fn.__qualname__, parsed.at_line)
    return Prepared(parsed, fn_ir, kinds_env, active, wrt, lookup, low.helpers,
                    norm.externals, list(norm.dependencies), norm.out_tree)


def _run_time(helper, call_vjp):
    """The object the generated code's namespace binds for ``helper``."""
    if helper is CALL_VJP:
        if call_vjp is None:
            raise InternalError("a recursive call's derivative needs the run-time vjp: "
                                "pass call_vjp to derivative()")
        return call_vjp
    return helper


def _result_items(fn_ir, kinds_env) -> int | None:
    """How many items the function returns, when it is known to return a tuple."""
    for s in ir.walk(fn_ir.body):
        if isinstance(s, ir.Return) and isinstance(s.value, ast.Name):
            items = getattr(kinds_env.get(s.value.id), "items", None)
            if items is not None:
                return len(items)
    return None


def _result_ndim(fn_ir, kinds_env) -> int | None:
    """The rank of the function's result as kind inference knows it (the body ends
    in its one Return): an int, -1 when not known, None when it is no number."""
    ret = fn_ir.body[-1] if fn_ir.body else None
    if isinstance(ret, ir.Return) and isinstance(ret.value, ast.Name):
        k = kinds_env.get(ret.value.id)
        return k.ndim if k is not None else -1
    return -1
