"""Names that are not local: globals, closure cells, builtins, attributes of modules.

The top function's own globals and closure variables stay names in the output,
read when the derivative runs, as the primal reads them.  Those of an inlined
function from elsewhere are bound by value (``externals``) and recorded as
dependencies, so the cached derivative is dropped when they change.  The
:class:`Resolver` holds what one normalization bound and depends on.

A local array namespace (``xp = array_namespace(x)``) is known when
transforming (NumPy, ``Scope.constants``) and bound by value too, so that
``xp.sum`` resolves to ``np.sum``.  Which called functions are inlined and which
are primitives needing a rule is the library-inlining policy of
:func:`is_library`.
"""
from __future__ import annotations

import ast
import builtins
import types

from ..core.kinds import MISSING
from ..core.names import identifier
from ..rules import registry
from .parse import ParsedFunction
from .scope import UNRESOLVED, local_names, walk_same_scope


class Resolver:
    """The non-local names of one function and of the functions inlined into it:
    what object a name or attribute chain names, and how the output refers to it
    (read live, or bound by value as an external, with the dependencies that keep
    a cached derivative valid).  Also the array namespaces known when transforming
    (``xp = array_namespace(x)``)."""

    def __init__(self, top: ParsedFunction, names):
        self.top = top
        self.names = names
        self.top_locals = local_names(top.node)
        self.externals: dict[str, object] = {}   # output name -> value bound at transform time
        self.dependencies: list = []        # (namespace dict or cell, key, object): cache validity
        self._aliases: dict = {}

    def name_ref(self, e: ast.Name, scope) -> ast.expr:
        known = scope.lookup_constant(e.id)
        if known is not UNRESOLVED:
            return self.bind_value(known, e.id)
        local, _ = scope.lookup_local(e.id)
        if local is not None:
            return ast.Name(local)
        obj = self.resolve(e, scope)
        if obj is UNRESOLVED:
            raise scope.unsupported(f"the undefined name {e.id!r}", e)
        return self.external_ref(e, obj, scope)

    def external_ref(self, e, obj, scope) -> ast.expr:
        """A reference to a global, closure variable or builtin, read as the primal reads it."""
        root = e
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            # An attribute of a call's known result: array_namespace(x).sum.
            return self.bind_value(obj, e.attr if isinstance(e, ast.Attribute) else
                                   identifier(getattr(obj, "__name__", "value")))
        known = scope.lookup_constant(root.id)
        if known is not UNRESOLVED:
            # A local array namespace: its attribute, bound by value.
            return _rooted_at(e, self.bind_value(known, root.id))
        if scope.parsed is self.top or (scope.parsed.globals is self.top.globals
                                        and root.id not in scope.parsed.closure
                                        and root.id not in self.top_locals
                                        and root.id not in self.top.closure):
            # The top function's own globals and closure: read live at run time.
            if scope.parsed is not self.top:
                self.depend_on(scope, root.id)
            return copy_expr(e)
        # Another module's global or an inlined closure's cell: bind it by value.
        value = self._resolve_root(root, scope)
        key = (id(scope.parsed.globals), root.id, id(value))
        name = self._aliases.get(key)
        if name is None:
            name = self._aliases[key] = self.names.reserve(root.id)
            self.externals[name] = value
            self.depend_on(scope, root.id)
        return _rooted_at(e, ast.Name(name))

    def bind_value(self, value, hint: str) -> ast.Name:
        """A name for ``value``, bound when transforming (an external)."""
        key = ("value", id(value))
        name = self._aliases.get(key)
        if name is None:
            name = self._aliases[key] = self.names.reserve(hint)
            self.externals[name] = value
        return ast.Name(name)

    def depend_on(self, scope, name):
        """Record that the derivative holds what ``name`` (non-local in ``scope``) is now."""
        p = scope.parsed
        if name in p.closure:
            self.dependencies.append((p.closure[name], None, self._resolve_root(ast.Name(name), scope)))
        elif name in p.globals:
            self.dependencies.append((p.globals, name, p.globals[name]))

    def _resolve_root(self, root: ast.Name, scope):
        p = scope.parsed
        if root.id in p.closure:
            try:
                return p.closure[root.id].cell_contents
            except ValueError:
                return UNRESOLVED
        if root.id in p.globals:
            return p.globals[root.id]
        if hasattr(builtins, root.id):
            return getattr(builtins, root.id)
        return UNRESOLVED

    def resolve(self, e, scope):
        """The object a Name/Attribute chain names, if it is not local."""
        if isinstance(e, ast.Name):
            known = scope.lookup_constant(e.id)
            if known is not UNRESOLVED or scope.lookup_local(e.id)[0] is not None:
                return known
            return self._resolve_root(e, scope)
        if isinstance(e, ast.Call):
            built = self.built_transform(e, scope)
            return built if built is not UNRESOLVED else self.picked_namespace(e, scope)
        if isinstance(e, ast.Attribute):
            base = self.resolve(e.value, scope)
            if base is UNRESOLVED:
                return UNRESOLVED
            try:
                return getattr(base, e.attr)
            except AttributeError:
                raise scope.unsupported(f"the attribute {ast.unparse(e)!r}, which does not exist",
                                        e) from None
        return UNRESOLVED

    def resolve_callee(self, func, scope):
        if isinstance(func, ast.Name) and scope.lookup_def(func.id) is not None:
            return scope.lookup_def(func.id)
        return self.resolve(func, scope)

    def picked_namespace(self, e, scope):
        """The array namespace a call to a namespace picker (``array_namespace(x)``)
        returns for the values pullback differentiates (NumPy), or UNRESOLVED."""
        if not isinstance(e, ast.Call) or (not isinstance(e.func, ast.Name)
                                           and not isinstance(e.func, ast.Attribute)):
            return UNRESOLVED
        rule = registry.lookup(self.resolve(e.func, scope))
        return registry.NUMPY_NAMESPACE if rule is not None and rule.namespace else UNRESOLVED

    def built_transform(self, e, scope):
        """``grad(f)`` of a known function, written in the code (``grad(f)(x)``, or
        ``df = grad(f)`` then ``df(x)``): the transform applied when transforming, a
        primitive with its own rule, as the primal builds it at each call.  Only the
        transforms that say so (``builds_primitive``), on arguments known here (the
        function, constant argnums), are built; the names it read are dependencies."""
        if not isinstance(e, ast.Call) or not isinstance(e.func, (ast.Name, ast.Attribute)):
            return UNRESOLVED
        make = self.resolve(e.func, scope)
        if not getattr(make, "builds_primitive", False):
            return UNRESOLVED
        values, roots = [], []
        for a in [*e.args, *(k.value for k in e.keywords)]:
            if isinstance(a, ast.Constant):
                values.append(a.value)
                continue
            root = root_name(a)
            if root is None or scope.lookup_local(root)[0] is not None:
                return UNRESOLVED
            value = self.resolve(a, scope)
            if value is UNRESOLVED:
                return UNRESOLVED
            values.append(value)
            roots.append(root)
        n = len(e.args)
        try:
            built = make(*values[:n], **{k.arg: v for k, v in zip(e.keywords, values[n:])})
        except TypeError as exc:
            raise scope.unsupported(f"`{ast.unparse(e)}`, which fails: {exc}", e) from None
        for root in roots:
            self.depend_on(scope, root)
        return built

    def assign_constant(self, name, value, scope) -> bool:
        """``xp = array_namespace(x)``: ``xp`` is NumPy when transforming, a constant
        of this scope (no statement).  Only when every assignment to ``xp`` in the
        function picks a namespace, and a parameter ``xp`` was given a namespace or
        None: otherwise its value would not be known."""
        namespace = self.picked_namespace(value, scope)
        if namespace is UNRESOLVED:
            return self._assign_transform(name, value, scope)
        if not self.only_namespace_stores(name, scope) or (
                name in _params(scope.parsed.node) and name not in scope.constants
                and name not in scope.none_params):
            raise scope.unsupported(f"the array namespace {name!r}, which is also assigned "
                                    "another value", value,
                                    "give the array namespace a name of its own")
        scope.constants[name] = namespace
        return True

    def _assign_transform(self, name, value, scope) -> bool:
        """``df = grad(f)`` (:meth:`built_transform`): ``df`` is a constant of this
        scope, when it is the only assignment to ``df`` in the function."""
        built = self.built_transform(value, scope)
        if built is UNRESOLVED:
            return False
        if stores(name, scope.parsed.node) != 1 or name in _params(scope.parsed.node):
            raise scope.unsupported(f"{name!r}, assigned {ast.unparse(value)} and another value",
                                    value, f"give {ast.unparse(value)} a name of its own")
        scope.constants[name] = built
        return True

    def only_namespace_stores(self, name, scope) -> bool:
        """Every assignment to ``name`` in the function of ``scope`` picks a namespace."""
        stores = picks = 0
        for st in scope.parsed.node.body:
            for n in walk_same_scope(st):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name:
                    stores += 1
                elif isinstance(n, ast.Assign) and len(n.targets) == 1 \
                        and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name \
                        and self.picked_namespace(n.value, scope) is not UNRESOLVED:
                    picks += 1
        return stores == picks


def stores(name, node) -> int:
    """How many times the function ``node`` assigns ``name`` (not in nested scopes)."""
    return sum(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
               for st in node.body for n in walk_same_scope(st))


def _params(node) -> set:
    """The parameter names of a function node."""
    a = node.args
    return {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}


def _rooted_at(e, root: ast.Name) -> ast.expr:
    """``e`` (a name or an attribute chain) with its root name replaced by ``root``."""
    if isinstance(e, ast.Name):
        return root
    out = copy_expr(e)
    r = out
    while isinstance(r.value, ast.Attribute):
        r = r.value
    r.value = root
    return out


def value_lookup(parsed: ParsedFunction, externals: dict):
    """The one lookup of a non-local name of the normalized function, for the stages
    after normalize: ``name -> value``, the object the derivative's code sees under
    that name when transforming.  In order: an external the normalizer bound
    (``externals``), the top function's closure cell, its global, a builtin;
    :data:`~pullback.core.kinds.MISSING` when there is none (or the cell is empty)."""
    def lookup(name):
        if name in externals:
            return externals[name]
        if name in parsed.closure:
            try:
                return parsed.closure[name].cell_contents
            except ValueError:
                return MISSING
        if name in parsed.globals:
            return parsed.globals[name]
        return getattr(builtins, name, MISSING)
    return lookup


# The library-inlining policy: see is_library.
_LIBRARIES = ("numpy", "scipy", "numba", "math", "torch", "jax", "pullback", "array_api_compat")
_INLINED = ("scipy",)               # ... but their own Python functions are inlined
_NOT_INLINED = ("scipy._lib",)      # ... except these packages' (SciPy's plumbing)


def _in(mod: str, packages) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in packages)


def inlined_library(fn) -> bool:
    """``fn`` is a library's Python function that the policy (:func:`is_library`)
    inlines: a plain ``def`` of SciPy outside ``scipy._lib``."""
    mod = getattr(fn, "__module__", "") or ""
    return (isinstance(fn, types.FunctionType) and _in(mod, _INLINED)
            and not _in(mod, _NOT_INLINED))


def is_library(fn) -> bool:
    """Whether ``fn`` is a primitive (it needs a rule) rather than inlined.

    The library-inlining policy, in one place (CONTRIBUTING.md repeats it).  A
    rule, built in or the user's, always wins: a function with one is called
    and its rule differentiates it.  Without one:

    * The user's Python functions are inlined: read and differentiated.
    * Functions of NumPy, SciPy, Numba, ``math``, PyTorch, JAX, array_api_compat
      and pullback are primitives, never inlined: their source is an
      implementation detail (compiled code, or Python written for speed and
      for every array library), so a call to one needs a rule (``rules/``).
    * Except SciPy's own Python functions (a plain ``def`` in a ``scipy.*``
      module, such as ``scipy.optimize.rosen``, ``rosen_der``,
      ``rosen_hess_prod``): those are inlined like the user's code.
    * But not SciPy's private plumbing, ``scipy._lib`` (its array API layer, the
      vendored array_api_compat and array_api_extra, argument checks): those
      stay primitives.  What SciPy's functions call from it to pick an array
      namespace or to check and convert arguments is registered in
      ``rules/scipy_lib.py``: ``array_namespace`` is a namespace picker (NumPy,
      bound when transforming), and ``xp_promote``, ``_asarray``, ``xp_copy``,
      ``xp_ravel``, ``atleast_nd`` pass the derivative through.  Any other one
      asks for a rule when a derivative must flow through it.
    * A SciPy function that cannot be inlined (a construct the fence refuses,
      no readable source) is refused at the user's call with a
      MissingRuleError naming it and how to register a rule.  Never a guessed
      derivative.
    """
    mod = getattr(fn, "__module__", "") or ""
    return mod.split(".")[0] in _LIBRARIES and not inlined_library(fn)


def root_name(e):
    while isinstance(e, ast.Attribute):
        e = e.value
    return e.id if isinstance(e, ast.Name) else None


def copy_expr(e):
    return ast.parse(ast.unparse(e), mode="eval").body
