"""Peepholes on the generated sweeps (Python AST in, Python AST out).

Each removes work that provably changes no result: a reset nobody reads, a
copy of an adjoint that could be read in place, an element or a slice zeroed
and re-added, a temporary array for an addition that can be made in place
(``v[s] = v[s] + e``, ``add_into(v, a * b)``).  The fusion of elementwise
temporaries into one expression is :mod:`.fusion`, which reads statements with
the name helpers here (``bodies``, ``names_read``, ``names_written``,
``name_counts``).  The rewrites match statements by node type and structure:
a reset to zero is a :class:`.ops.ZeroAdjoint`, two expressions are the same
when :func:`.ops.same` says so, never by their printed text.
"""
from __future__ import annotations

import ast

from ..core import ir
from .ops import TapeOp, ZeroAdjoint, same


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
        array = target.value.id
        index_names = ir.atom_names(target.slice)
        # The copy taken just before the zeroing.
        j = k - 1
        copy_ok = (j >= 0 and _is_copy_of(out[j], target))
        done = False
        if copy_ok:
            saved = out[j].targets[0].id
            for m in range(k + 1, len(out)):
                st = out[m]
                if (isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add)
                        and same(st.target, target) and isinstance(st.value, ast.Name)
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


def _is_copy_of(st, element) -> bool:
    return (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name) and same(st.value, element))


def _is_copy(st) -> bool:
    return (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Name))


def drop_dead_resets(stmts, adjoint_names, returned=()) -> list:
    """Remove trailing ``dv = 0.0`` / ``dv = zeros_like(v)`` (a :class:`.ops.ZeroAdjoint`,
    or an adjoint assigned a constant) that nothing reads.

    ``returned`` names the adjoints the function returns: they are read at the end,
    so their last reset stays (a parameter rebound before it is read, ``x = 2.0``,
    has gradient zero, not whatever reached the local ``x``)."""
    out, live = [], set(returned)
    for st in reversed(stmts):
        if (isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id in adjoint_names and st.targets[0].id not in live
                and (isinstance(st, ZeroAdjoint) or isinstance(st.value, ast.Constant))):
            continue
        live |= names_read(st)
        out.append(st)
    return out[::-1]


def bodies(st) -> list:
    """The statement lists nested in ``st`` (those of a push or pop's own statements)."""
    if isinstance(st, TapeOp):
        return [b for s in st.body for b in bodies(s)]
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


def name_counts(blocks) -> tuple[dict, dict]:
    """How often each name is read and how often bound in ``blocks``."""
    loads, stores = {}, {}
    for block in blocks:
        for st in block:
            for n in ast.walk(st):
                if isinstance(n, ast.Name):
                    counts = stores if isinstance(getattr(n, "ctx", None), ast.Store) else loads
                    counts[n.id] = counts.get(n.id, 0) + 1
    return loads, stores


def _reads_of(st, name) -> int:
    """How often ``st`` reads ``name``."""
    return sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(st))


def _rename(st, old, new):
    class R(ast.NodeTransformer):
        def visit_Name(_, node):
            if node.id == old and not isinstance(getattr(node, "ctx", None), ast.Store):
                return ast.Name(new, ast.Load())
            return node
    return R().visit(st)


def propagate_copies(local, stmts) -> list:
    """Drop ``d_t = dv`` copies of local-temporary adjoints (``local``: their
    names) by reading ``dv`` where ``d_t`` was read, when ``dv`` does not change
    in between."""
    out = list(stmts)
    for st in out:
        for sub in bodies(st):
            sub[:] = propagate_copies(local, sub)
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


def products_into(blocks, add_into: str, product_helper) -> None:
    """``add_into(v, a * b)`` becomes ``add_product_into(v, a, b)``, in place:
    Numba adds the products element by element instead of making the array of
    products first (the heat step's ``add_into(du[1:-1], d_t7 * -2.0)``, which
    :func:`.fusion.fuse_elementwise` makes).  ``product_helper()``: the name of
    ``add_product_into`` in the generated code (asked only when it is used)."""
    for block in blocks:
        for st in ast.walk(ast.Module(body=list(block), type_ignores=[])):
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Name) and st.value.func.id == add_into \
                    and len(st.value.args) == 2 and isinstance(st.value.args[1], ast.BinOp) \
                    and isinstance(st.value.args[1].op, ast.Mult):
                view, product = st.value.args
                st.value = ast.Call(ast.Name(product_helper(), ast.Load()),
                                    [view, product.left, product.right], [])


def keep_slice_adjoints(blocks, updates=()) -> None:
    """``g = dv[s].copy(); dv[s] = 0.0; ...; dv[s] += g`` (or ``add_into(dv[s],
    g)``): the slice ends as it started plus what was added in between, so drop
    the zeroing and the re-adding (two passes over the slice), in place.  In
    between, ``dv`` may only be added into (``dv[...] += ...`` or a call of one
    of ``updates``, the helpers that add into a view), ``g`` not rebound, and
    ``g`` is read nowhere after.  (The sum is the same; its rounding order differs.)"""
    loads, _ = name_counts(blocks)
    for block in blocks:
        _keep_slices(block, loads, set(updates))


def _keep_slices(block, loads, updates) -> None:
    for st in block:
        for sub in bodies(st):
            _keep_slices(sub, loads, updates)
    k = 0
    while k + 1 < len(block):
        found = _slice_round_trip(block, k, loads, updates)
        if found is None:
            k += 1
            continue
        if _read_before_updates(block[k + 2:found], block[k].targets[0].id, updates):
            block[k].value = block[k].value.func.value      # the slice itself, no copy
        del block[found]
        del block[k + 1]


def _slice_round_trip(block, k, loads, updates):
    """The position of the ``dv[s] += g`` that undoes ``block[k]``'s copy and
    ``block[k + 1]``'s zeroing with nothing in between but additions, or None."""
    take, zero = block[k], block[k + 1]
    if not (isinstance(take, ast.Assign) and isinstance(take.targets[0], ast.Name)
            and isinstance(take.value, ast.Call) and not take.value.args
            and isinstance(take.value.func, ast.Attribute) and take.value.func.attr == "copy"
            and _buffer_slice(take.value.func.value)):
        return None
    g, view = take.targets[0].id, take.value.func.value
    buffer = view.value.id
    if not (isinstance(zero, ast.Assign) and same(zero.targets[0], view)
            and isinstance(zero.value, ast.Constant) and zero.value.value == 0.0):
        return None
    index_names, reads = ir.atom_names(view.slice), 0
    for m in range(k + 2, len(block)):
        st = block[m]
        target = _added_into(st, updates)
        added = _added(st) if target is not None else None
        if target is not None and same(target, view) and isinstance(added, ast.Name) \
                and added.id == g:
            return m if reads + 1 == loads.get(g, 0) else None
        if bodies(st) or (index_names | {g, buffer}) & names_written(st):
            return None
        if buffer in names_read(st) and (target is None or buffer in _reads_besides(st, target)):
            return None
        reads += _reads_of(st, g)
    return None


def _buffer_slice(e) -> bool:
    return isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) \
        and any(isinstance(n, ast.Slice) for n in ast.walk(e.slice))


def _added_into(st, updates):
    """The view ``st`` adds into (``v += x`` or ``update(v, ...)``), else None."""
    if isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add) \
            and isinstance(st.target, ast.Subscript):
        return st.target
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
            and isinstance(st.value.func, ast.Name) and st.value.func.id in updates \
            and st.value.args and isinstance(st.value.args[0], ast.Subscript):
        return st.value.args[0]
    return None


def _added(st):
    """What ``v += x`` / ``add_into(v, x)`` adds (the whole call for other updates)."""
    if isinstance(st, ast.AugAssign):
        return st.value
    args = st.value.args
    return args[1] if len(args) == 2 else st.value


def _reads_besides(st, target) -> set:
    """Names ``st`` reads other than the buffer of the view it adds into."""
    rest = [_added(st)] if isinstance(st, ast.AugAssign) else \
        [a for a in st.value.args if a is not target]
    return {n.id for e in rest for n in ast.walk(e) if isinstance(n, ast.Name)} | \
        ir.atom_names(target.slice)


def _read_before_updates(between, g, updates) -> bool:
    """Whether ``g`` (a copy of a slice of an adjoint buffer) may be the slice
    itself: read only before the first addition into the buffer, each time by
    arithmetic whose result is a new value (``d_t7 = g * c``), so that nothing
    keeps the view past the additions."""
    updated = False
    for st in between:
        uses = _reads_of(st, g)
        updated = updated or _added_into(st, updates) is not None
        if uses and (updated or not (isinstance(st, ast.Assign)
                                     and isinstance(st.targets[0], ast.Name)
                                     and isinstance(st.value, (ast.BinOp, ast.UnaryOp)))):
            return False
    return True


def add_in_place(blocks, float_arrays, ints, add_into=None) -> None:
    """``v[s] = v[s] + e`` becomes ``v[s] += e``, in place: no array for the sum,
    no copy back.  Only for ``v`` in ``float_arrays`` (name -> ndim; into an
    integer array ``=`` truncates the float sum where ``+=`` refuses it) and
    basic indexing (slices, integer constants, names in ``ints``).  With
    ``add_into()`` (giving the helper's name, asked only when it is used: Numba's
    augmented assignment to a slice does not compile), a row or slice is
    ``add_into(v[s], e)``.  ``e`` is evaluated before any element changes, as before."""
    for block in blocks:
        for k, st in enumerate(block):
            for sub in bodies(st):
                add_in_place([sub], float_arrays, ints, add_into)
            parts = _basic_index(st, float_arrays, ints)
            if parts is None:
                continue
            target = st.targets[0]
            if add_into is None or (len(parts) == float_arrays[target.value.id]
                                    and not any(isinstance(p, ast.Slice) for p in parts)):
                block[k] = ast.AugAssign(target, ast.Add(), st.value.right)
            else:
                view = ast.Subscript(target.value, target.slice, ast.Load())
                block[k] = ast.Expr(ast.Call(ast.Name(add_into(), ast.Load()),
                                             [view, st.value.right], []))


def _basic_index(st, float_arrays, ints):
    """The index parts of ``v[s] = v[s] + e`` with a float array ``v`` and basic
    indexing, else None."""
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Subscript)
            and isinstance(st.targets[0].value, ast.Name)
            and st.targets[0].value.id in float_arrays
            and isinstance(st.value, ast.BinOp) and isinstance(st.value.op, ast.Add)
            and same(st.value.left, st.targets[0])):
        return None
    index = st.targets[0].slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]

    def basic(e) -> bool:
        if isinstance(e, ast.Slice):
            return all(b is None or basic(b) for b in (e.lower, e.upper, e.step))
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return basic(e.operand)
        return (isinstance(e, ast.Constant) and type(e.value) is int) or \
            (isinstance(e, ast.Name) and e.id in ints)
    return parts if all(basic(p) for p in parts) else None


def zeros_in_place(blocks, scalars, refill) -> None:
    """``dv = np.zeros_like(v)`` in a loop becomes ``dv = refill(dv, v)``: ``dv``'s own
    memory zeroed when it has ``v``'s shape, no array allocated per iteration.

    Only for a buffer no other name ever holds (so zeroing its memory changes no
    other value): every mention of ``dv`` in ``blocks`` is a reset to a new array of
    zeros (``dv = np.zeros_like(v)``), an update in
    place (``dv[i] += g``, ``dv += g``, ``dv[i] = 0.0``, a helper called for its
    effect: ``add_into(dv[s], g)``), an operand of a sum added in place into another
    buffer (``du += f(dv)``), or an element read into a number of ``scalars``
    (``d_t = dv[i]``, the adjoint of a number)."""
    candidates = {st.targets[0].id for st in _walk_statements(blocks)
                  if isinstance(st, ZeroAdjoint) and _fresh_zeros(st.value)}
    for dv in [d for d in sorted(candidates) if all(_holds_no_alias(st, d, scalars)
                                            for st in _walk_statements(blocks))]:
        _refill_in_loops(blocks, dv, refill, False)


def _fresh_zeros(e) -> bool:
    """``np.zeros_like(v)``: a new array of zeros."""
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) \
        and e.func.attr == "zeros_like" and len(e.args) == 1 and not e.keywords


def _walk_statements(blocks):
    for block in blocks:
        for st in block:
            yield st
            yield from _walk_statements(bodies(st))


def _mentions(node, name) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _holds_no_alias(st, dv, scalars) -> bool:
    """Whether statement ``st`` (not the statements nested in it) leaves ``dv``'s
    memory held by ``dv`` alone (see :func:`zeros_in_place`)."""
    if isinstance(st, (ast.For, ast.While, ast.If)):
        head = st.iter if isinstance(st, ast.For) else st.test
        return not _mentions(head, dv) and not (isinstance(st, ast.For)
                                                and _mentions(st.target, dv))
    if isinstance(st, TapeOp) or not _mentions(st, dv):
        return True
    if isinstance(st, ast.Assign) and len(st.targets) == 1 \
            and isinstance(st.targets[0], ast.Name) and st.targets[0].id == dv:
        return _fresh_zeros(st.value) and not _mentions(st.value, dv)     # its reset

    def element(t):
        return isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
            and t.value.id == dv and not _mentions(t.slice, dv)
    if isinstance(st, ast.AugAssign):           # an update of dv, or dv added elsewhere
        into = isinstance(st.target, ast.Name) and st.target.id == dv or element(st.target)
        return not _mentions(st.target, dv) or (into and not _mentions(st.value, dv))
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
            and isinstance(st.value.func, ast.Name) and st.value.args:   # add_into(dv[s], g)
        # A helper of the sweeps, adding into its first argument, which keeps nothing.
        first = st.value.args[0]
        return (element(first) or isinstance(first, ast.Name) and first.id == dv) and not any(
            _mentions(a, dv) for a in st.value.args[1:] + [k.value for k in st.value.keywords])
    if isinstance(st, ast.Assign) and len(st.targets) == 1:
        t = st.targets[0]
        if element(t):                          # dv[i] = 0.0
            return not _mentions(st.value, dv)
        if isinstance(t, ast.Name) and t.id in scalars:     # d_t = dv[i]
            return element(st.value)
    return False


def _refill_in_loops(blocks, dv, refill, looped) -> None:
    for block in blocks:
        for k, st in enumerate(block):
            inner = looped or isinstance(st, (ast.For, ast.While))
            _refill_in_loops(bodies(st), dv, refill, inner)
            if looped and isinstance(st, ZeroAdjoint) and st.targets[0].id == dv:
                block[k] = ZeroAdjoint(st.targets, ast.Call(
                    ast.Name(refill(), ast.Load()), [ast.Name(dv, ast.Load()), st.value.args[0]],
                    []))
