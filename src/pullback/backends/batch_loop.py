"""One compiled loop calling a compiled derivative once per entry of a batch.

``run(fn, args, axes, outputs, size)`` calls the generated function ``fn`` (a
:class:`.lazy_numba.LazyNumba`, or the dispatcher a compiled one hands out) for
each ``b`` in ``range(size)``, each argument whose entry in ``axes`` is an axis
indexed at ``b`` along it (the others passed whole), and writes into each
output array, at ``b``, the part of the result its path names (``(1, 0)``:
``result[1][0]``).  The loop is ``numba.njit(nogil=True)``: ``run`` splits the
batch into as many ranges as Numba is set to use threads
(``numba.set_num_threads``) and runs them on that many Python threads, when
the last run says the batch is more than a millisecond of work, each range
with a tape workspace of its own (the derivative grows it and hands it
back, as :class:`.lazy_numba.LazyNumba` keeps one per thread).  Python's
threads rather than ``prange``: an error the derivative raises reaches the
caller (in a ``prange`` loop it would be lost, the arrays left unwritten).

What calls it: ``vmap`` of a compiled gradient (each example), and the dense
Jacobians and Hessians (each column a unit tangent or cotangent), which are
otherwise a call from Python per column.  The globals and closure cells the
derivative reads (its live values) are read once, when ``run`` is called.

Invariant: each entry's numbers are those of ``fn`` called on that entry's
arguments from Python (the same compiled code, on the same argument types).
``run`` returns False where it does not run (``fn`` is not compiled by Numba,
the loop is still compiling in the background, or a call raised): the caller
then loops in Python, which gives the same numbers, or the error located.  A
loop Numba fails to compile says so once, with a PerformanceWarning.
"""
from __future__ import annotations

import time
import warnings

from ..core import background
from ..core.errors import PerformanceWarning
from .lazy_numba import LazyNumba, _read

# The compiled loops of each derivative's dispatcher, by their layout: kept for
# the process, as Numba keeps the derivative's own machine code (a loop holds
# its derivative, so a weak key would never let go of it either).
_KERNELS: dict = {}
_POOLS: dict = {}
#: Seconds of work below which a batch runs on the calling thread alone: handing
#: ranges to a pool and waiting for them costs tens of microseconds.
_THREADED = 1e-3


def run(fn, args, axes, outputs, size) -> bool:
    """``outputs``: ``(path, array)`` pairs, each array of shape ``(size,) + shape``."""
    lazy = fn if isinstance(fn, LazyNumba) else getattr(fn, "lazy", None)
    jitted = lazy.jitted if lazy is not None else fn
    if not hasattr(jitted, "py_func") or size < 1:     # not a Numba dispatcher
        return False
    workspace = lazy.workspace if lazy is not None else None
    live = tuple(_read(holder, key) for _, holder, key in lazy.live) if lazy is not None else ()
    paths = tuple(p for p, _ in outputs)
    kernel = _kernel(jitted, tuple(axes), workspace is not None, len(live), paths)
    call = (*args, *((workspace,) if workspace is not None else ()), *live,
            *(a for _, a in outputs))
    if not kernel.ready(call + (0, 1)):
        return False
    import numba
    n = min(size, numba.get_num_threads())
    if kernel.per_entry is None or kernel.per_entry * size < _THREADED:
        n = 1           # too little work to pay for handing it to threads
    try:
        start = time.perf_counter()
        if n == 1:
            kernel.dispatcher(*call, 0, size)
        else:
            pool = _pool(n)
            for job in [pool.submit(kernel.dispatcher, *call, c * size // n, (c + 1) * size // n)
                        for c in range(n)]:
                job.result()
        kernel.per_entry = (time.perf_counter() - start) * n / size
    except Exception as exc:
        if _compile_failure(exc) and not kernel.warned:     # said once: slower, not wrong
            kernel.warned = True
            warnings.warn(f"the compiled loop over a batch of calls of {jitted.py_func.__name__} "
                          f"could not be compiled ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:200]}); the calls run one by one from "
                          "Python instead", PerformanceWarning, stacklevel=4)
        return False        # an error of the derivative's: the Python loop raises it, located
    return True


def _compile_failure(exc) -> bool:
    from numba.core.errors import NumbaError
    return isinstance(exc, NumbaError)


class _Kernel:
    """One compiled loop and its compiles, one per argument types (in the
    background where the derivative's own compiles are)."""

    def __init__(self, source, fn):
        import numba
        namespace = {"fn": fn}
        exec(compile(source, "<pullback batch loop>", "exec"), namespace)
        self.dispatcher = numba.njit(nogil=True)(namespace["batched"])
        self._jobs: dict = {}
        self.per_entry = None       # seconds one entry took in the last run
        self.warned = False         # of a failed compile

    def ready(self, args) -> bool:
        if not background.enabled():
            return True
        sig = tuple(self.dispatcher.typeof_pyval(a) for a in args)
        job = self._jobs.get(sig)
        if job is None:
            job = self._jobs[sig] = background.Job(lambda: self.dispatcher.compile(sig),
                                                   "a batch loop")
        return job.done and job.error is None


def _kernel(jitted, axes, workspace, nlive, paths) -> _Kernel:
    per_fn = _KERNELS.setdefault(jitted, {})
    key = (axes, workspace, nlive, paths)
    if key not in per_fn:
        per_fn[key] = _Kernel(_source(axes, workspace, nlive, paths), jitted)
    return per_fn[key]


def _pool(n):
    """A pool of ``n`` threads, kept for the next call."""
    pool = _POOLS.get(n)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor
        pool = _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="pullback batch")
    return pool


def _source(axes, workspace, nlive, paths) -> str:
    """The loop over entries ``lo`` to ``hi`` of the batch."""
    args = [f"a{k}" for k in range(len(axes))]
    lives = [f"l{k}" for k in range(nlive)]
    outs = [f"o{k}" for k in range(len(paths))]
    passed = [a if ax is None else f"{a}[{', '.join([':'] * ax + ['b'])}]"
              for a, ax in zip(args, axes)] + (["ws"] if workspace else []) + lives
    params = args + (["ws0"] if workspace else []) + lives + outs + ["lo", "hi"]
    lines = [f"def batched({', '.join(params)}):"]
    lines += ["    ws = ws0"] if workspace else []
    lines += ["    for b in range(lo, hi):", f"        res = fn({', '.join(passed)})"]
    lines += ["        ws = res[2]"] if workspace else []
    lines += [f"        {o}[b] = res{''.join(f'[{k}]' for k in path)}"
              for o, path in zip(outs, paths)]
    return "\n".join(lines) + "\n"
