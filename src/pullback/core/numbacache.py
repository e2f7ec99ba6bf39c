"""Numba's compiled code kept in the compile cache's directory.

:func:`njit` (pullback's own jitted helpers) and :func:`jit_derivative` (the
generated derivatives) give a Numba dispatcher a disk cache in the ``numba/``
part of :func:`.diskcache.cache_dir`, keyed by :func:`.cachekeys.digest`, its
files counted in the directory's bound.  Numba is imported only by the
functions that compile.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import sys

from .cachekeys import Uncacheable, digest, versions
from .diskcache import cache_dir, evict, touch


def njit(fn, **options):
    """``numba.njit(**options)(fn)`` with its compiled code kept in the cache
    directory, keyed by the fingerprint of ``fn`` (its code, and the globals and
    functions it reads, recursively).  Without a usable cache directory, or for
    a function that cannot be fingerprinted, a plain in-memory ``numba.njit``."""
    import numba
    dispatcher = numba.njit(**options)(fn)
    settings = sorted(options.items())
    _attach(dispatcher, fn, f"{fn.__module__}.{fn.__qualname__}",
            lambda: digest("function", fn, settings))
    return dispatcher


def boundscheck() -> bool:
    """Whether generated derivatives check their array indices (``PULLBACK_BOUNDSCHECK=1``):
    an index out of range, in the user's code or on a tape, raises IndexError
    instead of reading or writing outside the array.  Slower; for debugging, and on
    in pullback's own tests."""
    return os.environ.get("PULLBACK_BOUNDSCHECK", "").strip() not in ("", "0")


def jit_derivative(fn, src: str):
    """``numba.njit(fn)`` for the generated derivative ``fn`` of source ``src``,
    cached on disk under the digest of ``src`` and of every value ``fn`` reads."""
    import numba
    checked = boundscheck()
    dispatcher = numba.njit(boundscheck=True)(fn) if checked else numba.njit(fn)
    _attach(dispatcher, fn, src, lambda: digest("derivative", src, fn, checked))
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
            return hashlib.sha256(versions().encode()).hexdigest()

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
