"""The tools compared: pullback's two backends and the peers (JAX, PyTorch, HIPS autograd).

``prepare(workload, case)`` turns a workload into a zero-argument gradient
callable (the thing timed), the tool's own compiled primal where it has one
(``numba.njit``, ``jax.jit``), and a converter of the gradient to NumPy arrays
for the agreement check.  Libraries are imported lazily: each is optional.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
from dataclasses import dataclass
from typing import Callable

import numpy as np

import pullback

from . import peers


@dataclass
class Prepared:
    grad: Callable[[], object]
    primal: Callable[[], object] | None = None   # the tool's own compiled primal, if any
    to_numpy: Callable[[object], list] = None
    note: str = ""


@dataclass(frozen=True)
class Tool:
    key: str
    name: str
    requires: tuple          # importable modules it needs
    prepare: Callable        # prepare(workload, case) -> Prepared
    on_failure: str = "error"   # the status of a row whose gradient does not run
    compiles: bool = False      # its first call compiles (never interrupted: see Settings.first_cap_s)
    context: Callable = contextlib.nullcontext   # entered around all of this tool's runs
    note: str = ""              # said under the table when the tool runs

    def missing(self) -> str | None:
        """Why the tool cannot run here, or None."""
        absent = [m for m in self.requires if importlib.util.find_spec(m) is None]
        return f"{', '.join(absent)} not installed" if absent else None


def as_arrays(value) -> list:
    """A gradient (one, or a tuple of them) as a list of float64 NumPy arrays."""
    parts = value if isinstance(value, (tuple, list)) else (value,)
    out = []
    for part in parts:
        if hasattr(part, "detach"):              # torch
            part = part.detach().cpu().numpy()
        out.append(np.asarray(part, dtype=np.float64))
    return out


def _argnums(workload):
    return workload.argnums[0] if len(workload.argnums) == 1 else workload.argnums


def _pullback_python(workload, case):
    g = pullback.grad(workload.primal, argnums=_argnums(workload), jit=False)
    return Prepared(lambda: g(*case.args), to_numpy=as_arrays)


def _pullback_numba(workload, case):
    import numba
    g = pullback.grad(workload.primal, argnums=_argnums(workload), jit=True)
    primal, note = None, ""
    try:
        compiled = numba.njit(workload.primal)
        compiled(*case.args)
        primal = lambda: compiled(*case.args)  # noqa: E731
    except Exception as exc:                  # the gradient may still compile; say why no own primal
        note = f"numba.njit primal: {type(exc).__name__}"
    return Prepared(lambda: g(*case.args), primal, as_arrays, note)


@functools.cache
def _versions(library):
    return getattr(peers, f"{library}_versions")()


@contextlib.contextmanager
def _one_torch_thread():
    """PyTorch on one thread: its OpenMP threads, alternating with NumPy's BLAS threads in the
    interleaved runs, would wait for each other's cores (a 0.3 ms MLP gradient took 2-100 ms)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _torch(workload, case):
    import torch
    fn = _versions("torch")[workload.name]
    argnums = workload.argnums

    def convert(i, a):
        if isinstance(a, np.ndarray):
            return torch.from_numpy(a)
        if isinstance(a, float) and i in argnums:
            return torch.tensor(a, dtype=torch.float64)
        return a
    base = [convert(i, a) for i, a in enumerate(case.args)]

    def run():
        args = [a.detach().requires_grad_(True) if i in argnums else a for i, a in enumerate(base)]
        return torch.autograd.grad(fn(*args), [args[i] for i in argnums])
    return Prepared(run, to_numpy=as_arrays)


def _jax_args(case):
    import jax.numpy as jnp
    return [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]


def _jax_eager(workload, case):
    import jax
    jax.config.update("jax_enable_x64", True)
    g = jax.grad(_versions("jax_eager")[workload.name], argnums=_argnums(workload))
    args = _jax_args(case)
    return Prepared(lambda: jax.block_until_ready(g(*args)), to_numpy=as_arrays)


def _jax_jit(workload, case):
    import jax
    jax.config.update("jax_enable_x64", True)
    fn = _versions("jax_jit")[workload.name]
    static = tuple(i for i, a in enumerate(case.args) if isinstance(a, int))
    g = jax.jit(jax.grad(fn, argnums=_argnums(workload)), static_argnums=static)
    f = jax.jit(fn, static_argnums=static)
    args = _jax_args(case)
    f(*args)
    return Prepared(lambda: jax.block_until_ready(g(*args)), lambda: jax.block_until_ready(f(*args)),
                    as_arrays)


def _autograd(workload, case):
    import autograd
    g = autograd.grad(_versions("autograd")[workload.name], argnum=_argnums(workload))
    return Prepared(lambda: g(*case.args), to_numpy=as_arrays)


TOOLS = {t.key: t for t in [
    Tool("python", "pullback Python", ("numpy",), _pullback_python, compiles=True),
    Tool("numba", "pullback Numba", ("numba",), _pullback_numba, on_failure="not supported",
         compiles=True),
    Tool("jax", "JAX eager", ("jax", "jaxlib"), _jax_eager),
    Tool("jax-jit", "JAX jit", ("jax", "jaxlib"), _jax_jit, compiles=True),
    Tool("torch", "PyTorch eager", ("torch",), _torch, context=_one_torch_thread,
         note="PyTorch ran on one thread (torch.set_num_threads(1)): with its default threads, "
         "alternating with NumPy's, a 0.25 ms MLP gradient measured 1.7-97 ms"),
    Tool("autograd", "HIPS autograd", ("autograd",), _autograd),
]}
