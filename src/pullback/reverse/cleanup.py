"""Peepholes on the generated reverse sweep (Python AST in, Python AST out).

Each removes code that provably changes nothing: a reset nobody reads, a copy
of an adjoint that could be read in place, an element zeroed and re-added.
"""
from __future__ import annotations

import ast

from ..analysis.storage import LOCAL
from ..core import ir


def keep_element_adjoints(out) -> list:
    """``y[i] += c`` reverses to ``g = dy[i]; dy[i] = 0.0; ...; dy[i] += g``: the
    element ends where it started, so drop the zeroing and the re-adding."""
    def element(node):
        return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)

    k = 0
    while k < len(out):
        zero = out[k]
        if not (isinstance(zero, ast.Assign) and element(zero.targets[0])
                and isinstance(zero.value, ast.Constant) and zero.value.value == 0.0):
            k += 1
            continue
        target = zero.targets[0]
        text, array = ast.unparse(target), target.value.id
        index_names = ir.atom_names(target.slice)
        # The copy taken just before the zeroing.
        j = k - 1
        copy_ok = (j >= 0 and _is_copy_of(out[j], text))
        done = False
        if copy_ok:
            saved = out[j].targets[0].id
            for m in range(k + 1, len(out)):
                st = out[m]
                if (isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add)
                        and ast.unparse(st.target) == text and isinstance(st.value, ast.Name)
                        and st.value.id == saved):
                    del out[m]
                    del out[k]
                    done = True
                    break
                if bodies(st) or array in names_read(st) | names_written(st) \
                        or (index_names | {saved}) & names_written(st):
                    break
        if not done:
            k += 1
    return out


def _is_copy_of(st, text) -> bool:
    return (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name) and ast.unparse(st.value) == text)


def _is_copy(st) -> bool:
    return (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Name))


def drop_dead_resets(stmts, adjoint_names, returned=()) -> list:
    """Remove trailing ``dv = 0.0`` / ``dv = zeros_like(v)`` that nothing reads.

    ``returned`` names the adjoints the function returns: they are read at the end,
    so their last reset stays (a parameter rebound before it is read, ``x = 2.0``,
    has gradient zero, not whatever reached the local ``x``)."""
    out, live = [], set(returned)
    for st in reversed(stmts):
        if (isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id in adjoint_names and st.targets[0].id not in live
                and (isinstance(st.value, ast.Constant) or isinstance(st.value, ast.Call))
                and not bodies(st)):
            if isinstance(st.value, ast.Constant) or "zeros" in ast.unparse(st.value.func):
                continue
        live |= names_read(st)
        out.append(st)
    return out[::-1]


def bodies(st) -> list:
    if isinstance(st, (ast.For, ast.While)):
        return [st.body]
    if isinstance(st, ast.If):
        return [st.body, st.orelse]
    return []


def names_read(st) -> set:
    """Names ``st`` reads, including the target of ``dv += c`` (an update reads
    the value it adds to)."""
    out = {n.id for n in ast.walk(st)
           if isinstance(n, ast.Name) and not isinstance(getattr(n, "ctx", None), ast.Store)}
    out |= {n.target.id for n in ast.walk(st)
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    return out


def names_written(st) -> set:
    out = {n.id for n in ast.walk(st)
           if isinstance(n, ast.Name) and isinstance(getattr(n, "ctx", None), ast.Store)}
    if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
        out.add(st.target.id)
    return out


def _rename(st, old, new):
    class R(ast.NodeTransformer):
        def visit_Name(_, node):
            if node.id == old and not isinstance(getattr(node, "ctx", None), ast.Store):
                return ast.Name(new, ast.Load())
            return node
    return R().visit(st)


def propagate_copies(tr, stmts) -> list:
    """Drop ``d_t = dv`` copies of local-temporary adjoints by reading ``dv``
    where ``d_t`` was read, when ``dv`` does not change in between."""
    local = {tr.d(n) for n in tr.storage.names(LOCAL)}
    out = list(stmts)
    for st in out:
        for sub in bodies(st):
            sub[:] = propagate_copies(tr, sub)
    # `b = a` after `a = b`, with neither written in between, changes nothing.
    k = 1
    while k < len(out):
        st = out[k]
        if _is_copy(st):
            a, b = st.value.id, st.targets[0].id
            for j in range(k - 1, -1, -1):
                prev = out[j]
                if _is_copy(prev) and prev.targets[0].id == a and prev.value.id == b:
                    del out[k]
                    k -= 1
                    break
                if bodies(prev) or {a, b} & names_written(prev):
                    break
        k += 1
    k = 0
    while k < len(out):
        st = out[k]
        if (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name) and st.targets[0].id in local
                and isinstance(st.value, ast.Name)):
            a, b = st.targets[0].id, st.value.id
            uses = [j for j in range(k + 1, len(out)) if a in names_read(out[j])]
            if uses and all(not bodies(out[j]) for j in range(k + 1, uses[-1] + 1)) and \
                    not any(b in names_written(out[j]) or a in names_written(out[j])
                            for j in range(k + 1, uses[-1])):
                for j in uses:
                    out[j] = _rename(out[j], a, b)
                del out[k]
                continue
        k += 1
    return keep_element_adjoints(out)
