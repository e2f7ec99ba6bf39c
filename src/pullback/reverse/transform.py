"""The reverse-mode transform: the state one run shares, and the order of its steps.

``ReverseTransform.run`` takes the final IR (normalized, with its loop
bookkeeping, :mod:`pullback.frontend.bookkeeping`, and as the backend runs it,
:mod:`pullback.backends.primal`; numbered), its kinds, its active set and the
helper names those stages chose, and returns the forward and reverse sweeps
(:class:`.ops.Generated`).  It edits none of them.
The steps live in their own modules: :mod:`.adjoints` (each statement's
adjoint), :mod:`.sweeps` (forward and reverse sweeps), :mod:`.lower`
(pseudo-statements to Python), :mod:`.cleanup` (peepholes), :mod:`.fusion` (elementwise
temporaries fused), :mod:`.declared` (the forward sweep rebinds only
what the IR declares), and the analyses in :mod:`pullback.analysis` (aliasing,
recomputation, saves).  ``optimise`` (:mod:`pullback.core.optimise`) says which
optimisations apply; the reference derivative has none.

Reading an array element ``p[i]`` becomes, in the reverse sweep, the single
in-place update ``dp[i] += d_t`` of one gradient buffer allocated once.
"""
from __future__ import annotations

import ast

import numpy as np

from ..analysis import aliasing, recompute, saves, shapes, storage
from ..core import ir
from ..core.errors import UnsupportedSyntaxError, located
from ..core.kinds import MISSING, Kind, kind_of_atom
from ..core.names import HelperNames, Helpers, Names
from ..core.optimise import ALL
from ..core.runtime import add_into, add_product_into
from . import adjoints, cleanup, fusion, lower, sweeps
from .declared import check_declared_writes
from .ops import Generated, Reset, TapeNeeds, assign, call


class ReverseTransform:
    def __init__(self, fn: ir.Function, kinds: dict, active: set, wrt: list, backend,
                 location, lookup=lambda name: MISSING, optimise=ALL,
                 helpers: HelperNames = HelperNames()):
        self.fn = fn
        self.optimise = optimise            # which optimisations apply (core/optimise.py)
        self.kinds = kinds
        self.active = active
        self.wrt = wrt
        self.backend = backend
        self.location = location            # line -> Location, for errors
        self.lookup = lookup                # name -> the object the user's code sees (or MISSING)
        self.names = Names(set(fn.names) | set(kinds))
        self.helper_names = Helpers(self.names, lookup,
                                    lambda name: name in self.sites or name in fn.params, helpers,
                                    backend.calls_as_is)
        self.helpers = self.helper_names.bound  # name -> object the generated code's namespace binds
        self.adj: dict[str, str] = {}
        self.value_reads: set = set()           # ... whose contents (not just shape) it reads
        self.read_through_views: set = set()   # ... of those, arrays read through a view
        self.contribs: dict[str, int] = {}      # adjoint contributions per variable
        self.element_contribs: dict[str, int] = {}   # ... of them, `dp[i] += g` with int i
        self.list_buffers: set = set()          # adjoints kept as Python lists (see run)
        self.updated_in_place: set = set()      # adjoints updated item by item
        self.sites: dict[str, int] = {}         # assignment sites per variable
        self.in_loop: set = set()               # assigned inside a loop
        self.top_level: set = set()             # assigned at the function's top level
        self.read_in_loop: set = set()          # read by a statement inside a loop
        self.adjoint_code: dict[int, list] = {}
        self.local_temps: set = set()
        self.tape = None                        # the backend's, once the analyses are done
        self._reads_now: set | None = None
        self.stmt_reads: dict = {}             # sid of an Assign/SetItem -> names its adjoint reads
        self.loop_reads: dict = {}             # sid of an If/For/While -> names read at it
        self.recompute: dict = {}              # temp -> expression read again in reverse
        self.recompute_reads: set = set()      # ... the names those expressions read
        self.shapes = None                     # shape facts (analysis/shapes.py)
        self.single_use: set = set()           # adjoints set by one use in the same block

    def d(self, name: str) -> str:
        if name not in self.adj:
            self.adj[name] = self.names.reserve("d" + name if not name.startswith("_")
                                                else "d" + name)
        return self.adj[name]

    def helper(self, obj, preferred: str) -> str:
        """The name the generated code calls ``obj`` by (see :class:`.names.Helpers`)."""
        return self.helper_names.name(obj, preferred)

    def kind(self, atom) -> Kind:
        return kind_of_atom(atom, self.kinds)

    def selects_element(self, array, index) -> bool:
        """Whether ``array[index]`` is one element (not a row or a slice) of ``array``."""
        return ir.selects_element(index, self.kinds.get(array, Kind(None, "o")).ndim, self.kind)

    def is_active(self, atom) -> bool:
        return isinstance(atom, ast.Name) and atom.id in self.active

    def read(self, expr, value=True):
        for n in ir.atom_names(expr):
            if self._reads_now is not None:
                self._reads_now.add(n)
            if value:
                self.value_reads.add(n)

    def run(self) -> Generated:
        body = self.fn.body
        aliasing.check_aliasing(body, self.kind, self.location, set(self.fn.params))
        aliasing.check_stale_views(body, self.kind, self.location, set(self.fn.params))
        self.count_sites(body, in_loop=False, top=True)
        self.read_in_loop = {n for loop in ir.walk(body) if isinstance(loop, (ir.For, ir.While))
                             for block in loop.blocks() for s in ir.walk(block)
                             for n in ir.operands(s)}
        for p in self.fn.params:
            self.sites[p] = self.sites.get(p, 0) + 1
            self.top_level.add(p)
        self.shapes = shapes.find(body, self.fn.params, self.kinds, self.sites, self.in_loop) \
            if self.optimise.shape_facts else shapes.NONE
        self.find_single_use(body)
        adjoints.gen_adjoints(self, body)
        self.read_through_views = aliasing.read_through_views(
            body, self.kind, set(self.fn.params), self.value_reads)
        self.value_reads |= self.read_through_views
        if self.optimise.storage:
            self.find_local_temps(body)
        if self.optimise.recompute:
            self.find_recomputable(body)
        self.plan = saves.plan(body, self.fn.params, set(self.sites), self.stmt_reads,
                               self.loop_reads, flow=self.optimise.saves)
        if self.backend.list_buffers and self.optimise.storage:
            # A 1-D gradient only ever updated one element at a time is cheapest as a
            # Python list in CPython (no NumPy scalar boxing per update).
            sets = [st for st in ir.walk(body) if isinstance(st, ir.SetItem)]
            scalar_writes_only = {st.array for st in sets} - {
                st.array for st in sets if not self.selects_element(st.array, st.index)}
            self.list_buffers = {
                p for p in self.active if self.stable(p) and self.kinds[p].ndim == 1
                and (p in self.wrt or p not in self.fn.params)
                and self.element_contribs.get(p, 0) == self.contribs.get(p, 0)
                and (self.contribs.get(p, 0) > 0 or p in scalar_writes_only)
                and (p in scalar_writes_only or p not in {st.array for st in sets})
                and not self._adjoint_read_whole(p, body)}
        self.storage = storage.plan(self.active, self.kinds, self.local_temps, self.list_buffers,
                                    self.buffer, self.backend.fixed_types)
        self.tape = self.backend.tape(TapeNeeds(
            self.kinds, self.names, self.helper, self.selects_element,
            frozenset(self.value_reads | self.recompute_reads)))
        forward = sweeps.fwd_block(self, body)
        check_declared_writes(body, forward)
        forward = sweeps.init_saved(self) + forward
        swept = lower.render(self, sweeps.initial_resets(self) + sweeps.rev_block(self, body))
        if self.optimise.peepholes:
            swept = cleanup.propagate_copies(self, cleanup.drop_dead_resets(
                swept, set(self.adj.values()), {self.d(p) for p in self.wrt}))
        reverse = self.tape.between() + sweeps.init_adjoints(self) + swept
        for p in sorted(set(self.storage.names(storage.LIST)) & set(self.wrt)):
            dn = self.d(p)
            reverse.append(assign(dn, call(ast.Attribute(ast.Name(self.helper(np, "np")), "array",
                                                           ast.Load()), ast.Name(dn))))
        ret = body[-1]
        if self.optimise.fusion:
            fusion.fuse_elementwise([forward, reverse], ir.atom_names(ret.value))
        if self.optimise.peepholes:
            self._peepholes(forward, reverse)
        adjoint_names = {p: self.d(p) for p in self.wrt}
        return Generated(self.fn.name, self.fn.params, self.wrt, adjoint_names, forward,
                         reverse, ret.value, self.helpers, self.fn.copied_params,
                         self.tape.workspace)

    def _peepholes(self, forward, reverse):
        """Additions made in place, slices of adjoints kept instead of zeroed and
        re-added, products added into their buffer (see reverse/cleanup.py)."""
        floats = {n: k.ndim for n, k in self.kinds.items() if k.ndim and k.dtype == "f"}
        ints = {n for n, k in self.kinds.items() if k.ndim == 0 and k.dtype == "i"}
        cleanup.add_in_place([forward], floats, ints, (lambda: self.helper(add_into, "add_into"))
                             if self.backend.add_into_views else None)
        # The name the generated code calls add_into by, when it calls it.
        updates = [self.helper_names.name_of(add_into)] if self.helper_names.name_of(add_into) else []
        cleanup.keep_slice_adjoints([forward, reverse], updates)
        if updates:
            cleanup.products_into([forward, reverse], updates[0],
                                  lambda: self.helper(add_product_into, "add_product_into"))

    def count_sites(self, stmts, in_loop, top):
        for s in stmts:
            if isinstance(s, ir.Assign):
                self._site(s.target, in_loop, top)
            elif isinstance(s, ir.For):
                self._site(s.var, True, False)
            nested_in_loop = in_loop or isinstance(s, (ir.For, ir.While))
            for block in s.blocks():
                self.count_sites(block, nested_in_loop, False)

    def _site(self, name, in_loop, top):
        self.sites[name] = self.sites.get(name, 0) + 1
        if in_loop:
            self.in_loop.add(name)
        if top:
            self.top_level.add(name)

    def needs_save(self, name, stmt) -> bool:
        return stmt.sid in self.plan.sites

    def saves_element(self, s: ir.SetItem) -> bool:
        """Whether an in-place write saves what it overwrites: the reverse sweep
        reads the array's contents before it (the save plan), or through a view,
        which the plan does not follow.  The reference saves every write into an
        array whose contents the reverse sweep reads."""
        return s.array in self.value_reads and (
            s.sid in self.plan.sites or s.array in self.read_through_views
            or not self.optimise.saves)

    def stable(self, name) -> bool:
        """An array whose adjoint can be one buffer updated in place: defined once,
        at the top level (or a parameter), so it exists when the reverse sweep starts."""
        k = self.kinds.get(name)
        return (k is not None and k.ndim is not None and k.ndim > 0 and k.dtype in "fc"
                and self.sites.get(name, 0) == 1 and name in self.top_level
                and name not in self.in_loop)

    def buffer(self, name) -> bool:
        """Whether ``name``'s adjoint is an array updated in place.

        In Python, only stable arrays updated element by element or read in a
        loop (whose adjoint gets a contribution per iteration: adding it in place
        saves an array allocation per iteration, ``dW += g`` not ``dW = dW + g``);
        the others are bound to their first contribution instead of added to a
        fresh zero array.  Under Numba types must not change, so every float array
        that exists when the reverse sweep starts gets a zero array (and a fresh
        one when it is assigned again)."""
        k = self.kinds.get(name)
        if k is None or k.ndim is None or k.ndim <= 0 or k.dtype not in "fc":
            return False
        if self.backend.fixed_types:
            return True
        return self.stable(name) and (name in self.updated_in_place
                                      or name in self.read_in_loop)

    def find_recomputable(self, stmts):
        """Temporaries that are cheaper to compute again in the reverse sweep than
        to save (see find_cheap); their readers then read the operands instead."""
        control = set().union(*self.loop_reads.values()) if self.loop_reads else set()
        self.recompute = recompute.find_cheap(stmts, control, self.sites, self.kinds,
                                              self.backend.recompute_array_reads,
                                              self.value_reads)
        self.recompute_reads = set().union(*map(ir.atom_names, self.recompute.values()))
        for names in self.stmt_reads.values():
            reached = self.recomputed_for(names)
            names.clear()
            names |= reached - set(self.recompute)

    def recomputed_for(self, names) -> set:
        """``names`` and, through recomputed temporaries among them, what their
        expressions read, transitively."""
        out, todo = set(), list(names)
        while todo:
            n = todo.pop()
            if n not in out:
                out.add(n)
                if n in self.recompute:
                    todo += ir.atom_names(self.recompute[n])
        return out

    def _adjoint_read_whole(self, name, body) -> bool:
        """Whether the reverse of ``name``'s definition passes its adjoint on as a
        whole (``q = p`` gives ``dp += dq``), which a list buffer cannot take."""
        for st in ir.walk(body):
            if isinstance(st, ir.Assign) and st.target == name:
                return any(not isinstance(c, Reset) for c in self.adjoint_code.get(st.sid, []))
        return False

    def _var_read_in(self, loop) -> bool:
        # Conservative: the loop variable is needed if any statement names it.
        return any(loop.var in ir.mentions(t) for t in ir.walk(loop.body))

    def error(self, s, what, hint="", cls=UnsupportedSyntaxError):
        """A refusal located at ``s``'s line."""
        return located(what, self.location(s.line), hint, cls)

    def adjoint_is_array(self, name) -> bool:
        """Whether ``name``'s adjoint is an array of its shape whenever its
        definition's adjoint runs (never the number a reset leaves)."""
        return self.backend.fixed_types or name in self.single_use

    def find_single_use(self, stmts):
        """Variables assigned once and read by exactly one later statement of the
        same block: the reverse sweep always reaches that reader's adjoint, which
        sets theirs, before their definition's."""
        uses = {}
        for s in ir.walk(stmts):
            for n in ir.operands(s):
                uses[n] = uses.get(n, 0) + 1
        params = set(self.fn.params)

        def visit(block):
            defined = set()
            for s in block:
                if isinstance(s, (ir.Assign, ir.SetItem)):
                    self.single_use |= {n for n in ir.operands(s) & defined if uses[n] == 1}
                if isinstance(s, ir.Assign) and self.sites.get(s.target) == 1 \
                        and s.target not in params:
                    defined.add(s.target)
                for sub in s.blocks():
                    visit(sub)
        visit(stmts)

    def find_local_temps(self, stmts):
        """Temporaries defined once and used once in the same block: their adjoint
        is assigned by its one contribution, never zeroed or accumulated."""
        uses = {}
        for s in ir.walk(stmts):
            for n in ir.operands(s):
                uses[n] = uses.get(n, 0) + 1

        def visit(block):
            defined = {}
            for s in block:
                if isinstance(s, ir.Assign) and s.target.startswith("_t") \
                        and self.sites.get(s.target) == 1 and s.target in self.active:
                    defined[s.target] = s
                for n in ir.operands(s) if isinstance(s, (ir.Assign, ir.SetItem)) else ():
                    if n in defined and uses.get(n) == 1 and self.contribs.get(n) == 1 \
                            and n not in self.updated_in_place:
                        self.local_temps.add(n)
                for sub in s.blocks():
                    visit(sub)
        visit(stmts)

