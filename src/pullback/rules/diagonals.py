"""Derivatives of NumPy's functions that read or keep a diagonal or a triangle:
diagonal, diag, trace, tril, triu.  Each VJP puts the cotangent back on the
diagonal or triangle it came from, zeros elsewhere.

Conventions are those of :mod:`pullback.rules.elementwise`.
"""
from __future__ import annotations

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, device_of, float_dtype, namespace, shape_of, unbroadcast
from .forms import numba_twin
from .linalg import mT
from .registry import defrule, lookup
from .tangents import deftangent

__all__ = ["diagonal_vjp", "diag_vjp", "trace_vjp", "tril_vjp", "triu_vjp"]


# ---------------------------------------------------------------------------
# diagonals and triangles

def _place_diagonal(xp, G, n, m, k, like):
    """An (..., n, m) array with ``G`` (..., L) on its ``k``-th diagonal, zeros elsewhere.

    Entry t of the diagonal is in column ``t + max(k, 0)``: pad ``G`` to one value
    per column and keep it on the diagonal only.
    """
    before = min(max(k, 0), m)
    after = m - before - G.shape[-1]
    lead = tuple(G.shape[:-1])
    dev, dt = device_of(like), float_dtype(xp, G, like)
    cols = xp.concat([xp.zeros(lead + (before,), dtype=dt, device=dev), G,
                      xp.zeros(lead + (after,), dtype=dt, device=dev)], axis=-1)
    eye = xp.eye(n, m, k=k, dtype=dt, device=dev)
    return eye * xp.expand_dims(cols, axis=-2)


def diagonal_vjp(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of ``a`` in ``np.diagonal(a, offset, axis1, axis2)``: ``g`` on that diagonal."""
    xp = namespace(g, a)
    A = as_array(xp, a, g)
    nd = A.ndim
    ax1, ax2 = axis1 % nd, axis2 % nd
    perm = [i for i in range(nd) if i not in (ax1, ax2)] + [ax1, ax2]
    G = as_array(xp, g, A)
    ct = _place_diagonal(xp, G, A.shape[ax1], A.shape[ax2], int(offset), A)
    return xp.permute_dims(ct, tuple(int(i) for i in np.argsort(perm)))


def diag_vjp(g, v, k=0):
    """Cotangent of ``v`` in ``np.diag(v, k)``: the ``k``-th diagonal of ``g`` for a
    vector ``v`` (which was put on it), ``g`` put on that diagonal for a matrix."""
    xp = namespace(g, v)
    G = as_array(xp, g, v)
    if len(shape_of(v)) == 1:
        return xp.linalg.diagonal(G, offset=int(k))
    return diagonal_vjp(g, v, k)


def _triangle(xp, like, shape, k, lower):
    rows = xp.arange(shape[-2], device=device_of(like))
    cols = xp.arange(shape[-1], device=device_of(like))
    offset = xp.expand_dims(cols, axis=0) - xp.expand_dims(rows, axis=1)
    return offset <= k if lower else offset >= k


def tril_vjp(g, m, k=0):
    """Cotangent of ``m`` in ``np.tril(m, k)``: ``g`` on the kept triangle."""
    xp = namespace(g, m)
    G = as_array(xp, g, m)
    mask = _triangle(xp, G, G.shape, int(k), True)
    return unbroadcast(xp.where(mask, G, xp.zeros_like(G)), m)


def triu_vjp(g, m, k=0):
    """Cotangent of ``m`` in ``np.triu(m, k)``."""
    xp = namespace(g, m)
    G = as_array(xp, g, m)
    mask = _triangle(xp, G, G.shape, int(k), False)
    return unbroadcast(xp.where(mask, G, xp.zeros_like(G)), m)


def _same_rank_matrices(g, m):
    """A matrix or a stack of them, and a cotangent of its shape."""
    return twins.is_array(m) and m.ndim >= 2 and twins.is_array(g, m.ndim)


@numba_twin(tril_vjp)
def _tril_vjp_numba(g, m, k=0):
    """tril_vjp of a matrix or a stack (Numba's np.tril takes both)."""
    if _same_rank_matrices(g, m):
        return lambda g, m, k=0: np.tril(g, k)
    return None


@numba_twin(triu_vjp)
def _triu_vjp_numba(g, m, k=0):
    """triu_vjp of a matrix or a stack."""
    if _same_rank_matrices(g, m):
        return lambda g, m, k=0: np.triu(g, k)
    return None


# diagonal: Numba has no np.diagonal.  The two axes are moved last (constants), the
# other axes flattened into one; a kernel reads (or puts back) the diagonal of
# each matrix of that stack.

def _diagonal_perm(a, axis1, axis2):
    """The axes of ``a`` with ``axis1`` and ``axis2`` last, or refused."""
    ax = (twins.literal(axis1, None), twins.literal(axis2, None))
    if not (twins.is_array(a) and a.ndim >= 2 and all(type(x) is int for x in ax)):
        twins.unsupported("np.diagonal of this argument or with axes not constant ints")
    nd = a.ndim
    first, second = ax[0] % nd, ax[1] % nd
    if first == second:
        twins.unsupported("np.diagonal with axis1 == axis2")
    return tuple(i for i in range(nd) if i not in (first, second)) + (first, second)


def _diagonal3(a3, k):
    """The ``k``-th diagonal of each matrix of the (b, n, m) array ``a3``: (b, L)."""
    b, n, m = a3.shape
    length = max(0, min(n, m - k)) if k >= 0 else max(0, min(n + k, m))
    out = np.empty((b, length), a3.dtype)
    for t in range(out.shape[1]):
        out[:, t] = a3[:, t - min(k, 0), t + max(k, 0)]
    return out


def _undiagonal3(g2, n, m, k):
    """A (b, n, m) array with ``g2`` (b, L) on each matrix's ``k``-th diagonal."""
    out = np.zeros((g2.shape[0], n, m))
    for t in range(g2.shape[1]):
        out[:, t - min(k, 0), t + max(k, 0)] = g2[:, t]
    return out


@numba_twin(np.diagonal, always=True)
def _diagonal_numba(a, offset=0, axis1=0, axis2=1):
    """np.diagonal (and ``a.diagonal``) of any array of two or more dimensions, any
    offset, constant axes."""
    perm = _diagonal_perm(a, axis1, axis2)
    diag = twins.jitted(_diagonal3)

    def impl(a, offset=0, axis1=0, axis2=1):
        t = np.ascontiguousarray(np.transpose(a, perm))
        d = diag(t.reshape((-1, t.shape[-2], t.shape[-1])), offset)
        return d.reshape(t.shape[:-2] + (d.shape[1],))
    return impl


@numba_twin(diagonal_vjp)
@twins.keeps_dtype("a")
def _diagonal_vjp_numba(g, a, offset=0, axis1=0, axis2=1):
    """diagonal_vjp, as np.diagonal's twin covers it."""
    perm = _diagonal_perm(a, axis1, axis2)
    back = tuple(int(i) for i in np.argsort(perm))
    undiag = twins.jitted(_undiagonal3)

    def impl(g, a, offset=0, axis1=0, axis2=1):
        shape = np.transpose(a, perm).shape
        g2 = np.ascontiguousarray(g).reshape((-1, g.shape[-1]))
        out = undiag(g2, shape[-2], shape[-1], offset).reshape(shape)
        return np.ascontiguousarray(np.transpose(out, back))
    return impl


# ---------------------------------------------------------------------------
# trace

def trace_vjp(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of ``a`` in ``np.trace(a, offset, axis1, axis2)``: ``g`` on the chosen diagonal."""
    xp = namespace(g, a)
    A = as_array(xp, a)
    nd = A.ndim
    ax1, ax2 = axis1 % nd, axis2 % nd
    n, m = A.shape[ax1], A.shape[ax2]
    G = as_array(xp, g, A)
    # g has a's shape without axis1 and axis2; put size-1 axes back in their places.
    g_shape = tuple(1 if i in (ax1, ax2) else d for i, d in enumerate(A.shape))
    G = xp.reshape(G, g_shape)
    diag = xp.eye(n, m, k=offset, dtype=float_dtype(xp, G, A), device=array_api_compat.device(A))
    if ax1 > ax2:
        diag = mT(xp, diag)
    mask_shape = tuple(d if i in (ax1, ax2) else 1 for i, d in enumerate(A.shape))
    return G * xp.reshape(diag, mask_shape)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.diagonal, "a, offset=0, axis1=0, axis2=1", result=results.array, view=True,
        methods=("diagonal",), a="diagonal_vjp(g, a, offset, axis1, axis2)")
defrule(np.diag, "v, k=0", result=results.array, view=True, v="diag_vjp(g, v, k)")
defrule(np.tril, "m, k=0", result=results.array, m="tril_vjp(g, m, k)")
defrule(np.triu, "m, k=0", result=results.array, m="triu_vjp(g, m, k)")
deftangent(np.diagonal, linear="a")
for _linear in (np.diag, np.tril, np.triu):
    deftangent(_linear, linear=lookup(_linear).params[0].name)
defrule(np.trace, "a, offset=0, axis1=0, axis2=1, dtype=None, out=None",
        result=results.matrix_scalar, methods=("trace",),
        a="trace_vjp(g, a, offset, axis1, axis2)")
deftangent(np.trace, linear="a")


# ---------------------------------------------------------------------------
# Numba twins of diag_vjp and trace

def _put_diagonal(g, v, k):
    out = np.zeros(v.shape)
    for i in range(g.shape[0]):
        if k >= 0:
            out[i, i + k] = g[i]
        else:
            out[i - k, i] = g[i]
    return out


@numba_twin(diag_vjp)
@twins.keeps_dtype("v")
def _diag_vjp_numba(g, v, k=0):
    if twins.is_array(v, 1):
        return lambda g, v, k=0: np.ascontiguousarray(np.diag(g, k))
    if twins.is_array(v, 2):
        put = twins.jitted(_put_diagonal)
        return lambda g, v, k=0: put(g, v, k)
    return None


# trace: Numba has no np.trace; matrices, and stacks along the leading two axes.
def _trace_axes(a, axis1, axis2):
    """Whether the trace of ``a`` is over its two leading axes, else unsupported."""
    first = (twins.literal(axis1, None), twins.literal(axis2, None))
    if not twins.is_array(a) or a.ndim < 2 or None in first:
        twins.unsupported("np.trace with these arguments")
    pair = (first[0] % a.ndim, first[1] % a.ndim)
    if pair not in ((0, 1), (1, 0)) or (a.ndim > 2 and pair != (0, 1)):
        twins.unsupported("np.trace over axes other than the leading two")
    return pair == (1, 0)


def _trace3(a3, k):
    n, m, rest = a3.shape
    out = np.zeros(rest)
    for i in range(n):
        j = i + k
        if 0 <= j < m:
            out += a3[i, j]
    return out


def _untrace3(g, shape3, k):
    n, m, rest = shape3
    out = np.zeros((n, m, rest))
    for i in range(n):
        j = i + k
        if 0 <= j < m:
            out[i, j] = g
    return out


@numba_twin(np.trace, always=True)
def _trace_numba(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    swapped = _trace_axes(a, axis1, axis2)
    tr = twins.jitted(_trace3)
    if a.ndim == 2:
        if swapped:
            return lambda a, offset=0, axis1=0, axis2=1, dtype=None, out=None: \
                tr(np.ascontiguousarray(a.T).reshape((a.shape[1], a.shape[0], 1)), offset)[0]
        return lambda a, offset=0, axis1=0, axis2=1, dtype=None, out=None: \
            tr(np.ascontiguousarray(a).reshape((a.shape[0], a.shape[1], 1)), offset)[0]
    return lambda a, offset=0, axis1=0, axis2=1, dtype=None, out=None: tr(
        np.ascontiguousarray(a).reshape((a.shape[0], a.shape[1], -1)), offset).reshape(a.shape[2:])


@numba_twin(trace_vjp)
@twins.keeps_dtype("a")
def _trace_vjp_numba(g, a, offset=0, axis1=0, axis2=1):
    swapped = _trace_axes(a, axis1, axis2)
    un = twins.jitted(_untrace3)
    if a.ndim == 2:
        if swapped:
            return lambda g, a, offset=0, axis1=0, axis2=1: np.ascontiguousarray(
                un(np.full(1, g), (a.shape[1], a.shape[0], 1), offset).reshape(
                    (a.shape[1], a.shape[0])).T)
        return lambda g, a, offset=0, axis1=0, axis2=1: un(
            np.full(1, g), (a.shape[0], a.shape[1], 1), offset).reshape(a.shape)
    return lambda g, a, offset=0, axis1=0, axis2=1: un(
        np.ascontiguousarray(g).ravel(), (a.shape[0], a.shape[1], a.size // (a.shape[0] * a.shape[1])),
        offset).reshape(a.shape)
