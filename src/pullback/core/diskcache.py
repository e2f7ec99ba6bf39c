"""The compile cache on disk: generated derivatives as files, Numba's compiled code beside them.

Every file pullback writes goes under one directory (:func:`cache_dir`):

* ``modules/NAME-HASH.py``: the source of a generated derivative, named by a hash
  of its text.  The derivative's code is compiled with this path as its file name,
  so tracebacks, pdb and Numba's messages point at a real file.
* ``numba/``: Numba's compiled code (``.nbi`` index, ``.nbc`` data) of the
  derivatives and of pullback's own jitted helpers (:func:`njit`), never the
  ``__pycache__`` beside a source file.

A Numba entry is keyed by a hash of everything its machine code depends on: the
generated source, the values of the globals and closure variables it reads
(Numba freezes them into the code), the code of every function it calls
(recursively, with their globals), the Python, NumPy, Numba and llvmlite
versions and pullback's own source.  Numba adds the argument types and the CPU.
A value that cannot be fingerprinted safely (an arbitrary object, a large array)
makes the function uncacheable: it is compiled in memory, as without the cache.
So a stale entry is never served; a changed helper or global gives a new key.

Writes are atomic (a temporary file in the same directory, then ``os.replace``),
so processes that write the same entry at once cannot corrupt it.

The directory is bounded: ``$PULLBACK_CACHE_MAX_MB`` megabytes (MiB; default
500, ``0`` for no bound).  After each write the least recently used files are
removed until the rest fits (:func:`evict`); a file's modification time is its
last use, set when it is written and again when an entry is served from it.
Another process may remove a file at any moment, so a missing file is a miss
(the entry is compiled and written again), never an error.

The directory is ``$PULLBACK_CACHE_DIR`` if set, else the user cache directory
(``$XDG_CACHE_HOME/pullback``, ``~/.cache/pullback``; ``~/Library/Caches/pullback``
on macOS, ``%LOCALAPPDATA%/pullback/Cache`` on Windows).  ``PULLBACK_CACHE=0`` or
:func:`set_cache_dir` ``(None)`` turns the cache off.  Numba is imported only by
the functions that compile.
"""
from __future__ import annotations

import builtins
import functools
import hashlib
import os
import pathlib
import sys
import tempfile
import time
import types

import numpy as np

FORMAT = 1                  # bump when the layout or the key changes meaning
DEFAULT_MAX_MB = 500        # the directory's bound without $PULLBACK_CACHE_MAX_MB
_PARTS = ("modules", "numba")   # the subdirectories pullback writes
_WRITING_S = 3600           # a temporary file younger than this may still be being written
MAX_ARRAY_BYTES = 1 << 20   # a larger global array: Numba cannot cache it either
_OFF = ("0", "off", "false", "no")
_LIBRARIES = frozenset({"numpy", "scipy", "math", "cmath", "numba", "llvmlite", "builtins",
                        "operator", "functools", "itertools", "array_api_compat", "pullback"})

_configured: list = []      # [path] or [None] once set_cache_dir was called


# ---------------------------------------------------------------------------
# Where

def _default_dir() -> pathlib.Path:
    home = pathlib.Path.home()
    if sys.platform == "win32":
        return pathlib.Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "pullback" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "pullback"
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "pullback"


def set_cache_dir(path) -> None:
    """Use ``path`` for the compile cache from now on; ``None`` turns the cache off.
    (Without a call: ``$PULLBACK_CACHE_DIR``, else the user cache directory; the
    environment variable ``PULLBACK_CACHE=0`` turns it off.)"""
    _configured[:] = [None if path is None else pathlib.Path(path)]


def cache_dir() -> pathlib.Path | None:
    """The directory of the compile cache, or None when it is off or not writable."""
    if _configured:
        path = _configured[0]
    elif os.environ.get("PULLBACK_CACHE", "").strip().lower() in _OFF:
        path = None
    else:
        try:
            path = pathlib.Path(os.environ.get("PULLBACK_CACHE_DIR") or _default_dir())
        except RuntimeError:        # no home directory to put it in
            path = None
    return path if path is not None and _writable(path) else None


@functools.lru_cache(maxsize=None)
def _writable(path: pathlib.Path) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def write_atomic(path: pathlib.Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, then a rename
    (atomic on one file system), so a reader never sees a half-written file."""
    os.makedirs(path.parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


MODULE_HEADER = "# Generated by pullback (the derivative below); safe to delete.\n"


def module_file(name: str, text: str) -> str | None:
    """The path of a cache file holding ``MODULE_HEADER + text``, written if missing
    (the name holds a hash of the text, so a file that exists has it); None when
    the cache is off or the file cannot be written."""
    root = cache_dir()
    if root is None:
        return None
    data = (MODULE_HEADER + text).encode()
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in name)[:80]
    path = root / "modules" / f"{stem}-{hashlib.sha256(data).hexdigest()[:20]}.py"
    if not touch(path):
        try:
            write_atomic(path, data)
        except OSError:
            return None
        evict(root, keep=(path,))
    return str(path)


# ---------------------------------------------------------------------------
# How much: a bounded directory, least recently used files removed first

def max_bytes() -> int | None:
    """The bound on the directory's size in bytes: ``$PULLBACK_CACHE_MAX_MB``
    MiB, default :data:`DEFAULT_MAX_MB`; None (no bound) for 0 or less."""
    text = os.environ.get("PULLBACK_CACHE_MAX_MB", "").strip()
    try:
        mb = float(text) if text else DEFAULT_MAX_MB
    except ValueError:
        mb = DEFAULT_MAX_MB
    return int(mb * (1 << 20)) if mb > 0 else None


def touch(path) -> bool:
    """Mark ``path`` used now (its modification time orders eviction); False if it
    is not there (another process may just have removed it)."""
    try:
        os.utime(path)
    except OSError:
        return False
    return True


def evict(root=None, keep=()) -> int:
    """Remove the least recently used files of the cache directory until it fits in
    :func:`max_bytes` (never those in ``keep``, just written, nor a temporary file
    that may still be being written).  Returns the bytes removed.  Safe while other
    processes read, write and evict: a file already gone is skipped."""
    limit = max_bytes()
    root = cache_dir() if root is None else pathlib.Path(root)
    if limit is None or root is None:
        return 0
    keep = {os.path.abspath(k) for k in keep}
    now, total, candidates = time.time(), 0, []
    for part in _PARTS:
        try:
            entries = list(os.scandir(root / part))
        except OSError:
            continue
        for e in entries:
            try:
                if not e.is_file(follow_symlinks=False):
                    continue
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            total += st.st_size
            if os.path.abspath(e.path) in keep or (".tmp" in e.name
                                                   and now - st.st_mtime < _WRITING_S):
                continue
            candidates.append((st.st_mtime, st.st_size, e.path))
    removed = 0
    for _, size, path in sorted(candidates):
        if total - removed <= limit:
            break
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass                 # another process removed it: it no longer counts either
        except OSError:
            continue
        removed += size
    return removed


# ---------------------------------------------------------------------------
# What: the fingerprint of a value, as the compiled code depends on it

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
def _versions() -> str:
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


def _digest(*parts) -> str | None:
    """A hex digest of the versions and ``parts`` (texts, or functions followed
    whole); None if something in them cannot be fingerprinted."""
    fp = Fingerprint()
    try:
        text = "\n".join([_versions()] + [fp._function(p, whole=True) if isinstance(p, types.FunctionType)
                                           else fp.of(p) for p in parts])
    except Uncacheable:
        return None
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------
# Numba's cache, kept in the cache directory

def njit(fn, **options):
    """``numba.njit(**options)(fn)`` with its compiled code kept in the cache
    directory, keyed by the fingerprint of ``fn`` (its code, and the globals and
    functions it reads, recursively).  Without a usable cache directory, or for
    a function that cannot be fingerprinted, a plain in-memory ``numba.njit``."""
    import numba
    dispatcher = numba.njit(**options)(fn)
    settings = sorted(options.items())
    _attach(dispatcher, fn, f"{fn.__module__}.{fn.__qualname__}",
            lambda: _digest("function", fn, settings))
    return dispatcher


def jit_derivative(fn, src: str):
    """``numba.njit(fn)`` for the generated derivative ``fn`` of source ``src``,
    cached on disk under the digest of ``src`` and of every value ``fn`` reads."""
    import numba
    dispatcher = numba.njit(fn)
    _attach(dispatcher, fn, src, lambda: _digest("derivative", src, fn))
    return dispatcher


def _attach(dispatcher, fn, name: str, key) -> None:
    """Give ``dispatcher`` a disk cache.  ``key()`` is computed again each time
    Numba looks for an entry or saves one, since Numba reads the globals when it
    compiles, not when the dispatcher is made; ``name`` names the files."""
    root = cache_dir()
    if root is None or key() is None:
        return
    cache = _numba_cache(fn, hashlib.sha256(name.encode()).hexdigest()[:16], key, str(root / "numba"))
    if cache is not None:
        dispatcher._cache = cache    # what dispatcher.enable_caching() sets


def _numba_cache(fn, tag, key, path):
    """A ``numba.core.caching.FunctionCache`` for ``fn`` in ``path``; None if this
    Numba's caching internals are not the ones this was written for."""
    try:
        return _cache_class()(fn, tag, key, path)
    except (ImportError, AttributeError, TypeError, OSError):
        return None


def _save_and_evict(index_file, key, data) -> None:
    """Numba's ``IndexDataCacheFile.save``, but each data file named by its key
    (see :func:`_cache_class`), then the directory brought within its bound."""
    name = "%s.%s.nbc" % (index_file._index_name[:-4],
                          hashlib.sha256(repr(key).encode()).hexdigest()[:16])
    index_file._save_data(name, data)      # the data first: an index never names a missing file
    overloads = index_file._load_index()
    if overloads.get(key) != name:
        overloads[key] = name
        index_file._save_index(overloads)
    touch(index_file._index_path)
    evict(pathlib.Path(index_file._cache_path).parent,
          keep=(index_file._index_path, index_file._data_path(name)))


def _load_and_touch(index_file, key):
    """Numba's ``IndexDataCacheFile.load``: the data of ``key``, or None when the
    index has no such entry or its data file is gone (evicted).  A hit marks the
    index and the data file used."""
    name = index_file._load_index().get(key)
    if name is None:
        return None
    try:
        data = index_file._load_data(name)
    except OSError:
        return None
    touch(index_file._index_path)
    touch(index_file._data_path(name))
    return data


@functools.lru_cache(maxsize=None)
def _cache_class():
    """Numba's per-function cache with three changes.  Its directory is ours, not
    the ``__pycache__`` beside the source file.  Its index key is our key, not the
    bytecode and the pickled closure cells (pickles of Numba dispatchers hold a
    fresh uuid in each process, so a function closing over one would never hit),
    and its freshness stamp is a hash of the versions, not of the source file.  And
    each data file is named by its index key, not numbered: two processes saving
    different entries at once cannot overwrite each other's data under one name
    (at worst an index entry is lost, and compiled again)."""
    from numba.core import caching

    class Locator(caching._CacheLocator):
        def __init__(self, path, tag):
            self._path, self._tag = path, tag

        def get_cache_path(self):
            return self._path

        def get_source_stamp(self):
            return hashlib.sha256(_versions().encode()).hexdigest()

        def get_disambiguator(self):
            return self._tag

    class Impl(caching.CompileResultCacheImpl):
        def __init__(self, fn, locator):        # what CacheImpl.__init__ sets, our locator
            self._lineno = fn.__code__.co_firstlineno
            self._locator = locator
            modname = os.path.splitext(os.path.basename(fn.__code__.co_filename))[0]
            fullname = f"{modname}.{fn.__qualname__}"[:120]
            self._filename_base = self.get_filename_base(fullname, getattr(sys, "abiflags", ""))

    class IndexFile(caching.IndexDataCacheFile):
        def save(self, key, data):
            _save_and_evict(self, key, data)

        def load(self, key):
            return _load_and_touch(self, key)

    class Cache(caching.FunctionCache):
        def __init__(self, fn, tag, key, path):
            locator = Locator(path, tag)
            locator.ensure_cache_path()
            self._name = repr(fn)
            self._py_func = fn
            self._impl = Impl(fn, locator)
            self._cache_path = path
            self._cache_file = IndexFile(path, self._impl.filename_base, locator.get_source_stamp())
            self._key = key
            self.enable()

        def _index_key(self, sig, codegen):
            key = self._key()
            if key is None:
                raise Uncacheable(self._name)
            return (sig, codegen.magic_tuple(), key)

        # The cache is an optimisation: an entry that cannot be read (or keyed) is
        # compiled again, and one that cannot be written (a full disk, something
        # Numba cannot pickle) stays in memory, as without the cache.
        def load_overload(self, sig, target_context):
            try:
                return super().load_overload(sig, target_context)
            except Exception:
                return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except Exception:
                pass

    return Cache
