"""NumPy's BLAS on one thread while the bench runs.

On a small or busy machine, OpenBLAS's threads on small matrices cost more
than they save, and they contend with the peers' own thread pools when the
two alternate: the MLP primal measured 16 ms with the default threads and
0.16 ms with one on a loaded 2-core machine.  One thread makes the NumPy
primal (the denominator of every ratio), pullback's Python backend and
autograd comparable from run to run.  The OpenBLAS libraries loaded in the
process are found in /proc/self/maps (Linux) and set through ctypes; elsewhere
nothing changes and the command says so.
"""
from __future__ import annotations

import contextlib
import ctypes

_NAMES = [("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads")]


def openblas_handles() -> list:
    """(get, set) ctypes functions of each OpenBLAS loaded in this process."""
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh
                            if "openblas" in line.lower() and line.split()[-1].startswith("/")})
    except OSError:
        return []
    handles = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, set_ in _NAMES:
            if hasattr(lib, get) and hasattr(lib, set_):
                handles.append((getattr(lib, get), getattr(lib, set_)))
                break
    return handles


@contextlib.contextmanager
def one_blas_thread():
    """Yields how many BLAS libraries were set to one thread (0: none found); restores them."""
    handles = openblas_handles()
    before = [get() for get, _ in handles]
    for _, set_ in handles:
        set_(1)
    try:
        yield len(handles)
    finally:
        for (_, set_), n in zip(handles, before):
            set_(n)
