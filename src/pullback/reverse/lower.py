"""Lowering: the reverse sweep's pseudo-statements -> Python statements.

Here, and only here, it is decided how each adjoint contribution is written:
a local temporary's one contribution defines it, a buffer is updated in place,
a tuple's cotangent goes through ``accumulate``, and ``dv = 0; dv += c``
becomes ``dv = c``.
"""
from __future__ import annotations

import ast

import numpy as np

from ..analysis.storage import BUFFER, LOCAL
from ..core import ir
from ..core.errors import InternalError
from ..core.runtime import accumulate, add_into, zeros_like
from .loopsums import defer_loop_sums
from .ops import (
    Accum,
    AsBuffer,
    Branch,
    BufferUpdate,
    InPlace,
    Reset,
    Restore,
    ReverseFor,
    Scatter,
    TupleItem,
    ZeroElement,
    assign,
    call,
    fold,
    helper_call,
    zero_adjoint,
)


def render(tr, code) -> list:
    """Turn pseudo-statements into Python, merging each reset with the first
    contribution that follows it (``dv = 0; dv += c`` becomes ``dv = c``)."""
    lowering = _Lowering(tr)
    for c in code:
        handler = _RENDER.get(type(c))
        if handler is None and isinstance(c, ast.AST):
            handler = _Lowering.statement
        if handler is None:
            raise InternalError(f"lowering has no rule for {type(c).__name__}")
        handler(lowering, c)
    return [s for s in lowering.out if s is not None]


class _Lowering:
    """One block being lowered; ``pending`` holds the resets that the next
    contribution may absorb (adjoint name -> index of its ``dv = 0.0`` in ``out``)."""

    def __init__(self, tr):
        self.tr = tr
        self.out: list = []
        self.pending: dict = {}
        self.zero: set = set()

    def reads(self, expr):
        """``expr`` reads these adjoints: their pending resets must stay."""
        for n in ir.atom_names(expr):
            self.pending.pop(n, None)
            self.zero.discard(n)

    def defined(self, dn):
        """``dn`` gets a value of its own here: no reset of it is pending any more."""
        self.pending.pop(dn, None)
        self.zero.discard(dn)

    def accum(self, c: Accum):
        tr, dn = self.tr, self.tr.d(c.name)
        self.reads(c.expr)
        storage = tr.storage[c.name]
        if storage.how == LOCAL:
            self.out.append(assign(dn, c.expr))      # its one contribution defines it
        elif dn in self.zero:
            idx = self.pending.pop(dn, None)
            if idx is not None:
                self.out[idx] = None
            self.zero.discard(dn)
            self.out.append(assign(dn, c.expr))
        elif storage.how == BUFFER:
            self.out.append(self.add_to_buffer(dn, c.expr))
        elif storage.items:
            self.out.append(assign(dn, call(tr.helper(accumulate, "accumulate"),
                                            ast.Name(dn), c.expr)))
        else:
            self.out.append(assign(dn, ast.BinOp(ast.Name(dn), ast.Add(), c.expr)))

    def add_to_buffer(self, dn, expr) -> ast.stmt:
        """``dn += expr``, or the backend's in-place form of ``expr`` (a helper's
        result added without building it first: ``dW += np.outer(g, h)``)."""
        tr = self.tr
        found = helper_call(tr, expr)
        into = tr.backend.accumulate_into(found[0]) if found is not None else None
        if into is not None:
            return ast.Expr(call(tr.helper(into, into.__name__), ast.Name(dn), *found[1]))
        return ast.AugAssign(ast.Name(dn, ast.Store()), ast.Add(), expr)

    def reset(self, c: Reset):
        tr = self.tr
        storage = tr.storage[c.name]
        if storage.how == LOCAL:
            return
        dn = tr.d(c.name)
        # An array's typed zero (Numba) is absorbed by a contribution that follows
        # it in the block, as a 0.0 is: the variable takes the contribution's array
        # type there instead of the zero's (a peephole: the reference keeps it).
        absorbed = not storage.typed_reset or (tr.optimise.peepholes and not storage.items)
        if storage.how == BUFFER or not absorbed:
            self.out.append(zero_adjoint(dn, zeros(tr, c.name)))
            self.defined(dn)
        else:
            self.pending[dn] = len(self.out)
            self.zero.add(dn)
            self.out.append(zero_adjoint(dn, zeros(tr, c.name) if storage.typed_reset
                                         else ast.Constant(0.0)))

    def restore(self, c: Restore):
        self.reads(ast.Name(c.name))
        tape = self.tr.tape
        self.out += tape.pop(c.name) if c.index is None else tape.pop_element(c.name, c.index)

    def in_place(self, c: InPlace):
        self.reads(c.g)
        tr = self.tr
        if tr.backend.add_into_views and _slices(tr, c.index):
            view = ast.Subscript(ast.Name(tr.d(c.name)), c.index, ast.Load())
            self.out.append(ast.Expr(call(tr.helper(add_into, "add_into"), view, c.g)))
            return
        self.out.append(ast.AugAssign(ast.Subscript(ast.Name(tr.d(c.name)), c.index,
                                                    ast.Store()), ast.Add(), c.g))

    def as_buffer(self, c: AsBuffer):
        dn = self.tr.d(c.name)
        self.defined(dn)
        self.out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name))))

    def buffer_update(self, c: BufferUpdate):
        self.reads(c.g)
        self.as_buffer(AsBuffer(c.name, c.helper))
        self.in_place(InPlace(c.name, c.index, c.g))

    def tuple_item(self, c: TupleItem):
        dn = self.tr.d(c.name)
        self.reads(c.g)
        self.defined(dn)
        self.reads(c.k)
        self.out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name), c.k, c.g)))

    def scatter(self, c: Scatter):
        dn = self.tr.d(c.name)
        self.reads(c.g)
        self.defined(dn)
        self.out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name),
                                        index_value(c.index), c.g)))

    def zero_element(self, c: ZeroElement):
        self.out.append(ast.Assign([ast.Subscript(ast.Name(self.tr.d(c.name)), c.index,
                                                  ast.Store())], ast.Constant(0.0)))

    def branch(self, c: Branch):
        self.pending.clear()
        self.zero.clear()
        self.out.append(ast.If(ast.Name(c.test), render(self.tr, c.body) or [ast.Pass()],
                               render(self.tr, c.orelse)))

    def reverse_for(self, c: ReverseFor):
        self.pending.clear()
        self.zero.clear()
        body = render(self.tr, c.body)
        before, after = [], []
        if c.sums and self.tr.backend.loop_sums and self.tr.optimise.loop_sums:
            before, body, after = defer_loop_sums(self.tr, body)
        body = body or [ast.Pass()]
        info = c.info
        if c.var is None:
            target, it = ast.Name("_", ast.Store()), call("range", ast.Name(info.n))
        else:
            # The same indices, last first.
            last = ast.BinOp(info.lo, ast.Add(), ast.BinOp(
                ast.BinOp(ast.Name(info.n), ast.Sub(), ast.Constant(1)), ast.Mult(), info.st))
            stop = ast.BinOp(info.lo, ast.Sub(), info.st)
            step = ast.UnaryOp(ast.USub(), info.st)
            target, it = ast.Name(c.var, ast.Store()), call("range", fold(last), fold(stop),
                                                            fold(step))
        self.out += before + [ast.For(target, it, body, [])] + after

    def statement(self, c: ast.stmt):
        self.out.append(c)       # already Python (a recomputation, a rule's call)


_RENDER = {
    Accum: _Lowering.accum, Reset: _Lowering.reset, Restore: _Lowering.restore,
    InPlace: _Lowering.in_place, AsBuffer: _Lowering.as_buffer, BufferUpdate: _Lowering.buffer_update,
    TupleItem: _Lowering.tuple_item, Scatter: _Lowering.scatter,
    ZeroElement: _Lowering.zero_element, Branch: _Lowering.branch,
    ReverseFor: _Lowering.reverse_for,
}


def _slices(tr, index) -> bool:
    """Whether ``a[index]`` is surely a view (an array), never one element: a slice
    on some axis, and slices or ints on the others."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(i, ast.Slice) for i in parts) and all(
        isinstance(i, ast.Slice) or ir.is_basic_scalar_index(i, tr.kind) for i in parts)


def zeros(tr, name) -> ast.expr:
    """A zero adjoint for ``name``'s current value."""
    k = tr.kinds.get(name)
    if k is not None and k.ndim == 0 and k.dtype in "fc":
        return ast.Constant(0.0)
    if k is not None and k.ndim is not None and k.ndim > 0 and k.dtype == "f":
        return call(ast.Attribute(ast.Name(tr.helper(np, "np")), "zeros_like", ast.Load()),
                     ast.Name(name))
    return call(tr.helper(zeros_like, "zeros_like"), ast.Name(name))


def index_value(index) -> ast.expr:
    """An index as a value that can be passed to a helper: ``a:b`` inside
    ``x[...]`` becomes ``slice(a, b, None)`` outside it."""
    if isinstance(index, ast.Slice):
        return call("slice", *[p if p is not None else ast.Constant(None)
                               for p in (index.lower, index.upper, index.step)])
    if isinstance(index, ast.Tuple):
        return ast.Tuple([index_value(i) for i in index.elts], ast.Load())
    return index
