"""The reverse-mode transform: normalized program -> forward and reverse sweeps.

The forward sweep is the primal program plus pushes of the values the reverse
sweep will need and that the program overwrites.  The reverse sweep walks the
program backwards: for each statement it adds the statement's adjoint to the
adjoints of its operands and pops the overwritten value back, so every adjoint
sees the primal values of its own statement.  Loops over ``range`` run
backwards over the same indices; ``while`` loops replay their iteration
count; branches replay the branch taken (the condition is itself restored).

Reading an array element ``p[i]`` becomes, in the reverse sweep, the single
in-place update ``dp[i] += d_t`` of one gradient buffer allocated once.
"""
from __future__ import annotations

import ast
import copy
import operator
from dataclasses import dataclass

from ..analysis import saves
from ..analysis.activity import NON_DIFFERENTIABLE
from ..core import ir
from ..core.errors import MissingRuleError, NumbaCompileError, UnsupportedSyntaxError
from ..core.kinds import Kind, kind_of_value
from ..core.names import Names
from ..core.runtime import (trip_count, zeros_like, buffer_like, scatter_add, accumulate,
                            item_cotangent, add_item, call_vjp)
from ..frontend.normalize import _is_library
from ..rules import registry
from ..rules.elementwise import unbroadcast
from ..rules.methods import METHODS
from ..rules.scalar import OPERATORS

import numpy as np

# Operators applied to arrays use the NumPy ufunc's rule (it knows broadcasting).
_ARRAY_OPS = {
    operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
    operator.truediv: np.true_divide, operator.pow: np.power, operator.neg: np.negative,
    operator.matmul: np.matmul, operator.mod: np.mod,
}


# Reverse-sweep pseudo-statements, rendered once we know which adjoints are local.
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


class ReverseTransform:
    def __init__(self, fn: ir.Function, kinds: dict, active: set, wrt: list, backend,
                 location, resolve=lambda name: None):
        self.fn = fn
        self.kinds = kinds
        self.active = active
        self.wrt = wrt
        self.backend = backend
        self.location = location            # line -> Location, for errors
        self.resolve = resolve              # name -> the object the user's code sees
        self.names = Names(set(fn.names) | set(kinds))
        self.helpers: dict[str, object] = {}
        self._helper_alias: dict[int, str] = {}
        self.adj: dict[str, str] = {}
        self.loops: dict[int, LoopInfo] = {}
        self.value_reads: set = set()           # ... whose contents (not just shape) it reads
        self.contribs: dict[str, int] = {}      # adjoint contributions per variable
        self.element_contribs: dict[str, int] = {}   # ... of them, `dp[i] += g` with int i
        self.list_buffers: set = set()          # adjoints kept as Python lists (see run)
        self.updated_in_place: set = set()      # adjoints updated item by item
        self.sites: dict[str, int] = {}         # assignment sites per variable
        self.in_loop: set = set()               # assigned inside a loop
        self.top_level: set = set()             # assigned at the function's top level
        self.adjoint_code: dict[int, list] = {}
        self.local_temps: set = set()
        self.tape = backend.tape(self)
        self._reads_now: set | None = None
        self.stmt_reads: dict = {}             # id(Assign/SetItem) -> names its adjoint reads
        self.loop_reads: dict = {}             # id(If/For/While) -> names read at it
        self.recompute: dict = {}              # temp -> expression read again in reverse

    # ------------------------------------------------------------- naming
    def d(self, name: str) -> str:
        if name not in self.adj:
            self.adj[name] = self.names.reserve("d" + name if not name.startswith("_")
                                                else "d" + name)
        return self.adj[name]

    def helper(self, obj, preferred: str) -> str:
        key = id(obj)
        if key not in self._helper_alias and self.resolve(preferred) is obj \
                and preferred not in self.sites and preferred not in self.fn.params:
            # The user's own global of that name is this object: read it as they do.
            self._helper_alias[key] = preferred
        if key not in self._helper_alias:
            name = preferred if preferred not in self.names.used else self.names.fresh(
                "_" + preferred.strip("_") + "_")
            self.names.used.add(name)
            self._helper_alias[key] = name
            self.helpers[name] = obj
        return self._helper_alias[key]

    def kind(self, atom) -> Kind:
        if isinstance(atom, ast.Name):
            return self.kinds.get(atom.id, Kind(None, "o"))
        if isinstance(atom, ast.Constant):
            return kind_of_value(atom.value)
        return Kind(None, "o")

    def is_active(self, atom) -> bool:
        return isinstance(atom, ast.Name) and atom.id in self.active

    def read(self, expr, value=True):
        for n in ir.atom_names(expr):
            if self._reads_now is not None:
                self._reads_now.add(n)
            if value:
                self.value_reads.add(n)

    # ------------------------------------------------------------- entry
    def run(self) -> Generated:
        self.check_aliasing(self.fn.body)
        body = self.prepare(self.fn.body)
        self.count_sites(body, in_loop=False, top=True)
        for p in self.fn.params:
            self.sites[p] = self.sites.get(p, 0) + 1
            self.top_level.add(p)
        self.gen_adjoints(body)
        self.find_local_temps(body)
        self.find_recomputable(body)
        self.plan = saves.plan(body, self.fn.params, set(self.sites), self.stmt_reads,
                               self.loop_reads)
        if self.backend.list_buffers:
            # A 1-D gradient only ever updated one element at a time is cheapest as a
            # Python list in CPython (no NumPy scalar boxing per update).
            sets = [st for st in ir.walk(body) if isinstance(st, ir.SetItem)]
            scalar_writes_only = {st.array for st in sets} - {
                st.array for st in sets if not ir.is_basic_scalar_index(st.index, self.kind)}
            self.list_buffers = {
                p for p in self.active if self.stable(p) and self.kinds[p].ndim == 1
                and (p in self.wrt or p not in self.fn.params)
                and self.element_contribs.get(p, 0) == self.contribs.get(p, 0)
                and (self.contribs.get(p, 0) > 0 or p in scalar_writes_only)
                and (p in scalar_writes_only or p not in {st.array for st in sets})
                and not self._adjoint_read_whole(p, body)}
        forward = self.init_saved() + self.fwd_block(body)
        swept = _drop_dead_resets(self.render(self.initial_resets() + self.rev_block(body)),
                                  set(self.adj.values()))
        reverse = self.tape.between() + self.init_adjoints() + self.propagate_copies(swept)
        for p in sorted(self.list_buffers & set(self.wrt)):
            dn = self.d(p)
            reverse.append(_assign(dn, _call(ast.Attribute(ast.Name(self.helper(np, "np")), "array",
                                                           ast.Load()), ast.Name(dn))))
        ret = body[-1]
        adjoint_names = {p: self.d(p) for p in self.wrt}
        return Generated(self.fn.name, self.fn.params, self.wrt, adjoint_names, forward,
                         reverse, ret.value, self.helpers, self.fn.copied_params)

    def check_aliasing(self, stmts):
        """Refuse in-place writes into an array that may share memory with another
        name: the write would change the other array behind the transform's back
        (or the caller's array, which we never mutate)."""
        order, loops = {}, {}

        def visit(block, enclosing):
            for st in block:
                order[id(st)] = len(order)
                loops[id(st)] = enclosing
                for sub in _sub_blocks(st):
                    visit(sub, enclosing | ({id(st)} if isinstance(st, (ir.For, ir.While))
                                            else frozenset()))
        visit(stmts, frozenset())
        sets = [st for st in ir.walk(stmts) if isinstance(st, ir.SetItem)]
        for s in ir.walk(stmts):
            if not isinstance(s, ir.Assign):
                continue
            # Writes into s.target that may run while it still aliases another array.
            later = [w for w in sets if w.array == s.target and (
                order[id(w)] > order[id(s)] or loops[id(w)] & loops[id(s)])]
            if not later:
                continue
            written = {s.target: later[0]}
            e, source = s.expr, None
            if isinstance(e, ast.Name) and self.kind(e).ndim != 0:
                source = f"{s.target} = {e.id} makes no copy"
            elif isinstance(e, ast.Subscript) and self.kind(ast.Name(s.target)).ndim != 0:
                source = f"{s.target} = {ast.unparse(e)} is a view"
            elif isinstance(e, ast.Attribute) and e.attr in ("T", "mT", "real", "imag"):
                source = f"{s.target} = {ast.unparse(e)} is a view"
            elif isinstance(e, ast.Call) and (s.method in _VIEW_METHODS
                                              or s.callee in _VIEW_FUNCTIONS):
                source = f"{s.target} = {ast.unparse(e)} may be a view"
            if source is not None:
                w = written[s.target]
                raise UnsupportedSyntaxError(
                    f"a write into {w.array!r}, which shares memory with another array "
                    f"({source})", self.location(w.line),
                    f"write `{s.target} = {ast.unparse(e)}.copy()` to work on a copy, or "
                    "write through the original array")

    # ----------------------------------------------------- loop bookkeeping
    def prepare(self, stmts):
        """Insert the assignments that record each loop's bounds and trip count."""
        out = []
        for s in stmts:
            if isinstance(s, ir.If):
                s = copy.copy(s)
                s.body, s.orelse = self.prepare(s.body), self.prepare(s.orelse)
                if any(isinstance(t, ir.Assign) and t.target == s.test
                       for t in ir.walk(s.body + s.orelse)):
                    # The branch rebinds its own condition (a lowered `a and b`):
                    # replay the branch from a copy taken when it was tested.
                    cond = self.names.fresh("_cond")
                    out.append(ir.Assign(s.line, cond, ast.Name(s.test)))
                    self.kinds[cond] = self.kinds.get(s.test, Kind(0, "b"))
                    s.test = cond
            elif isinstance(s, ir.For):
                s = copy.copy(s)
                s.body = self.prepare(s.body)
                lo, st = s.start, s.step
                if not isinstance(lo, ast.Constant):
                    lo = ast.Name(self.names.fresh("_start"))
                    out.append(ir.Assign(s.line, lo.id, s.start))
                if not isinstance(st, ast.Constant):
                    st = ast.Name(self.names.fresh("_step"))
                    out.append(ir.Assign(s.line, st.id, s.step))
                n = self.names.fresh("_n")
                if s.exit_flag is None:
                    out.append(ir.Assign(s.line, n, ast.Call(ast.Name(self.helper(trip_count, "trip_count")),
                                                             [lo, s.stop, st], []), callee=trip_count))
                else:
                    out.append(ir.Assign(s.line, n, ast.Constant(0)))
                s.start, s.step = lo, st
                self.loops[id(s)] = LoopInfo(lo, st, n)
                self.kinds[n] = Kind(0, "i")
                for a in (lo, st):
                    if isinstance(a, ast.Name):
                        self.kinds[a.id] = Kind(0, "i")
            elif isinstance(s, ir.While):
                s = copy.copy(s)
                s.body = self.prepare(s.body)
                s.cond = self.prepare(s.cond)
                n = self.names.fresh("_n")
                out.append(ir.Assign(s.line, n, ast.Constant(0)))
                self.loops[id(s)] = LoopInfo(None, None, n)
                self.kinds[n] = Kind(0, "i")
            out.append(s)
        return out

    def count_sites(self, stmts, in_loop, top):
        for s in stmts:
            if isinstance(s, ir.Assign):
                self._site(s.target, in_loop, top)
            elif isinstance(s, ir.For):
                self._site(s.var, True, False)
                self.count_sites(s.body, True, False)
            elif isinstance(s, ir.While):
                self.count_sites(s.cond, True, False)
                self.count_sites(s.body, True, False)
            elif isinstance(s, ir.If):
                self.count_sites(s.body, in_loop, False)
                self.count_sites(s.orelse, in_loop, False)

    def _site(self, name, in_loop, top):
        self.sites[name] = self.sites.get(name, 0) + 1
        if in_loop:
            self.in_loop.add(name)
        if top:
            self.top_level.add(name)

    def needs_save(self, name, stmt) -> bool:
        return id(stmt) in self.plan.sites

    def stable(self, name) -> bool:
        """An array whose adjoint can be one buffer updated in place: defined once,
        at the top level (or a parameter), so it exists when the reverse sweep starts."""
        k = self.kinds.get(name)
        return (k is not None and k.ndim is not None and k.ndim > 0 and k.dtype in "fc"
                and self.sites.get(name, 0) == 1 and name in self.top_level
                and name not in self.in_loop)

    def buffer(self, name) -> bool:
        """Whether ``name``'s adjoint is an array updated in place.

        In Python, only stable arrays updated element by element: the others are
        bound to their first contribution instead of added to a fresh zero array.
        Under Numba types must not change, so every float array that exists when
        the reverse sweep starts gets a zero array (and a fresh one when it is
        assigned again)."""
        k = self.kinds.get(name)
        if k is None or k.ndim is None or k.ndim <= 0 or k.dtype not in "fc":
            return False
        if self.backend.fixed_types:
            return True
        return self.stable(name) and name in self.updated_in_place

    # ------------------------------------------------------ adjoint code
    def gen_adjoints(self, stmts):
        for s in stmts:
            self._reads_now = set()
            if isinstance(s, ir.Assign):
                self.adjoint_code[id(s)] = self.assign_adjoint(s)
                self.stmt_reads[id(s)] = self._reads_now
            elif isinstance(s, ir.SetItem):
                self.adjoint_code[id(s)] = self.setitem_adjoint(s)
                self.stmt_reads[id(s)] = self._reads_now
            elif isinstance(s, ir.If):
                self.read(ast.Name(s.test))
                self.loop_reads[id(s)] = self._reads_now
                self._reads_now = None
                self.gen_adjoints(s.body)
                self.gen_adjoints(s.orelse)
            elif isinstance(s, ir.For):
                info = self.loops[id(s)]
                self.read(ast.Name(info.n))
                if self._var_read_in(s):
                    self.read(info.lo)
                    self.read(info.st)
                self.loop_reads[id(s)] = self._reads_now
                self._reads_now = None
                self.gen_adjoints(s.body)
            elif isinstance(s, ir.While):
                self.read(ast.Name(self.loops[id(s)].n))
                self.loop_reads[id(s)] = self._reads_now
                self._reads_now = None
                self.gen_adjoints(s.cond)
                self.gen_adjoints(s.body)
            elif isinstance(s, ir.Return):
                if self.is_active(s.value):
                    self.contribs[s.value.id] = self.contribs.get(s.value.id, 0) + 1
            self._reads_now = None

    def find_recomputable(self, stmts):
        """Temporaries that are cheaper to compute again in the reverse sweep than
        to save (see find_cheap); their readers then read the operands instead."""
        control = set().union(*self.loop_reads.values()) if self.loop_reads else set()
        self.recompute = self.find_cheap(stmts, control)
        for key, names in self.stmt_reads.items():
            for t in names & set(self.recompute):
                names.discard(t)
                names |= ir.atom_names(self.recompute[t])

    def _adjoint_read_whole(self, name, body) -> bool:
        """Whether the reverse of ``name``'s definition passes its adjoint on as a
        whole (``q = p`` gives ``dp += dq``), which a list buffer cannot take."""
        for st in ir.walk(body):
            if isinstance(st, ir.Assign) and st.target == name:
                return any(not isinstance(c, Reset) for c in self.adjoint_code.get(id(st), []))
        return False

    def find_cheap(self, stmts, control) -> dict:
        """Float temporaries made by one arithmetic operation (``_t = a * x``) or,
        under Numba, read from an array that never changes (``_t = A[i, j]``; in
        CPython a saved float pops faster than a NumPy element reads, and
        computes faster).  Each must be read only later in its own block, with no
        operand assigned in between, so that recomputing it just before its
        reader's adjoint gives the value the reader saw."""
        written = {s.array for s in ir.walk(stmts) if isinstance(s, ir.SetItem)}

        def cheap(e) -> bool:
            if isinstance(e, (ast.BinOp, ast.UnaryOp)):
                return isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.USub))
            return (self.backend.recompute_array_reads and isinstance(e, ast.Subscript)
                    and isinstance(e.value, ast.Name) and e.value.id not in written
                    and self.sites.get(e.value.id, 0) <= 1)

        uses = {}
        for st in ir.walk(stmts):
            for n in _stmt_reads(st):
                uses[n] = uses.get(n, 0) + 1
        found = {}

        def visit(block):
            for k, st in enumerate(block):
                for sub in _sub_blocks(st):
                    visit(sub)
                if not (isinstance(st, ir.Assign) and st.target.startswith("_t")
                        and self.sites.get(st.target) == 1 and st.target not in control
                        and self.kinds.get(st.target) == Kind(0, "f") and cheap(st.expr)):
                    continue
                operands = ir.atom_names(st.expr)
                later = [j for j in range(k + 1, len(block))
                         if st.target in _stmt_reads(block[j])]
                if not later or len(later) != uses.get(st.target, 0):
                    continue
                # The reverse sweep recomputes before a use's adjoint, when the use's
                # own target still holds its new value: it must not be an operand.
                if any(isinstance(block[j], ir.Assign) and block[j].target in operands
                       for j in later):
                    continue
                between = block[k + 1:later[-1]]
                assigned = {t.target for t in ir.walk(between) if isinstance(t, ir.Assign)} | \
                    {t.var for t in ir.walk(between) if isinstance(t, ir.For)}
                if not operands & assigned and not any(_sub_blocks(t) for t in between):
                    found[st.target] = st.expr
        visit(stmts)
        return found

    def _var_read_in(self, loop) -> bool:
        # Conservative: the loop variable is needed if any statement names it.
        return any(loop.var in _stmt_names(t) for t in ir.walk(loop.body))

    def accum(self, name, expr) -> Accum:
        self.contribs[name] = self.contribs.get(name, 0) + 1
        return Accum(name, expr)

    def error(self, s, what, hint="", cls=UnsupportedSyntaxError):
        loc = self.location(s.line)
        if cls is UnsupportedSyntaxError:
            return UnsupportedSyntaxError(what, loc, hint)
        return cls(f"{what}\n  {loc}" + (f"\n{hint}" if hint else ""))

    def assign_adjoint(self, s: ir.Assign) -> list:
        t, e = s.target, s.expr
        if t not in self.active:
            return []
        g = ast.Name(self.d(t))
        self.read(g, value=False)  # not a primal name; harmless
        code = []
        if isinstance(e, ast.Name):
            if e.id == t:
                return []
            if self.is_active(e):
                code.append(self.accum(e.id, g))
        elif isinstance(e, ast.Constant):
            pass
        elif isinstance(e, ast.Subscript):
            code += self.subscript_adjoint(s, e, g)
        elif isinstance(e, ast.Attribute):
            if e.attr in ("T", "mT") and self.is_active(e.value):
                code.append(self.accum(e.value.id, ast.Attribute(g, e.attr, ast.Load())))
            elif e.attr in ("real",) and self.is_active(e.value):
                code.append(self.accum(e.value.id, g))
        elif isinstance(e, ast.BinOp):
            op = OPERATORS.get(type(e.op).__name__)
            code += self.rule_adjoint(s, op, [e.left, e.right], {}, g)
        elif isinstance(e, ast.UnaryOp):
            op = OPERATORS.get(type(e.op).__name__)
            code += self.rule_adjoint(s, op, [e.operand], {}, g)
        elif isinstance(e, ast.Call):
            code += self.call_adjoint(s, e, g)
        elif isinstance(e, ast.Tuple):
            # A tuple (or list) of values, e.g. the arrays given to np.concatenate:
            # its cotangent holds one cotangent per item.
            item = self.helper(item_cotangent, "item_cotangent")
            for k, elt in enumerate(e.elts):
                if self.is_active(elt):
                    code.append(self.accum(elt.id, _call(item, g, ast.Constant(k))))
        code.append(Reset(t))
        return code

    def subscript_adjoint(self, s, e, g):
        base = e.value
        if not self.is_active(base):
            return []
        index = e.slice
        self.read(index)
        bk = self.kind(base)
        if bk.ndim is None and isinstance(index, ast.Constant) and isinstance(index.value, int):
            # An item of a tuple-valued result, such as np.linalg.slogdet(A)[1].
            self.read(base, value=False)
            self.contribs[base.id] = self.contribs.get(base.id, 0) + 1
            self.updated_in_place.add(base.id)
            return [_TupleItem(base.id, index.value, g, self.helper(add_item, "add_item"))]
        basic = all(ir.is_basic_index(i, self.kind) for i in
                    (index.elts if isinstance(index, ast.Tuple) else [index]))
        name = base.id
        self.updated_in_place.add(name)
        if basic and (self.stable(name) or (self.backend.fixed_types and self.buffer(name))):
            # The heart of the matter: one in-place update of one buffer.
            self.contribs[name] = self.contribs.get(name, 0) + 1
            if not isinstance(index, ast.Tuple) and ir.is_basic_scalar_index(index, self.kind):
                self.element_contribs[name] = self.element_contribs.get(name, 0) + 1
            return [_InPlace(name, copy.deepcopy(index), g)]
        self.read(base, value=False)
        helper = self.helper(scatter_add, "scatter_add") if not basic else \
            self.helper(buffer_like, "buffer_like")
        self.contribs[name] = self.contribs.get(name, 0) + 1
        if basic:
            return [_BufferUpdate(name, copy.deepcopy(index), g, helper)]
        return [_Scatter(name, copy.deepcopy(index), g, helper)]

    def call_adjoint(self, s, e: ast.Call, g):
        if s.method is not None:
            fn = _method_function(s.method)
            if fn is None:
                if not any(self.is_active(a) for a in [e.func.value] + e.args):
                    return []
                raise self.error(s, f"the method .{s.method}() on a differentiated value",
                                 "call the NumPy function instead, or register a rule",
                                 cls=MissingRuleError)
            return self.rule_adjoint(s, fn, [e.func.value] + e.args,
                                     {k.arg: k.value for k in e.keywords}, g)
        return self.rule_adjoint(s, s.callee, e.args, {k.arg: k.value for k in e.keywords}, g)

    def rule_adjoint(self, s, fn, args, kwargs, g):
        active_args = [a for a in list(args) + list(kwargs.values()) if self.is_active(a)]
        if not active_args or fn in NON_DIFFERENTIABLE:
            return []
        array_result = self.kinds.get(s.target, Kind(0, "f")).ndim not in (0,)
        if fn in _ARRAY_OPS and (array_result or any(self.kind(a).ndim != 0 for a in args)):
            fn = _ARRAY_OPS[fn]
        rule = registry.lookup(fn) if fn is not None else None
        if rule is None and _is_user_function(fn):
            return self.recursive_call_adjoint(s, fn, args, kwargs, g)
        if rule is None:
            name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
            mod = getattr(fn, "__module__", None)
            full = f"{mod}.{name}" if mod and mod != "builtins" else name
            raise self.error(
                s, f"pullback has no derivative rule for {full}",
                f"Register one with @pullback.rule({name}) on a function "
                f"`def {name.split('.')[-1]}_vjp(g, ans, *args)` that returns one cotangent per "
                "argument, or call a function that has one.", cls=MissingRuleError)
        where = f"\n  {self.location(s.line)}"
        bound = rule.bind(args, kwargs, where)
        code = []
        elementwise = rule.result == "like"
        extra = {}
        if rule.vjp_tuple is not None:
            # A user VJP returns every cotangent at once: call it once.
            name = self.names.fresh("_cotangents")
            code.append(_assign(name, self.instantiate(rule, rule.vjp_tuple, bound, g,
                                                       ast.Name(s.target))))
            extra["__cotangents__"] = ast.Name(name)
        for pname, template in rule.adjoints.items():
            arg = bound.get(pname)
            if not self.is_active(arg):
                continue
            contrib = self.instantiate(rule, template, dict(bound, **extra), g,
                                       ast.Name(s.target))
            if elementwise and array_result:
                contrib = ast.Call(ast.Name(self.helper(_unbroadcast(), "unbroadcast")),
                                   [contrib, ast.Name(arg.id)], [])
                self.read(ast.Name(arg.id), value=False)
            code.append(self.accum(arg.id, contrib))
        for pname, arg in bound.items():
            if self.is_active(arg) and pname not in rule.adjoints:
                raise self.error(s, f"the argument {pname!r} of {rule.name}, which has no "
                                 "derivative", "pass a constant there, or register a rule "
                                 "that differentiates it", cls=MissingRuleError)
        return code

    def recursive_call_adjoint(self, s, fn, args, kwargs, g):
        """A recursive call: differentiate the callee at run time, one level at a time."""
        if not self.backend.runtime_recursion:
            raise self.error(s, f"a recursive call under the {self.backend.name} backend",
                             "use jit=False: recursion is differentiated on the Python backend",
                             cls=NumbaCompileError)
        name = self.names.fresh("_cotangents")
        helper = self.helper(call_vjp, "call_vjp")
        func = copy.deepcopy(s.expr.func)
        self.read(func)
        call = _call(helper, func, g, *[copy.deepcopy(a) for a in args])
        self.read(call)
        code = [_assign(name, call)]
        for k, a in enumerate(args):
            if self.is_active(a):
                code.append(self.accum(a.id, ast.Subscript(ast.Name(name), ast.Constant(k),
                                                           ast.Load())))
        return code

    def instantiate(self, rule, template, bound, g, ans) -> ast.expr:
        """Substitute the call's atoms into a rule's template expression."""
        mapping = {"g": g, "ans": ans}
        mapping.update(bound)
        helper_names = {name: self.helper(obj, _identifier(getattr(obj, "__name__", ""), "vjp")
                                          if name == "__vjp__" else name)
                        for name, obj in rule.helpers.items()}

        class Sub(ast.NodeTransformer):
            def visit_Name(_, node):
                if node.id in mapping:
                    return copy.deepcopy(mapping[node.id])
                if node.id in helper_names:
                    return ast.Name(helper_names[node.id], ast.Load())
                return node
        out = Sub().visit(copy.deepcopy(template))
        self.read(out)
        if ans.id in ir.atom_names(out):
            self.read(ans)
        return out

    def setitem_adjoint(self, s: ir.SetItem) -> list:
        code = []
        self.read(s.index)
        self.updated_in_place.add(s.array)
        if s.array in self.active:
            g = ast.Subscript(ast.Name(self.d(s.array)), copy.deepcopy(s.index), ast.Load())
            if self.is_active(s.value):
                contrib = g
                if not all(ir.is_basic_scalar_index(i, self.kind) for i in
                           (s.index.elts if isinstance(s.index, ast.Tuple) else [s.index])):
                    # A slice of the adjoint is a view: copy it before zeroing the slice.
                    contrib = ast.Call(ast.Attribute(g, "copy", ast.Load()), [], [])
                vk = self.kind(s.value)
                if vk.ndim == 0 and not all(ir.is_basic_scalar_index(i, self.kind) for i in
                                            (s.index.elts if isinstance(s.index, ast.Tuple)
                                             else [s.index])):
                    contrib = ast.Call(ast.Name(self.helper(_unbroadcast(), "unbroadcast")),
                                       [contrib, ast.Name(s.value.id)], [])
                code.append(self.accum(s.value.id, contrib))
            code.append(_ZeroElement(s.array, copy.deepcopy(s.index)))
        return code

    # ------------------------------------------------- which temps are local
    def find_local_temps(self, stmts):
        """Temporaries defined once and used once in the same block: their adjoint
        is assigned by its one contribution, never zeroed or accumulated."""
        uses = {}
        for s in ir.walk(stmts):
            for n in _stmt_reads(s):
                uses[n] = uses.get(n, 0) + 1

        def visit(block):
            defined = {}
            for s in block:
                if isinstance(s, ir.Assign) and s.target.startswith("_t") \
                        and self.sites.get(s.target) == 1 and s.target in self.active:
                    defined[s.target] = s
                for n in _stmt_reads(s) if isinstance(s, (ir.Assign, ir.SetItem)) else ():
                    if n in defined and uses.get(n) == 1 and self.contribs.get(n) == 1 \
                            and n not in self.updated_in_place:
                        self.local_temps.add(n)
                for sub in _sub_blocks(s):
                    visit(sub)
        visit(stmts)

    # ---------------------------------------------------- forward sweep
    def init_saved(self) -> list:
        """Give every variable that is pushed before its first assignment a value
        of its kind, so the first push has something to save."""
        out = []
        names = self.plan.undefined - set(self.fn.params)
        if self.backend.fixed_types:
            # An array first assigned inside a loop or branch still has a value
            # (of its type) when the reverse sweep allocates its adjoint.
            names |= {n for n in self.active - self.top_level - set(self.fn.params)
                      - self.local_temps if self.buffer(n)}
        out = [_assign(name, self.placeholder(name)) for name in sorted(names)]
        return self.tape.setup() + out

    def placeholder(self, name) -> ast.expr:
        """A value of ``name``'s kind, for before its first assignment (Numba needs
        one type per variable): an empty float array of its rank, 0, False, 0.0."""
        kind = self.kinds.get(name)
        if kind is None or kind.ndim is None:
            return ast.Constant(None)
        if kind.ndim == 0:
            return ast.Constant({"i": 0, "b": False}.get(kind.dtype, 0.0))
        if kind.ndim > 0 and kind.dtype == "f":
            shape = ast.Tuple([ast.Constant(0)] * kind.ndim, ast.Load())
            return _call(ast.Attribute(ast.Name(self.helper(np, "np")), "zeros", ast.Load()),
                         shape)
        return ast.Constant(None)

    def fwd_block(self, stmts) -> list:
        out = []
        last_line = None
        for s in stmts:
            if s.line != last_line and s.line in self.fn.source_lines and not isinstance(s, ir.Return):
                out.append(_comment(f"# from: {self.fn.source_lines[s.line]}"))
                last_line = s.line
            if isinstance(s, ir.Assign):
                if self.needs_save(s.target, s):
                    out += self.tape.push(s.target)
                stmt = _assign(s.target, copy.deepcopy(s.expr))
                out.append(stmt)
            elif isinstance(s, ir.SetItem):
                if s.array in self.value_reads:
                    out += self.tape.push_element(s.array, s.index)
                out.append(ast.Assign([ast.Subscript(ast.Name(s.array), copy.deepcopy(s.index),
                                                     ast.Store())], copy.deepcopy(s.value)))
            elif isinstance(s, ir.If):
                out.append(ast.If(ast.Name(s.test), self.fwd_block(s.body) or [ast.Pass()],
                                  self.fwd_block(s.orelse)))
            elif isinstance(s, ir.For):
                info = self.loops[id(s)]
                if self.needs_save(s.var, s):
                    out += self.tape.push(s.var)
                body = []
                if s.exit_flag is not None:
                    body.append(_aug(info.n, 1))
                # The trip count is known before the loop: make room for every push
                # the body makes, so the pushes inside need no capacity check.
                counts = self.pushes_per_iteration(s.body)
                if s.exit_flag is None and counts:
                    out += self.tape.reserve(counts, ast.Name(info.n))
                saved, self.tape.reserved = self.tape.reserved, set(counts) \
                    if s.exit_flag is None else set()
                body += self.fwd_block(s.body)
                self.tape.reserved = saved
                if s.exit_flag is not None:
                    body.append(ast.If(ast.Name(s.exit_flag), [ast.Break()], []))
                out.append(ast.For(ast.Name(s.var, ast.Store()),
                                   _call("range", s.start, s.stop, s.step), body or [ast.Pass()], []))
            elif isinstance(s, ir.While):
                info = self.loops[id(s)]
                saved, self.tape.reserved = self.tape.reserved, set()
                body = [_aug(info.n, 1)] + self.fwd_block(s.body)
                self.tape.reserved = saved
                if s.exit_flag is not None:
                    body.append(ast.If(ast.Name(s.exit_flag), [ast.Break()], []))
                body += self.fwd_block(s.cond)
                out.append(ast.While(ast.Name(s.test), body, []))
            elif isinstance(s, ir.Return):
                pass
        return out

    def pushes_per_iteration(self, stmts) -> dict:
        """How many values each tape receives per iteration, at most, from
        statements outside nested loops."""
        counts = {}
        for s in stmts:
            if isinstance(s, ir.Assign) and self.needs_save(s.target, s):
                counts[s.target] = counts.get(s.target, 0) + 1
            elif isinstance(s, ir.SetItem) and s.array in self.value_reads:
                key = s.array + "[]"
                counts[key] = counts.get(key, 0) + 1
            elif isinstance(s, ir.For) and self.needs_save(s.var, s):
                counts[s.var] = counts.get(s.var, 0) + 1
            elif isinstance(s, ir.If):
                for sub in (s.body, s.orelse):
                    for k, v in self.pushes_per_iteration(sub).items():
                        counts[k] = counts.get(k, 0) + v
        return counts

    # ---------------------------------------------------- reverse sweep
    def rev_block(self, stmts) -> list:
        out = []
        last_line = None
        for s in reversed(stmts):
            if s.line != last_line and s.line in self.fn.source_lines and not isinstance(s, ir.Return):
                code = self._rev_stmt(s)
                if code:
                    out.append(_comment(f"# from: {self.fn.source_lines[s.line]}"))
                    last_line = s.line
                out += code
            else:
                out += self._rev_stmt(s)
        return out

    def _rev_stmt(self, s) -> list:
        out = []
        if isinstance(s, (ir.Assign, ir.SetItem)) and self.adjoint_code[id(s)]:
            # Read again what is cheaper to read than to save.
            for t in sorted(set(self.recompute) & _names_in(self.adjoint_code[id(s)])):
                out.append(_assign(t, copy.deepcopy(self.recompute[t])))
        if isinstance(s, ir.Assign):
            out += self.adjoint_code[id(s)]
            if self.needs_save(s.target, s):
                out.append(Restore(s.target))
        elif isinstance(s, ir.SetItem):
            out += self.adjoint_code[id(s)]
            if s.array in self.value_reads:
                out.append(Restore(s.array, s.index))
        elif isinstance(s, ir.If):
            body, orelse = self.rev_block(s.body), self.rev_block(s.orelse)
            if body or orelse:
                out.append(_Branch(s.test, body, orelse))
        elif isinstance(s, ir.For):
            info = self.loops[id(s)]
            body = self.rev_block(s.body)
            if body:
                out.append(_ReverseFor(s.var if self._var_read_in(s) else None, info, body))
            if self.needs_save(s.var, s):
                out.append(Restore(s.var))
        elif isinstance(s, ir.While):
            info = self.loops[id(s)]
            body = self.rev_block(s.cond) + self.rev_block(s.body)
            if body:
                out.append(_ReverseFor(None, info, body))
        elif isinstance(s, ir.Return):
            if self.is_active(s.value):
                out.append(Accum(s.value.id, ast.Name("_seed")))
        return out

    def init_adjoints(self) -> list:
        out = []
        for name in sorted(self.active):
            if name in self.local_temps:
                continue
            dn = self.d(name)
            if name in self.list_buffers:
                out.append(_assign(dn, ast.BinOp(ast.List([ast.Constant(0.0)], ast.Load()),
                                                 ast.Mult(), _call("len", ast.Name(name)))))
            elif self.buffer(name):
                out.append(_assign(dn, self.zeros(name)))
        return out

    def initial_resets(self) -> list:
        """Adjoints that start at zero, as resets the first contribution absorbs."""
        return [Reset(n) for n in sorted(self.active)
                if n not in self.local_temps and n not in self.list_buffers
                and not self.buffer(n)]

    def propagate_copies(self, stmts) -> list:
        """Drop ``d_t = dv`` copies of local-temporary adjoints by reading ``dv``
        where ``d_t`` was read, when ``dv`` does not change in between."""
        local = {self.d(n) for n in self.local_temps}
        out = list(stmts)
        for st in out:
            for sub in _bodies(st):
                sub[:] = self.propagate_copies(sub)
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
                    if _bodies(prev) or {a, b} & _names_written(prev):
                        break
            k += 1
        k = 0
        while k < len(out):
            st = out[k]
            if (isinstance(st, ast.Assign) and len(st.targets) == 1
                    and isinstance(st.targets[0], ast.Name) and st.targets[0].id in local
                    and isinstance(st.value, ast.Name)):
                a, b = st.targets[0].id, st.value.id
                uses = [j for j in range(k + 1, len(out)) if a in _names_read(out[j])]
                if uses and all(not _bodies(out[j]) for j in range(k + 1, uses[-1] + 1)) and \
                        not any(b in _names_written(out[j]) or a in _names_written(out[j])
                                for j in range(k + 1, uses[-1])):
                    for j in uses:
                        out[j] = _rename(out[j], a, b)
                    del out[k]
                    continue
            k += 1
        return _keep_element_adjoints(out)

    def zeros(self, name) -> ast.expr:
        """A zero adjoint for ``name``'s current value."""
        k = self.kinds.get(name)
        if k is not None and k.ndim is not None and k.ndim > 0 and k.dtype == "f":
            return _call(ast.Attribute(ast.Name(self.helper(np, "np")), "zeros_like", ast.Load()),
                         ast.Name(name))
        return _call(self.helper(zeros_like, "zeros_like"), ast.Name(name))

    def render(self, code) -> list:
        """Turn pseudo-statements into Python, merging each reset with the first
        contribution that follows it (``dv = 0; dv += c`` becomes ``dv = c``)."""
        out = []
        pending = {}            # adjoint name -> index in out of its reset
        zero = set()

        def commit_all():
            pending.clear()
            zero.clear()

        for c in code:
            if isinstance(c, Accum):
                dn = self.d(c.name)
                _reads_commit(c.expr, pending, zero)
                if c.name in self.local_temps:
                    # Its one contribution defines it.
                    out.append(_assign(dn, c.expr))
                elif dn in zero:
                    idx = pending.pop(dn, None)
                    if idx is not None:
                        out[idx] = None
                    zero.discard(dn)
                    out.append(_assign(dn, c.expr))
                elif self.buffer(c.name):
                    out.append(ast.AugAssign(ast.Name(dn, ast.Store()), ast.Add(), c.expr))
                elif self.kinds.get(c.name, Kind(0, "f")).ndim is None:
                    out.append(_assign(dn, _call(self.helper(accumulate, "accumulate"),
                                                 ast.Name(dn), c.expr)))
                else:
                    out.append(_assign(dn, ast.BinOp(ast.Name(dn), ast.Add(), c.expr)))
            elif isinstance(c, Reset):
                if c.name in self.local_temps:
                    continue
                dn = self.d(c.name)
                if self.buffer(c.name) or (self.backend.fixed_types and
                                           self.kinds.get(c.name, Kind(0, "f")).ndim != 0):
                    value = self.zeros(c.name)
                    self.read(ast.Name(c.name), value=False)
                    out.append(_assign(dn, value))
                    pending.pop(dn, None)
                    zero.discard(dn)
                else:
                    pending[dn] = len(out)
                    zero.add(dn)
                    out.append(_assign(dn, ast.Constant(0.0)))
            elif isinstance(c, Restore):
                _reads_commit(ast.Name(c.name), pending, zero)
                if c.index is None:
                    out += self.tape.pop(c.name)
                else:
                    out += self.tape.pop_element(c.name, c.index)
            elif isinstance(c, _InPlace):
                dn = self.d(c.name)
                _reads_commit(c.g, pending, zero)
                out.append(ast.AugAssign(ast.Subscript(ast.Name(dn), c.index, ast.Store()),
                                         ast.Add(), c.g))
            elif isinstance(c, _BufferUpdate):
                dn = self.d(c.name)
                _reads_commit(c.g, pending, zero)
                pending.pop(dn, None)
                zero.discard(dn)
                out.append(_assign(dn, _call(c.helper, ast.Name(dn), ast.Name(c.name))))
                out.append(ast.AugAssign(ast.Subscript(ast.Name(dn), c.index, ast.Store()),
                                         ast.Add(), c.g))
            elif isinstance(c, _TupleItem):
                dn = self.d(c.name)
                _reads_commit(c.g, pending, zero)
                pending.pop(dn, None)
                zero.discard(dn)
                out.append(_assign(dn, _call(c.helper, ast.Name(dn), ast.Name(c.name),
                                             ast.Constant(c.k), c.g)))
            elif isinstance(c, _Scatter):
                dn = self.d(c.name)
                _reads_commit(c.g, pending, zero)
                pending.pop(dn, None)
                zero.discard(dn)
                out.append(_assign(dn, _call(c.helper, ast.Name(dn), ast.Name(c.name), c.index, c.g)))
            elif isinstance(c, _ZeroElement):
                dn = self.d(c.name)
                out.append(ast.Assign([ast.Subscript(ast.Name(dn), c.index, ast.Store())],
                                      ast.Constant(0.0)))
            elif isinstance(c, _Branch):
                commit_all()
                out.append(ast.If(ast.Name(c.test), self.render(c.body) or [ast.Pass()],
                                  self.render(c.orelse)))
            elif isinstance(c, _ReverseFor):
                commit_all()
                body = self.render(c.body) or [ast.Pass()]
                info = c.info
                if c.var is None:
                    target, it = ast.Name("_", ast.Store()), _call("range", ast.Name(info.n))
                else:
                    # The same indices, last first.
                    last = ast.BinOp(info.lo, ast.Add(), ast.BinOp(
                        ast.BinOp(ast.Name(info.n), ast.Sub(), ast.Constant(1)), ast.Mult(), info.st))
                    stop = ast.BinOp(info.lo, ast.Sub(), info.st)
                    step = ast.UnaryOp(ast.USub(), info.st)
                    target, it = ast.Name(c.var, ast.Store()), _call("range", _fold(last), _fold(stop),
                                                                     _fold(step))
                out.append(ast.For(target, it, body, []))
            elif isinstance(c, ast.AST):
                out.append(c)
            else:
                raise AssertionError(c)
        return [s for s in out if s is not None]


_VIEW_METHODS = {"reshape", "ravel", "transpose", "view", "squeeze", "swapaxes", "diagonal"}
_VIEW_FUNCTIONS = {np.reshape, np.ravel, np.transpose, np.squeeze, np.swapaxes, np.diagonal,
                   np.expand_dims, np.broadcast_to, np.asarray, np.moveaxis}


# --------------------------------------------------------------- pieces
@dataclass
class _InPlace:
    name: str
    index: ast.expr
    g: ast.expr


@dataclass
class _BufferUpdate:
    name: str
    index: ast.expr
    g: ast.expr
    helper: str


@dataclass
class _TupleItem:
    name: str
    k: int
    g: ast.expr
    helper: str


@dataclass
class _Scatter:
    name: str
    index: ast.expr
    g: ast.expr
    helper: str


@dataclass
class _ZeroElement:
    name: str
    index: ast.expr


@dataclass
class _Branch:
    test: str
    body: list
    orelse: list


@dataclass
class _ReverseFor:
    var: str | None
    info: LoopInfo
    body: list


def _keep_element_adjoints(out) -> list:
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
                if _bodies(st) or array in _names_read(st) | _names_written(st) \
                        or (index_names | {saved}) & _names_written(st):
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


def _names_in(code) -> set:
    """Primal names an adjoint's pseudo-statements read."""
    out = set()
    for c in code:
        for value in vars(c).values() if not isinstance(c, ast.AST) else [c]:
            if isinstance(value, ast.AST):
                out |= ir.atom_names(value)
    return out


def _is_user_function(fn) -> bool:
    import types
    return isinstance(fn, types.FunctionType) and not _is_library(fn)


def _identifier(name, default):
    return name if name.isidentifier() else default


def _drop_dead_resets(stmts, adjoint_names) -> list:
    """Remove trailing ``dv = 0.0`` / ``dv = zeros_like(v)`` that nothing reads."""
    out, live = [], set()
    for st in reversed(stmts):
        if (isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)
                and st.targets[0].id in adjoint_names and st.targets[0].id not in live
                and (isinstance(st.value, ast.Constant) or isinstance(st.value, ast.Call))
                and not _bodies(st)):
            if isinstance(st.value, ast.Constant) or "zeros" in ast.unparse(st.value.func):
                continue
        live |= _names_read(st)
        out.append(st)
    return out[::-1]


def _bodies(st) -> list:
    if isinstance(st, (ast.For, ast.While)):
        return [st.body]
    if isinstance(st, ast.If):
        return [st.body, st.orelse]
    return []


def _names_read(st) -> set:
    return {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and not isinstance(getattr(n, "ctx", None), ast.Store)}


def _names_written(st) -> set:
    out = {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(getattr(n, "ctx", None), ast.Store)}
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


def _reads_commit(expr, pending, zero):
    for n in ir.atom_names(expr):
        if n in pending:
            pending.pop(n)
        zero.discard(n)


def _stmt_names(s) -> set:
    if isinstance(s, ir.Assign):
        return ir.atom_names(s.expr) | {s.target}
    if isinstance(s, ir.SetItem):
        return ir.atom_names(s.value) | ir.atom_names(s.index) | {s.array}
    if isinstance(s, ir.If):
        return {s.test}
    if isinstance(s, ir.For):
        return ir.atom_names(s.start) | ir.atom_names(s.stop) | ir.atom_names(s.step)
    if isinstance(s, ir.While):
        return {s.test}
    if isinstance(s, ir.Return):
        return ir.atom_names(s.value)
    return set()


def _stmt_reads(s) -> set:
    names = _stmt_names(s)
    if isinstance(s, ir.Assign):
        names = names - {s.target}
    return names


def _sub_blocks(s):
    if isinstance(s, ir.If):
        return [s.body, s.orelse]
    if isinstance(s, ir.For):
        return [s.body]
    if isinstance(s, ir.While):
        return [s.cond, s.body]
    return []


def _method_function(name):
    return METHODS.get(name)


def _unbroadcast():
    return unbroadcast


def _assign(name, value):
    return ast.Assign([ast.Name(name, ast.Store())], value)


def _aug(name, k):
    return ast.AugAssign(ast.Name(name, ast.Store()), ast.Add(), ast.Constant(k))


def _call(fn, *args):
    return ast.Call(ast.Name(fn) if isinstance(fn, str) else fn, list(args), [])


def _comment(text):
    # ast.unparse prints a Name's id verbatim: a cheap way to carry a comment line.
    return ast.Expr(ast.Name(text))


def _fold(e):
    """Fold constant arithmetic in loop bounds so the generated code reads well."""
    try:
        value = eval(compile(ast.fix_missing_locations(ast.Expression(copy.deepcopy(e))),
                             "<fold>", "eval"), {"__builtins__": {}})
        return ast.Constant(value)
    except Exception:
        pass
    if isinstance(e, ast.BinOp):
        l, r = _fold(e.left), _fold(e.right)
        if isinstance(l, ast.Constant) and l.value == 0 and isinstance(e.op, ast.Add):
            return r
        if isinstance(r, ast.Constant) and r.value == 0 and isinstance(e.op, (ast.Add, ast.Sub)):
            return l
        if isinstance(r, ast.Constant) and r.value == 1 and isinstance(e.op, ast.Mult):
            return l
        if isinstance(r, ast.Constant) and r.value == -1 and isinstance(e.op, ast.Mult):
            return ast.UnaryOp(ast.USub(), l)
        if isinstance(r, ast.Constant) and isinstance(r.value, (int, float)) and r.value < 0 \
                and isinstance(e.op, (ast.Add, ast.Sub)):
            op = ast.Sub() if isinstance(e.op, ast.Add) else ast.Add()
            return ast.BinOp(l, op, ast.Constant(-r.value))
        if isinstance(r, ast.UnaryOp) and isinstance(r.op, ast.USub) and isinstance(e.op, (ast.Add, ast.Sub)):
            op = ast.Sub() if isinstance(e.op, ast.Add) else ast.Add()
            return ast.BinOp(l, op, r.operand)
        return ast.BinOp(l, e.op, r)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _fold(e.operand)
        if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub):
            return inner.operand
        return ast.UnaryOp(ast.USub(), inner)
    return e
