"""Derivatives of ``np.tensordot``, and its compiled twins (Numba has no tensordot).

Conventions are those of :mod:`pullback.rules.elementwise`.  ``axes`` is an int (the
last ``axes`` axes of ``a`` with the first of ``b``) or a pair of ints or sequences.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace
from .forms import numba_twin
from .linalg import contract
from .registry import defrule
from .tangents import deftangent

__all__ = ["tensordot_vjp_a", "tensordot_vjp_b"]


def _tensordot_axes(axes, nda, ndb):
    """``axes`` of ``np.tensordot`` as two lists of non-negative axes (a's, b's)."""
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(nda - n, nda)), list(range(n))
    xa, xb = axes
    xa = [xa] if isinstance(xa, (int, np.integer)) else list(xa)
    xb = [xb] if isinstance(xb, (int, np.integer)) else list(xb)
    return [int(i) % max(nda, 1) for i in xa], [int(i) % max(ndb, 1) for i in xb]


def tensordot_vjp_a(g, a, b, axes=2):
    """Cotangent of ``a`` in ``np.tensordot(a, b, axes)``: ``g`` contracted with b's free
    axes, then a's axes put back in order."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    xa, xb = _tensordot_axes(axes, A.ndim, B.ndim)
    free_a = [i for i in range(A.ndim) if i not in xa]
    free_b = [i for i in range(B.ndim) if i not in xb]
    ct = contract(xp, G, B, range(len(free_a), G.ndim), free_b)
    # ct's axes: a's free axes, then b's contracted axes in increasing order.
    order = free_a + [xa[xb.index(j)] for j in sorted(xb)]
    return like_arg(xp.permute_dims(ct, tuple(int(i) for i in np.argsort(order))), a)


def tensordot_vjp_b(g, a, b, axes=2):
    """Cotangent of ``b`` in ``np.tensordot(a, b, axes)``."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    xa, xb = _tensordot_axes(axes, A.ndim, B.ndim)
    free_a = [i for i in range(A.ndim) if i not in xa]
    free_b = [i for i in range(B.ndim) if i not in xb]
    ct = contract(xp, A, G, free_a, range(len(free_a)))
    order = [xb[xa.index(i)] for i in sorted(xa)] + free_b
    return like_arg(xp.permute_dims(ct, tuple(int(i) for i in np.argsort(order))), b)


defrule(np.tensordot, "a, b, axes=2", result=results.unknown,
        a="tensordot_vjp_a(g, a, b, axes)", b="tensordot_vjp_b(g, a, b, axes)")
deftangent(np.tensordot, multilinear="a, b")


# ---------------------------------------------------------------------------
# Numba twins of tensordot (Numba has none): a and b transposed to (free, contracted)
# and (contracted, free) matrices and multiplied; the VJPs multiply g back and undo
# the transposes.  The result's rank must be known when compiling: the number of
# contracted axes is (an int constant, or the lengths of the pair's tuples), their
# values may come at run time.

def _tensordot_contracted(axes, nda, ndb):
    """Compiled functions of ``axes`` giving the contracted axes of a and of b (int
    arrays of one static length each)."""
    n = twins.literal(axes)
    if isinstance(n, int):
        if not 0 <= n <= min(nda, ndb):
            twins.unsupported(f"np.tensordot with axes={n} for arrays of ranks {nda} and {ndb}")
        return (_fixed_axes(range(nda - n, nda)), _fixed_axes(range(n))), n
    if twins.is_int(axes):
        twins.unsupported("np.tensordot with an int axes not known when compiling "
                          "(write it as a constant)")
    if not (twins.is_tuple(axes) and len(axes) == 2):
        twins.unsupported(f"np.tensordot with axes of type {axes}")
    sides = []
    for k, (t, nd) in enumerate(zip(axes, (nda, ndb))):
        if twins.is_int(t):
            sides.append((_one_axis(k, nd), 1))
        elif twins.is_tuple(t) and all(twins.is_int(i) for i in t):
            sides.append((_axes_at(k, nd, len(t)), len(t)))
        else:
            twins.unsupported(f"np.tensordot with axes {axes} (a pair of ints or of tuples)")
    if sides[0][1] != sides[1][1]:
        twins.unsupported("np.tensordot with axes of different lengths")
    return (sides[0][0], sides[1][0]), sides[0][1]


def _fixed_axes(axes):
    fixed = np.array(list(axes), dtype=np.int64)
    return twins.jitted(lambda axes: fixed.copy())


def _one_axis(k, nd):
    """``axes[k]``, an int, as the axis of the operand of rank ``nd``."""
    return twins.jitted(lambda axes: np.full(1, axes[k] % nd, np.int64))


def _axes_at(k, nd, r):
    """The ``r`` ints of the tuple ``axes[k]`` as axes of the operand of rank ``nd``."""
    from numba import literal_unroll, njit

    def at(axes):
        out = np.empty(r, np.int64)
        i = 0
        for v in literal_unroll(axes[k]):       # (the ints' types may differ)
            out[i] = v % nd
            i += 1
        return out
    return njit(at)          # not inlined: Numba unrolls only in a function it compiles


def _nth_free(taken, nd, j):
    """The ``j``-th axis of ``range(nd)`` not in ``taken``."""
    for i in range(nd):
        if i not in taken:
            if j == 0:
                return i
            j -= 1
    return -1


def _position(perm, k):
    for i in range(len(perm)):
        if perm[i] == k:
            return i
    return -1


def _tensordot_plan(axes, nda, ndb):
    """A compiled ``plan(sa, sb, axes)``: (the transpose of a, of b, their inverses, the
    sizes M, K, N of a's and b's matrices, a's transposed shape, b's, the result's)."""
    (side_a, side_b), k = _tensordot_contracted(axes, nda, ndb)
    from numba.np.unsafe.ndarray import to_fixed_tuple
    free, pos = twins.jitted(_nth_free), twins.jitted(_position)
    nout = nda - k + ndb - k

    def plan(sa, sb, axes):
        xa, xb = side_a(axes), side_b(axes)
        for i in range(k):
            if sa[xa[i]] != sb[xb[i]]:
                raise ValueError('shape-mismatch for sum')
        pa = np.empty(nda, np.int64)        # a's free axes, then its contracted ones
        pb = np.empty(ndb, np.int64)        # b's contracted axes, then its free ones
        for j in range(nda - k):
            pa[j] = free(xa, nda, j)
        for j in range(ndb - k):
            pb[k + j] = free(xb, ndb, j)
        pa[nda - k:] = xa
        pb[:k] = xb
        ia = np.empty(nda, np.int64)
        ib = np.empty(ndb, np.int64)
        ta = np.empty(nda, np.int64)
        tb = np.empty(ndb, np.int64)
        for i in range(nda):
            ia[i] = pos(pa, i)
            ta[i] = sa[pa[i]]
        for i in range(ndb):
            ib[i] = pos(pb, i)
            tb[i] = sb[pb[i]]
        M = 1
        K = 1
        N = 1
        for i in range(nda - k):
            M *= ta[i]
        for i in range(k):
            K *= sa[xa[i]]
        for i in range(k, ndb):
            N *= tb[i]
        out = np.concatenate((ta[:nda - k], tb[k:]))
        return (to_fixed_tuple(pa, nda), to_fixed_tuple(pb, ndb), to_fixed_tuple(ia, nda),
                to_fixed_tuple(ib, ndb), M, K, N, to_fixed_tuple(ta, nda), to_fixed_tuple(tb, ndb),
                to_fixed_tuple(out, nout))
    return twins.jitted(plan)


def _tensordot_ranks(a, b):
    if not (twins.is_array(a) and twins.is_array(b)):
        twins.unsupported(f"np.tensordot of {a} and {b}")
    return a.ndim, b.ndim


@numba_twin(np.tensordot)
def _tensordot_numba(a, b, axes=2):
    plan = _tensordot_plan(axes, *_tensordot_ranks(a, b))

    def impl(a, b, axes=2):
        pa, pb, _, _, M, K, N, _, _, out = plan(a.shape, b.shape, axes)
        A2 = np.ascontiguousarray(np.transpose(a, pa)).reshape((M, K))
        B2 = np.ascontiguousarray(np.transpose(b, pb)).reshape((K, N))
        return (A2 @ B2).reshape(out)
    return twins.one_dtype(impl, a, b)      # Numba's @ takes operands of one dtype


def _full_like_operand(g, M, N, other):
    return np.full((M, N), g, other.dtype)


def _as_grid(g, M, N, other):
    return np.ascontiguousarray(g).reshape((M, N))


def _tensordot_vjp_twin(which):
    def twin(g, a, b, axes=2):
        plan = _tensordot_plan(axes, *_tensordot_ranks(a, b))
        from numba import types
        scalar = not isinstance(g, types.Array) or g.ndim == 0    # a result of rank 0
        # g as an (M, N) matrix; a number in the other operand's dtype, for its @
        grid = twins.jitted(_full_like_operand if scalar else _as_grid)

        def impl(g, a, b, axes=2):
            pa, pb, ia, ib, M, K, N, ta, tb, _ = plan(a.shape, b.shape, axes)
            if which == 0:
                O2 = np.ascontiguousarray(np.transpose(b, pb)).reshape((K, N))
            else:
                O2 = np.ascontiguousarray(np.transpose(a, pa)).reshape((M, K))
            G2 = grid(g, M, N, O2)
            if which == 0:
                return np.transpose((G2 @ O2.T).reshape(ta), ia)
            return np.transpose((O2.T @ G2).reshape(tb), ib)
        return twins.one_dtype(impl, g, a, b)      # Numba's @ takes operands of one dtype
    return twin


numba_twin(tensordot_vjp_a)(_tensordot_vjp_twin(0))
numba_twin(tensordot_vjp_b)(_tensordot_vjp_twin(1))
