"""The Numba backend: typed-array tapes and ``numba.njit`` of the generated code.

One typed array per saved variable with its own counter, grown by doubling
(amortised O(1), no per-push allocation) and reserved from the trip count
before a ``range`` loop, so the compiled loop is as tight as a hand-written
adjoint that stores into an array.  Numba itself is imported only when this
backend compiles something.  The tape writes its pushes, pops and reservations
as AST nodes (builders of :mod:`pullback.reverse.ops`), never as source text.
"""
from __future__ import annotations

import ast
import copy
import types

import numpy as np

from ..core import numbacache
from ..core.errors import NumbaCompileError
from ..core.kinds import NUMPY_DTYPES
from ..core.runtime import reserve, snapshot, with_shape
from ..reverse.ops import (
    Reserve,
    assign,
    attribute,
    augment,
    call,
    expr_stmt,
    plus,
    store,
    subscript,
    tape_op,
)
from ..rules import forms, registry
from . import (
    in_place,  # noqa: F401  (registers the in-place forms of rule helpers)
    object_mode,
)
from .base import Backend, TapeNeeds
from .lazy_numba import LazyNumba
from .python import PythonTape


class NumbaBackend(Backend):
    name = "numba"
    fixed_types = True
    recompute_array_reads = True
    reruns_independent_loops = True
    list_buffers = False
    runtime_recursion = False
    loop_sums = False
    add_into_views = True
    sequences_as_arrays = True
    freezes_globals = True

    def accumulate_into(self, helper):
        return forms.accumulating_form(helper)

    def tape(self, needs: TapeNeeds):
        return NumbaTape(needs)

    def bind_helper(self, obj):
        return _jit_helper(obj)

    def finish(self, fn, src, filename, origins, live=()):
        return LazyNumba(fn, src, filename, origins, live)

    def primal_twin(self, callee, method, call, kind=None, result=None):
        fn = registry.method(method) if method is not None else callee
        if object_mode.spec(fn, len(call.args)) is not None and not call.keywords:
            return object_mode.stub(fn)     # Python through and through (grad(f))
        if _users_plain_function(fn):
            # Bound as a helper: compiled with numba.njit, as its VJP is, where Numba
            # compiles it for these kinds (or it has a twin: an object-mode stub); else
            # called through object mode.
            kinds = [kind(a) for a in call.args] if kind is not None else None
            declared = object_mode.result_kind(result, kinds) \
                if result is not None and kinds is not None else None
            if forms.twin(fn) is not None or call.keywords or declared is None \
                    or object_mode.compiles(_jit_helper(fn), kinds):
                return fn
            return object_mode.stub(fn, ((declared,), False))
        twin = forms.twin(fn) if fn is not None else None
        if twin is None and _library_python_function(fn) and result is not None \
                and kind is not None and method is None:
            # No twin, and Numba does not compile a library's Python (SciPy's
            # solve_triangular): called through object mode when the transform knows
            # its result's kind (the rule's), never a guess.
            declared = object_mode.result_kind(result, ())
            if declared is not None:
                site = (len(call.args), tuple(k.arg for k in call.keywords)) \
                    if call.keywords else None
                return object_mode.stub(fn, ((declared,), False), site)
        if len(call.args) + len(call.keywords) + (method is not None) <= 1 \
                and not forms.twin_always(fn) and not _array_call(fn, call, kind):
            return None     # f(a): Numba compiles the NumPy function itself
        return None if twin is None or twin is forms.PLAIN else _primal_stub(fn, twin)

    def check_rule(self, tr, s, rule, bound):
        """A rule whose derivative calls one of pullback's array-API helpers that has
        no Numba twin is refused here, naming it, before Numba sees the code; so is
        a method of a ufunc (``np.maximum.accumulate``), which Numba does not compile."""
        if isinstance(getattr(rule.fn, "__self__", None), np.ufunc):
            raise tr.error(
                s, f"{rule.name}, a method of a ufunc, under the Numba backend (jit=True): "
                "Numba does not compile the methods of ufuncs (accumulate, reduce, outer, at)",
                f"Use jit=False, or write the call as a function of your own compiled with "
                f"numba.njit (a loop) and register the rule on that function instead of "
                f"{rule.name}.", cls=NumbaCompileError)
        for obj in rule.helpers.values():
            # A helper that says why Numba cannot run it (pullback.custom_vjp's VJP when
            # its fwd and bwd are plain Python): refused here, at the user's call.
            refusal = getattr(obj, "numba_refusal", None)
            if refusal is not None and getattr(obj, "object_mode", None) is None:
                raise tr.error(s, refusal[0], refusal[1], cls=NumbaCompileError)
        if rule.vjp_tuple is not None:
            _user_vjp_or_object_mode(tr, s, rule)
            return          # a user's VJP function: Numba compiles it as it is, or says why
        for pname, template in rule.adjoints.items():
            if not tr.is_active(bound.get(pname)):
                continue
            for node in ast.walk(template):
                obj = rule.helpers.get(node.id) if isinstance(node, ast.Name) else None
                if _needs_twin(obj) and forms.twin(obj) is None \
                        and not _cotangent_through_object_mode(obj, template, pname):
                    raise tr.error(
                        s, f"the derivative of {rule.name} (with respect to {pname!r}) under "
                        f"the Numba backend (jit=True): its helper {node.id} has no compiled "
                        "(Numba) twin",
                        "Use jit=False, or register a Numba twin for the helper with "
                        "pullback.rules.forms.numba_twin beside it.", cls=NumbaCompileError)

    def check_index(self, tr, s, index_kinds):
        """Numba indexes with a boolean mask of one dimension only (one of more fails
        inside Numba, with no message): refused here, located."""
        if any(k.dtype == "b" and k.ndim is not None and k.ndim > 1 for k in index_kinds):
            raise tr.error(s, "indexing with a boolean mask of more than one dimension under "
                           "the Numba backend (jit=True): Numba takes 1-D masks only",
                           "Index the flattened arrays, `a.ravel()[mask.ravel()]`, or use "
                           "np.where(mask, new, a) for a masked write, or use jit=False.",
                           cls=NumbaCompileError)

    def primal(self, f, py_func):
        return f


def _cotangent_through_object_mode(helper, template, pname) -> bool:
    """A helper with no twin whose call is the whole cotangent of ``pname``
    (``gradient_vjp(g, f, ...)``) gives a cotangent like its argument ``pname``: the
    compiled derivative calls it through object mode (declared so here), slower but
    running.  A helper inside a larger expression has no known result kind, and one
    declared by another rule with ``pname`` elsewhere is not declared again."""
    if callable(getattr(helper, "object_mode", None)):
        return True     # it says what its calls give (nesting's)
    if not (isinstance(template, ast.Call) and isinstance(template.func, ast.Name)
            and not template.keywords):
        return False
    at = [k for k, a in enumerate(template.args) if isinstance(a, ast.Name) and a.id == pname]
    if not at:
        return False
    declared = object_mode.spec(helper, len(template.args))
    if declared is not None:
        return declared == ((at[0],), False)
    object_mode.declare(helper, (at[0],), False)
    return True


def _user_vjp_or_object_mode(tr, s, rule) -> None:
    """A user's VJP on a plain Python function that Numba does not compile for this
    call's kinds (its cotangent and result of the result's kind) is called through
    object mode, its cotangents like the call's arguments."""
    vjp = rule.helpers.get("__vjp__")
    e = getattr(s, "expr", None)
    if not isinstance(vjp, types.FunctionType) or not isinstance(e, ast.Call) or e.keywords \
            or getattr(s, "target", None) is None:
        return
    result = tr.kind(ast.Name(s.target))
    kinds = [result, result] + [tr.kind(a) for a in e.args]
    if not object_mode.compiles(_jit_helper(vjp), kinds):
        n = min(max(rule.cotangents, 1), len(e.args))
        object_mode.declare(vjp, tuple(range(2, 2 + n)), rule.cotangents > 1)


def _users_plain_function(fn) -> bool:
    """A plain Python function (not ``numba.njit``) that the user gave a rule with
    ``pullback.rule``: the compiled derivative calls it compiled with Numba."""
    if not isinstance(fn, types.FunctionType):
        return False
    rule = registry.lookup(fn)
    return rule is not None and rule.call_signature is not None


def _library_python_function(fn) -> bool:
    """A library's function with a rule that Numba does not compile: one written in
    Python (SciPy's), or a NumPy function Numba does not implement (``np.gradient``)."""
    if isinstance(fn, np.ufunc) or registry.lookup(fn) is None:
        return False
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("numpy"):
        return not _numba_implements(fn)
    return isinstance(fn, types.FunctionType) and not module.startswith("pullback")


_IMPLEMENTS: dict = {}      # id(a NumPy function) -> (it, whether Numba implements it)


def _numba_implements(fn) -> bool:
    """Whether Numba has an implementation of the NumPy function ``fn`` (its typing
    registry, complete once the target context is initialised)."""
    hit = _IMPLEMENTS.get(id(fn))
    if hit is None or hit[0] is not fn:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target
        # Under Numba's lock, as its own compiles refresh: one may run in the background.
        with global_compiler_lock:
            cpu_target.target_context.refresh()
            known = cpu_target.typing_context._lookup_global(fn) is not None
        hit = _IMPLEMENTS[id(fn)] = (fn, known)
    return hit[1]


def _array_call(fn, call, kind) -> bool:
    """``fn(a)`` of an array ``a`` (or of a kind not known before it runs), where
    ``fn``'s twin replaces such calls (``forms.numba_twin(arrays=True)``)."""
    if not forms.twin_arrays(fn) or len(call.args) != 1:
        return False
    return kind is None or kind(call.args[0]).ndim != 0




class NumbaTape(PythonTape):
    """One tape per saved variable (and per array whose elements or rows are saved).

    A number of a known dtype goes to a typed array with its own counter; anything
    else (an array, a tuple, a value whose kind is not known before it runs) to a
    list, whose item type Numba infers from the appends.  Tapes are keyed by the
    saved variable, or ``a[]`` for elements of ``a`` and ``a[:]`` for its rows and
    slices; their names are identifiers made from the key."""

    def __init__(self, needs: TapeNeeds):
        super().__init__(needs)
        self.tapes: dict[str, tuple] = {}

    def _tape(self, key):
        if key not in self.tapes:
            stem = key.lstrip("_").replace("[]", "_items").replace("[:]", "_rows")
            self.tapes[key] = (self.needs.names.fresh(f"_tape_{stem}_"),
                               self.needs.names.fresh(f"_k_{stem}_"))
        return self.tapes[key]

    def between(self) -> list:
        return []

    def replayed(self, forward: list, reverse: list) -> list:
        """A segment of a checkpointed loop run again with its tape, then reversed:
        each tape's counter comes back to where it was."""
        return forward + reverse

    def _dtype(self, key):
        """The typed-array dtype of a tape of numbers, None for a list tape."""
        if key.endswith("[:]"):
            return None
        kind = self.needs.kinds.get(key[:-2] if key.endswith("[]") else key)
        if key.endswith("[]"):
            return NUMPY_DTYPES.get(getattr(kind, "dtype", "f"), np.float64)
        if kind is None or kind.ndim != 0:
            return None
        return NUMPY_DTYPES.get(kind.dtype)

    def _shape_only(self, key):
        """The rank of an array whose value the reverse sweep never reads, only its
        shape (``unbroadcast(g, x)``), else None.  Its tape keeps the shape (rank
        ints in a typed array), not a reference to the array or a copy: a list append
        and pop of an array per iteration cost more than the arithmetic of a short
        loop body."""
        k = self.needs.kinds.get(key)
        if key.endswith("]") or k is None or k.ndim is None or k.ndim <= 0 \
                or key in self.needs.values_read:
            return None
        return k.ndim

    def setup_code(self) -> list:
        """Each typed tape starts as this thread's workspace array of the previous call
        (``_ws``, see :class:`.lazy_numba.LazyNumba`), list tapes empty."""
        out = []
        self._workspace = []
        for key, (tape, k) in self.tapes.items():
            dtype = np.int64 if self._shape_only(key) else self._dtype(key)
            if dtype is None:
                out.append(assign(tape, ast.List([], ast.Load())))
                continue
            out += [assign(tape, subscript("_ws", len(self._workspace))),
                    assign(k, ast.Constant(0))]
            self._workspace.append((tape, dtype))
        return out

    def workspace(self) -> list:
        """(name, dtype) of each typed tape, in the order of ``_ws``: the generated
        function takes them as its workspace and returns them, grown, for the next
        call (known once the setup code is written)."""
        return list(getattr(self, "_workspace", []))

    def element_key(self, array, index):
        return array + ("[]" if self.needs.selects_element(array, index) else "[:]")

    def reserve(self, counts: dict, trips: ast.expr) -> list:
        """``tape = reserve(tape, k + trips * c)`` for each typed tape the loop pushes
        ``c`` numbers to per iteration."""
        out = []
        r = self.needs.helper(reserve, "reserve")
        for key, c in counts.items():
            rank = self._shape_only(key)
            if self._dtype(key) is None and not rank:
                continue
            c *= rank or 1
            tape, k = self._tape(key)
            need = copy.deepcopy(trips)
            if c != 1:
                need = ast.BinOp(need, ast.Mult(), ast.Constant(c))
            out.append(assign(tape, call(r, ast.Name(tape), ast.BinOp(ast.Name(k), ast.Add(), need))))
        return [tape_op(Reserve, "", None, out)] if out else []

    def push_code(self, name):
        tape, k = self._tape(name)
        rank = self._shape_only(name)
        if rank:
            return self._store(name, tape, k, [subscript(attribute(name, "shape"), j)
                                               for j in range(rank)])
        if self._dtype(name) is None:
            return [expr_stmt(call(attribute(tape, "append"), ast.Name(name)))]
        return self._store(name, tape, k, [ast.Name(name)])

    def _store(self, key, tape, k, items):
        """``tape[k] = item; k += 1`` for each item, growing the tape first unless
        the loop already reserved room for them."""
        n = len(items)
        out = []
        if key not in self.reserved:
            size = subscript(attribute(tape, "shape"), 0)
            test = ast.Compare(plus(k, n), [ast.Gt()], [size]) if n > 1 else \
                ast.Compare(ast.Name(k), [ast.Eq()], [size])
            grow = assign(tape, call(self.needs.helper(reserve, "reserve"), ast.Name(tape),
                                     plus(k, n)))
            out.append(ast.If(test, [grow], []))
        out += [store(subscript(tape, plus(k, j)), item) for j, item in enumerate(items)]
        return out + [augment(k, ast.Add(), ast.Constant(n))]

    def pop_code(self, name):
        tape, k = self._tape(name)
        rank = self._shape_only(name)
        if rank:
            shape = ast.Tuple([subscript(tape, plus(k, j)) for j in range(rank)], ast.Load())
            return [augment(k, ast.Sub(), ast.Constant(rank)),
                    assign(name, call(self.needs.helper(with_shape, "with_shape"),
                                      ast.Name(name), shape))]
        if self._dtype(name) is None:
            return [assign(name, call(attribute(tape, "pop")))]
        return [augment(k, ast.Sub(), ast.Constant(1)), assign(name, subscript(tape, k))]

    def push_element_code(self, array, index):
        key = self.element_key(array, index)
        tape, k = self._tape(key)
        item = subscript(array, copy.deepcopy(index))
        if self._dtype(key) is None:
            # A row or slice is a view of the array: save a copy (where the rank is not
            # known, snapshot() leaves a number as it is).
            ndim = getattr(self.needs.kinds.get(array), "ndim", None)
            saved = call(attribute(item, "copy")) if ndim is not None and ndim >= 0 else \
                call(self.needs.helper(snapshot, "snapshot"), item)
            return [expr_stmt(call(attribute(tape, "append"), saved))]
        return self._store(key, tape, k, [item])

    def pop_element_code(self, array, index):
        key = self.element_key(array, index)
        tape, k = self._tape(key)
        item = subscript(array, index)
        if self._dtype(key) is None:
            return [store(item, call(attribute(tape, "pop")))]
        return [augment(k, ast.Sub(), ast.Constant(1)), store(item, subscript(tape, k))]


def _needs_twin(obj) -> bool:
    """pullback's own rule helpers are written against the array API: Numba compiles
    them only through a twin, or when they are marked plain."""
    return isinstance(obj, types.FunctionType) and \
        (getattr(obj, "__module__", None) or "").startswith("pullback.")


_STUBS: dict = {}


def _primal_stub(fn, twin):
    """The function the forward sweep calls for ``fn`` under Numba: it calls ``fn``
    from Python, and its twin is its Numba implementation.  A twin registered again
    for ``fn`` (a ``custom_vjp``'s new ``fwd``) gets a new stub: Numba keeps the
    overload it compiled for the old one."""
    if id(fn) not in _STUBS or forms.twin(_STUBS[id(fn)][1]) is not twin:
        def stub(*args, **kwargs):
            return fn(*args, **kwargs)
        stub.__name__ = stub.__qualname__ = f"{getattr(fn, '__name__', 'primal')}_numba"
        # The tangent program calls the stub, and a Hessian differentiates that program
        # again: registry.lookup follows py_func (as for a Numba dispatcher) to fn's rule.
        stub.py_func = fn
        forms.numba_twin(stub)(twin)
        _STUBS[id(fn)] = (fn, stub)
    return _STUBS[id(fn)][1]


_JITTED: dict = {}


def _jit_helper(v):
    """Plain Python helper functions become Numba functions under the Numba backend;
    a helper with a twin is passed as it is (Numba compiles the twin), a primitive
    with a twin as its stub."""
    from . import numba_twins
    if object_mode.called_through(v):
        v = object_mode.stub(v)     # a helper that runs Python (nesting's, a user's VJP)
    twin = forms.twin(v)
    if twin is not None and twin is not forms.PLAIN and registry.lookup(v) is not None \
            and not numba_twins._own(v):
        v = _primal_stub(v, twin)   # a primitive a template calls: as the forward sweep does
    numba_twins.install()
    if isinstance(v, types.FunctionType) and (twin is None or twin is forms.PLAIN):
        if id(v) not in _JITTED:
            _JITTED[id(v)] = (v, numbacache.njit(v))
        return _JITTED[id(v)][1]
    return v


NUMBA = NumbaBackend()
