"""Each statement's adjoint, as pseudo-statements (see :mod:`.ops`).

The transform knows statement shapes, not functions: a call's derivative comes
from the rule registry; a call to a user function the normalizer could not
inline (recursion) is differentiated at run time.

:func:`generate` returns an :class:`Adjoints` record: each statement's adjoint
code, what each adjoint and each If/For/While header reads (the save plan's
input), the names whose contents (not just shape) the reverse sweep reads,
how many contributions each adjoint gets and which adjoints are updated item
by item.  It gathers them in a private writer; the transform (``tr``) only
answers questions (kinds, names, helpers, the storage policy), and none of its
answers depends on what the writer has gathered except the buffer policy,
which is asked with the items updated so far.

Invariant: ``stmt_reads[sid]`` holds every primal name the adjoint code of
statement ``sid`` reads, ``header_reads[sid]`` every name its header needs in
the reverse sweep, and ``value_reads`` every one of those whose contents are
read (a name read only for its shape, ``unbroadcast(g, x)``, is not).
"""
from __future__ import annotations

import ast
import copy
import types
from dataclasses import dataclass
from types import MappingProxyType

from ..core import ir
from ..core.errors import InternalError, MissingRuleError, NumbaCompileError
from ..core.kinds import Kind
from ..core.runtime import CALL_VJP, add_item, buffer_like, item_cotangent, scatter_add, written_cotangent
from ..frontend.resolve import is_library
from ..rules import registry, results
from ..rules.elementwise import unbroadcast, unbroadcast_product
from ..rules.scalar import OPERATORS, numpy_form
from ..rules.templates import substitute
from .lower import index_value
from .ops import Accum, AsBuffer, BufferUpdate, InPlace, Reset, Scatter, TupleItem, ZeroElement, assign, call


@dataclass(frozen=True)
class Adjoints:
    code: MappingProxyType              # sid of an Assign/SetItem -> its adjoint (a tuple)
    stmt_reads: MappingProxyType        # sid of an Assign/SetItem -> names its adjoint reads
    header_reads: MappingProxyType      # sid of an If/For/While -> names read at it
    value_reads: frozenset              # names whose contents (not just shape) are read
    contribs: MappingProxyType          # name -> contributions its adjoint receives
    element_contribs: MappingProxyType  # ... of them, ``dp[i] += g`` with an int ``i``
    updated_in_place: frozenset         # names whose adjoints are updated item by item


def generate(tr, body) -> Adjoints:
    """The adjoints of the numbered program ``body`` (see the module's invariant)."""
    w = _Writer(tr)
    w.block(body)
    return Adjoints(
        MappingProxyType({sid: tuple(code) for sid, code in w.code.items()}),
        MappingProxyType({sid: frozenset(r) for sid, r in w.stmt_reads.items()}),
        MappingProxyType({sid: frozenset(r) for sid, r in w.header_reads.items()}),
        frozenset(w.value_reads), MappingProxyType(w.contribs),
        MappingProxyType(w.element_contribs), frozenset(w.updated_in_place))


class _Writer:
    """What the adjoints generated so far contribute to the record; ``reads``
    collects the names read by the statement (or header) being generated."""

    def __init__(self, tr):
        self.tr = tr
        self.code: dict = {}
        self.stmt_reads: dict = {}
        self.header_reads: dict = {}
        self.value_reads: set = set()
        self.contribs: dict = {}
        self.element_contribs: dict = {}
        self.updated_in_place: set = set()
        self.reads: set | None = None

    def block(self, stmts):
        for s in stmts:
            self.reads = set()
            ir.dispatch(_ADJOINTS, s)(self, s)
            self.reads = None

    def read(self, expr, value=True):
        """``expr``'s names are read by the adjoint being generated (their
        contents, unless not ``value``: a name read for its shape)."""
        for n in ir.atom_names(expr):
            if self.reads is not None:
                self.reads.add(n)
            if value:
                self.value_reads.add(n)

    def contribute(self, name, element=False):
        self.contribs[name] = self.contribs.get(name, 0) + 1
        if element:
            self.element_contribs[name] = self.element_contribs.get(name, 0) + 1

    def header(self, s):
        """What was read so far is read at ``s``'s header."""
        self.header_reads[s.sid] = self.reads
        self.reads = None

    def buffer(self, name) -> bool:
        return self.tr.buffer(name, self.updated_in_place)


def _adjoint_assign(w, s: ir.Assign):
    w.code[s.sid] = assign_adjoint(w, s)
    w.stmt_reads[s.sid] = w.reads


def _adjoint_setitem(w, s: ir.SetItem):
    w.code[s.sid] = setitem_adjoint(w, s)
    w.stmt_reads[s.sid] = w.reads


def _adjoint_if(w, s: ir.If):
    w.read(ast.Name(s.test))
    w.header(s)
    w.block(s.body)
    w.block(s.orelse)


def _adjoint_for(w, s: ir.For):
    w.read(ast.Name(s.trips))
    if ir.var_read_in(s):
        w.read(s.start)
        w.read(s.step)
    w.header(s)
    w.block(s.body)


def _adjoint_while(w, s: ir.While):
    w.read(ast.Name(s.trips))
    if s.exit_flag is not None:
        w.read(ast.Name(s.exit_flag))      # did the last iteration skip the condition?
    w.header(s)
    w.block(s.cond)
    w.block(s.body)


def _adjoint_return(w, s: ir.Return):
    if w.tr.is_active(s.value):
        w.contribute(s.value.id)


_ADJOINTS = ir.table("adjoints", {
    ir.Assign: _adjoint_assign, ir.SetItem: _adjoint_setitem, ir.If: _adjoint_if,
    ir.For: _adjoint_for, ir.While: _adjoint_while, ir.Return: _adjoint_return})


def accum(w, name, expr) -> Accum:
    w.contribute(name)
    return Accum(name, expr)


def assign_adjoint(w, s: ir.Assign) -> list:
    """``target = expr``: contributions to the operands' adjoints, then the target's
    adjoint is reset (the target gets its older value back)."""
    tr = w.tr
    t, e = s.target, s.expr
    if t not in tr.active or (isinstance(e, ast.Name) and e.id == t):
        return []
    g = ast.Name(tr.d(t))
    w.read(g, value=False)  # not a primal name; harmless
    handler = _EXPRESSION_ADJOINTS.get(type(e))
    if handler is None:
        raise InternalError(f"no adjoint for the expression {type(e).__name__} "
                            f"({ast.unparse(e)})\n  {tr.location(s.line)}")
    return handler(w, s, e, g) + [Reset(t)]


def _name_adjoint(w, s, e, g):
    tr = w.tr
    return [accum(w, e.id, g)] if tr.is_active(e) else []


def _attribute_adjoint(w, s, e, g):
    tr = w.tr
    if not tr.is_active(e.value):
        return []
    if e.attr in ("T", "mT"):
        return [accum(w, e.value.id, ast.Attribute(g, e.attr, ast.Load()))]
    if e.attr in ("real",):
        return [accum(w, e.value.id, g)]
    raise tr.error(s, *refused_attribute(e))


def refused_attribute(e) -> tuple:
    """What to say of an attribute whose derivative is not followed (a field of a
    named tuple: ``np.linalg.slogdet(S).logabsdet``), and what to write instead."""
    return (f"the attribute `.{e.attr}` of a value that carries a derivative (a field of a "
            "named tuple, such as np.linalg.slogdet's or eigh's result, is not followed)",
            "unpack the result (`sign, logabsdet = np.linalg.slogdet(S)`) or take its item "
            "by index (`np.linalg.slogdet(S)[1]`)")


def _operator_adjoint(w, s, e, g):
    op = OPERATORS.get(type(e.op).__name__)
    operands = [e.left, e.right] if isinstance(e, ast.BinOp) else [e.operand]
    return rule_adjoint(w, s, op, operands, {}, g)


def _tuple_adjoint(w, s, e, g):
    """A tuple (or list) of values, e.g. the arrays given to np.concatenate: its
    cotangent holds one cotangent per item."""
    tr = w.tr
    item = tr.helper(item_cotangent, "item_cotangent")
    return [accum(w, elt.id, call(item, g, ast.Constant(k)))
            for k, elt in enumerate(e.elts) if tr.is_active(elt)]


def _no_adjoint(w, s, e, g):
    """A constant or a comparison: nothing flows back."""
    return []


# Expression class on the right of an Assign -> its adjoint.  A class missing here
# is an internal error, never a dropped contribution.
_EXPRESSION_ADJOINTS = {
    ast.Name: _name_adjoint, ast.Constant: _no_adjoint, ast.Compare: _no_adjoint,
    ast.Subscript: lambda w, s, e, g: subscript_adjoint(w, s, e, g),
    ast.Attribute: _attribute_adjoint, ast.BinOp: _operator_adjoint,
    ast.UnaryOp: _operator_adjoint, ast.Call: lambda w, s, e, g: call_adjoint(w, s, e, g),
    ast.Tuple: _tuple_adjoint,
}


def subscript_adjoint(w, s, e, g):
    tr = w.tr
    base = e.value
    if any(tr.is_active(ast.Name(n)) for n in ir.atom_names(e.slice)):
        raise tr.error(s, "an index built from differentiated values (np.r_[...], np.c_[...] "
                       "or an index object fed with them)",
                       "use np.concatenate([...]), np.stack(...) or np.column_stack(...) "
                       "to join differentiated arrays")
    if not tr.is_active(base):
        return []
    index = e.slice
    w.read(index)
    bk = tr.kind(base)
    constant = isinstance(index, ast.Constant) and isinstance(index.value, int)
    if bk.ndim is None and (constant or bk.items is not None and tr.kind(index) == Kind(0, "i")):
        # An item of a tuple: t[1], np.linalg.slogdet(A)[1], or t[i] with an int i
        # when t is known to be a tuple (not just a value of unknown kind).
        w.read(base, value=False)
        w.contribute(base.id)
        w.updated_in_place.add(base.id)
        return [TupleItem(base.id, copy.deepcopy(index), g, tr.helper(add_item, "add_item"))]
    basic = all(ir.is_basic_index(i, tr.kind) for i in
                (index.elts if isinstance(index, ast.Tuple) else [index]))
    name = base.id
    w.updated_in_place.add(name)
    if basic and (tr.stable(name) or (tr.backend.fixed_types and w.buffer(name))):
        # The heart of the matter: one in-place update of one buffer.
        w.contribute(name, element=tr.selects_element(name, index))
        return [InPlace(name, copy.deepcopy(index), g)]
    w.read(base, value=False)
    helper = tr.helper(scatter_add, "scatter_add") if not basic else \
        tr.helper(buffer_like, "buffer_like")
    w.contribute(name)
    if basic:
        return [BufferUpdate(name, copy.deepcopy(index), g, helper)]
    return [Scatter(name, copy.deepcopy(index), g, helper)]


def call_adjoint(w, s, e: ast.Call, g):
    tr = w.tr
    if s.method is not None:
        fn = _method_function(s.method)
        if fn is None:
            if not any(tr.is_active(a) for a in [e.func.value] + e.args):
                return []
            raise tr.error(s, f"the method .{s.method}() on a differentiated value",
                             "call the NumPy function instead, or register a rule",
                             cls=MissingRuleError)
        return rule_adjoint(w, s, fn, [e.func.value] + e.args,
                            {k.arg: k.value for k in e.keywords}, g)
    return rule_adjoint(w, s, s.callee, e.args, {k.arg: k.value for k in e.keywords}, g)


def rule_adjoint(w, s, fn, args, kwargs, g):
    tr = w.tr
    active_args = [a for a in list(args) + list(kwargs.values()) if tr.is_active(a)]
    rule = registry.lookup(fn) if fn is not None else None
    if not active_args or (rule is not None and not rule.differentiable):
        return []
    array_result = tr.kinds.get(s.target, Kind(0, "f")).ndim not in (0,)
    fn = numpy_form(fn, [tr.kind(a) for a in args], len(kwargs),
                    array_result or any(tr.kind(a).ndim != 0 for a in args))
    rule = registry.lookup(fn) if fn is not None else None
    if rule is not None and not rule.has_derivative:
        rule = None         # known only for its kind: no derivative yet
    if rule is None and _is_user_function(fn):
        return recursive_call_adjoint(w, s, fn, args, kwargs, g)
    if rule is None:
        full = registry.describe(fn)
        name = full if not isinstance(registry.key(fn), int) else \
            getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
        raise tr.error(
            s, f"pullback has no derivative rule for {full}",
            f"Register one with @pullback.rule({name}) on a function "
            f"`def {name.split('.')[-1]}_vjp(g, ans, *args)` that returns one cotangent per "
            "argument, or call a function that has one.", cls=MissingRuleError)
    where = f"\n  {tr.location(s.line)}"
    bound = rule.bind(args, kwargs, where)
    tr.backend.check_rule(tr, s, rule, bound)
    code = []
    elementwise = rule.result is results.like
    extra = {}
    if rule.vjp_tuple is not None:
        # A user VJP returns every cotangent at once: call it once, with the call's
        # own arguments as written.
        name = tr.names.fresh("_cotangents")
        template, inputs = rule.vjp_call(args, kwargs, where)
        code.append(assign(name, instantiate(w, rule, template, inputs, g,
                                             ast.Name(s.target))))
        extra["__cotangents__"] = ast.Name(name)
    for pname, template in rule.adjoints.items():
        arg = bound.get(pname)
        if not tr.is_active(arg):
            continue
        contrib = instantiate(w, rule, template, dict(bound, **extra), g,
                              ast.Name(s.target))
        if elementwise and array_result and not (
                s.sid in tr.shapes.uniform and tr.kind(arg).is_array
                and tr.adjoint_is_array(s.target)):
            # Unless no operand was broadcast (then the sum is the identity, and
            # the argument need not be kept for its shape).
            contrib = _summed_onto(w, contrib, arg)
            w.read(ast.Name(arg.id), value=False)
        code.append(accum(w, arg.id, contrib))
    for pname, arg in bound.items():
        if tr.is_active(arg) and pname not in rule.adjoints:
            raise tr.error(s, f"the argument {pname!r} of {rule.name}, which has no "
                             "derivative", "pass a constant there, or register a rule "
                             "that differentiates it", cls=MissingRuleError)
    return code


def recursive_call_adjoint(w, s, fn, args, kwargs, g):
    """A recursive call: differentiate the callee at run time, one level at a time."""
    tr = w.tr
    if not tr.backend.runtime_recursion:
        raise tr.error(s, f"a recursive call under the {tr.backend.name} backend",
                         "use jit=False: recursion is differentiated on the Python backend",
                         cls=NumbaCompileError)
    name = tr.names.fresh("_cotangents")
    helper = tr.helper(CALL_VJP, "call_vjp")
    func = copy.deepcopy(s.expr.func)
    w.read(func)
    vjp_call = call(helper, func, g, *[copy.deepcopy(a) for a in args])
    w.read(vjp_call)
    code = [assign(name, vjp_call)]
    for k, a in enumerate(args):
        if tr.is_active(a):
            code.append(accum(w, a.id, ast.Subscript(ast.Name(name), ast.Constant(k),
                                                      ast.Load())))
    return code


def instantiate(w, rule, template, bound, g, ans) -> ast.expr:
    """Substitute the call's atoms into a rule's template expression."""
    tr = w.tr
    mapping = {"g": g, "ans": ans}
    mapping.update(bound)
    helper_names = {name: tr.helper(obj, _identifier(getattr(obj, "__name__", ""), "vjp")
                                      if name == "__vjp__" else name)
                    for name, obj in rule.helpers.items()}

    out = substitute(template, mapping, helper_names)
    shape_of = {helper_names[name]: obj.reads_only_the_shape_of
                for name, obj in rule.helpers.items()
                if getattr(obj, "reads_only_the_shape_of", None)}
    structure = _read_for_structure(out, shape_of)
    for n in sorted(ir.atom_names(out)):
        w.read(ast.Name(n), value=n not in structure)
    if ans.id in ir.atom_names(out):
        w.read(ans)
    return out


def _read_for_structure(expr, positions) -> set:
    """The names ``expr`` reads only as arguments that a helper reads for their
    shape, dtype or kind alone (``positions``: helper name -> the indices of
    those arguments, the helper's ``reads_only_the_shape_of``), never as values."""
    structure, value = set(), set()

    def visit(node, shape):
        if isinstance(node, ast.Name):
            (structure if shape else value).add(node.id)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in positions:
            for k, a in enumerate(node.args):
                visit(a, shape or k in positions[node.func.id])
            for kw in node.keywords:
                visit(kw.value, shape)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, shape)
    visit(expr, False)
    return structure - value


def setitem_adjoint(w, s: ir.SetItem) -> list:
    tr = w.tr
    code = []
    w.read(s.index)
    w.updated_in_place.add(s.array)
    if s.array in tr.active:
        if not w.buffer(s.array):
            # Its adjoint may still be the number 0.0 (nothing reached it, say, on the
            # path taken): make it an array of the variable's shape before indexing it.
            w.read(ast.Name(s.array), value=False)
            code.append(AsBuffer(s.array, tr.helper(buffer_like, "buffer_like")))
        g = ast.Subscript(ast.Name(tr.d(s.array)), copy.deepcopy(s.index), ast.Load())
        fancy = not all(ir.is_basic_index(i, tr.kind) for i in
                        (s.index.elts if isinstance(s.index, ast.Tuple) else [s.index]))
        if tr.is_active(s.value):
            contrib = g
            if fancy:
                # A new array, zero where a later write to the same entry undid this one.
                contrib = call(tr.helper(written_cotangent, "written_cotangent"),
                               ast.Name(tr.d(s.array)), index_value(copy.deepcopy(s.index)))
            if s.sid in tr.shapes.fits:
                # The value has the written region's shape: its cotangent is a copy
                # of the region's (zeroed next), summed over nothing.
                if not fancy:
                    contrib = ast.Call(ast.Attribute(g, "copy", ast.Load()), [], [])
            elif not tr.selects_element(s.array, s.index):
                # A row or slice of the adjoint is a view: copy it before zeroing it,
                # and sum it over the axes the written value was broadcast along
                # (a scalar, or a value of unknown rank such as np.dot's result).
                if not fancy:
                    contrib = ast.Call(ast.Attribute(g, "copy", ast.Load()), [], [])
                w.read(s.value, value=False)       # its shape, as it was at this write
                contrib = ast.Call(ast.Name(tr.helper(_unbroadcast(), "unbroadcast")),
                                   [contrib, ast.Name(s.value.id)], [])
            code.append(accum(w, s.value.id, contrib))
        code.append(ZeroElement(s.array, copy.deepcopy(s.index)))
    return code


def _is_user_function(fn) -> bool:
    return isinstance(fn, types.FunctionType) and not is_library(fn)


def _identifier(name, default):
    return name if name.isidentifier() else default


def _method_function(name):
    return registry.method(name)


def _unbroadcast():
    return unbroadcast


def _summed_onto(w, contrib, arg) -> ast.expr:
    """``unbroadcast(contrib, arg)``; a product ``g * y`` summed onto a scalar
    ``arg`` (``c`` in ``c * u``) is one dot product instead."""
    tr = w.tr
    if tr.kind(arg).ndim == 0 and isinstance(contrib, ast.BinOp) \
            and isinstance(contrib.op, ast.Mult) \
            and all(isinstance(o, ast.Name) and tr.kind(o).ndim != 0
                    for o in (contrib.left, contrib.right)):
        return call(tr.helper(unbroadcast_product, "unbroadcast_product"),
                    contrib.left, contrib.right, ast.Name(arg.id))
    return call(tr.helper(_unbroadcast(), "unbroadcast"), contrib, ast.Name(arg.id))
