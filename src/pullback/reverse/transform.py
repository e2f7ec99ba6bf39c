"""The reverse-mode transform: the order of its steps, and the records they pass on.

``ReverseTransform.run`` takes the final IR (normalized, with its loop
bookkeeping, :mod:`pullback.frontend.bookkeeping`, and as the backend runs it,
:mod:`pullback.backends.primal`; numbered), its kinds, its active set and the
helper names those stages chose, and returns the forward and reverse sweeps
(:class:`.ops.Generated`).  It edits none of them.

Each step is a function of its own module that returns a frozen record, which
the transform keeps and the later steps read: the assignment sites
(:mod:`pullback.analysis.sites`), the shape facts, each statement's adjoint and
what it reads (:class:`.adjoints.Adjoints`), the temporaries recomputed and the
reads they narrow (:mod:`pullback.analysis.recompute`), the save plan, the
storage plan, and the backend's tape.  Then :mod:`.sweeps` (forward and reverse
sweeps), :mod:`.lower` (pseudo-statements to Python), :mod:`.cleanup`
(peepholes), :mod:`.fusion` (elementwise temporaries fused) and
:mod:`.declared` (the forward sweep rebinds only what the IR declares) build
the code.  The transform itself only chooses names (``d``, ``helper``) and
answers questions (a name's kind, whether its adjoint is a buffer); no step
writes into it, except the backend's tape, which tracks its own reservations.
``optimise`` (:mod:`pullback.core.optimise`) says which optimisations apply;
the reference derivative has none.

Reading an array element ``p[i]`` becomes, in the reverse sweep, the single
in-place update ``dp[i] += d_t`` of one gradient buffer allocated once.
"""
from __future__ import annotations

import ast
import dataclasses
from types import MappingProxyType

import numpy as np

from ..analysis import aliasing, checkpoints, independent, recompute, saves, shapes, sites, storage
from ..core import ir
from ..core.errors import UnsupportedSyntaxError, located
from ..core.kinds import MISSING, Kind, kind_of_atom
from ..core.names import HelperNames, Helpers, Names
from ..core.optimise import ALL
from ..core.runtime import add_into, add_product_into, refill_zeros
from . import adjoints, cleanup, fusion, gather, lower, sweeps
from .declared import check_declared_writes
from .ops import ForwardAdjoint, Generated, Reset, SegmentNames, TapeNeeds, assign, call


class ReverseTransform:
    """One run: its inputs, the names it chooses (``d``, ``helper``) and the
    records its steps return, set by ``run`` in order: ``sites``, ``shapes``,
    ``adjoints``, ``value_reads``, ``recomputation``, ``plan``, ``storage``,
    ``tape``.  The steps read those records and the queries below; none
    writes into them."""

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
        self.names = Names(set(fn.names) | set(kinds))
        self.sites = sites.find(fn.body, fn.params)
        # lookup: name -> the object the user's code sees there (or MISSING)
        self.helper_names = Helpers(self.names, lookup,
                                    lambda name: name in self.sites or name in fn.params, helpers,
                                    backend.calls_as_is)
        self.helpers = self.helper_names.bound  # name -> object the generated code's namespace binds
        self.adj: dict[str, str] = {}           # variable -> its adjoint's name, once chosen

    def d(self, name: str) -> str:
        if name not in self.adj:
            self.adj[name] = self.names.reserve("d" + name)
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

    def run(self) -> Generated:
        body, params = self.fn.body, set(self.fn.params)
        aliasing.check_aliasing(body, self.kind, self.location, params)
        aliasing.check_stale_views(body, self.kind, self.location, params)
        self.shapes = shapes.find(body, self.fn.params, self.kinds, self.sites.count,
                                  self.sites.in_loop) if self.optimise.shape_facts else shapes.NONE
        self.adjoints = adj = adjoints.generate(self, body)
        refused = frozenset()
        while True:         # a root whose sums the plan saves is taped as usual
            self.independent = independent.find(
                body, self.fn.params, self.kinds, adj.stmt_reads, adj.header_reads, refused,
                in_forward=self.backend.fixed_types
            ) if self.optimise.independent and self.backend.reruns_independent_loops \
                else independent.NONE
            self.checkpoints = checkpoints.find(
                body, self.fn.params, self.kind, set(self.independent.loops), self.error
            ) if self.optimise.checkpoints else checkpoints.NONE
            saved_sums = self._plan(body, params)
            if not saved_sums:
                break
            refused |= saved_sums
        self.forward_adjoints = _forward_adjoints(self, body)
        self.segment_names = _segment_names(self)
        lists = _list_buffers(self, body) if self.backend.list_buffers and self.optimise.storage \
            else frozenset()
        self.storage = storage.plan(self.active, self.kinds, self.local_temps, lists,
                                    lambda name: self.buffer(name, adj.updated_in_place),
                                    self.backend.fixed_types)
        self.tape = self.backend.tape(TapeNeeds(
            self.kinds, self.names, self.helper, self.selects_element,
            frozenset(self.value_reads | self.recomputation.reads)))
        forward = sweeps.fwd_block(self, body)
        check_declared_writes(body, forward)
        forward = sweeps.init_saved(self) + forward
        swept = lower.render(self, sweeps.initial_resets(self) + sweeps.rev_block(self, body))
        if self.optimise.peepholes:
            swept = cleanup.drop_dead_resets(swept, set(self.adj.values()),
                                             {self.d(p) for p in self.wrt})
            # A parameter's adjoint is returned, not read by a later statement.
            swept = cleanup.propagate_copies({self.d(n) for n in self.storage.names(storage.LOCAL)
                                              if n not in params}, swept)
        reverse = self.tape.between() + sweeps.init_adjoints(self) + \
            _detach_returned(self, body) + swept
        for p in sorted(set(self.storage.names(storage.LIST)) & set(self.wrt)):
            dn = self.d(p)
            reverse.append(assign(dn, call(ast.Attribute(ast.Name(self.helper(np, "np")), "array",
                                                           ast.Load()), ast.Name(dn))))
        ret = body[-1]
        if self.optimise.fusion:
            fusion.fuse_elementwise([forward, reverse], ir.atom_names(ret.value))
        if self.optimise.peepholes:
            _peepholes(self, forward, reverse)
        adjoint_names = {p: self.d(p) for p in self.wrt}
        return Generated(self.fn.name, self.fn.params, self.wrt, adjoint_names, forward,
                         reverse, ret.value, self.helpers, self.fn.copied_params,
                         self.tape.workspace, _tape_notes(self, body))

    def _plan(self, body, params) -> bool:
        """The records from the adjoints to the save plan (``read_through_views``,
        ``value_reads``, ``local_temps``, ``recomputation``, ``plan``), and the
        roots of loops re-run in the reverse sweep (:mod:`pullback.analysis.independent`)
        whose sums the plan must save."""
        adj, rerun = self.adjoints, self.independent
        # A root re-run in the reverse sweep reads there what it reads from outside, and
        # so does a loop run again in segments.
        reads = {sid: r.reads for sid, r in rerun.roots.items() if not r.in_forward}
        reads.update({sid: seg.reads for sid, seg in self.checkpoints.items()})
        outside = set().union(*reads.values())
        reread = {n for n in outside if (self.kind(ast.Name(n)).ndim or 0) > 0}
        self.read_through_views = aliasing.read_through_views(body, self.kind, params,
                                                              adj.value_reads | reread)
        self.value_reads = adj.value_reads | reread | self.read_through_views
        header_reads = dict(adj.header_reads)
        for root, names in reads.items():
            header_reads[root] = header_reads.get(root, frozenset()) | names
        self.local_temps = sites.local_temps(
            body, self.sites, self.active, adj.contribs, adj.updated_in_place,
            [p for p in self.wrt if self.kind(ast.Name(p)).ndim is not None]
        ) if self.optimise.storage else ()
        self.recomputation = recompute.plan(
            body, adj.stmt_reads, set().union(*header_reads.values()), self.sites.count,
            self.kinds, self.backend.recompute_array_reads, self.value_reads,
            on=self.optimise.recompute)
        plan = saves.plan(body, self.fn.params, set(self.sites.count),
                          self.recomputation.stmt_reads, header_reads, flow=self.optimise.saves)
        # Nothing in a re-run loop saves (so a local needs no placeholder for a
        # first save either), but a root saves its variable as before.
        local = frozenset().union(*(r.locals for r in rerun.roots.values()))
        self.plan = dataclasses.replace(plan, sites=plan.sites - (rerun.inside - rerun.sum_sites),
                                        undefined=plan.undefined - local)
        viewed = {t.sid for t in ir.walk(body) if isinstance(t, ir.SetItem)
                  and t.sid in rerun.sum_sites and t.array in self.read_through_views}
        return frozenset(rerun.roots_of(plan.sites & rerun.sum_sites | viewed))

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
                and self.sites.count.get(name, 0) == 1 and name in self.sites.top_level
                and name not in self.sites.in_loop)

    def buffer(self, name, updated_in_place) -> bool:
        """Whether ``name``'s adjoint is an array updated in place, given the
        adjoints updated item by item (``updated_in_place``).

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
        return self.stable(name) and (name in updated_in_place
                                      or name in self.sites.read_in_loop)

    def error(self, s, what, hint="", cls=UnsupportedSyntaxError):
        """A refusal located at ``s``'s line."""
        return located(what, self.location(s.line), hint, cls)

    def adjoint_is_array(self, name) -> bool:
        """Whether ``name``'s adjoint is an array of its shape whenever its
        definition's adjoint runs (never the number a reset leaves)."""
        return self.backend.fixed_types or name in self.sites.single_use


def _forward_adjoints(tr, body) -> MappingProxyType:
    """Per loop run with its adjoint in the forward sweep (``Root.in_forward``):
    the name of its sum's adjoint there (1.0) and, per outer active value it
    reads, the buffer that adjoint adds into there."""
    out = {}
    for sid, root in tr.independent.roots.items():
        if root.in_forward:
            loop = next(s for s in body if s.sid == sid)
            read = {n for t in ir.walk(loop.body) for n in ir.operands(t)}
            outer = sorted((read & tr.active) - root.locals - root.sums)
            out[sid] = ForwardAdjoint(tr.names.fresh("_unit"), MappingProxyType(
                {n: tr.names.fresh("_adj_" + n) for n in outer}))
    return MappingProxyType(out)


def _segment_names(tr) -> MappingProxyType:
    """The names each checkpointed loop's code uses (:class:`.ops.SegmentNames`)."""
    fresh = tr.names.fresh
    return MappingProxyType({sid: SegmentNames(
        fresh("_total"), fresh("_every"), fresh("_segments"), fresh("_segment"), fresh("_first"),
        fresh("_trips"), MappingProxyType({n: fresh("_snapshots") for n in seg.carried}),
        MappingProxyType({n: fresh("_entry") for n in seg.entry}))
        for sid, seg in tr.checkpoints.items()})


def _detach_returned(tr, body) -> list:
    """``h = h.copy()`` for each array the function returns (or returns in a tuple,
    a ``has_aux`` aux, also through the names an early ``return`` binds) whose
    overwritten elements the reverse sweep restores in place: it restores them
    into the copy, and the value returned keeps what the function computed.  An
    array read through a view, which must see the restores, is refused there (its
    value returned would lose its writes)."""
    holds = {}          # name -> the names its value holds: a tuple's items, a copy's source
    for s in ir.walk(body):
        if isinstance(s, ir.Assign) and isinstance(s.expr, (ast.Tuple, ast.Name)):
            holds.setdefault(s.target, set()).update(ir.atom_names(s.expr))
    returned, todo = set(), list(ir.atom_names(body[-1].value))
    while todo:
        n = todo.pop()
        if n not in returned:
            returned.add(n)
            todo += holds.get(n, ())
    restored = {s.array for s in ir.walk(body)
                if isinstance(s, ir.SetItem) and tr.saves_element(s)}
    for a in sorted(returned & restored & set(tr.read_through_views)):
        raise tr.error(body[-1], f"a returned array, `{a}`, whose overwritten elements the "
                       "reverse sweep restores in place for a view of it that the function "
                       "reads (the value returned would lose what was written)",
                       f"return a copy, `{a}.copy()`")
    return [assign(a, call(ast.Attribute(ast.Name(a), "copy", ast.Load())))
            for a in sorted(returned & restored)]


def _tape_notes(tr, body) -> tuple:
    """What each loop saves per iteration (for the generated docstring): the names its
    own statements save (nested loops say their own), the arrays whose overwritten
    elements it saves, or that it keeps no tape (:mod:`pullback.analysis.independent`)."""
    notes, inside = [], tr.independent.inside
    for s in ir.walk(body):
        if not isinstance(s, (ir.For, ir.While)) or s.sid in inside:
            continue
        where = f"The loop on line {s.line}"
        if s.sid in tr.forward_adjoints:
            notes.append(f"{where} keeps no tape: each iteration's adjoint runs right after it.")
            continue
        if s.sid in tr.independent.roots:
            notes.append(f"{where} keeps no tape: the reverse sweep runs each iteration again.")
            continue
        own, stack = [], list(s.blocks())
        while stack:
            for t in stack.pop():
                if isinstance(t, (ir.For, ir.While)):
                    continue
                stack += t.blocks()
                if isinstance(t, ir.Assign) and tr.needs_save(t.target, t):
                    own.append(t.target)
                elif isinstance(t, ir.SetItem) and tr.saves_element(t):
                    own.append(f"what it overwrites in {t.array}")
        if own:
            named = sorted({n for n in own if not n.startswith("_")})
            more = len(own) - len([n for n in own if not n.startswith("_")])
            items = named + ([f"{more} intermediate value{'s' * (more > 1)}"] if more else [])
            notes.append(f"{where} saves per iteration: {_listed(items)}.")
        if s.sid in tr.checkpoints:
            seg = tr.checkpoints[s.sid]
            kept = f"keeps {_listed(list(seg.carried))} at the start of each" if seg.carried \
                else "keeps nothing at the start of a"
            notes.append(f"{where} runs in segments (checkpointed): the forward sweep "
                         f"{kept} segment, and the reverse sweep runs each segment again to "
                         "save what it needs, one segment at a time.")
    return tuple(notes)


def _listed(items) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _peepholes(tr, forward, reverse):
    """Additions made in place, slices of adjoints kept instead of zeroed and
    re-added, products added into their buffer, buffers reset in a loop zeroed in
    place (see reverse/cleanup.py)."""
    floats = {n: k.ndim for n, k in tr.kinds.items() if k.ndim and k.dtype == "f"}
    ints = {n for n, k in tr.kinds.items() if k.ndim == 0 and k.dtype == "i"}
    cleanup.add_in_place([forward], floats, ints, (lambda: tr.helper(add_into, "add_into"))
                         if tr.backend.add_into_views else None)
    # The name the generated code calls add_into by, when it calls it.
    updates = [tr.helper_names.name_of(add_into)] if tr.helper_names.name_of(add_into) else []
    cleanup.keep_slice_adjoints([forward, reverse], updates)
    if updates:
        cleanup.products_into([forward, reverse], updates[0],
                              lambda: tr.helper(add_product_into, "add_product_into"))
    scalars = {dn for n, dn in tr.adj.items() if getattr(tr.kinds.get(n), "ndim", None) == 0}
    cleanup.zeros_in_place([forward, reverse], scalars,
                           lambda: tr.helper(refill_zeros, "refill_zeros"))
    if tr.backend.fixed_types:      # compiled: a loop of gathers vectorises, of scatters not
        gather.gather_scatters([forward, reverse], tr.names.fresh)


def _list_buffers(tr, body) -> frozenset:
    """The 1-D gradients only ever updated one element at a time: cheapest as a
    Python list in CPython (no NumPy scalar boxing per update)."""
    adj = tr.adjoints
    sets = [st for st in ir.walk(body) if isinstance(st, ir.SetItem)]
    scalar_writes_only = {st.array for st in sets} - {
        st.array for st in sets if not tr.selects_element(st.array, st.index)}
    return frozenset(
        p for p in tr.active if tr.stable(p) and tr.kinds[p].ndim == 1
        and (p in tr.wrt or p not in tr.fn.params)
        and adj.element_contribs.get(p, 0) == adj.contribs.get(p, 0)
        and (adj.contribs.get(p, 0) > 0 or p in scalar_writes_only)
        and (p in scalar_writes_only or p not in {st.array for st in sets})
        and not _adjoint_read_whole(adj, p, body))


def _adjoint_read_whole(adj, name, body) -> bool:
    """Whether the reverse of ``name``'s definition passes its adjoint on as a
    whole (``q = p`` gives ``dp += dq``), which a list buffer cannot take."""
    for st in ir.walk(body):
        if isinstance(st, ir.Assign) and st.target == name:
            return any(not isinstance(c, Reset) for c in adj.code.get(st.sid, ()))
    return False
