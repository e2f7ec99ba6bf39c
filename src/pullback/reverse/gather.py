"""Scatters turned into gathers: the reverse of a stencil loop, as a hand-written adjoint has it.

The reverse of ``u[i] = un[i] + c * (un[i + 1] - 2 * un[i] + un[i - 1])`` adds
into three neighbours per iteration::

    for i in range(hi, lo - 1, -1):
        d = du[i]
        du[i] = 0.0
        dun[i - 1] += c * d
        dun[i] += (1 - 2 * c) * d
        dun[i + 1] += c * d

Each iteration reads and writes what the next one writes, so the compiler runs
it one element at a time.  Written per element of ``dun`` instead, gathering
from the neighbours of ``du`` (``dun[m] += c * du[m + 1]``, ...), each
iteration writes its own element, and the loop vectorises like the primal's.
:func:`gather_scatters` rewrites such loops of the Numba backend's reverse
sweep: one loop per array added into, over the elements every term reaches,
and at each end a short loop per term over the few elements only some terms
reach; then one loop for the elements the original reset to zero.

Invariant (why the result is the same, bit for bit): a loop is rewritten only
when its body is straight-line code of three kinds of statement: scalar
temporaries, each assigned before any read in the iteration and read nowhere
after the loop; additions ``X[i + c] += e`` into arrays the body never reads;
and resets ``Y[i + c] = 0.0`` of arrays read only at that element, before the
reset.  Every other array it reads, it does not write.  So every term ``e`` is
a function of ``i`` and of values no iteration changes, and each element of
``X`` receives the same terms, computed by the same operations, in the same
order: for element ``m``, the iterations ``i = m - c`` in the loop's order, and
the terms of one iteration in the body's.
"""
from __future__ import annotations

import ast
import copy

from .cleanup import bodies, names_written
from .ops import Comment, fold

#: Largest expression (in AST nodes) a rewritten loop may carry per array: beyond,
#: recomputing each term's temporaries per element would cost more than it saves.
_MOST_NODES = 400


def gather_scatters(blocks, fresh) -> None:
    """Rewrite, in place, every loop of ``blocks`` (statement lists: the sweeps)
    that the module docstring describes and that adds into some array at two or
    more offsets.  ``fresh(stem)`` gives an unused name."""
    for block in blocks:
        _rewrite_block(block, blocks, fresh)


def _rewrite_block(block, blocks, fresh) -> None:
    k = 0
    while k < len(block):
        st = block[k]
        for sub in bodies(st):
            _rewrite_block(sub, blocks, fresh)
        new = _gathered(st, blocks, fresh) if isinstance(st, ast.For) else None
        if new is not None:
            block[k:k + 1] = new
            k += len(new)
        else:
            k += 1


def _read_unset(blocks, skip) -> set:
    """The names some statement of ``blocks`` (outside the loop ``skip``) may read
    without an assignment of them earlier in its own block or a block around it:
    the names whose value may come from elsewhere (``skip``'s last iteration)."""
    out = set()

    def visit(block, bound):
        bound = set(bound)
        for st in block:
            if st is skip:      # what the loop assigns holds its last iteration's value
                bound -= names_written(st)
                continue
            nested = [getattr(st, f) for f in ("body", "orelse")
                      if isinstance(getattr(st, f, None), list)]
            for n in _own_nodes(st):
                if isinstance(n, ast.Name) and not isinstance(getattr(n, "ctx", None), ast.Store) \
                        and n.id not in bound:
                    out.add(n.id)
            for sub in nested:
                visit(sub, bound)
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                bound.add(st.targets[0].id)
    for block in blocks:
        visit(block, set())
    return out


def _own_nodes(st):
    """The nodes of ``st`` outside its nested statement lists."""
    todo = [v for f, v in ast.iter_fields(st) if f not in ("body", "orelse")]
    while todo:
        v = todo.pop()
        if isinstance(v, list):
            todo += v
        elif isinstance(v, ast.AST):
            yield v
            todo += [w for _, w in ast.iter_fields(v)]


class _Refused(Exception):
    """The loop is not of the form the module docstring describes."""


def _gathered(loop: ast.For, blocks, fresh):
    """The loops that replace ``loop``, or None."""
    try:
        i, lo, hi, step = _header(loop)
        adds, resets, temps = _body(loop.body, i)
    except _Refused:
        return None
    if (temps | ({i} if not resets else set())) & _read_unset(blocks, loop):
        return None         # a temporary (or the loop variable) may be read after the loop
    targets = {}
    for x, c, term in adds:
        targets.setdefault(x, []).append((c, term))
    if not any(len({c for c, _ in terms}) > 1 for terms in targets.values()):
        return None         # no scatter: nothing to gain
    if any(sum(len(list(ast.walk(t))) for _, t in terms) > _MOST_NODES
           for terms in targets.values()):
        return None
    first, last = fresh("_first"), fresh("_last")
    out = [_assign(first, lo), _assign(last, hi)]
    for x, terms in targets.items():
        # Element m gets the terms of iteration m - c, iterations in the loop's order.
        ordered = sorted(terms, key=lambda t: -t[0] * step)    # stable: body order kept
        out += _gather_loops(x, ordered, i, first, last, fresh)
    if resets:      # in the loop's order, so that its variable ends as it did
        bounds = [ast.Name(first), _at(ast.Name(last), 1)] if step == 1 else \
            [ast.Name(last), _at(ast.Name(first), -1)]
        out.append(ast.For(ast.Name(i, ast.Store()), ast.Call(ast.Name("range"), bounds + [
            ast.Constant(step)], []), [ast.Assign([ast.Subscript(
                ast.Name(y), _at(ast.Name(i), c), ast.Store())], ast.Constant(0.0))
                for y, c in resets], []))
    return out


def _header(loop):
    """``(i, first i, last i, step)`` of ``for i in range(a, b, ±1)``, the bounds as
    expressions; else _Refused."""
    it = loop.iter
    if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name) and it.func.id == "range"
            and len(it.args) == 3 and not it.keywords and not loop.orelse):
        raise _Refused
    step = fold(copy.deepcopy(it.args[2]))
    if not (isinstance(step, ast.Constant) and step.value in (1, -1)):
        raise _Refused
    a, b = it.args[0], it.args[1]
    end = ast.BinOp(copy.deepcopy(b), ast.Sub(), ast.Constant(step.value))
    lo, hi = (a, end) if step.value == 1 else (end, a)
    return loop.target.id, fold(copy.deepcopy(lo)), fold(copy.deepcopy(hi)), step.value


def _body(body, i):
    """``(adds, resets, temps)``: ``(array, offset, term)`` per addition in order,
    ``(array, offset)`` per reset, and the names assigned; else _Refused."""
    it = _Iteration(body, i)
    for st in body:
        if not isinstance(st, Comment):
            it.statement(st)
    it.check()
    return it.adds, it.resets, it.assigned


class _Iteration:
    """One iteration's statements read symbolically: each temporary's expression in
    terms of ``i`` and of values no iteration changes (``env``), the additions and
    resets in order, and the array reads with how many resets came before each."""

    def __init__(self, body, i):
        self.i, self.env, self.adds, self.resets, self.reads = i, {}, [], [], []
        self.assigned = {t.targets[0].id for t in body if isinstance(t, ast.Assign)
                         and isinstance(t.targets[0], ast.Name)}
        if i in self.assigned:
            raise _Refused

    def statement(self, st):
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t = st.targets[0]
            if isinstance(t, ast.Name):
                self.env[t.id] = self.value(st.value)
                return
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                    isinstance(st.value, ast.Constant) and st.value.value == 0.0:
                self.resets.append((t.value.id, _offset(self.value(t.slice), self.i)))
                return
        if isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add) and \
                isinstance(st.target, ast.Subscript) and isinstance(st.target.value, ast.Name):
            self.adds.append((st.target.value.id, _offset(self.value(st.target.slice), self.i),
                              self.value(st.value)))
            return
        raise _Refused

    def value(self, e):
        """``e`` with every temporary replaced by its expression (a copy)."""
        if isinstance(e, ast.Name):
            if e.id not in self.assigned:
                return ast.Name(e.id, ast.Load())
            if e.id not in self.env:
                raise _Refused      # read before it is assigned: carried between iterations
            return copy.deepcopy(self.env[e.id])
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name):
            c = _offset(self.value(e.slice), self.i)
            self.reads.append((e.value.id, c, len(self.resets)))
            return ast.Subscript(ast.Name(e.value.id, ast.Load()), _at(ast.Name(self.i), c),
                                 ast.Load())
        if not isinstance(e, _PURE) or isinstance(e, ast.Call) and e.keywords:
            raise _Refused
        out = copy.copy(e)
        for field, old in ast.iter_fields(e):
            if isinstance(old, ast.expr):
                setattr(out, field, self.value(old) if field != "func" else copy.deepcopy(old))
            elif isinstance(old, list):
                setattr(out, field, [self.value(v) if isinstance(v, ast.expr) else v
                                     for v in old])
        return out

    def check(self):
        """The arrays added into are never read nor reset; a reset array is read only
        at the element it resets, before the reset."""
        added, reset = {x for x, _, _ in self.adds}, {y: c for y, c in self.resets}
        if added & set(reset) or len(reset) < len(self.resets):
            raise _Refused
        order = [y for y, _ in self.resets]
        for a, c, before in self.reads:
            if a in added:
                raise _Refused          # an array added into is read: the order matters
            if a in reset and (c != reset[a] or before > order.index(a)):
                raise _Refused          # read elsewhere, or after its reset


#: Expressions a term may hold besides names and reads of arrays (calls: the
#: generated code's helpers and ``math`` functions, which change nothing).
_PURE = (ast.BinOp, ast.UnaryOp, ast.Call, ast.Constant, ast.Compare, ast.IfExp, ast.BoolOp,
         ast.Attribute)


def _offset(index, i) -> int:
    """``c`` of an index ``i + c`` (``i``, ``i - 1``, ``4 + i - 1``, ...); else _Refused."""
    coef, c = _affine(index, i)
    if coef != 1:
        raise _Refused
    return c


def _affine(e, i) -> tuple:
    """``(a, b)`` of an int expression ``a * i + b`` built of ``i``, int constants,
    ``+`` and ``-``; else _Refused."""
    if isinstance(e, ast.Name) and e.id == i:
        return 1, 0
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return 0, e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        a, b = _affine(e.operand, i)
        return -a, -b
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
        (a1, b1), (a2, b2) = _affine(e.left, i), _affine(e.right, i)
        return (a1 + a2, b1 + b2) if isinstance(e.op, ast.Add) else (a1 - a2, b1 - b2)
    raise _Refused


def _at(var, c) -> ast.expr:
    """``var + c``."""
    if c == 0:
        return var
    return ast.BinOp(var, ast.Add() if c > 0 else ast.Sub(), ast.Constant(abs(c)))


class _Shifted(ast.NodeTransformer):
    """A term of iteration ``i = m - c`` as a function of ``m``: ``x[i + k]`` becomes
    ``x[m + k - c]``, and ``i`` elsewhere ``m - c``."""

    def __init__(self, i, m, c):
        self.i, self.m, self.c = i, m, c

    def visit_Subscript(self, node):
        k = _offset(node.slice, self.i)
        node.value = self.visit(node.value)
        node.slice = _at(ast.Name(self.m, ast.Load()), k - self.c)
        return node

    def visit_Name(self, node):
        return _at(ast.Name(self.m, ast.Load()), -self.c) if node.id == self.i else node


def _gather_loops(x, terms, i, first, last, fresh) -> list:
    """``X[m] += term(m - c)`` for each term: over the elements every term reaches,
    one loop; at each end, the elements only some terms reach, one short loop per
    term (so each element still gets its terms in their order)."""
    m = fresh("_m")
    cs = [c for c, _ in terms]
    lo, hi = min(cs), max(cs)

    def add(c, term):
        t = _Shifted(i, m, c).visit(copy.deepcopy(term))
        return ast.AugAssign(ast.Subscript(ast.Name(x), ast.Name(m), ast.Store()), ast.Add(), t)

    def over(a, stop, body):       # m from a, up to stop (excluded)
        return ast.For(ast.Name(m, ast.Store()), ast.Call(ast.Name("range"), [a, stop], []),
                       body, [])

    def plus(name, c):
        return _at(ast.Name(name), c)

    def call(fn, *args):
        return ast.Call(ast.Name(fn), list(args), [])
    # Left end: m + c >= ... elements below first + hi; right end: above last + lo.
    left = [over(plus(first, c), call("min", plus(first, hi), plus(last, c + 1)), [add(c, t)])
            for c, t in terms if c < hi]
    right = [over(call("max", plus(last, lo + 1), plus(first, hi)), plus(last, c + 1),
                  [add(c, t)]) for c, t in terms if c > lo]
    # X[m] = X[m] + t1 + t2 ...: the additions of the += in a row, as one statement
    # (the compiler need not store and load X[m] between them).
    element = ast.Subscript(ast.Name(x), ast.Name(m), ast.Load())
    for c, t in terms:
        element = ast.BinOp(element, ast.Add(), add(c, t).value)
    interior = ast.Assign([ast.Subscript(ast.Name(x), ast.Name(m), ast.Store())], element)
    return left + [over(plus(first, hi), plus(last, lo + 1), [interior])] + right


def _assign(name, value):
    return ast.Assign([ast.Name(name, ast.Store())], value)
