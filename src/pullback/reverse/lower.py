"""Lowering: the reverse sweep's pseudo-statements -> Python statements.

Here, and only here, it is decided how each adjoint contribution is written:
a local temporary's one contribution defines it, a buffer is updated in place,
a tuple's cotangent goes through ``accumulate``, and ``dv = 0; dv += c``
becomes ``dv = c``.
"""
from __future__ import annotations

import ast

from ..core import ir
from ..core.kinds import Kind
from ..core.runtime import accumulate, zeros_like
from .ops import (Accum, Branch, BufferUpdate, InPlace, Reset, Restore, ReverseFor, Scatter,
                  TupleItem, ZeroElement, assign, call, fold)

import numpy as np


def render(tr, code) -> list:
    """Turn pseudo-statements into Python, merging each reset with the first
    contribution that follows it (``dv = 0; dv += c`` becomes ``dv = c``)."""
    out = []
    pending = {}            # adjoint name -> index in out of its reset
    zero = set()

    def commit_all():
        pending.clear()
        zero.clear()

    for c in code:
        if isinstance(c, Accum):
            dn = tr.d(c.name)
            _reads_commit(c.expr, pending, zero)
            if c.name in tr.local_temps:
                # Its one contribution defines it.
                out.append(assign(dn, c.expr))
            elif dn in zero:
                idx = pending.pop(dn, None)
                if idx is not None:
                    out[idx] = None
                zero.discard(dn)
                out.append(assign(dn, c.expr))
            elif tr.buffer(c.name):
                out.append(ast.AugAssign(ast.Name(dn, ast.Store()), ast.Add(), c.expr))
            elif tr.kinds.get(c.name, Kind(0, "f")).ndim is None:
                out.append(assign(dn, call(tr.helper(accumulate, "accumulate"),
                                             ast.Name(dn), c.expr)))
            else:
                out.append(assign(dn, ast.BinOp(ast.Name(dn), ast.Add(), c.expr)))
        elif isinstance(c, Reset):
            if c.name in tr.local_temps:
                continue
            dn = tr.d(c.name)
            if tr.buffer(c.name) or (tr.backend.fixed_types and
                                       tr.kinds.get(c.name, Kind(0, "f")).ndim != 0):
                value = zeros(tr, c.name)
                tr.read(ast.Name(c.name), value=False)
                out.append(assign(dn, value))
                pending.pop(dn, None)
                zero.discard(dn)
            else:
                pending[dn] = len(out)
                zero.add(dn)
                out.append(assign(dn, ast.Constant(0.0)))
        elif isinstance(c, Restore):
            _reads_commit(ast.Name(c.name), pending, zero)
            if c.index is None:
                out += tr.tape.pop(c.name)
            else:
                out += tr.tape.pop_element(c.name, c.index)
        elif isinstance(c, InPlace):
            dn = tr.d(c.name)
            _reads_commit(c.g, pending, zero)
            out.append(ast.AugAssign(ast.Subscript(ast.Name(dn), c.index, ast.Store()),
                                     ast.Add(), c.g))
        elif isinstance(c, BufferUpdate):
            dn = tr.d(c.name)
            _reads_commit(c.g, pending, zero)
            pending.pop(dn, None)
            zero.discard(dn)
            out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name))))
            out.append(ast.AugAssign(ast.Subscript(ast.Name(dn), c.index, ast.Store()),
                                     ast.Add(), c.g))
        elif isinstance(c, TupleItem):
            dn = tr.d(c.name)
            _reads_commit(c.g, pending, zero)
            pending.pop(dn, None)
            zero.discard(dn)
            out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name),
                                         ast.Constant(c.k), c.g)))
        elif isinstance(c, Scatter):
            dn = tr.d(c.name)
            _reads_commit(c.g, pending, zero)
            pending.pop(dn, None)
            zero.discard(dn)
            out.append(assign(dn, call(c.helper, ast.Name(dn), ast.Name(c.name), c.index, c.g)))
        elif isinstance(c, ZeroElement):
            dn = tr.d(c.name)
            out.append(ast.Assign([ast.Subscript(ast.Name(dn), c.index, ast.Store())],
                                  ast.Constant(0.0)))
        elif isinstance(c, Branch):
            commit_all()
            out.append(ast.If(ast.Name(c.test), render(tr, c.body) or [ast.Pass()],
                              render(tr, c.orelse)))
        elif isinstance(c, ReverseFor):
            commit_all()
            body = render(tr, c.body) or [ast.Pass()]
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
            out.append(ast.For(target, it, body, []))
        elif isinstance(c, ast.AST):
            out.append(c)
        else:
            raise AssertionError(c)
    return [s for s in out if s is not None]


def zeros(tr, name) -> ast.expr:
    """A zero adjoint for ``name``'s current value."""
    k = tr.kinds.get(name)
    if k is not None and k.ndim == 0 and k.dtype in "fc":
        return ast.Constant(0.0)
    if k is not None and k.ndim is not None and k.ndim > 0 and k.dtype == "f":
        return call(ast.Attribute(ast.Name(tr.helper(np, "np")), "zeros_like", ast.Load()),
                     ast.Name(name))
    return call(tr.helper(zeros_like, "zeros_like"), ast.Name(name))


def _reads_commit(expr, pending, zero):
    for n in ir.atom_names(expr):
        if n in pending:
            pending.pop(n)
        zero.discard(n)
