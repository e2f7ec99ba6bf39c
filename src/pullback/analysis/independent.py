"""Loops whose iterations share nothing but sums: differentiated without a tape.

A pair energy

    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            ...
            if r2 < rc2:
                e += 4.0 * (inv6 * inv6 - inv6)

carries nothing from one iteration to the next but the sum ``e``.  Its reverse
needs no tape: the reverse sweep runs each iteration's statements again (all
but the sums, and only those its adjoints need) and then that iteration's
adjoint, as a hand-written force loop does.  The forward sweep runs the loop as
the primal does and saves nothing in it (Tapenade's independent iterations).

``find`` returns :class:`Independent`: the loops so differentiated (each root
and the loops nested in it), the statements of their sums (never re-run), the
statements the re-run needs, and per root what it reads from outside the loop,
which the save plan then treats as read at the root's header.

Invariant (why the re-run gives every adjoint the values it read in the
forward sweep):

* every name the loop assigns is a *sum* or a *local*.  A sum ``v`` is only
  ``_t = v + y`` (or ``v - y``, ``y + v``) followed by ``v = _t``: no other
  statement of the loop reads it, ``y`` is not ``v``, and no adjoint in the loop
  reads it, so its value never matters to the loop's reverse.  An array ``A``
  summed into element by element (``A[k] += y``: ``_t = A[k]``, ``_u = _t + y``,
  ``A[k] = _u``, the last two in a row) is a sum too, the only write into an
  array allowed; its adjoint leaves ``dA[k]`` as it found it, whatever the order
  of iterations.  A local is a number (float, int or bool), mentioned nowhere
  outside the loop, and read in the loop only where an assignment of the same
  iteration has surely set it; so nothing flows from one iteration to the next
  but the sums;
* no adjoint or header in the loop reads a local that a later statement of the
  loop assigns again, so the value a re-run leaves is the value it read;
* the loop writes no array in place but its sums, and has no early exit; loops
  nested in it satisfy all of this too, each for its own iterations (each re-runs
  them in its reverse): a name a nested loop assigns is set in its iteration
  before it is read there, so ``a += W[i, j] * x[j]`` over ``j``, read after that
  loop, makes the loop over ``i`` taped;
* what the loop reads from outside holds, when the reverse sweep reaches the
  loop, what it held in the forward sweep: the save plan counts it as read at
  the root's header, so an assignment after the loop saves and restores it.

The transform also drops the root from the set when the save plan would save
a sum in it (a sum whose earlier value an adjoint outside reads).

Under a compiled backend a root at the function's top level with one float sum
(``Root.in_forward``) needs no second pass: each iteration's adjoint runs right
after the iteration, with the sum's adjoint taken as 1.0, into a buffer per outer
value the loop reads (zeros of it).  The reverse sweep adds the sum's adjoint
times each buffer.  Same gradient because the loop's adjoint is linear in the
sum's adjoint (the only adjoint flowing into it), and each iteration's adjoint
reads the values the iteration has just computed.  Not for a loop reading a tuple
of active numbers, whose adjoint has no buffer to add into.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from types import MappingProxyType

from ..core import ir
from ..core.kinds import Kind


@dataclass(frozen=True)
class Root:
    """A loop re-run or run with its adjoint, with the loops nested in it."""
    sids: frozenset          # its statements (nested ones included)
    locals: frozenset        # the names local to one iteration
    sums: frozenset          # the names it sums into
    reads: frozenset         # the names it reads from outside
    #: Run with its adjoint in the forward sweep (see ``find``), its one sum's
    #: adjoint then scaling what that adjoint added, in the reverse sweep.
    in_forward: bool


@dataclass(frozen=True)
class Independent:
    roots: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # sid -> Root
    loops: frozenset = frozenset()      # sids of the For loops, roots and nested
    inside: frozenset = frozenset()     # sids of every statement in those loops
    sums: frozenset = frozenset()       # sids of the sums' two statements: never re-run
    sum_sites: frozenset = frozenset()  # sids of ``v = _t`` and ``A[k] = _u`` (save nothing)
    needed: frozenset = frozenset()     # sids of the assignments the re-run makes

    def roots_of(self, sids) -> set:
        """The roots containing any of ``sids``."""
        return {r for r, root in self.roots.items() if root.sids & set(sids)}


NONE = Independent()


def find(body, params, kinds, adjoint_reads, header_reads, refused=frozenset(),
         in_forward=False) -> Independent:
    """The loops of ``body`` to differentiate by re-running them (see the module
    docstring), leaving out the roots in ``refused``.  ``adjoint_reads[sid]``:
    names an Assign's adjoint reads; ``header_reads[sid]``: names an If or For
    reads in the reverse sweep.

    With ``in_forward`` (a compiled backend), a root at the function's top level
    with one sum, and loops nested in it directly in loop bodies, runs each
    iteration's adjoint right after the iteration in the forward sweep, as a
    hand-written force loop does, with the sum's adjoint taken as 1: into a
    zeroed buffer per outer value its adjoint updates.  The reverse sweep then
    adds the sum's adjoint times each buffer (the loop's adjoint is linear in
    it).  The loop then runs once, and its reverse sweep reads nothing."""
    mentioned = {}          # name -> sids of the statements that mention it
    for s in ir.walk(body):
        names = ir.mentions(s) | ({s.var} if isinstance(s, ir.For) else set())
        for n in names:
            mentioned.setdefault(n, set()).add(s.sid)
    for p in params:
        mentioned.setdefault(p, set()).add(0)
    found = []

    def visit(stmts):
        for s in stmts:
            got = _judge(s, kinds, mentioned, adjoint_reads, header_reads) \
                if isinstance(s, ir.For) and s.sid not in refused else None
            if got is not None:
                found.append((s, got))
            else:
                for block in s.blocks():
                    visit(block)
    visit(body)
    if not found:
        return NONE
    top = {s.sid for s in body}
    roots, loops, inside, sums, sites, needed = {}, set(), set(), set(), set(), set()
    for root, (loc, pairs, summed, need, outside) in found:
        sids = frozenset(t.sid for t in ir.walk(root.body))
        loops |= {root.sid} | {t.sid for t in ir.walk(root.body) if isinstance(t, ir.For)}
        inside |= sids
        sums |= {sid for pair in pairs for sid in pair}
        sites |= {pair[-1] for pair in pairs}      # the assignment, or the element write
        needed |= need
        # (an outer value read is a number or an array: its buffer is a zero of it)
        read = {n for t in ir.walk(root.body) for n in ir.operands(t)} - loc - summed
        forward = in_forward and root.sid in top and len(summed) == 1 and \
            kinds.get(next(iter(summed))) == Kind(0, "f") and _loops_in_loop_bodies(root.body) \
            and all(_number_or_array(kinds[n]) for n in read if n in kinds)
        roots[root.sid] = Root(sids, frozenset(loc), frozenset(summed), frozenset(outside),
                               forward)
    return Independent(MappingProxyType(roots), frozenset(loops), frozenset(inside),
                       frozenset(sums), frozenset(sites), frozenset(needed))


def _number_or_array(k) -> bool:
    """Whether a value of kind ``k`` is a number or an array (not a tuple, not unknown;
    a name without a kind is a function or a module)."""
    return k.items is None and k.ndim is not None and k.dtype in "bifc"


def _loops_in_loop_bodies(block) -> bool:
    """Whether every loop nested in ``block`` sits directly in a loop body, none in a branch."""
    for s in block:
        if isinstance(s, ir.If) and any(isinstance(t, ir.For) for t in ir.walk(s.blocks()[0] +
                                                                               s.blocks()[1])):
            return False
        if isinstance(s, ir.For) and not _loops_in_loop_bodies(s.body):
            return False
    return True


def _judge(loop, kinds, mentioned, adjoint_reads, header_reads):
    """``(locals, sum pairs, summed names, re-run sids, outside reads)`` when
    ``loop`` is independent apart from its sums, else None."""
    stmts = [loop] + list(ir.walk(loop.body))
    triples, arrays = _array_sums(loop.body, kinds, mentioned)
    written = {t[2] for t in triples}
    if any(isinstance(s, ir.For) and s.exit_flag is not None
           or not isinstance(s, (ir.For, ir.Assign, ir.If)) and s.sid not in written
           for s in stmts):
        return None         # an early exit, an in-place write, a while loop, a return
    assigns = [s for s in stmts[1:] if isinstance(s, ir.Assign)]
    pairs, summed = _sums(assigns, kinds, mentioned)
    pairs += triples
    summed |= arrays
    in_pairs = {sid for pair in pairs for sid in pair}
    local = {s.target for s in assigns} | {s.var for s in stmts[1:] if isinstance(s, ir.For)}
    local -= summed

    def reads(s):
        return set((adjoint_reads if isinstance(s, ir.Assign) else header_reads).get(s.sid, ()))
    if not (_locals(local, kinds, mentioned, {s.sid for s in stmts})
            and not any(s.sid not in in_pairs and ir.mentions(s) & summed for s in stmts[1:])
            and not any(reads(s) & summed for s in stmts)
            and all(_set_before_read(m.body, _assigned_in(m.body) - summed, {m.var})
                    for m in stmts if isinstance(m, ir.For))
            and _read_where_final(stmts[1:], local, reads)):
        return None
    # The assignments the re-run makes: those whose values an adjoint or a
    # header in the loop reads, directly or through other re-run values.
    want = set().union(*(reads(s) for s in stmts[1:]), header_reads.get(loop.sid, ()))
    need, grew = set(), True
    while grew:
        grew = False
        for s in assigns:
            if s.sid not in in_pairs and s.sid not in need and s.target in want:
                need.add(s.sid)
                want |= ir.operands(s)
                grew = True
    for s in stmts[1:]:
        if isinstance(s, (ir.If, ir.For)):
            want |= s.reads()
    return frozenset(local), pairs, summed, need, want - local - {loop.var}


def _assigned_in(block) -> set:
    """The names the statements of ``block`` assign, nested ones included."""
    return {n for s in ir.walk(block) for n in s.writes()}


def _locals(local, kinds, mentioned, inner) -> bool:
    """Whether each of ``local`` is a number mentioned only by the statements ``inner``."""
    for v in local:
        k = kinds.get(v)
        if k is None or k.ndim != 0 or k.items is not None or k.dtype not in "fib" \
                or not mentioned.get(v, set()) <= inner:
            return False
    return True


def _read_where_final(stmts, local, reads) -> bool:
    """Whether no statement's adjoint or header (``reads``) reads a local that a
    later statement of ``stmts`` (the loop, in program order) assigns again."""
    last = {}
    for k, s in enumerate(stmts):
        for n in s.writes():
            last[n] = k
    return not any(last[v] > k for k, s in enumerate(stmts) for v in reads(s) & local)


def _sums(assigns, kinds, mentioned):
    """The sums among ``assigns``: pairs ``(sid of _t = v + y, sid of v = _t)``,
    and the names so summed, when every assignment of the name in the loop is
    such a pair."""
    by_target = {}
    for s in assigns:
        by_target.setdefault(s.target, []).append(s)
    pairs, names, bad = [], set(), set()
    for s in assigns:
        if not isinstance(s.expr, ast.Name):
            continue
        v, t = s.target, s.expr.id
        k = kinds.get(v)
        defs = by_target.get(t, [])
        if k is None or k.ndim != 0 or k.dtype != "f" or len(defs) != 1 \
                or mentioned.get(t, set()) != {defs[0].sid, s.sid} or defs[0].sid > s.sid:
            continue
        e = defs[0].expr
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            left = isinstance(e.left, ast.Name) and e.left.id == v
            right = isinstance(e.right, ast.Name) and e.right.id == v and isinstance(e.op, ast.Add)
            if left != right and v not in ir.atom_names(e.right if left else e.left):
                pairs.append((defs[0].sid, s.sid))
                names.add(v)
    paired = {sid for pair in pairs for sid in pair}
    for v in names:
        if any(s.sid not in paired for s in by_target[v]):
            bad.add(v)
    pairs = [p for p in pairs if _target_of(assigns, p[1]) not in bad]
    return pairs, names - bad


def _array_sums(body, kinds, mentioned):
    """The element sums ``A[k] += y`` in ``body`` (nested blocks included): triples
    ``(sid of _t = A[k], sid of _u = _t + y, sid of A[k] = _u)`` in one block, the
    last two in a row, each temporary used only there, and nothing in between
    mentioning ``A`` or assigning a name of the index; and the arrays."""
    triples, arrays = [], set()

    def visit(block):
        for k, c in enumerate(block):
            for sub in c.blocks():
                visit(sub)
            found = _element_sum(block, k, kinds, mentioned) if k >= 2 else None
            if found is not None:
                triples.append(found)
                arrays.add(c.array)
    visit(body)
    return triples, arrays


def _element_sum(block, k, kinds, mentioned):
    """The triple of :func:`_array_sums` that ends at ``block[k]``, or None."""
    b, c = block[k - 1], block[k]
    if not (isinstance(c, ir.SetItem) and isinstance(c.value, ast.Name)
            and isinstance(b, ir.Assign) and b.target == c.value.id
            and mentioned.get(b.target) == {b.sid, c.sid}
            and isinstance(b.expr, ast.BinOp) and isinstance(b.expr.op, (ast.Add, ast.Sub))):
        return None
    e = b.expr
    orders = [(e.left, e.right)] + ([(e.right, e.left)] if isinstance(e.op, ast.Add) else [])
    for t, other in orders:
        if not isinstance(t, ast.Name):
            continue
        at = next((j for j in range(k - 1) if isinstance(block[j], ir.Assign)
                   and block[j].target == t.id), None)
        if at is None:
            continue
        a = block[at]
        between = block[at + 1:k - 1]
        if isinstance(a.expr, ast.Subscript) and isinstance(a.expr.value, ast.Name) \
                and a.expr.value.id == c.array and ast.dump(a.expr.slice) == ast.dump(c.index) \
                and kinds.get(a.target) == Kind(0, "f") \
                and mentioned.get(a.target) == {a.sid, b.sid} \
                and not ir.atom_names(other) & {a.target, c.array} \
                and not any(c.array in ir.mentions(u) or u.writes() & ir.atom_names(c.index)
                            or u.blocks() for u in between):
            return a.sid, b.sid, c.sid
    return None


def _target_of(assigns, sid):
    return next(s.target for s in assigns if s.sid == sid)


def _set_before_read(block, local, assigned) -> bool:
    """Whether every read of a local in ``block`` (an iteration) comes where an
    earlier statement of the iteration has surely assigned it."""
    def walk(stmts, done):
        for s in stmts:
            if (s.reads() & local) - done:
                return None
            if isinstance(s, ir.Assign):
                done = done | {s.target}
            elif isinstance(s, ir.If):
                a, b = walk(s.body, done), walk(s.orelse, done)
                if a is None or b is None:
                    return None
                done = a & b
            elif isinstance(s, ir.For):
                if walk(s.body, done | {s.var}) is None:
                    return None     # after the loop: nothing it assigns is sure (no trips)
        return done
    return walk(block, set(assigned)) is not None
