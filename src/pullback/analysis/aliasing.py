"""Refuse in-place writes into an array that may share memory with another name."""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..core import ir
from ..core.errors import UnsupportedSyntaxError
from ..rules import registry


def _sole_definition(name, copy_stmt, stmts, params):
    """The one assignment of ``name`` when ``copy_stmt`` (``x = name``) is its only
    use, else None.  Then ``x`` is the array's only name from there on: ``x = x *
    0.5`` computes into a temporary and renames it, and the array is a view only if
    the temporary's own definition makes one."""
    if name in params:
        return None
    readers = [st for st in ir.walk(stmts) if name in st.reads()]
    sites = [st for st in ir.walk(stmts) if name in st.writes()]
    if readers == [copy_stmt] and len(sites) == 1 and isinstance(sites[0], ir.Assign):
        return sites[0]
    return None


def view_made_by(s, kind, stmts, params):
    """``(base, how, expr)`` when the assignment ``s`` makes ``s.target`` share memory
    with the array named ``base``: ``s.target = expr`` ``how`` ("is a view", ...)
    says why, for messages.  None when ``s`` makes a new array."""
    e = s.expr
    if isinstance(e, ast.Name) and kind(e).ndim != 0:
        d = _sole_definition(e.id, s, stmts, params)
        if d is None:
            return e.id, "makes no copy", e
        return view_made_by(ir.Assign(d.line, s.target, d.expr, d.callee, d.method), kind,
                            stmts, params)
    if isinstance(e, ast.Subscript) and kind(ast.Name(s.target)).ndim != 0:
        return _root(e.value), "is a view", e
    if isinstance(e, ast.Attribute) and e.attr in ("T", "mT", "real", "imag"):
        return _root(e.value), "is a view", e
    if isinstance(e, ast.Call) and _may_be_view(s):
        base = e.func.value if s.method is not None else (e.args[0] if e.args else None)
        return _root(base), "may be a view", e
    return None


def _root(atom):
    return atom.id if isinstance(atom, ast.Name) else None


def _enclosing_loops(stmts) -> dict:
    """sid -> sids of the loops around the statement."""
    loops = {}

    def visit(block, enclosing):
        for st in block:
            loops[st.sid] = enclosing
            for sub in st.blocks():
                visit(sub, enclosing | ({st.sid} if isinstance(st, (ir.For, ir.While))
                                        else frozenset()))
    visit(stmts, frozenset())
    return loops


def check_aliasing(stmts, kind, location, params=()) -> None:
    """Refuse in-place writes into an array that may share memory with another
    name: the write would change the other array behind the transform's back
    (or the caller's array, which we never mutate).

    ``stmts`` is numbered (sids in program order); ``kind(atom)`` gives an
    atom's kind, ``location(line)`` the user's source location, ``params`` the
    function's parameters."""
    loops = _enclosing_loops(stmts)
    sets = in_place_writes(stmts, kind)
    for s in ir.walk(stmts):
        if not isinstance(s, ir.Assign):
            continue
        # Writes into s.target that may run while it still aliases another array.
        later = [w for w in sets if w.array == s.target and (
            w.sid > s.sid or loops[w.sid] & loops[s.sid])]
        view = view_made_by(s, kind, stmts, params) if later else None
        if view is not None:
            _, how, e = view
            bound, copied = _as_written(s, e, location)
            raise UnsupportedSyntaxError(
                f"a write into {_array_written(later[0], location)}, which shares memory "
                "with another array "
                f"({bound} {how})", location(later[0].line),
                f"write `{copied}` to work on a copy, or write through the original array")


def in_place_writes(stmts, kind) -> list:
    """The statements that write into an array in place, as :class:`_Write` records:
    element and slice writes (``a[i] = v``), and augmented assignments of a whole
    array (``h += e``: NumPy adds into ``h``'s memory, which the IR writes as
    ``h = h + e``, a new array under the old name)."""
    out = []
    for st in ir.walk(stmts):
        if isinstance(st, ir.SetItem):
            out.append(_Write(st, st.array))
        elif isinstance(st, ir.Assign) and st.augmented and kind(ast.Name(st.target)).ndim != 0:
            out.append(_Write(st, st.target))
    return out


@dataclass(frozen=True)
class _Write:
    """A statement that writes into ``array`` in place."""

    stmt: ir.Stmt
    array: str

    @property
    def sid(self) -> int:
        return self.stmt.sid

    @property
    def line(self) -> int:
        return self.stmt.line


def _may_be_view(s: ir.Assign) -> bool:
    """The call's primitive (or method) is registered as possibly returning a view."""
    fn = registry.method(s.method) if s.method is not None else s.callee
    rule = registry.lookup(fn) if fn is not None else None
    return rule is not None and rule.view


def check_stale_views(stmts, kind, location, params=()) -> None:
    """Refuse a write into an array after a view of it was taken, when the view is
    read after the write (``r = q[1:]; q[1] = ...; ... r[0]``).  The view sees the
    write; the transform, which follows values by name, would not (the derivative
    of ``r[0]`` would miss the write).  Views of views count: a write into ``q``
    changes every view whose chain of bases reaches ``q``.  A write after ``q`` is
    bound to a new array (``hn = np.empty(n)`` at the top of each iteration, with
    ``h = hn`` at its end), or a read after the view's name is bound afresh, is
    fine."""
    flow = _Flow(stmts)
    views = [(s, view_made_by(s, kind, stmts, params)) for s in ir.walk(stmts)
             if isinstance(s, ir.Assign)]
    views = [(s, v[0]) for s, v in views if v is not None and v[0] is not None]
    bases = {}
    for s, base in views:
        bases.setdefault(s.target, set()).add(base)
    sets = in_place_writes(stmts, kind)
    for s, _ in views:
        reaches = _base_closure(s.target, bases)
        for w in sets:
            if w.array not in reaches or not flow.reaches(s, w.stmt, w.array):
                continue
            read = next((r for r in ir.walk(stmts) if s.target in r.reads() and r is not w.stmt
                         and flow.reaches(w.stmt, r, s.target)), None)
            if read is not None:
                raise UnsupportedSyntaxError(*_stale_view(s, w, read, location))


def _stale_view(s, w, read, location) -> tuple:
    """The message, location and hint for a write ``w`` into an array while ``s``'s
    view of it is read later (``read``), in the user's words: a view the transform
    made (a loop's sequence, ``_t1 = vv``) is spoken of by the user's line."""
    array = _array_written(w, location)
    if not _generated(s.target):
        bound, copied = _as_written(s, s.expr, location)
        return (f"a write into {array} while {s.target!r}, a view of it ({bound}), is "
                f"still read later (line {read.line})", location(w.line),
                f"take a copy for the view, `{copied}`, or write into {array} before "
                "taking the view")
    line = location(s.line).line.strip()
    loop = _loop_over_copy(line, array.strip("'"))
    if loop is not None:
        return (f"a write into {array} inside a loop over it (line {s.line}: `{line}`), "
                "which reads the array item by item and so would see the write",
                location(w.line), f"iterate over a copy: `{loop}`")
    return (f"a write into {array} while a view of it, made on line {s.line} "
            f"(`{line}`), is still read later (line {read.line})", location(w.line),
            f"take a copy there (`.copy()`), or write into {array} before taking the view")


def _generated(name: str) -> bool:
    """A name the transform made (``_t1``, an inlined helper's ``_h_v_1``), not the user's."""
    return name.startswith("_")


def _array_written(w, location) -> str:
    """The array ``w`` writes into, as the user's line names it."""
    if not _generated(w.array):
        return repr(w.array)
    tree = _parsed(location(w.line).line)
    target = getattr(tree, "target", None) or (getattr(tree, "targets", None) or [None])[0]
    while isinstance(target, ast.Subscript):
        target = target.value
    return repr(target.id) if isinstance(target, ast.Name) else "an array"


def _loop_over_copy(line, array) -> str | None:
    """``for k, a in enumerate(vv):`` over ``array`` as ``for k, a in
    enumerate(vv.copy()):``, or None when ``line`` is no such loop."""
    source = line + "\n    pass" if line.startswith("for ") else ""
    tree = _parsed(source)
    if not isinstance(tree, ast.For):
        return None

    class Copy(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.parse(_copy_of(node)).body[0].value if node.id == array else node
    target = ast.get_source_segment(source, tree.target)
    return f"for {target} in {ast.unparse(Copy().visit(tree.iter))}:"


def _parsed(line: str):
    try:
        return ast.parse(line.strip()).body[0]
    except (SyntaxError, IndexError):
        return None


def _copy_of(expr) -> str:
    return ast.unparse(ast.Call(ast.Attribute(expr, "copy", ast.Load()), [], []))


def _as_written(s, expr, location) -> tuple[str, str]:
    """``(binding, with a copy)`` for messages: ``s.target = expr`` and the same with
    ``.copy()``, in the user's words.  When ``expr`` names the transform's
    temporaries (``v = _t1`` for ``v = firsthalf(p)``), the user's line is quoted
    instead, so that a message never names a variable the user did not write."""
    if not _generated(s.target) and not any(map(_generated, ir.atom_names(expr))):
        return f"{s.target} = {ast.unparse(expr)}", f"{s.target} = {_copy_of(expr)}"
    line = location(s.line).line.strip()
    tree = _parsed(line)
    if isinstance(tree, ast.Assign) and len(tree.targets) == 1 \
            and isinstance(tree.targets[0], ast.Name) and tree.targets[0].id == s.target:
        return f"line {s.line}: {line}", f"{s.target} = {_copy_of(tree.value)}"
    if _generated(s.target):
        return f"line {s.line}: `{line}`", "....copy()"
    return f"{s.target}, bound on line {s.line}", f"{s.target} = ....copy()"


def read_through_views(stmts, kind, params, value_reads) -> set:
    """The arrays whose contents the reverse sweep reads through a view: the
    bases, direct or through other views, of each name in ``value_reads`` made by
    a view (``_t = H[0, :]``).  A write into such an array must be undone before
    that read, like a write into an array read directly; else the reverse sweep
    sees the later contents through the view."""
    bases = _bases(stmts, kind, params)
    out = set()
    for name in value_reads:
        out |= _base_closure(name, bases)
    return out


def sharing(stmts, kind, params) -> dict:
    """name -> the arrays it shares memory with: those it is a view of, or (a
    tuple) holds."""
    return _bases(stmts, kind, params)


def _bases(stmts, kind, params) -> dict:
    """name -> the arrays it is a view of, or (a tuple) holds."""
    bases: dict = {}
    for st in ir.walk(stmts):
        if isinstance(st, ir.Assign):
            made = view_made_by(st, kind, stmts, params)
            if made is not None and made[0] is not None:
                bases.setdefault(st.target, set()).add(made[0])
            elif isinstance(st.expr, ast.Tuple):
                # A tuple holds its arrays themselves (a fold's carry (x, p)): reading
                # an item reads the array, which a later write into it must not change.
                bases.setdefault(st.target, set()).update(
                    a.id for a in st.expr.elts
                    if isinstance(a, ast.Name) and kind(a).ndim not in (0, None))
    return bases


def _base_closure(name, bases) -> set:
    """Every array ``name`` is a view of, directly or through other views."""
    out, todo = set(), [name]
    while todo:
        for b in bases.get(todo.pop(), ()):
            if b not in out:
                out.add(b)
                todo.append(b)
    return out


class _Flow:
    """Which statement may run after which, and which assignments every path between
    two statements passes, read off the structured program (sids in program order)."""

    def __init__(self, stmts):
        self.loops = _enclosing_loops(stmts)
        self.blocks = {}        # sid -> the blocks around it, outermost first
        self.assigns = {}       # name -> the Assigns that bind it
        self._visit(stmts, ())

    def _visit(self, block, path):
        for st in block:
            self.blocks[st.sid] = path
            if isinstance(st, ir.Assign):       # (a loop may bind its variable 0 times)
                self.assigns.setdefault(st.target, []).append(st)
            for k, sub in enumerate(st.blocks()):
                self._visit(sub, path + ((st.sid, k),))

    def _dominates(self, a, b) -> bool:
        """Every path to ``b`` passes ``a`` first: ``a`` is earlier, in a block around
        ``b`` (or ``b``'s own)."""
        pa = self.blocks[a.sid]
        return a.sid < b.sid and self.blocks[b.sid][:len(pa)] == pa

    def reaches(self, first, then, name) -> bool:
        """Whether ``then`` may run after ``first`` with ``name`` not bound again in
        between: later in the program or in a later iteration of a loop around both,
        unless an assignment of ``name`` on every such path comes between."""
        common = self.loops[first.sid] & self.loops[then.sid]
        if then.sid <= first.sid and not common:
            return False
        for a in self.assigns.get(name, ()):
            if a is first or not self._dominates(a, then):
                continue
            if then.sid > first.sid and a.sid > first.sid:
                return False
            if then.sid <= first.sid and max(common) in self.loops[a.sid]:
                return False
        return True
