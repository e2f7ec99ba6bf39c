"""Helpers that add a rule helper's result into an adjoint buffer in place.

Plain Python here (what they mean); their Numba twins, in ``numba_twins``, add
without building the result first.  The Numba backend's ``accumulate_into``
maps a rule helper to its function here.
"""
from __future__ import annotations

from ..rules import linalg


def add_matmul_vjp_a(out, g, a, b):
    """``out += matmul_vjp_a(g, a, b)`` (also for ``np.dot``): under Numba, the
    outer product ``g b^T`` of a matrix-vector product is added element by element
    (its twin, in ``numba_twins``), never built as an array first."""
    out += linalg.matmul_vjp_a(g, a, b)


def add_matmul_vjp_b(out, g, a, b):
    """``out += matmul_vjp_b(g, a, b)`` (also for ``np.dot``): ``a^T g`` for a matrix
    ``a`` and a vector ``g`` is added row by row under Numba."""
    out += linalg.matmul_vjp_b(g, a, b)
