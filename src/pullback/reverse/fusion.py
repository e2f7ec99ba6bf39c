"""Elementwise fusion on the generated sweeps (Python AST, changed in place).

An arithmetic temporary read once goes back into the statement that reads it,
so that a chain of elementwise operations is one expression: Numba compiles it
to one loop with one result array, and a negation times a number is one NumPy
operation.  Like the peepholes of :mod:`.cleanup` it changes no result: a
temporary moves only to where it computes the same values.
"""
from __future__ import annotations

import ast
import copy

from .cleanup import bodies, name_counts, names_read, names_written
from .ops import Comment, TapeOp

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def fuse_elementwise(blocks, also_read=()) -> None:
    """Put each arithmetic temporary read once back into its reader, in place:
    ``d_t4 = -d_t7; d_t3 = d_t4 * 2.0; add_into(du[1:-1], d_t3)`` becomes
    ``add_into(du[1:-1], d_t7 * -2.0)``: one expression, which Numba compiles
    to one loop with one result array instead of one per operation (and which
    reads as the source did); NumPy saves the negation's pass.

    ``blocks``: the function's statement lists (forward and reverse sweeps), so
    that a temporary read by the other sweep is never moved.  A temporary moves
    only to a later statement of its own block, across statements that write
    no memory and none of the names it reads, so it computes the same values."""
    loads, stores = name_counts(blocks)
    for name in also_read:
        loads[name] = loads.get(name, 0) + 1
    for block in blocks:
        _fuse_block(block, loads, stores)


def _fuse_block(block, loads, stores) -> None:
    for st in block:
        for sub in bodies(st):
            _fuse_block(sub, loads, stores)
    k = 0
    while k < len(block):
        st = block[k]
        name = _fusable(st, loads, stores)
        reader = _reader(block, k, name) if name is not None else None
        if reader is None:
            k += 1
            continue
        block[reader] = _substitute(block[reader], name, st.value)
        del block[k]
        k = max(k - 1, 0)       # the temporary before may now be read by this reader


def _fusable(st, loads, stores):
    """The temporary ``st`` defines, when it is arithmetic read exactly once."""
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)):
        return None
    name = st.targets[0].id
    if not (name.startswith(("_t", "d_t")) and stores.get(name) == 1 and loads.get(name) == 1):
        return None
    return name if _pure(st.value, top=True) else None


def _pure(e, top=False) -> bool:
    """Arithmetic on names, numbers and basic slices of names: no call, no write.
    ``top``: the whole value of a temporary, where a bare name or number (a copy,
    which propagate_copies handles) does not count."""
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, _ARITHMETIC) and _pure(e.left) and _pure(e.right)
    if isinstance(e, ast.UnaryOp):
        return isinstance(e.op, ast.USub) and _pure(e.operand)
    if top:
        return isinstance(e, ast.Subscript) and _view(e)
    return isinstance(e, (ast.Name, ast.Constant)) or (isinstance(e, ast.Subscript) and _view(e))


def _view(e) -> bool:
    parts = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
    return isinstance(e.value, ast.Name) and all(
        isinstance(p, (ast.Name, ast.Constant)) or (isinstance(p, ast.Slice) and all(
            b is None or isinstance(b, (ast.Name, ast.Constant)) or (
                isinstance(b, ast.UnaryOp) and isinstance(b.operand, ast.Constant))
            for b in (p.lower, p.upper, p.step)))
        for p in parts)


def _reader(block, k, name):
    """The index of the statement after ``k`` that reads ``name``, when every
    statement in between leaves the temporary's inputs alone; else None."""
    inputs = names_read(block[k])
    for j in range(k + 1, len(block)):
        st = block[j]
        if bodies(st) or isinstance(st, Comment):
            return None         # (a comment starts another source line's code: keep it there)
        if name in names_read(st):
            return j if _reads_before_any_call(st, name) else None
        if not _harmless(st) or inputs & names_written(st):
            return None
    return None


def _harmless(st) -> bool:
    """Writes no array memory: an assignment of arithmetic to a name, or a tape's
    push or pop (a list changes, no array does)."""
    if isinstance(st, TapeOp):
        return all(_harmless(s) for s in st.body)
    value = st.value if isinstance(st, (ast.Assign, ast.Expr)) else None
    if isinstance(st, ast.Assign) and not all(isinstance(t, ast.Name) for t in st.targets):
        return False
    if value is None:
        return False
    if _pure(value):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr in ("append", "pop") and isinstance(value.func.value, ast.Name) \
        and all(_copy_or_pure(a) for a in value.args)


def _copy_or_pure(a) -> bool:
    if isinstance(a, ast.Call):
        return isinstance(a.func, ast.Attribute) and a.func.attr == "copy" and not a.args \
            and isinstance(a.func.value, ast.Subscript) and _view(a.func.value)
    return _pure(a)


def _reads_before_any_call(st, name) -> bool:
    """Whether ``name`` is evaluated before any call in ``st`` runs: it is not
    inside a call's arguments, or it is an argument of the one call there is
    (arguments are evaluated before the call writes anything)."""
    calls = [n for n in ast.walk(st) if isinstance(n, ast.Call)]
    if not calls:
        return True
    if len(calls) > 1:
        return False
    return any(isinstance(a, ast.Name) and a.id == name for a in calls[0].args)


def _substitute(st, name, expr):
    """``st`` reading ``expr`` where it read ``name``; a negation multiplied or
    divided by a number takes the number's sign instead (``-d * 2.0`` is
    ``d * -2.0``, bit for bit: one array operation, not two)."""
    class S(ast.NodeTransformer):
        def visit_Name(_, node):
            if node.id == name and not isinstance(getattr(node, "ctx", None), ast.Store):
                return copy.deepcopy(expr)
            return node

        def visit_BinOp(self, node):
            self.generic_visit(node)
            if not isinstance(node.op, (ast.Mult, ast.Div)):
                return node
            left, right = node.left, node.right
            if _negation(left) and _number(right):
                return ast.BinOp(left.operand, node.op, ast.Constant(-right.value))
            if isinstance(node.op, ast.Mult) and _number(left) and _negation(right):
                return ast.BinOp(ast.Constant(-left.value), node.op, right.operand)
            return node
    return S().visit(st)


def _negation(e) -> bool:
    return isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub)


def _number(e) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) in (int, float)
