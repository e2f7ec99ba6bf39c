"""The reverse sweep's pseudo-statements and the small AST builders every stage uses.

A statement's adjoint is first a list of pseudo-statements (``Accum``: add to an
adjoint, ``Reset``: the variable gets an older value, ``Restore``: pop a saved
value, ...).  Only lowering (:mod:`.lower`) decides how each becomes Python,
once it is known which adjoints are locals, buffers or lists.

The sweeps stay typed after lowering where a later stage must recognise a
statement: a ``Comment`` (``# from: <the user's line>``) is a statement node of
its own, which the emitter prints and the Numba backend quotes in its errors;
a ``ZeroAdjoint`` (``dv = 0.0``, ``dv = np.zeros_like(v)``) is an assignment the
cleanup knows by its type for a reset of an adjoint to zero; a ``Push`` or ``Pop``
holds the statements a backend's tape wrote for one value saved or restored.  Passes compare
code with ``same`` (node types and fields), never by its printed text.
"""
from __future__ import annotations

import ast
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable

from ..core.ir import atom_names
from ..core.names import Names


@dataclass
class Accum:
    """adjoint(name) += expr"""
    name: str
    expr: ast.expr


@dataclass
class Reset:
    """adjoint(name) = 0 (the variable is about to get an older value)"""
    name: str


@dataclass
class Restore:
    """pop the value a statement overwrote"""
    name: str
    index: ast.expr | None = None     # for an array element


@dataclass
class LoopInfo:
    lo: ast.expr
    st: ast.expr
    n: str


@dataclass
class Generated:
    """What the emitter needs."""

    name: str
    params: list
    wrt: list                     # differentiated parameters
    adjoint_names: dict           # param -> its adjoint's name
    forward: list                 # ast statements
    reverse: list                 # ast statements
    value: ast.expr               # the returned value
    helpers: dict                 # name -> object used by the generated code
    copied_params: set
    workspace: Callable = list    # () -> [(name, dtype)] of the tapes kept between calls
    tape_notes: tuple = ()        # what each loop saves per iteration, for the docstring


@dataclass(frozen=True)
class TapeNeeds:
    """What a tape knows of the program whose values it saves: final when the
    sweeps are written (after the adjoints, recomputation and the save plan)."""
    kinds: Mapping                  # name -> Kind
    names: Names                    # reserves the names of the tapes and their counters
    helper: Callable                # (obj, preferred name) -> the name the code calls obj by
    selects_element: Callable       # (array, index) -> whether array[index] is one element
    values_read: frozenset          # names whose contents (not only shape) the reverse reads


@dataclass
class InPlace:
    name: str
    index: ast.expr
    g: ast.expr


@dataclass
class AsBuffer:
    """adjoint(name) becomes an array of name's shape (zeros plus what it held), so
    that its elements can be read and written in place."""
    name: str
    helper: str


@dataclass
class BufferUpdate:
    name: str
    index: ast.expr
    g: ast.expr
    helper: str


@dataclass
class TupleItem:
    """the cotangent of the tuple ``name`` gets ``g`` added at item ``k`` (an atom)"""
    name: str
    k: ast.expr
    g: ast.expr
    helper: str


@dataclass
class Scatter:
    name: str
    index: ast.expr
    g: ast.expr
    helper: str


@dataclass
class ZeroElement:
    name: str
    index: ast.expr


@dataclass
class Branch:
    test: str
    body: list
    orelse: list


@dataclass(frozen=True)
class ForwardAdjoint:
    """A loop run with its adjoint in the forward sweep: the name its sum's
    adjoint has there (1.0), and the buffer standing for each outer value's adjoint."""
    unit: str
    buffers: MappingProxyType       # outer name -> the buffer's name


@dataclass(frozen=True)
class SegmentNames:
    """The names the code of a loop run in segments uses
    (:mod:`pullback.analysis.checkpoints`)."""
    total: str                      # iterations (at most, before a loop left early)
    length: str                     # iterations per segment
    count: str                      # segments
    segment: str                    # a segment's number, from 0
    first: str                      # its first iteration, counted from 0
    trips: str                      # its iterations
    snapshots: MappingProxyType     # carried name -> the list of its snapshots
    entry: MappingProxyType         # name -> its value at loop entry


@dataclass
class ReverseFor:
    var: str | None
    info: LoopInfo
    body: list
    sums: bool = True               # its buffer updates may be summed after it (loopsums)


def assign(name, value):
    return ast.Assign([ast.Name(name, ast.Store())], value)


def call(fn, *args):
    return ast.Call(ast.Name(fn) if isinstance(fn, str) else fn, list(args), [])


def _expr(e):
    return ast.Name(e, ast.Load()) if isinstance(e, str) else e


def attribute(value, attr: str) -> ast.Attribute:
    """``value.attr`` (``value``: a name or an expression)."""
    return ast.Attribute(_expr(value), attr, ast.Load())


def subscript(value, index, ctx=None) -> ast.Subscript:
    """``value[index]`` (``value`` and ``index``: names or expressions; an int index
    is a constant)."""
    index = ast.Constant(index) if isinstance(index, int) else _expr(index)
    return ast.Subscript(_expr(value), index, ctx or ast.Load())


def plus(e, n: int):
    """``e + n``, or ``e`` itself for ``n == 0`` (``e``: a name or an expression)."""
    return _expr(e) if n == 0 else ast.BinOp(_expr(e), ast.Add(), ast.Constant(n))


def augment(name: str, op: ast.operator, value) -> ast.AugAssign:
    """``name op= value`` (``k += 1``)."""
    return ast.AugAssign(ast.Name(name, ast.Store()), op, _expr(value))


def store(target, value) -> ast.Assign:
    """``target = value`` for a target that is not a plain name (``a[i] = x``)."""
    target = copy.deepcopy(target)
    target.ctx = ast.Store()
    return ast.Assign([target], _expr(value))


def expr_stmt(value) -> ast.Expr:
    """The expression ``value`` as a statement (``_push(x)``)."""
    return ast.Expr(value)


def helper_call(tr, expr):
    """``(helper, args)`` when ``expr`` calls a helper of the generated code by
    position only (``matmul_vjp_a(d_t3, W, h)``), else None."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) \
            and expr.func.id in tr.helpers and not expr.keywords:
        return tr.helpers[expr.func.id], expr.args
    return None


class Comment(ast.stmt):
    """``# text``, a line of its own in the generated code.  ``source``: the user's
    source line that the statements after it come from (``# from: ...``), else None,
    and ``line`` its number in the user's file; the emitter prints it and keeps, for
    each generated line, the user's line it comes from (the Numba backend quotes it
    in its errors, the API in an error raised while the derivative runs)."""

    _fields = ("text", "source", "line")
    text: str
    source: str | None = None
    line: int | None = None


class ZeroAdjoint(ast.Assign):
    """``dv = <a zero of v's kind>`` (``0.0``, ``np.zeros_like(v)``, ``zeros_like(v)``):
    an adjoint reset to zero, an assignment the cleanup may drop when nothing reads
    it.  The emitter prints it as the plain assignment it is."""


class TapeOp(ast.stmt):
    """A push or pop of the tape: ``body``, the backend's statements for it (its
    tape's code, printed in its place); ``name``, the variable saved or restored,
    or the array whose element or slice ``index`` is."""

    _fields = ("body",)
    body: list
    name: str = ""
    index: ast.expr | None = None


class Push(TapeOp):
    """Save ``name`` (or ``name[index]``) on the tape, before the forward sweep overwrites it."""


class Pop(TapeOp):
    """Restore ``name`` (or ``name[index]``) from the tape, in the reverse sweep."""


class Reserve(TapeOp):
    """Make room on tapes before a loop that pushes to them (``name`` unused)."""


def tape_op(cls, name: str, index, body: list) -> TapeOp:
    op = cls(body)
    op.name, op.index = name, index
    return op


def zero_adjoint(dn: str, value: ast.expr) -> ZeroAdjoint:
    return ZeroAdjoint([ast.Name(dn, ast.Store())], value)


def same(a, b) -> bool:
    """Whether ``a`` and ``b`` are the same code: nodes of the same type whose fields
    are the same, recursively; a name's context (load, store) and source positions
    aside, and constants equal only with the same type and spelling (``1`` is not
    ``1.0``, ``0.0`` not ``-0.0``)."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) \
            and all(same(x, y) for x, y in zip(a, b))
    if not isinstance(a, ast.AST) or not isinstance(b, ast.AST):
        return type(a) is type(b) and repr(a) == repr(b)
    if type(a) is not type(b):
        return False
    return all(same(getattr(a, f, None), getattr(b, f, None))
               for f in a._fields if f not in ("ctx", "kind"))


def comment(text, source=None) -> Comment:
    return Comment(text, source)


def from_line(line: str, lineno: int | None = None) -> Comment:
    """``# from: <line>``: the statements after it come from the user's ``line``
    (line ``lineno`` of the user's file)."""
    return Comment(f"from: {line}", line, lineno)


def fold(e):
    """Fold constant arithmetic in loop bounds so the generated code reads well."""
    try:
        value = eval(compile(ast.fix_missing_locations(ast.Expression(copy.deepcopy(e))),
                             "<fold>", "eval"), {"__builtins__": {}})
        return ast.Constant(value)
    except Exception:
        pass
    if isinstance(e, ast.BinOp):
        lhs, rhs = fold(e.left), fold(e.right)
        if isinstance(lhs, ast.Constant) and lhs.value == 0 and isinstance(e.op, ast.Add):
            return rhs
        if isinstance(rhs, ast.Constant) and rhs.value == 0 and isinstance(e.op, (ast.Add, ast.Sub)):
            return lhs
        if isinstance(rhs, ast.Constant) and rhs.value == 1 and isinstance(e.op, ast.Mult):
            return lhs
        if isinstance(rhs, ast.Constant) and rhs.value == -1 and isinstance(e.op, ast.Mult):
            return ast.UnaryOp(ast.USub(), lhs)
        if isinstance(rhs, ast.Constant) and isinstance(rhs.value, (int, float)) and rhs.value < 0 \
                and isinstance(e.op, (ast.Add, ast.Sub)):
            op = ast.Sub() if isinstance(e.op, ast.Add) else ast.Add()
            return ast.BinOp(lhs, op, ast.Constant(-rhs.value))
        if isinstance(rhs, ast.UnaryOp) and isinstance(rhs.op, ast.USub) \
                and isinstance(e.op, (ast.Add, ast.Sub)):
            op = ast.Sub() if isinstance(e.op, ast.Add) else ast.Add()
            return ast.BinOp(lhs, op, rhs.operand)
        return ast.BinOp(lhs, e.op, rhs)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = fold(e.operand)
        if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub):
            return inner.operand
        return ast.UnaryOp(ast.USub(), inner)
    return e


def names_in(code) -> set:
    """Primal names an adjoint's pseudo-statements read."""
    out = set()
    for c in code:
        for value in vars(c).values() if not isinstance(c, ast.AST) else [c]:
            if isinstance(value, ast.AST):
                out |= atom_names(value)
    return out
