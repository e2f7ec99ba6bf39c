"""Generated AST -> readable Python source -> a callable.

The derivative function shares the user's module globals and the user's
closure cells, so globals and closure variables are read when the gradient
runs, exactly as the primal reads them.  The names the derivative needs for
itself (rule helpers, values bound from other modules) are closure cells of
its own.  The source is written to a file of the compile cache
(:mod:`pullback.core.diskcache`) and registered with ``linecache``, so
tracebacks and pdb show the generated code.
"""
from __future__ import annotations

import ast
import builtins
import copy
import functools
import itertools
import linecache
import math
import types
from dataclasses import dataclass

import numpy as np

from .backends.base import Deferred
from .core import diskcache
from .core.errors import InternalError
from .reverse.ops import Comment, TapeOp, ZeroAdjoint
from .reverse.transform import Generated

_counter = itertools.count(1)


def _negative(v) -> bool:
    """Whether ``ast.unparse`` prints the constant ``v`` with a leading minus sign."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return v < 0
    if isinstance(v, float):
        return math.copysign(1.0, v) < 0 and not math.isnan(v)
    if isinstance(v, complex):
        return repr(complex(v)).startswith("-")      # (-1-2j) has parentheses, -2j has none
    return False


class _SignedConstants(ast.NodeTransformer):
    """``ast.unparse`` prints ``Constant(-1.5)`` as ``-1.5``, so ``Constant(-1.5) ** 2``
    would read ``-1.5 ** 2``, which is ``-(1.5 ** 2)``.  Spelled as a unary minus of its
    magnitude, a negative constant gets the parentheses its precedence needs."""

    def visit_Constant(self, node):
        if _negative(node.value):
            return ast.copy_location(ast.UnaryOp(ast.USub(), ast.Constant(-node.value)), node)
        return node


class Origin(str):
    """The user's source line (stripped) that a generated line was made for, as a
    string, with ``lineno``: its number in the user's file (None when not known)."""

    lineno: int | None

    def __new__(cls, text: str, lineno: int | None = None):
        out = super().__new__(cls, text)
        out.lineno = lineno
        return out


@dataclass(frozen=True)
class LineMap:
    """Where the lines of a generated function come from: ``filename``, the file its
    code is compiled from (the ``co_filename`` of its frames), and ``origins[k]``,
    the :class:`Origin` of its line ``k`` (counted as its frames count them) or None.
    ``user_file`` and ``function``: the user's function the derivative is of, whose
    file the origins' line numbers count in (statements inlined from another file
    carry the line of the user's call)."""
    filename: str
    origins: tuple
    user_file: str = ""
    function: str = ""

    def origin(self, lineno: int) -> Origin | None:
        return self.origins[lineno] if 0 <= lineno < len(self.origins) else None


def _unparse(node) -> str:
    """Source text of a generated node; every printed statement and expression goes here."""
    return ast.unparse(ast.fix_missing_locations(_SignedConstants().visit(node)))


def _plain(stmts, comments: dict) -> list:
    """``stmts`` as statements ``ast.unparse`` can print, the sweeps' typed ones
    (:mod:`pullback.reverse.ops`) lowered, at any depth: a ``Push`` or ``Pop`` is
    the tape's statements it holds, a ``ZeroAdjoint`` the assignment it is, and a
    ``Comment`` a bare name unique to it (``comments`` maps it back), a line of its
    own that :func:`_lines` replaces by the comment.  A statement with nested
    statements is copied (not its expressions), so the sweeps keep their types."""
    out = []
    for s in stmts:
        if isinstance(s, TapeOp):
            out += _plain(s.body, comments)
        elif isinstance(s, Deferred):       # (in a block: a checkpointed loop's segments)
            out += _plain(s.make(), comments)
        elif isinstance(s, Comment):
            mark = f"__pb_comment_{len(comments)}__"
            comments[mark] = s
            out.append(ast.Expr(ast.Name(mark, ast.Load())))
        elif isinstance(s, ZeroAdjoint):
            out.append(ast.copy_location(ast.Assign(s.targets, s.value), s))
        else:
            nested = [f for f in s._fields if isinstance(getattr(s, f, None), list)
                      and any(isinstance(x, ast.stmt) for x in getattr(s, f))]
            if nested:
                s = copy.copy(s)
                for f in nested:
                    setattr(s, f, _plain(getattr(s, f), comments))
            out.append(s)
    return out


def _lines(stmts, indent: str, origins: list) -> list[str]:
    """The lines of ``stmts``; ``origins`` gets, for each line, the user's source line
    the last ``# from:`` comment at or above it names (None before the first one)."""
    out = []
    for s in stmts:
        if isinstance(s, Deferred):
            out += _lines(s.make(), indent, origins)
            continue
        comments: dict = {}
        text = "\n".join(_unparse(p) for p in _plain([s], comments))
        for line in text.splitlines():
            c = comments.get(line.strip())
            if c is not None:
                line = line[:len(line) - len(line.lstrip())] + "# " + c.text
                if c.source is not None:
                    origins.append(Origin(c.source, c.line))
                    out.append(indent + line)
                    continue
            origins.append(origins[-1] if origins else None)
            out.append(indent + line)
    return out


def _tuple(items) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def render(gen: Generated, fname: str) -> tuple[str, list]:
    """The derivative's source, and for each of its lines (counted from 1, as the
    compiled code counts them: line 1 is the maker's, see :func:`build`) the user's
    source line it comes from, or None."""
    body = []
    for p in sorted(gen.copied_params):
        body.append(f"{p} = {p}.copy()  # written in place below: never touch the caller's array")
    fwd_origins: list = []
    fwd = _lines(gen.forward, "    ", fwd_origins)
    value = _unparse(gen.value)
    rev_origins: list = []
    rev = _lines(gen.reverse, "    ", rev_origins)
    # Tapes kept from one call to the next (the Numba backend's workspaces, one per
    # thread): taken as the last parameter, returned grown as the last result.
    workspace = [name for name, _ in gen.workspace()]
    params = ", ".join(gen.params + ["_seed=1.0"] + (["_ws=()"] if workspace else []))
    grads = [gen.adjoint_names[p] for p in gen.wrt]
    ret = _tuple(grads) + (", " + _tuple(workspace) if workspace else "")
    doc = [f'    """Value and reverse-mode gradient of {gen.name} '
           f'with respect to {", ".join(gen.wrt)}.']
    if gen.tape_notes:
        doc += [""] + ["    " + n for n in gen.tape_notes] + ['    """']
    else:
        doc[0] += '"""'
    lines = [f"def {fname}({params}):"] + doc
    lines += ["    " + b for b in body]
    lines += ["    # ---- forward sweep"] + fwd + [f"    _value = {value}"]
    lines += ["    # ---- reverse sweep"] + rev + [f"    return _value, {ret}"]
    # Each line's origin is that of the nearest `# from:` line at or above it.
    last = fwd_origins[-1] if fwd_origins else None
    rev_origins = [o if o is not None else last for o in rev_origins]
    origins = [None] * (2 + len(doc) + len(body)) + fwd_origins + [last, last] + rev_origins + \
        [rev_origins[-1] if rev_origins else last]
    return "\n".join(lines) + "\n", [None, None] + origins


def build(gen: Generated, fname: str, user_globals: dict, user_closure: dict,
          externals: dict, backend):
    """Compile the generated source into a function (and njit it for Numba): the
    callable, its source, the data it reads from the user's globals and closure
    (:func:`live_values`), and where its lines come from (a :class:`LineMap`)."""
    src, origins = render(gen, fname)   # first: writing it fixes the tapes' workspace
    # The default workspace: an empty array per kept tape (never written: the first
    # push grows it into an array of this call's own).
    workspace = tuple(np.empty(0, dtype=dtype) for _, dtype in gen.workspace())
    return _compile(src, origins, fname, {**externals, **gen.helpers}, user_globals,
                    user_closure, backend, (1.0,) + ((workspace,) if workspace else ()))


def forward_source(made, fname: str) -> tuple[str, list]:
    """The source of forward mode's function (:class:`.forward.transform.Tangents`),
    and each line's origin as :func:`render` gives it."""
    tangents = [made.tangent_params[p] for p in made.wrt]
    copies = [p for p in sorted(made.copied_params)] + \
        [made.tangent_params[p] for p in sorted(made.copied_params) if p in made.tangent_params]
    lines = [f"def {fname}({', '.join(list(made.params) + tangents)}):",
             f'    """Value and tangent (forward mode) of {made.name} along '
             f'{", ".join(tangents)}."""']
    lines += [f"    {p} = {p}.copy()  # written in place below: never touch the caller's array"
              for p in copies]
    origins: list = []
    lines += _lines(made.body, "    ", origins)
    lines += [f"    return {_unparse(made.value)}, {_unparse(made.tangent)}"]
    return "\n".join(lines) + "\n", [None] * (4 + len(copies)) + origins + [None]


def build_forward(made, fname: str, user_globals: dict, user_closure: dict, externals: dict,
                  backend):
    """Compile forward mode's function: ``(value, tangent) = fn(*args, *tangents)``;
    returns what :func:`build` returns."""
    src, origins = forward_source(made, fname)
    return _compile(src, origins, fname, {**externals, **made.helpers}, user_globals,
                    user_closure, backend, None)


def _is_data(v) -> bool:
    """A number, an array or a tuple of them: what compiled code would freeze."""
    if isinstance(v, tuple):
        return all(map(_is_data, v))
    return isinstance(v, (bool, int, float, complex, np.number, np.bool_, np.ndarray))


def passed_in(v) -> bool:
    """Whether a backend that freezes globals (:attr:`.Backend.freezes_globals`) takes
    the data ``v`` as an argument: a float or complex number, an array, a tuple
    holding one.  Ints, bools and tuples of them (loop bounds, ``axis=``,
    ``keepdims=``, shapes) stay constants of the compiled code, which Numba's
    typing may need; a new value of one makes a new derivative (see
    :class:`pullback.pipeline.ValueOf`)."""
    if isinstance(v, tuple):
        return any(map(passed_in, v))
    return not isinstance(v, (bool, int, np.integer, np.bool_))


def live_values(src: str, bound: dict, user_globals: dict, user_closure: dict) -> list:
    """The user's globals and closure cells that the generated function ``src``
    reads and that hold data (numbers, arrays, tuples of them), as
    ``(name, holder, key)``: the value is ``holder[key]`` (a globals dict) or
    ``holder.cell_contents`` (a cell, key None).  A backend that compiles such
    values into its code (:attr:`.Backend.freezes_globals`) takes them as
    arguments instead, read at each call, so that a global rebound or an array
    changed in place between calls is seen as the primal sees it."""
    out = []
    for name in sorted(free_names(src)[1] - set(bound)):
        if name in user_closure:
            try:
                value = user_closure[name].cell_contents
            except ValueError:
                continue
            if _is_data(value):
                out.append((name, user_closure[name], None))
        elif name in user_globals and _is_data(user_globals[name]):
            out.append((name, user_globals, name))
    return out


def _read(entry):
    """The value of a :func:`live_values` entry now."""
    _, holder, key = entry
    return holder.cell_contents if key is None else holder[key]


def _pass_in(src: str, live: list) -> str:
    """``src`` with the ``live`` values as its last parameters, and its docstring
    saying where they come from."""
    def_line, doc, rest = src.split("\n", 2)
    # The docstring's first line ends its sentence, and the docstring too unless
    # notes on the loops follow.
    close = '"""' if doc.endswith('."""') else ""
    if not def_line.endswith("):") or not doc.endswith("." + close):
        raise InternalError(f"unexpected header of a generated function: {def_line!r}")
    names = [n for n, _, _ in live]
    params = ", ".join(f"{n}=None" for n in names)
    sep = "" if def_line.endswith("():") else ", "
    def_line = def_line[:-2] + sep + params + "):"
    where = "; ".join(f"{n} from {'the closure' if key is None else 'the globals'}"
                      for n, _, key in live)
    doc = doc[:-1 - len(close)] + f" (read when called: {where})." + close
    return "\n".join((def_line, doc, rest))


def _compile(src: str, origins: list, fname: str, bound: dict, user_globals: dict,
             user_closure: dict, backend, defaults):
    check_bound(src, set(bound) | set(user_closure) | set(user_globals))
    read = live_values(src, bound, user_globals, user_closure)
    live = [r for r in read if passed_in(_read(r))] if backend.freezes_globals else []
    if live:
        src = _pass_in(src, live)
        defaults = (defaults or ()) + (None,) * len(live)
    free = sorted(set(bound) | set(user_closure) - {n for n, _, _ in live})
    # Wrap in a maker so the names in `free` compile as closure variables.
    maker_src = f"def __pb_make({', '.join(free)}):\n" + \
        "".join("    " + ln + "\n" for ln in src.splitlines()) + f"    return {fname}\n"
    # The source goes to a file of the cache directory (its line k + 1 is the maker's
    # line k + 1), so that tracebacks and Numba's messages name a real file.
    filename = diskcache.module_file(fname, src) or f"<pullback {fname} #{next(_counter)}>"
    code = compile(maker_src, filename, "exec")
    maker_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    fn_code = next(c for c in maker_code.co_consts
                   if isinstance(c, types.CodeType) and c.co_name == fname)
    bound = {k: backend.bind_helper(v) for k, v in bound.items()}
    cells = tuple(user_closure[n] if n in user_closure and n not in bound
                  else types.CellType(bound[n]) for n in fn_code.co_freevars)
    fn = types.FunctionType(fn_code, user_globals, fname, defaults, cells)
    shown = maker_src if filename.startswith("<") else diskcache.MODULE_HEADER + src
    linecache.cache[filename] = (len(shown), None, shown.splitlines(True), filename)
    return backend.finish(fn, src, filename, origins, live), src, read, \
        LineMap(filename, tuple(origins))


@functools.lru_cache(maxsize=64)
def free_names(src: str) -> tuple[str, frozenset]:
    """The name of the generated function ``src`` and the names it reads without
    binding them itself (not a parameter, not assigned in it)."""
    fn = ast.parse(src).body[0]
    stored = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    read = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else stored).add(node.id)
    return fn.name, frozenset(read - stored)


def check_bound(src: str, outer: set) -> None:
    """Every name the generated function reads must be bound somewhere: one of its
    parameters, a name it assigns, or ``outer`` (a helper, a value bound at transform
    time, the user's globals and closure) or a builtin.  A name bound nowhere is a
    transform bug that would surface as a NameError when the gradient runs (or a
    Numba typing error); it is reported here, by name, instead."""
    name, free = free_names(src)
    unbound = sorted(n for n in free - outer if not hasattr(builtins, n))
    if unbound:
        raise InternalError(f"the generated derivative {name} reads "
                            f"{', '.join(map(repr, unbound))}, which it never binds "
                            f"(a bug in pullback: please report it with the function)")


def rebind(fn, src: str, old_closure: dict, new_closure: dict, backend):
    """The derivative ``fn`` that ``build`` made for one closure, reading the cells of
    another closure of the same code instead (matched by free variable name).  Nothing is
    regenerated; the backend finishes the new function as it did the first (Numba
    compiles it again on first call)."""
    fn = getattr(fn, "lazy", fn)             # the LazyNumba behind its compiled caller
    py = getattr(fn, "py_func", fn)          # a Numba wrapper or dispatcher keeps it there
    cells = tuple(new_closure[n] if n in old_closure and c is old_closure[n] else c
                  for n, c in zip(py.__code__.co_freevars, py.__closure__ or ()))
    out = types.FunctionType(py.__code__, py.__globals__, py.__name__, py.__defaults__, cells)
    filename = py.__code__.co_filename
    live = [(n, new_closure[n] if key is None and holder is old_closure.get(n) else holder, key)
            for n, holder, key in getattr(fn, "live", ())]
    return backend.finish(out, src, filename, getattr(fn, "origins", ()), live)
