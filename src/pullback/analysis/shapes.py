"""Shape facts: where an elementwise result provably has its operands' shape.

The reverse sweep sums an elementwise operand's cotangent onto the operand's
shape (``unbroadcast(g, x)``), which reads ``x`` (so ``x`` is saved or
recomputed) and costs a call per operand per step.  When the code alone proves
that no broadcasting happened, the sum is the identity and both can go.

A shape is a tuple of dimensions.  A dimension is a *root*, an axis whose
length is not derived here (a parameter's, or an array made once at the top
level), with the chain of constant slices taken of it since: ``u[1:-1]`` and
``u[2:]`` of one ``u`` have equal lengths for every length of ``u``.  Facts are
kept only for names assigned once whose shape is the same on every execution
(derived from roots); any other array gets, at one statement, a symbol of its
own (equal only to itself, as in ``h * h``).

Invariant: a sid in ``uniform`` is an elementwise statement whose every array
operand has exactly the result's shape whenever it runs; a sid in ``fits`` is a
write ``a[index] = v`` whose array ``v`` has exactly the shape of ``a[index]``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..core import ir
from ..core.kinds import Kind, kind_of_value
from ..rules import registry, results

_ELEMENTWISE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_COPIES = {np.copy, np.array, np.asarray, np.ascontiguousarray}


@dataclass(frozen=True)
class ShapeFacts:
    uniform: frozenset      # sids of elementwise Assigns: no operand was broadcast
    fits: frozenset         # sids of SetItems: the value has the region's shape


#: No facts: every elementwise operand is summed onto its shape (the reference).
NONE = ShapeFacts(frozenset(), frozenset())


def find(stmts, params, kinds, sites, in_loop) -> ShapeFacts:
    """The shape facts of a numbered program (see the module's invariant).

    ``sites``: assignments per name (a parameter counts one); ``in_loop``:
    names assigned inside a loop."""
    env = {p: tuple((("param", p, a), ()) for a in range(kinds[p].ndim))
           for p in params if sites.get(p) == 1 and _is_array(kinds.get(p))}
    uniform, fits = set(), set()

    def kind(atom) -> Kind:
        if isinstance(atom, ast.Name):
            return kinds.get(atom.id, Kind(None, "o"))
        if isinstance(atom, ast.Constant):
            return kind_of_value(atom.value)
        return Kind(None, "o")

    def shape_at(name, sid):
        """``name``'s shape as statement ``sid`` reads it: its fixed shape, or
        symbols of its own at this statement."""
        if name in env:
            return env[name]
        k = kinds.get(name)
        return tuple((("at", sid, name, a), ()) for a in range(k.ndim)) if _is_array(k) else None

    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign):
            shape, elementwise = _assign_shape(s, kind, shape_at)
            if elementwise:
                uniform.add(s.sid)
            k = kinds.get(s.target)
            if sites.get(s.target) == 1 and s.target not in params and _is_array(k):
                fixed = shape is not None and len(shape) == k.ndim and \
                    all(root[0] != "at" for root, _ in shape)
                if fixed:
                    env[s.target] = shape
                elif s.target not in in_loop:
                    # Made once: its shape is whatever it is, the same for every read.
                    env[s.target] = tuple((("made", s.target, a), ()) for a in range(k.ndim))
        elif isinstance(s, ir.SetItem) and isinstance(s.value, ast.Name):
            region = _index_shape(shape_at(s.array, s.sid), s.index, kind)
            value = shape_at(s.value.id, s.sid)
            if region is not None and value is not None and same_shape(region, value):
                fits.add(s.sid)
    return ShapeFacts(frozenset(uniform), frozenset(fits))


def _is_array(k) -> bool:
    return k is not None and k.ndim is not None and k.ndim > 0 and k.dtype in "bifc"


def _assign_shape(s, kind, shape_at):
    """(the shape of ``s.target`` or None, whether ``s`` is elementwise with
    every array operand of the result's shape)."""
    e = s.expr
    if isinstance(e, ast.Name):
        return shape_at(e.id, s.sid), False
    if isinstance(e, ast.Attribute) and e.attr == "T" and isinstance(e.value, ast.Name):
        base = shape_at(e.value.id, s.sid)
        return (tuple(reversed(base)) if base is not None else None), False
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name):
        return _index_shape(shape_at(e.value.id, s.sid), e.slice, kind), False
    if isinstance(e, ast.BinOp) and isinstance(e.op, _ELEMENTWISE_OPS):
        return _broadcast([e.left, e.right], kind, shape_at, s.sid)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return _broadcast([e.operand], kind, shape_at, s.sid)
    if isinstance(e, ast.Call):
        fn = registry.method(s.method) if s.method is not None else s.callee
        args = ([e.func.value] if s.method is not None else []) + list(e.args)
        if fn in _COPIES and len(args) == 1 and not e.keywords and isinstance(args[0], ast.Name):
            return shape_at(args[0].id, s.sid), False
        rule = registry.lookup(fn) if fn is not None else None
        if rule is not None and rule.result is results.like:
            return _broadcast(args + [k.value for k in e.keywords], kind, shape_at, s.sid)
    return None, False


def _broadcast(atoms, kind, shape_at, sid):
    """The shape of an elementwise result when every array operand has one shape
    (numbers broadcast without changing it), and whether that was proven."""
    shapes = []
    for a in atoms:
        k = kind(a)
        if (k.ndim == 0 and k.dtype in "bifc") or (
                isinstance(a, ast.Constant) and not isinstance(a.value, tuple)):
            continue                    # a number, None, a string: broadcasts nothing
        if not (isinstance(a, ast.Name) and _is_array(k)):
            return None, False          # a tuple, an unknown rank: no claim
        shapes.append(shape_at(a.id, sid))
    if not shapes or any(not same_shape(shapes[0], x) for x in shapes[1:]):
        return None, False
    return shapes[0], True


def _index_shape(base, index, kind):
    """The shape of ``a[index]`` for ``a`` of shape ``base``: constant slices of
    step 1 and integers; anything else (None, ``...``, arrays) is not followed."""
    if base is None:
        return None
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if len(parts) > len(base):
        return None
    out = []
    for dim, part in zip(base, parts):
        if isinstance(part, ast.Slice):
            bounds = [_constant(part.lower), _constant(part.upper)]
            step = _constant(part.step)
            if False in bounds or step not in (None, 1):
                return None
            out.append((dim[0], dim[1] + (tuple(bounds),)))
        elif ir.is_basic_scalar_index(part, kind):
            continue                    # an integer drops its axis
        else:
            return None
    return tuple(out) + tuple(base[len(parts):])


def _constant(node):
    """An int or None written as a constant in a slice; False for anything else."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) is int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    return False


def same_shape(a, b) -> bool:
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))


def same_dim(a, b) -> bool:
    """Whether two dimensions have equal lengths for every length of their root.

    A chain of constant slices gives a length that is piecewise linear in the
    root's length ``n`` (slope 0 or 1), with its breaks below the sum of the
    constants' magnitudes; two such functions that agree up to twice past that
    point agree everywhere."""
    if a == b:
        return True
    if a[0] != b[0]:
        return False
    bound = 2 * sum(abs(c) for chain in (a[1], b[1]) for pair in chain
                    for c in pair if c is not None) + 4
    return all(_length(n, a[1]) == _length(n, b[1]) for n in range(bound))


def _length(n, chain) -> int:
    for lo, hi in chain:
        n = len(range(n)[lo:hi])
    return n
