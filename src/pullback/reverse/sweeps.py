"""The forward sweep (primal code plus saves) and the reverse sweep (adjoints backwards).

The forward sweep is the primal program plus pushes of the values the reverse
sweep will need and that the program overwrites.  The reverse sweep walks the
program backwards: for each statement, its adjoint and then the pop of what it
overwrote, so every adjoint sees the primal values of its own statement.
Loops over ``range`` run backwards over the same indices; ``while`` loops
replay their iteration count; branches replay the branch taken.
"""
from __future__ import annotations

import ast
import copy

import numpy as np

from ..analysis.storage import BUFFER, LIST, VALUE
from ..core import ir
from ..core.errors import NumbaCompileError
from . import segments
from .lower import render, zeros
from .ops import Accum, Branch, LoopInfo, Reset, Restore, ReverseFor, assign, call, from_line, names_in


def init_saved(tr) -> list:
    """Give every variable that is pushed before its first assignment a value
    of its kind, so the first push has something to save."""
    out = []
    names = tr.plan.undefined - set(tr.fn.params)
    if tr.backend.fixed_types:
        # A value first assigned inside a loop or branch (which an early exit may
        # skip) still has a value of its type when the reverse sweep makes its
        # adjoint's zero from it: an array's buffer, a tuple's typed reset.
        names |= {n for n in tr.active - tr.sites.top_level - set(tr.fn.params)
                  if tr.storage[n].how == BUFFER or tr.storage[n].typed_reset}
    out = [assign(name, placeholder(tr, name)) for name in sorted(names)]
    if tr.backend.fixed_types:
        for name, st in zip(sorted(names), out):
            if isinstance(st.value, ast.Constant) and st.value.value is None:
                raise _untyped_before_assignment(tr, name)
    return tr.tape.setup() + out


def _untyped_before_assignment(tr, name):
    """Numba gives a variable one type, so one saved before its first assignment needs
    a placeholder of that type; when its kind is not known here there is none."""
    first = next((s for s in ir.walk(tr.fn.body) if name in s.writes()), None) or \
        next(s for s in ir.walk(tr.fn.body) if name in s.reads())
    users = isinstance(first, ir.Assign) and not any(
        n.id.startswith("_") or n.id in tr.helpers      # names the user did not write
        for n in ast.walk(first.expr) if isinstance(n, ast.Name))
    if not name.startswith("_"):
        what = f"`{name}`"
    elif users:
        what = f"the value of `{ast.unparse(first.expr)}`"
    else:           # the transform's own names: the user's line instead
        what = f"a value computed on line {first.line} (`{tr.location(first.line).line.strip()}`)"
    if isinstance(first, ir.Assign) and isinstance(first.expr, ast.Call):
        # A call whose result rank the kinds cannot tell: assigning the variable
        # earlier would not help, giving the result a visible rank does.
        call = ast.unparse(first.expr) if users else "<the call>"
        hint = (f"give the call's result a rank pullback can see, for example "
                f"`np.reshape({call}, <its shape>)`, or use jit=False")
    else:
        hint = ("assign a variable of that type before the loop or branch that first sets it "
                "(for example `g = np.zeros(n)`), or use jit=False")
    return tr.error(first, f"{what} under the Numba backend: the reverse sweep needs it saved "
                    "before it is first assigned, and its type (a number or an array, and "
                    "its rank) is not known before the function runs", hint,
                    cls=NumbaCompileError)


def placeholder(tr, name) -> ast.expr:
    """A value of ``name``'s kind, for before its first assignment (Numba needs
    one type per variable): an empty float array of its rank, 0, False, 0.0."""
    return _placeholder_of(tr, tr.kinds.get(name))


def _placeholder_of(tr, kind) -> ast.expr:
    """A value of ``kind``: a tuple of its items' placeholders for a tuple."""
    if kind is not None and kind.items is not None:
        return ast.Tuple([_placeholder_of(tr, k) for k in kind.items], ast.Load())
    if kind is None or kind.ndim is None:
        return ast.Constant(None)
    if kind.ndim == 0:
        return ast.Constant({"i": 0, "b": False}.get(kind.dtype, 0.0))
    if kind.ndim > 0 and kind.dtype in _DTYPES:
        np_name = ast.Name(tr.helper(np, "np"))
        shape = ast.Tuple([ast.Constant(0)] * kind.ndim, ast.Load())
        out = call(ast.Attribute(np_name, "zeros", ast.Load()), shape)
        if kind.dtype != "f":
            out.keywords = [ast.keyword("dtype", ast.Attribute(np_name, _DTYPES[kind.dtype],
                                                                ast.Load()))]
        return out
    return ast.Constant(None)


_DTYPES = {"f": "float64", "b": "bool_", "i": "int64", "c": "complex128"}


def fwd_block(tr, stmts) -> list:
    out = []
    last_line = None
    for s in stmts:
        if s.line != last_line and s.line in tr.fn.source_lines and not isinstance(s, ir.Return):
            out.append(from_line(tr.fn.source_lines[s.line], s.line))
            last_line = s.line
        out += ir.dispatch(_FORWARD, s)(tr, s)
    return out


def _fwd_assign(tr, s: ir.Assign) -> list:
    out = tr.tape.push(s.target) if tr.needs_save(s.target, s) else []
    return out + [assign(s.target, copy.deepcopy(s.expr))]


def _fwd_setitem(tr, s: ir.SetItem) -> list:
    out = tr.tape.push_element(s.array, s.index) if tr.saves_element(s) else []
    return out + [ast.Assign([ast.Subscript(ast.Name(s.array), copy.deepcopy(s.index),
                                            ast.Store())], copy.deepcopy(s.value))]


def _fwd_if(tr, s: ir.If) -> list:
    return [ast.If(ast.Name(s.test), fwd_block(tr, s.body) or [ast.Pass()],
                   fwd_block(tr, s.orelse))]


def _fwd_for(tr, s: ir.For) -> list:
    out = tr.tape.push(s.var) if tr.needs_save(s.var, s) else []
    if s.sid in tr.forward_adjoints:
        return out + _with_adjoint(tr, s)
    if s.sid in tr.checkpoints:
        return out + segments.forward(tr, s, lambda it, n: _taped_for(tr, s, it, n))
    return out + _taped_for(tr, s, call("range", s.start, s.stop, s.step), ast.Name(s.trips))


def _taped_for(tr, s: ir.For, iterations: ast.expr, trips: ast.expr) -> list:
    """The loop ``for s.var in iterations`` with its pushes: when its ``trips`` are
    known before it, room made for every push the body makes, so the pushes
    inside need no capacity check."""
    out = []
    counts = reservable(tr, s.body)
    if s.exit_flag is None and counts:
        out += tr.tape.reserve(counts, trips)
    saved, tr.tape.reserved = tr.tape.reserved, set(counts) \
        if s.exit_flag is None else set()
    body = fwd_block(tr, s.body)
    tr.tape.reserved = saved
    if s.exit_flag is not None:
        body.append(ast.If(ast.Name(s.exit_flag), [ast.Break()], []))
    out.append(ast.For(ast.Name(s.var, ast.Store()), iterations, body or [ast.Pass()], []))
    return out


def _fwd_while(tr, s: ir.While) -> list:
    saved, tr.tape.reserved = tr.tape.reserved, set()
    body = fwd_block(tr, s.body)
    tr.tape.reserved = saved
    if s.exit_flag is not None:
        body.append(ast.If(ast.Name(s.exit_flag), [ast.Break()], []))
    body += fwd_block(tr, s.cond)
    return [ast.While(ast.Name(s.test), body, [])]


def _fwd_return(tr, s: ir.Return) -> list:
    return []       # the emitter returns the value after the reverse sweep


_FORWARD = ir.table("forward sweep", {
    ir.Assign: _fwd_assign, ir.SetItem: _fwd_setitem, ir.If: _fwd_if, ir.For: _fwd_for,
    ir.While: _fwd_while, ir.Return: _fwd_return})


def pushes_per_iteration(tr, stmts) -> dict:
    """How many values each tape receives per iteration, at most, from
    statements outside nested loops."""
    counts = {}
    for s in stmts:
        for key, n in ir.dispatch(_PUSHES, s)(tr, s).items():
            counts[key] = counts.get(key, 0) + n
    return counts


def reservable(tr, body) -> dict:
    """The pushes per iteration of a loop's ``body`` that a reservation of
    ``trips * count`` slots before the loop covers.

    Invariant: such a reservation holds only for a tape that no loop nested in
    the body pushes to.  A nested loop's pushes take slots the reservation
    counted on, so the outer pushes after it would write past the end (an
    inner loop that saves ``s`` inside an outer one that saves it too); those
    tapes keep their capacity check."""
    nested = set()
    for loop in ir.walk(body):
        if isinstance(loop, (ir.For, ir.While)):
            for s in (t for block in loop.blocks() for t in ir.walk(block)):
                nested |= set(ir.dispatch(_PUSHES, s)(tr, s))
    return {key: n for key, n in pushes_per_iteration(tr, body).items() if key not in nested}


def _pushes_if(tr, s: ir.If) -> dict:
    counts = pushes_per_iteration(tr, s.body)
    for key, n in pushes_per_iteration(tr, s.orelse).items():
        counts[key] = counts.get(key, 0) + n
    return counts


_PUSHES = ir.table("pushes per iteration", {
    ir.Assign: lambda tr, s: {s.target: 1} if tr.needs_save(s.target, s) else {},
    ir.SetItem: lambda tr, s: {tr.tape.element_key(s.array, s.index): 1}
    if tr.saves_element(s) else {},
    ir.For: lambda tr, s: {s.var: 1} if tr.needs_save(s.var, s) else {},
    ir.If: _pushes_if,
    ir.While: lambda tr, s: {},       # nested loops reserve for themselves
    ir.Return: lambda tr, s: {}})


def rev_block(tr, stmts) -> list:
    out = []
    last_line = None
    for s in reversed(stmts):
        code = ir.dispatch(_REVERSE, s)(tr, s)
        if s.line != last_line and s.line in tr.fn.source_lines and not isinstance(s, ir.Return):
            if code:
                out.append(from_line(tr.fn.source_lines[s.line], s.line))
                last_line = s.line
        out += code
    return out


def _recomputed(tr, s) -> list:
    """Read again, just before the adjoint, what is cheaper to read than to save
    (in a loop re-run in the reverse sweep, the re-run has done so already)."""
    code = tr.adjoints.code[s.sid]
    if not code or s.sid in tr.independent.inside:
        return []
    needed = tr.recomputation.needed_for(names_in(code))
    return [assign(t, copy.deepcopy(e)) for t, e in tr.recomputation.exprs.items() if t in needed]


def _rev_assign(tr, s: ir.Assign) -> list:
    code = list(tr.adjoints.code[s.sid])
    if not tr.needs_save(s.target, s):
        return _recomputed(tr, s) + code
    # The target's adjoint is reset for the value it had before: restore that value
    # first, so that a zero of its shape (an array reassigned with another shape
    # each iteration) has the shape of the value it now stands for.
    reset = [code.pop()] if code and isinstance(code[-1], Reset) and code[-1].name == s.target \
        else []
    return _recomputed(tr, s) + code + [Restore(s.target)] + reset


def _rev_setitem(tr, s: ir.SetItem) -> list:
    out = _recomputed(tr, s) + list(tr.adjoints.code[s.sid])
    if tr.saves_element(s):
        out.append(Restore(s.array, s.index))
    return out


def _rev_if(tr, s: ir.If) -> list:
    body, orelse = rev_block(tr, s.body), rev_block(tr, s.orelse)
    return [Branch(s.test, body, orelse)] if body or orelse else []


def _rev_for(tr, s: ir.For) -> list:
    if s.sid in tr.forward_adjoints:
        return _scaled_forward_adjoint(tr, s)
    if s.sid in tr.checkpoints:
        out = segments.reverse(tr, s, lambda it, n: _taped_for(tr, s, it, n),
                               rev_block(tr, s.body))
    else:
        body = rev_block(tr, s.body) if s.sid not in tr.independent.loops \
            else _rerun_reverse(tr, s)
        out = [ReverseFor(s.var if ir.var_read_in(s) else None,
                          LoopInfo(s.start, s.step, s.trips), body)] if body else []
    if tr.needs_save(s.var, s):
        out.append(Restore(s.var))
    return out


def _with_adjoint(tr, s: ir.For) -> list:
    """A loop whose iterations share nothing but one sum, with each iteration's
    adjoint right after it (``Root.in_forward``, :mod:`pullback.analysis.independent`):
    the sum's adjoint is 1.0 there and each outer value's adjoint a zeroed buffer,
    which :func:`_scaled_forward_adjoint` scales in the reverse sweep."""
    fa, root = tr.forward_adjoints[s.sid], tr.independent.roots[s.sid]
    renamed = {tr.d(n): b for n, b in fa.buffers.items()}
    renamed[tr.d(next(iter(root.sums)))] = fa.unit
    out = [assign(b, zeros(tr, n)) for n, b in fa.buffers.items()]
    out.append(assign(fa.unit, ast.Constant(1.0)))
    out += [assign(tr.d(n), ast.Constant(0.0)) for n in sorted(root.locals & tr.active)
            if tr.kinds[n].dtype in "fc"]
    loop = ast.For(ast.Name(s.var, ast.Store()), call("range", s.start, s.stop, s.step),
                   _iteration_with_adjoint(tr, s.body) or [ast.Pass()], [])
    return out + [_Renamed(renamed).visit(copy.deepcopy(loop))]   # the code is shared


def _iteration_with_adjoint(tr, block) -> list:
    """``block`` (an iteration) as the forward sweep runs it, nested loops each
    with their own iterations' adjoints, then the adjoint of its other statements."""
    primal, run = [], []
    for t in block + [None]:
        if isinstance(t, ir.For) or t is None:
            primal += fwd_block(tr, run)
            run = []
        if isinstance(t, ir.For):
            primal.append(ast.For(ast.Name(t.var, ast.Store()),
                                  call("range", t.start, t.stop, t.step),
                                  _iteration_with_adjoint(tr, t.body) or [ast.Pass()], []))
        elif t is not None:
            run.append(t)
    return primal + render(tr, _iteration_adjoint(tr, block))


def _scaled_forward_adjoint(tr, s: ir.For) -> list:
    """The reverse of a loop run with its adjoint in the forward sweep: each outer
    value's adjoint gets the sum's adjoint times what the forward sweep added into
    its buffer.  A zero sum adjoint adds nothing (not 0 * inf)."""
    fa, root = tr.forward_adjoints[s.sid], tr.independent.roots[s.sid]
    dsum = ast.Name(tr.d(next(iter(root.sums))))
    nonzero = tr.names.fresh("_nonzero")
    adds = [Accum(n, ast.BinOp(dsum, ast.Mult(), ast.Name(b))) for n, b in fa.buffers.items()]
    return [assign(nonzero, ast.Compare(dsum, [ast.NotEq()], [ast.Constant(0.0)])),
            Branch(nonzero, adds, [])] if adds else []


class _Renamed(ast.NodeTransformer):
    """Renames names in place (of a copy)."""
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        node.id = self.names.get(node.id, node.id)
        return node


def _iteration_adjoint(tr, block, nested=False) -> list:
    """The adjoint of one iteration of a loop whose iterations share nothing but
    sums, with its nested loops' reverse or (not ``nested``) without: only a sum's adjoint
    flows into an iteration (its locals are read nowhere else), so statements after
    the last one holding a sum have zero adjoints and are left out; and when
    every sum is in the body of one ``if`` (a cutoff), the adjoint runs under
    that test: in the iterations that did not take it every adjoint is zero."""
    sums = tr.independent.sums
    holds = [k for k, t in enumerate(block) if {u.sid for u in ir.walk([t])} & sums]
    if not holds:
        return []
    last = holds[-1]
    head = [t for t in block[:last] if nested or not isinstance(t, ir.For)]
    guard = block[last]
    if len(holds) == 1 and isinstance(guard, ir.If) and not \
            {u.sid for u in ir.walk(guard.orelse)} & sums:
        adjoint = rev_block(tr, guard.body) + rev_block(tr, head)
        return [Branch(guard.test, adjoint, [])] if adjoint else []
    return rev_block(tr, head + ([guard] if nested or not isinstance(guard, ir.For) else []))


def _rerun_reverse(tr, s: ir.For) -> list:
    """The reverse of one iteration of a loop whose iterations share nothing but
    sums: the iteration run again (:func:`_rerun`), then its adjoint, nested loops
    re-running their own iterations."""
    adjoint = _iteration_adjoint(tr, s.body, nested=True)
    return _rerun(tr, s.body) + adjoint if adjoint else []


def _rerun(tr, stmts) -> list:
    """An iteration of a loop whose iterations share nothing but sums
    (:mod:`pullback.analysis.independent`), run again before its adjoint: the
    assignments the adjoints need; not the sums, nor nested loops, which re-run
    their own iterations in their reverse."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Assign) and s.sid in tr.independent.needed:
            out.append(assign(s.target, copy.deepcopy(s.expr)))
        elif isinstance(s, ir.If):
            body, orelse = _rerun(tr, s.body), _rerun(tr, s.orelse)
            if body or orelse:
                out.append(ast.If(ast.Name(s.test), body or [ast.Pass()], orelse))
    return out


def _rev_while(tr, s: ir.While) -> list:
    cond, body = rev_block(tr, s.cond), rev_block(tr, s.body)
    first = []
    if cond and s.exit_flag is not None:
        # An iteration that breaks (or returns) leaves before the condition is tested
        # again, so the last iteration of a loop left that way pushed nothing there:
        # the first reverse iteration skips the condition's reverse.
        broke = tr.names.fresh("_broke")
        first = [assign(broke, ast.Name(s.exit_flag))]
        cond = [Branch(broke, [assign(broke, ast.Constant(False))], cond)]
    body = cond + body
    return first + [ReverseFor(None, LoopInfo(None, None, s.trips), body)] if body else []


def _rev_return(tr, s: ir.Return) -> list:
    return [Accum(s.value.id, ast.Name("_seed"))] if tr.is_active(s.value) else []


_REVERSE = ir.table("reverse sweep", {
    ir.Assign: _rev_assign, ir.SetItem: _rev_setitem, ir.If: _rev_if, ir.For: _rev_for,
    ir.While: _rev_while, ir.Return: _rev_return})


def init_adjoints(tr) -> list:
    """The adjoints that exist before the reverse sweep: buffers, lists, and the
    zero gradient of each differentiated parameter that nothing flows into (the
    result does not depend on it, or only through non-differentiable steps such as
    ``np.sign`` or a comparison), so that every returned adjoint is bound."""
    out = [assign(tr.d(p), zeros(tr, p)) for p in tr.wrt if p not in tr.active]
    for name in sorted(tr.active):
        dn, how = tr.d(name), tr.storage[name].how
        if how == LIST:
            out.append(assign(dn, ast.BinOp(ast.List([ast.Constant(0.0)], ast.Load()),
                                            ast.Mult(), call("len", ast.Name(name)))))
        elif how == BUFFER:
            out.append(assign(dn, zeros(tr, name)))
    return out


def initial_resets(tr) -> list:
    """Adjoints that start at zero, as resets the first contribution absorbs."""
    return [Reset(n) for n in tr.storage.names(VALUE)]
