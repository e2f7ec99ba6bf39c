"""Lowering: the reverse sweep's pseudo-statements -> Python statements.

Here, and only here, it is decided how each adjoint contribution is written:
a local temporary's one contribution defines it, a buffer is updated in place,
a tuple's cotangent goes through ``accumulate``, and ``dv = 0; dv += c``
becomes ``dv = c``.
"""
from __future__ import annotations

import ast

from ..core import ir
from ..core.errors import InternalError
from ..core.kinds import Kind
from ..core.runtime import accumulate, zeros_like
from .ops import (Accum, AsBuffer, Branch, BufferUpdate, InPlace, Reset, Restore, ReverseFor,
                  Scatter, TupleItem, ZeroElement, assign, call, fold)

import numpy as np


class _Render:
    """The state of rendering one block: the output so far, and the resets that the
    next contribution to their adjoint may absorb."""

    def __init__(self, tr):
        self.tr = tr
        self.out = []
        self.pending = {}       # adjoint name -> index in out of its reset
        self.zero = set()       # adjoints known to be zero (reset, nothing added since)

    def reads(self, expr):
        """An adjoint read here is committed: its reset stays as it is."""
        for n in ir.atom_names(expr):
            self.pending.pop(n, None)
            self.zero.discard(n)

    def rebinds(self, dn):
        """``dn`` is rebound from its current value: its reset stays."""
        self.pending.pop(dn, None)
        self.zero.discard(dn)

    def accum(self, c: Accum):
        tr, dn = self.tr, self.tr.d(c.name)
        self.reads(c.expr)
        if c.name in tr.local_temps:
            self.out.append(assign(dn, c.expr))         # its one contribution defines it
        elif dn in self.zero:
            idx = self.pending.pop(dn, None)
            if idx is not None:
                self.out[idx] = None
            self.zero.discard(dn)
            self.out.append(assign(dn, c.expr))
        elif tr.buffer(c.name):
            self.out.append(ast.AugAssign(ast.Name(dn, ast.Store()), ast.Add(), c.expr))
        elif tr.kinds.get(c.name, Kind(0, "f")).ndim is None:
            self.out.append(assign(dn, call(tr.helper(accumulate, "accumulate"),
                                            ast.Name(dn), c.expr)))
        else:
            self.out.append(assign(dn, ast.BinOp(ast.Name(dn), ast.Add(), c.expr)))

    def reset(self, c: Reset):
        tr = self.tr
        if c.name in tr.local_temps:
            return
        dn = tr.d(c.name)
        if tr.buffer(c.name) or (tr.backend.fixed_types and
                                 tr.kinds.get(c.name, Kind(0, "f")).ndim != 0):
            tr.read(ast.Name(c.name), value=False)
            self.out.append(assign(dn, zeros(tr, c.name)))
            self.rebinds(dn)
        else:
            self.pending[dn] = len(self.out)
            self.zero.add(dn)
            self.out.append(assign(dn, ast.Constant(0.0)))

    def restore(self, c: Restore):
        self.reads(ast.Name(c.name))
        if c.index is None:
            self.out += self.tr.tape.pop(c.name)
        else:
            self.out += self.tr.tape.pop_element(c.name, c.index)

    def in_place(self, c: InPlace):
        self.reads(c.g)
        self.out.append(ast.AugAssign(ast.Subscript(ast.Name(self.tr.d(c.name)), c.index,
                                                    ast.Store()), ast.Add(), c.g))

    def as_buffer(self, c: AsBuffer):
        dn = self.tr.d(c.name)
        self.rebinds(dn)
        self.out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name))))

    def buffer_update(self, c: BufferUpdate):
        self.reads(c.g)
        self.as_buffer(AsBuffer(c.name, c.helper))
        self.in_place(InPlace(c.name, c.index, c.g))

    def tuple_item(self, c: TupleItem):
        dn = self.tr.d(c.name)
        self.reads(c.g)
        self.rebinds(dn)
        self.reads(c.k)
        self.out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name), c.k, c.g)))

    def scatter(self, c: Scatter):
        dn = self.tr.d(c.name)
        self.reads(c.g)
        self.rebinds(dn)
        self.out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name), c.index, c.g)))

    def zero_element(self, c: ZeroElement):
        self.out.append(ast.Assign([ast.Subscript(ast.Name(self.tr.d(c.name)), c.index,
                                                  ast.Store())], ast.Constant(0.0)))

    def commit_all(self):
        self.pending.clear()
        self.zero.clear()

    def branch(self, c: Branch):
        self.commit_all()
        self.out.append(ast.If(ast.Name(c.test), render(self.tr, c.body) or [ast.Pass()],
                               render(self.tr, c.orelse)))

    def reverse_for(self, c: ReverseFor):
        self.commit_all()
        self.out.append(ast.For(*_reverse_range(c), render(self.tr, c.body) or [ast.Pass()], []))

    def python(self, c: ast.AST):
        self.out.append(c)


_RENDER = {Accum: _Render.accum, Reset: _Render.reset, Restore: _Render.restore,
           InPlace: _Render.in_place, AsBuffer: _Render.as_buffer,
           BufferUpdate: _Render.buffer_update, TupleItem: _Render.tuple_item,
           Scatter: _Render.scatter, ZeroElement: _Render.zero_element, Branch: _Render.branch,
           ReverseFor: _Render.reverse_for}


def render(tr, code) -> list:
    """Turn pseudo-statements into Python, merging each reset with the first
    contribution that follows it (``dv = 0; dv += c`` becomes ``dv = c``)."""
    r = _Render(tr)
    for c in code:
        handler = _RENDER.get(type(c))
        if handler is None:
            if not isinstance(c, ast.AST):
                raise InternalError(f"no lowering for the pseudo-statement {c!r}")
            handler = _Render.python
        handler(r, c)
    return [s for s in r.out if s is not None]


def _reverse_range(c: ReverseFor):
    """The target and iterable of a reverse loop: the same indices, last first (or,
    when the body does not read the loop variable, just the trip count)."""
    info = c.info
    if c.var is None:
        return ast.Name("_", ast.Store()), call("range", ast.Name(info.n))
    last = ast.BinOp(info.lo, ast.Add(), ast.BinOp(
        ast.BinOp(ast.Name(info.n), ast.Sub(), ast.Constant(1)), ast.Mult(), info.st))
    stop = ast.BinOp(info.lo, ast.Sub(), info.st)
    step = ast.UnaryOp(ast.USub(), info.st)
    return ast.Name(c.var, ast.Store()), call("range", fold(last), fold(stop), fold(step))


def zeros(tr, name) -> ast.expr:
    """A zero adjoint for ``name``'s current value."""
    k = tr.kinds.get(name)
    if k is not None and k.ndim == 0 and k.dtype in "fc":
        return ast.Constant(0.0)
    if k is not None and k.ndim is not None and k.ndim > 0 and k.dtype == "f":
        return call(ast.Attribute(ast.Name(tr.helper(np, "np")), "zeros_like", ast.Load()),
                     ast.Name(name))
    return call(tr.helper(zeros_like, "zeros_like"), ast.Name(name))
