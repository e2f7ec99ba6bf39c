"""The keys of the compile cache: fingerprints of what compiled code depends on.

A Numba entry is keyed by a hash of everything its machine code depends on: the
generated source, the values of the globals and closure variables it reads
(Numba freezes them into the code), the code of every function it calls
(recursively, with their globals), the Python, NumPy, Numba and llvmlite
versions and pullback's own source.  Numba adds the argument types and the CPU.
A value that cannot be fingerprinted safely (an arbitrary object, a large array)
makes the function uncacheable: it is compiled in memory, as without the cache.
So a stale entry is never served; a changed helper or global gives a new key.
Numba is imported only to read its version and settings.
"""
from __future__ import annotations

import builtins
import functools
import hashlib
import pathlib
import sys
import types

import numpy as np

FORMAT = 1                  # bump when the layout or the key changes meaning
MAX_ARRAY_BYTES = 1 << 20   # a larger global array: Numba cannot cache it either
_LIBRARIES = frozenset({"numpy", "scipy", "math", "cmath", "numba", "llvmlite", "builtins",
                        "operator", "functools", "itertools", "array_api_compat", "pullback"})


# ---------------------------------------------------------------------------
# The fingerprint of a value, as the compiled code depends on it

class Uncacheable(Exception):
    """A value whose fingerprint would not identify what Numba compiles from it."""


@functools.lru_cache(maxsize=None)
def pullback_digest() -> str:
    """A hash of pullback's own source (it stands for pullback's version, and is
    right for a checkout whose files change without a new version number)."""
    root = pathlib.Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def versions() -> str:
    """The versions, and the Numba settings that change the code it generates."""
    import llvmlite
    import numba
    c = numba.config
    settings = [getattr(c, k, None) for k in ("OPT", "BOUNDSCHECK", "FASTMATH", "DEBUGINFO_DEFAULT",
                                               "CPU_NAME", "CPU_FEATURES")]
    return (f"pullback-cache {FORMAT}; python {sys.version}; numpy {np.__version__}; numba "
            f"{numba.__version__} {settings!r}; llvmlite {llvmlite.__version__}; "
            f"pullback {pullback_digest()}")


def _numba_overloaded(fn) -> bool:
    """Whether Numba has a typing template for ``fn`` (``@overload``,
    ``@register_jitable``): it compiles that, not the code we fingerprint."""
    templates = sys.modules.get("numba.core.typing.templates")
    if templates is None:
        return False
    return any(f is fn for f, _ in templates.builtin_registry.globals)


def _library(module) -> bool:
    return isinstance(module, str) and module.partition(".")[0] in _LIBRARIES


class Fingerprint:
    """Text that identifies values as compiled code depends on them.  Functions are
    followed into their code, defaults, closure cells and the globals they read;
    functions, classes and modules of NumPy, SciPy, Numba, the standard library
    parts Numba supports and pullback itself are named (their versions and
    pullback's source are in the key)."""

    def __init__(self):
        self.seen: dict = {}

    def of(self, v) -> str:
        k = id(v)
        if k in self.seen:
            return self.seen[k][1]
        self.seen[k] = [v, f"@{len(self.seen)}"]     # a reference, should v reach itself;
        out = self._of(v)                             # v is kept alive, so its id stays its own
        self.seen[k][1] = out if len(out) < 200 else "#" + hashlib.sha256(out.encode()).hexdigest()
        return self.seen[k][1]

    def _of(self, v) -> str:  # noqa: C901  (one case per kind of value)
        t = type(v)
        if v is None or t in (bool, int, float, complex, str, bytes):
            return f"{t.__name__}:{v!r}"
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject or v.nbytes > MAX_ARRAY_BYTES or t is not np.ndarray:
                raise Uncacheable(f"array {v.dtype} {v.shape}")
            layout = "C" if v.flags.c_contiguous else "F" if v.flags.f_contiguous else "A"
            return (f"array:{v.dtype.str}:{v.shape}:{layout}:{v.flags.writeable}:"
                    f"{hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}")
        if isinstance(v, np.generic):
            return f"scalar:{v.dtype.str}:{v.tobytes().hex()}"
        if t in (tuple, list, frozenset, set):
            items = sorted(map(self.of, v)) if t in (set, frozenset) else map(self.of, v)
            return f"{t.__name__}({','.join(items)})"
        if isinstance(v, tuple) and hasattr(v, "_fields"):       # a namedtuple
            return f"namedtuple:{t.__module__}.{t.__qualname__}{v._fields}({','.join(map(self.of, v))})"
        if isinstance(v, types.ModuleType):
            return f"module:{v.__name__}"
        if isinstance(v, types.FunctionType):
            return self._function(v)
        py = getattr(v, "py_func", None)
        if isinstance(py, types.FunctionType) and _library(t.__module__):    # a Numba dispatcher
            options = sorted(getattr(v, "targetoptions", {}).items())
            return f"{t.__module__}.{t.__qualname__}{options!r}:{self._function(py)}"
        if isinstance(v, np.ufunc):
            return f"ufunc:{v.__name__}"
        if isinstance(v, type) and _library(v.__module__):
            return f"class:{v.__module__}.{v.__qualname__}"
        if _library(t.__module__) and _library(getattr(v, "__module__", None)) \
                and isinstance(getattr(v, "__qualname__", None), str) and callable(v):
            # a library's function object of its own type, such as NumPy's
            # array-function dispatchers (np.sum, np.max): named, as versioned
            return f"libfunction:{t.__module__}.{t.__qualname__}:{v.__module__}.{v.__qualname__}"
        if isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            owner = getattr(v, "__self__", None)
            module = getattr(v, "__module__", None) or getattr(owner, "__name__", None)
            if _library(module) or isinstance(owner, types.ModuleType) and _library(owner.__name__):
                return f"builtin:{module}.{v.__qualname__}"
        if isinstance(v, (np.dtype, slice, range)) or v is Ellipsis or v is NotImplemented \
                or t.__module__.startswith("numba.core.types"):
            return f"{t.__module__}.{t.__qualname__}:{v!r}"     # a repr that says it all
        raise Uncacheable(f"{t.__module__}.{t.__qualname__}")

    def _function(self, fn, whole=False) -> str:
        head = f"function:{fn.__module__}.{fn.__qualname__}"
        if _library(fn.__module__) and not fn.__closure__ and not whole:
            return head     # its source is pullback's or a versioned library's
        if not _library(fn.__module__) and _numba_overloaded(fn):
            raise Uncacheable(f"{head} has a Numba overload")
        code = self._code(fn.__code__, fn.__globals__)
        cells = []
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                cells.append(f"{name}={self.of(cell.cell_contents)}")
            except ValueError:
                cells.append(f"{name}=<empty>")
        return (f"{head}:{code}:defaults={self.of(fn.__defaults__)}:"
                f"kwdefaults={self.of(sorted((fn.__kwdefaults__ or {}).items()))}:cells({','.join(cells)})")

    def _code(self, code, globals_) -> str:
        """The code object, and the globals it (or a code object nested in it) reads.
        Any name the code reads may be a global, or an attribute of a module it
        reads: both are fingerprinted (a superset of what it reads)."""
        names, parts = set(), []

        def walk(c):
            names.update(c.co_names)
            consts = []
            for k in c.co_consts:
                consts.append(walk(k) if isinstance(k, types.CodeType) else self.of(k))
            return (f"code({hashlib.sha256(c.co_code).hexdigest()}:{c.co_names}:{c.co_varnames}:"
                    f"{c.co_freevars}:{c.co_cellvars}:{c.co_argcount}:{c.co_posonlyargcount}:"
                    f"{c.co_kwonlyargcount}:{c.co_flags}:[{','.join(consts)}])")

        parts.append(walk(code))
        modules = []
        for name in sorted(names):
            if name in globals_:
                v = globals_[name]
                parts.append(f"{name}={self.of(v)}")
                if isinstance(v, types.ModuleType):
                    modules.append(v)
            elif hasattr(builtins, name):
                parts.append(f"{name}=builtin")
        while modules:          # attributes of a module the code reads (not of a library)
            m = modules.pop()
            if _library(m.__name__):
                continue
            for name in sorted(names):
                v = getattr(m, name, None)
                if v is not None:
                    parts.append(f"{m.__name__}.{name}={self.of(v)}")
                    if isinstance(v, types.ModuleType) and v not in modules:
                        modules.append(v)
        return ";".join(parts)


def digest(*parts) -> str | None:
    """A hex digest of the versions and ``parts`` (texts, or functions followed
    whole); None if something in them cannot be fingerprinted."""
    fp = Fingerprint()
    try:
        text = "\n".join([versions()] + [fp._function(p, whole=True) if isinstance(p, types.FunctionType)
                                           else fp.of(p) for p in parts])
    except Uncacheable:
        return None
    return hashlib.sha256(text.encode()).hexdigest()
