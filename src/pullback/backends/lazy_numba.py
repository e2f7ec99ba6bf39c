"""A generated derivative under the Numba backend, compiled on first use.

The first call with new argument types starts Numba's compile (in a background
thread by default, :mod:`pullback.core.background`) and, until it is done, runs
the same generated code as plain Python; a derivative with typed-array tapes
keeps them as a per-thread workspace between calls.
"""
from __future__ import annotations

import re
import threading
import types
import warnings

from ..core import background, numbacache
from ..core.errors import NumbaCompileError, PerformanceWarning


class LazyNumba:
    """Compiles on first call so errors name the argument types.

    A derivative whose tapes are typed arrays takes them as a workspace (its last
    parameter ``_ws``) and returns them, grown, as its last result: each thread
    keeps its own between calls, so a long loop's tapes are allocated (and their
    pages touched) once, not on every call.  ``dispatcher`` is what callers may
    call directly once a call ran compiled (``ok``): the Numba dispatcher itself,
    or :func:`_calling` around it (the workspace and the live values added).

    By default the compile runs in the background (:mod:`pullback.core.background`):
    until it is done, calls run the generated code as plain Python (``python``); a
    compile that fails leaves them so, with a warning that says why."""

    def __init__(self, fn, src, filename="", origins=(), live=()):
        self.py_func = fn
        self.source = src
        self.filename = filename
        self.origins = origins      # compiled line number -> the user's line it comes from
        # The globals and closure cells fn takes as its last arguments, read at each
        # call (emit.live_values): compiled, Numba would freeze their values.
        self.live = tuple(live)
        self.jitted = numbacache.jit_derivative(fn, src)
        defaults = (fn.__defaults__ or ())[:len(fn.__defaults__ or ()) - len(self.live)]
        # The default workspace (empty arrays of the tapes' dtypes, see emit.build).
        self.workspace = defaults[1] if len(defaults) > 1 else None
        self.seeded = bool(defaults)    # a reverse sweep's: its seed may be left out
        self.nargs = fn.__code__.co_argcount - len(defaults) - len(self.live)
        self.dispatcher = self._caller(self.jitted)
        if self.dispatcher is not self.jitted:
            self.dispatcher.lazy = self     # what emit.rebind reads of a wrapper
        self.ok = False
        self._jobs: dict = {}       # Numba signature -> background.Job compiling it
        self._warned: set = set()   # signatures whose compile failed, warned of
        self._lock = threading.Lock()
        self._python = None

    def __call__(self, *args):
        # Compile first, apart from running: any failure here is a compile failure
        # (Numba sometimes fails with plain Python exceptions), while an error the
        # user's code raises at run time must pass through unchanged.
        tiered = background.enabled()
        try:
            sig = self._signature(args)
            if not tiered:
                self.jitted.compile(sig)
        except Exception as exc:
            raise NumbaCompileError(self._failure(exc)) from None
        if tiered and not self._compiled(sig):
            return self.as_python(*args)
        out = self.dispatcher(*args)
        self.ok = True      # compiled: callers may use the dispatcher directly
        return out

    def _caller(self, fn):
        """``fn`` (compiled or not) as the API calls it: with this thread's workspace
        and the live values added to the arguments it is given."""
        if self.workspace is None and not self.live:
            return fn
        return _calling(fn, self.nargs, self.seeded, self.workspace, self.live)

    def _signature(self, args):
        full = args
        if self.workspace is not None or self.live:
            full = args + ((1.0,) if self.seeded and len(args) == self.nargs else ()) \
                + ((self.workspace,) if self.workspace is not None else ()) \
                + tuple(_read(holder, key) for _, holder, key in self.live)
        return tuple(self.jitted.typeof_pyval(a) for a in full)

    def as_python(self, *args):
        """The call run as Python (:attr:`python`), or where Python cannot run it, by
        the compiled code (waiting for its compile).  A safety net: code made for
        Numba that read a variable no path of the call assigned (it read the zero
        adjoint of a tuple an early return skipped, before such values got a
        placeholder) runs compiled, where Numba reads an undefined value it never
        uses, and Python stops.  The random programs check :attr:`python` itself."""
        try:
            return self.python(*args)
        except UnboundLocalError:
            sig = self._signature(args)
            job = self._jobs.get(sig)
            if job is None:
                self.jitted.compile(sig)
            elif not job.wait() or job.error is not None:
                raise
            return self.dispatcher(*args)

    def _compiled(self, sig) -> bool:
        """Whether ``sig``'s machine code is ready; starts its compile if none has."""
        job = self._jobs.get(sig)
        if job is None:
            with self._lock:
                job = self._jobs.get(sig)
                if job is None:
                    job = self._jobs[sig] = background.Job(
                        lambda: self.jitted.compile(sig), self.py_func.__name__)
        if not job.done:
            return False
        if job.error is None:
            return True
        if sig not in self._warned:     # warned of once; the calls run as Python
            self._warned.add(sig)
            warnings.warn(self._failure(job.error, "It runs as plain Python instead (slower); "
                                        "use jit=False to ask for that"),
                          PerformanceWarning, stacklevel=4)
        return False

    @property
    def python(self):
        """The derivative run as plain Python: the same generated code, with the
        helpers Numba would compile called as Python (their ``py_func``)."""
        if self._python is None:
            self._python = self._caller(_as_python(self.py_func))
        return self._python

    def _failure(self, exc, advice="Use jit=False for the pure-Python backend") -> str:
        """What went wrong, located at the user's line where Numba names one."""
        return ("the generated derivative could not be compiled with Numba (jit=True)"
                + self._origin(str(exc)) + ". Numba reported:\n"
                + _first_lines(f"{type(exc).__name__}: {exc}", 25)
                + f"\n{advice}, or change the construct it names.")

    def _origin(self, message) -> str:
        """The user's source line behind the generated line Numba complains about."""
        # Numba names the file relative to the working directory: match its name only
        # (a hash of the source is in it).
        hits = re.findall(re.escape(self.filename.replace("\\", "/").rpartition("/")[2])
                          + r'", line (\d+)', message.replace("\\", "/"))
        for line in reversed(hits):
            k = int(line)
            if 0 <= k < len(self.origins) and self.origins[k] is not None:
                return f" at the code generated for `{self.origins[k]}`"
        return ""


def _as_python(fn):
    """``fn`` with the Numba dispatchers it closes over (pullback's jitted helpers,
    a rule's function compiled for the derivative) replaced by their Python
    functions: called from Python, a dispatcher would compile first."""
    cells = fn.__closure__ or ()
    if not any(isinstance(c.cell_contents, _dispatcher_type()) for c in cells):
        return fn
    cells = tuple(types.CellType(c.cell_contents.py_func)
                  if isinstance(c.cell_contents, _dispatcher_type()) else c for c in cells)
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)


def _dispatcher_type():
    from numba.core.dispatcher import Dispatcher
    return Dispatcher


def _read(holder, key):
    """A live value: ``holder[key]`` of a globals dict, or a cell's contents (key None)."""
    return holder.cell_contents if key is None else holder[key]


def _calling(fn, nargs, seeded, workspace, live):
    """``fn`` called with this thread's workspace (``workspace`` on its first call,
    None: it takes none) and the current ``live`` values after the ``nargs``
    arguments (and the seed, where ``seeded``); it returns what ``fn`` returns, less
    the workspace, which it keeps for the thread's next call.  A call that raises
    keeps the older workspace (its arrays are only ever written before they are
    read).  Written out for this number of arguments: a call through ``*args`` and
    a length test cost as much as a small gradient's own loop (Horner, N = 1000)."""
    class Workspace(threading.local):
        def __init__(self):         # runs once in each thread that uses it
            self.ws = workspace

    params = [f"a{k}" for k in range(nargs)] + (["seed=1.0"] if seeded else [])
    passed = [f"a{k}" for k in range(nargs)] + (["seed"] if seeded else []) + \
        (["local.ws"] if workspace is not None else []) + \
        [f"h{k}.cell_contents" if key is None else f"h{k}[{key!r}]"
         for k, (_, _, key) in enumerate(live)]
    call_fn = f"fn({', '.join(passed)})"
    body = (f"    value, grads, local.ws = {call_fn}\n    return value, grads\n"
            if workspace is not None else f"    return {call_fn}\n")
    namespace = {"fn": fn, "local": Workspace(),
                 **{f"h{k}": holder for k, (_, holder, _) in enumerate(live)}}
    exec(f"def call({', '.join(params)}):\n" + body, namespace)
    call = namespace["call"]
    call.dispatcher = fn
    return call


def _first_lines(text, n):
    """The first ``n`` lines of Numba's report, without its terminal colour codes."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")
