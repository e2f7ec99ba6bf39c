"""Derivatives of ``np.kron`` and ``np.cross``: products of two arrays whose
result keeps the pairs of entries apart (kron's blocks, cross's components).

Conventions are those of :mod:`pullback.rules.elementwise`.  ``cross`` takes
3-vectors, and 2-vectors as NumPy (deprecated there) does: a 2-vector has
z = 0, and the cross product of two 2-vectors is its z component.
"""
from __future__ import annotations

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace, shape_of, unbroadcast
from .forms import numba_twin
from .registry import defrule
from .tangents import deftangent

__all__ = ["kron_vjp_a", "kron_vjp_b", "cross_vjp_a", "cross_vjp_b"]


def _kron_parts(g, a, b):
    """``g`` laid out as (a0, b0, a1, b1, ...) and a and b shaped to broadcast against it."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    d = max(A.ndim, B.ndim)
    sa = (1,) * (d - A.ndim) + tuple(A.shape)
    sb = (1,) * (d - B.ndim) + tuple(B.shape)
    G = xp.reshape(G, tuple(n for pair in zip(sa, sb) for n in pair))
    A2 = xp.reshape(A, tuple(n for m in sa for n in (m, 1)))
    B2 = xp.reshape(B, tuple(n for m in sb for n in (1, m)))
    return xp, G, A2, B2, d


def kron_vjp_a(g, a, b):
    """Cotangent of ``a`` in ``np.kron(a, b)``: each block of ``g`` times ``b``, summed."""
    xp, G, _, B2, d = _kron_parts(g, a, b)
    return like_arg(xp.reshape(xp.sum(G * B2, axis=tuple(range(1, 2 * d, 2))), shape_of(a)), a)


def kron_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``np.kron(a, b)``: the blocks of ``g`` weighted by ``a``, summed."""
    xp, G, A2, _, d = _kron_parts(g, a, b)
    return like_arg(xp.reshape(xp.sum(G * A2, axis=tuple(range(0, 2 * d, 2))), shape_of(b)), b)


def _cross_parts(g, a, b, axisa, axisb, axisc, axis):
    """a, b and g with the vector axis last and every vector of length 3 (a 2-vector
    has z = 0; the result of two 2-vectors is the z component alone)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    A, B = xp.moveaxis(A, axisa, -1), xp.moveaxis(B, axisb, -1)
    na, nb = A.shape[-1], B.shape[-1]

    def pad(v):
        if v.shape[-1] == 3:
            return v
        return xp.concat([v, xp.zeros(tuple(v.shape[:-1]) + (1,), dtype=v.dtype,
                                      device=array_api_compat.device(v))], axis=-1)
    if na == 2 and nb == 2:
        zero = xp.zeros_like(G)
        G = xp.stack([zero, zero, G], axis=-1)
    else:
        G = xp.moveaxis(G, axisc, -1)
    # Broadcast explicitly: torch's cross wants operands of one rank.
    batch = np.broadcast_shapes(tuple(A.shape[:-1]), tuple(B.shape[:-1]), tuple(G.shape[:-1]))
    A, B, G = (xp.broadcast_to(v, batch + (3,)) for v in (pad(A), pad(B), G))
    return xp, A, B, G, na, nb, axisa, axisb


def cross_vjp_a(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangent of ``a`` in ``np.cross(a, b, ...)``: ``b x g``."""
    xp, A, B, G, na, _, axa, _ = _cross_parts(g, a, b, axisa, axisb, axisc, axis)
    ct = xp.linalg.cross(B, G)[..., :na]
    ct = unbroadcast(ct, xp.moveaxis(as_array(xp, a, g), axa, -1))
    return xp.moveaxis(ct, -1, axa)


def cross_vjp_b(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangent of ``b`` in ``np.cross(a, b, ...)``: ``g x a``."""
    xp, A, B, G, _, nb, _, axb = _cross_parts(g, a, b, axisa, axisb, axisc, axis)
    ct = xp.linalg.cross(G, A)[..., :nb]
    ct = unbroadcast(ct, xp.moveaxis(as_array(xp, b, g), axb, -1))
    return xp.moveaxis(ct, -1, axb)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.kron, "a, b", result=results.unknown, a="kron_vjp_a(g, a, b)", b="kron_vjp_b(g, a, b)")
deftangent(np.kron, multilinear="a, b")
defrule(np.cross, "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None", result=results.array,
        a="cross_vjp_a(g, a, b, axisa, axisb, axisc, axis)",
        b="cross_vjp_b(g, a, b, axisa, axisb, axisc, axis)")
deftangent(np.cross, multilinear="a, b")


# ---------------------------------------------------------------------------
# Numba twins: kron of vectors and of matrices, g seen as (p, r, q, s) blocks.

def _kron_twin(which):
    def twin(g, a, b):
        ra, rb = twins.rank(a), twins.rank(b)
        if ra != rb or ra not in (1, 2):
            twins.unsupported("np.kron of these arguments")
        if ra == 1:         # Numba's @ takes operands of one dtype
            if which == 0:
                return twins.one_dtype(lambda g, a, b: np.ascontiguousarray(g).reshape(
                    (a.shape[0], b.shape[0])) @ b, g, a, b)
            return twins.one_dtype(lambda g, a, b: a @ np.ascontiguousarray(g).reshape(
                (a.shape[0], b.shape[0])), g, a, b)

        def blocks(g, a, b):
            p, q = a.shape
            r, s = b.shape
            G4 = np.ascontiguousarray(g).reshape((p, r, q, s))
            out = np.zeros(a.shape if which == 0 else b.shape, G4.dtype)
            for i in range(p):
                for j in range(q):
                    block = G4[i, :, j, :]
                    if which == 0:
                        out[i, j] = np.sum(block * b)
                    else:
                        out += block * a[i, j]
            return out
        return twins.one_dtype(blocks, g, a, b)
    return twin


numba_twin(kron_vjp_a)(_kron_twin(0))
numba_twin(kron_vjp_b)(_kron_twin(1))


# cross: Numba's np.cross takes the vectors on the last axis (3-vectors, or a 2-vector
# against a 3-vector); the axes are moved there and back.  Two 2-vectors give a result
# without the vector axis, a rank Numba would need before the shapes are known.
def _cross_args(a, b, axis):
    if not (twins.is_array(a) and twins.is_array(b)):
        twins.unsupported(f"np.cross of {a} and {b}")
    return not twins.is_none(axis)


def _both_planar(A, B):
    if A.shape[-1] == 2 and B.shape[-1] == 2:
        raise NotImplementedError("np.cross of two 2-vectors (a result without the vector "
                                  "axis) under jit=True: use jit=False")


def _pad3(v):
    if v.shape[-1] == 3:
        return np.ascontiguousarray(v)
    out = np.zeros(v.shape[:-1] + (3,), dtype=v.dtype)
    out[..., :v.shape[-1]] = v
    return out


@numba_twin(np.cross)
def _cross_numba(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    one_axis, planar = _cross_args(a, b, axis), twins.jitted(_both_planar)

    def impl(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if one_axis:
            axisa = axisb = axisc = axis
        A, B = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
        planar(A, B)
        return np.moveaxis(np.cross(A, B), -1, axisc)
    return impl


def _cross_vjp_twin(which):
    """The cotangent of a (``b x g``) or of b (``g x a``), summed onto its shape."""
    def twin(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        one_axis, pad = _cross_args(a, b, axis), twins.jitted(_pad3)

        def impl(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
            if one_axis:
                axisa = axisb = axisc = axis
            A, B = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
            G = np.moveaxis(g, axisc, -1)
            if which == 0:
                ct = unbroadcast(np.cross(pad(B), G)[..., :A.shape[-1]], A)
                return np.moveaxis(ct, -1, axisa)
            ct = unbroadcast(np.cross(G, pad(A))[..., :B.shape[-1]], B)
            return np.moveaxis(ct, -1, axisb)
        return impl
    return twin


numba_twin(cross_vjp_a)(_cross_vjp_twin(0))
numba_twin(cross_vjp_b)(_cross_vjp_twin(1))
