"""The compiled loop behind ``vmap`` of a gradient that Numba compiled.

``vmap(grad(loss, jit=True), in_axes=(None, 0))(w, X)`` is one compiled loop
(``numba.njit(nogil=True)``) over a range of the batch, run on as many threads
as Numba is set to use (``numba.set_num_threads``), one range each: it calls the
derivative's own dispatcher on each example, with a tape workspace of its own
(the derivative grows it and hands it back, as :mod:`.backends.lazy_numba` keeps one per
thread), and writes the value and gradients into arrays stacked along the
batch.  Threads of Python's rather than ``prange``: an error the derivative
raises in one of them reaches the caller (in a ``prange`` loop it would be lost,
and the arrays left unwritten).  The globals and closure cells the derivative reads (its live values)
are read once per call, as the derivative's own caller reads them.

Invariant: each example's numbers are those of ``grad(loss)`` called on it; the
loop calls the very code that call runs, on the same argument types.
``run`` returns None wherever that does not hold or is not ready (another kind
of ``f``, pytree or keyword arguments, ``has_aux``, the loop still compiling in
the background, a call that raised): the caller then loops in Python, which
gives the same numbers, or the error located at the user's line.
"""
from __future__ import annotations

import numpy as np

from .api import GradientFunction
from .backends.lazy_numba import LazyNumba, _read
from .core import background


def run(mapped, batch):
    """The stacked results of ``mapped.f`` over ``batch`` (:class:`pullback.vmap._Batch`)
    by the compiled loop, or None (see the module)."""
    f = mapped.f
    if not (isinstance(f, GradientFunction) and f.backend.name == "numba" and not f.has_aux
            and not f._bound and not batch.kwargs
            and all(s is None for s, _ in batch.structures)
            and len(batch.args) == f._nparams):
        return None
    first = f(*batch.rebuild(batch.example_leaves(0))[0])    # builds (or checks) the entry
    args0 = batch.example_leaves(0)
    entry = f._fast.get(tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a)
                               for a in args0]))
    if entry is None or batch.size < 2:
        return None
    c, plan, single, seed = entry
    fn = c.fn
    lazy = fn if isinstance(fn, LazyNumba) else getattr(fn, "lazy", None)
    jitted = lazy.jitted if lazy is not None else fn
    if not hasattr(jitted, "py_func"):      # not a Numba dispatcher
        return None
    workspace = lazy.workspace if lazy is not None else None
    live = tuple(_read(holder, key) for _, holder, key in lazy.live) if lazy is not None else ()
    leaves = first if f.with_value else (first,)
    grads = leaves[-1] if f.with_value else leaves[0]
    grads = (grads,) if single else tuple(grads)
    outs = [np.empty((batch.size,) + np.shape(g), np.asarray(g).dtype) for g in grads]
    values = np.empty(batch.size)
    kernel = _kernel(mapped, jitted, tuple(batch.axes), workspace is not None, len(live),
                     len(outs))
    call = (*batch.leaves, *((workspace,) if workspace is not None else ()), *live, values,
            *outs)
    import numba
    nchunks = min(batch.size, numba.get_num_threads())
    if not kernel.ready(call + (0, 1)):
        return None
    bounds = [(c * batch.size // nchunks, (c + 1) * batch.size // nchunks)
              for c in range(nchunks)]
    try:
        if nchunks == 1:
            kernel.dispatcher(*call, 0, batch.size)
        else:
            for job in [_pool(nchunks).submit(kernel.dispatcher, *call, lo, hi)
                        for lo, hi in bounds]:
                job.result()
    except Exception:       # the Python loop raises it again, located
        return None
    out = tuple(outs) if not single else outs[0]
    return batch.placed((values, out) if f.with_value else out)


class _Kernel:
    """One compiled loop and its compiles, one per argument types (in the
    background where the derivative's own compiles are)."""

    def __init__(self, source, fn):
        import numba
        namespace = {"fn": fn}
        exec(compile(source, "<pullback vmap loop>", "exec"), namespace)
        self.dispatcher = numba.njit(nogil=True)(namespace["batched"])
        self._jobs: dict = {}

    def ready(self, args) -> bool:
        sig = tuple(self.dispatcher.typeof_pyval(a) for a in args)
        if not background.enabled():
            return True
        job = self._jobs.get(sig)
        if job is None:
            job = self._jobs[sig] = background.Job(lambda: self.dispatcher.compile(sig),
                                                   "a vmap loop")
        return job.done and job.error is None


def _kernel(mapped, jitted, axes, workspace, nlive, nout) -> _Kernel:
    key = (jitted, axes, workspace, nlive, nout)
    kernel = mapped._kernels.get(key)
    if kernel is None:
        kernel = mapped._kernels[key] = _Kernel(
            _source(axes, workspace, nlive, nout), jitted)
    return kernel


_POOLS: dict = {}


def _pool(n):
    """A pool of ``n`` threads, kept for the next call."""
    pool = _POOLS.get(n)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor
        pool = _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="pullback vmap")
    return pool


def _source(axes, workspace, nlive, nout) -> str:
    """The loop over examples ``lo`` to ``hi``: the derivative ``fn`` on each, its
    value into ``values`` and its gradients into ``g0``, ``g1``, … at its index."""
    args = [f"a{k}" for k in range(len(axes))]
    lives = [f"l{k}" for k in range(nlive)]
    ws = ["ws0"] if workspace else []
    outs = [f"g{k}" for k in range(nout)]
    passed = [a if ax is None else f"{a}[{', '.join([':'] * ax + ['b'])}]"
              for a, ax in zip(args, axes)] + ["1.0"] + (["ws"] if workspace else []) + lives
    result = "value, grads, ws" if workspace else "value, grads"
    lines = [f"def batched({', '.join(args + ws + lives + ['values'] + outs + ['lo', 'hi'])}):"]
    lines += ["    ws = ws0"] if workspace else []
    lines += ["    for b in range(lo, hi):",
              f"        {result} = fn({', '.join(passed)})",
              "        values[b] = value"]
    lines += [f"        g{k}[b] = grads[{k}]" for k in range(nout)]
    return "\n".join(lines) + "\n"
