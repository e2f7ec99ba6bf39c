"""Helpers that add a rule helper's result into an adjoint buffer in place.

Plain Python here (what they mean); their Numba twins, in ``numba_twins``, add
without building the result first.  Each is registered
(:func:`pullback.rules.forms.accumulates_into`) for the rule helpers it
stands for; the Numba backend's ``accumulate_into`` reads the registry.
"""
from __future__ import annotations

from ..rules import forms, linalg


@forms.accumulates_into(linalg.matmul_vjp_a, linalg.dot_vjp_a)
def add_matmul_vjp_a(out, g, a, b):
    """``out += matmul_vjp_a(g, a, b)`` (also for ``np.dot``): under Numba, the
    outer product ``g b^T`` of a matrix-vector product is added element by element
    (its twin, in ``numba_twins``), never built as an array first."""
    out += linalg.matmul_vjp_a(g, a, b)


@forms.accumulates_into(linalg.matmul_vjp_b, linalg.dot_vjp_b)
def add_matmul_vjp_b(out, g, a, b):
    """``out += matmul_vjp_b(g, a, b)`` (also for ``np.dot``): ``a^T g`` for a matrix
    ``a`` and a vector ``g`` is added row by row under Numba."""
    out += linalg.matmul_vjp_b(g, a, b)
