"""Loop sums: a cotangent added to a buffer in every iteration of a reverse loop
is added once, after the loop, by the rule's summed form.

``h = np.tanh(W @ h)`` over T steps reverses to ``dW += outer(g_t, h_t)`` per
step: T fresh matrices and T passes over ``dW``.  A helper with a summed form
(:func:`pullback.rules.forms.loop_sum`) instead collects each iteration's
varying arguments and adds ``sum_t outer(g_t, h_t)`` as one matrix product
after the loop, as a hand-written backpropagation through time does.

Invariant (why the result is the same sum): a statement ``dW += helper(...)``
is deferred only when nothing else in the loop body reads or writes ``dW`` and
nothing in it assigns the arguments kept fixed; the varying arguments are
copied when collected, so a later in-place write cannot change them.
"""
from __future__ import annotations

import ast

from ..core.runtime import snapshot
from ..rules import forms
from .ops import assign, call, helper_call


def defer_loop_sums(tr, body: list) -> tuple[list, list, list]:
    """``(before, body, after)``: the reverse loop's ``body`` with its summable
    buffer updates replaced by collecting their arguments, the lists' creation
    to put before the loop and the summed updates to put after it."""
    before, after, new_body = [], [], list(body)
    for k, st in enumerate(body):
        found = _summable(tr, st)
        if found is None:
            continue
        dn, summed, varying, args = found
        others = [s for j, s in enumerate(body) if j != k]
        fixed = [a for i, a in enumerate(args) if i not in varying]
        if not _only_added_to(dn, others) or _written(others) & _names(fixed):
            continue
        steps = tr.names.fresh("_steps")
        copy = tr.helper(snapshot, "snapshot")
        before.append(assign(steps, ast.List([], ast.Load())))
        new_body[k] = ast.Expr(call(ast.Attribute(ast.Name(steps), "append", ast.Load()),
                                    ast.Tuple([call(copy, args[i]) for i in varying],
                                              ast.Load())))
        after.append(ast.AugAssign(ast.Name(dn, ast.Store()), ast.Add(),
                                   call(tr.helper(summed, summed.__name__),
                                        ast.Name(steps), *fixed)))
    return before, new_body, after


def _only_added_to(dn, stmts) -> bool:
    """Whether ``stmts`` touch ``dn`` only as ``dn += expr`` with ``expr`` not
    reading it: then adding one of the terms later gives the same sum."""
    for st in stmts:
        if isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add) \
                and isinstance(st.target, ast.Name) and st.target.id == dn:
            st = st.value
        if dn in _names([st]):
            return False
    return True


def _summable(tr, st):
    """``(adjoint, summed, varying, args)`` for ``dW += helper(*args)`` where
    ``dW`` is a buffer and ``helper`` has a summed form, else None."""
    if not (isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add)
            and isinstance(st.target, ast.Name)):
        return None
    found = helper_call(tr, st.value)
    form = forms.summed_form(found[0]) if found is not None else None
    if form is None:
        return None
    summed, varying = form
    args = found[1]
    if not all(isinstance(a, (ast.Name, ast.Constant)) for a in args):
        return None
    return st.target.id, summed, varying, args


def _names(nodes) -> set:
    """Every name in ``nodes``."""
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _written(nodes) -> set:
    """The names ``nodes`` write: assignment and loop targets, and the array a
    subscript target writes into (its index's names too: a conservative set)."""
    out = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Assign):
                out |= _names(n.targets)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)):
                out |= _names([n.target])
    return out
