"""Derivatives of NumPy's products of arrays.

dot, matmul (also the ``@`` operator, ``operator.matmul``), outer, inner.
(tensordot is in :mod:`.tensordot`, linear systems, inverses and determinants are in
:mod:`.solve`, einsum in :mod:`.einsum`, kron and cross in
:mod:`.tensor_products`, trace in :mod:`.diagonals`, matrix decompositions in
:mod:`.decompositions`.)

Conventions are those of :mod:`pullback.rules.elementwise`: a helper takes
``g`` first, then ``ans`` when it needs it, then the primal arguments, and
returns the cotangent of ONE argument with that argument's shape; one helper
per argument (``matmul_vjp_a`` / ``matmul_vjp_b``).  Batched (stacked)
matrices broadcast as in NumPy and the cotangent is summed back over broadcast
batch dimensions.
"""
from __future__ import annotations

import operator

import numpy as np

from . import results, twins
from .elementwise import as_array, like_arg, namespace, shape_of, unbroadcast
from .forms import loop_sum, numba_twin
from .registry import defrule
from .tangents import deftangent

__all__ = ["dot_vjp_a", "dot_vjp_b", "matmul_vjp_a", "matmul_vjp_b", "outer_vjp_a",
           "outer_vjp_b", "inner_vjp_a", "inner_vjp_b", "mT", "contract"]


def mT(xp, x):
    """The matrix transpose of ``x`` (of each matrix of a stack)."""
    if type(x) is np.ndarray and x.ndim == 2:
        return x.T           # NumPy's own transpose: no wrapper in between
    return xp.matrix_transpose(x)


def contract(xp, x, y, axes_x, axes_y):
    """``tensordot`` that also accepts no contracted axes (an outer product), in the
    array namespace ``xp``."""
    axes_x, axes_y = list(axes_x), list(axes_y)
    if not axes_x:
        return xp.reshape(x, tuple(x.shape) + (1,) * y.ndim) * y
    return xp.tensordot(x, y, axes=(axes_x, axes_y))


# ---------------------------------------------------------------------------
# dot: N-D . M-D sums the last axis of a with the second-to-last of b.

def dot_vjp_a(g, a, b):
    """Cotangent of ``a`` in ``np.dot(a, b)``."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    if A.ndim == 0 or B.ndim == 0:          # dot with a scalar multiplies
        return unbroadcast(G * B, a)
    if B.ndim == 1:                         # (..., n) . (n,) -> (...)
        return xp.expand_dims(G, axis=-1) * B
    # result[I..., J..., m] = sum_n a[I..., n] b[J..., n, m]
    na, nb = A.ndim - 1, B.ndim - 2
    return contract(xp, G, B, list(range(na, na + nb)) + [G.ndim - 1],
                      list(range(nb)) + [B.ndim - 1])


def dot_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``np.dot(a, b)``."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    if A.ndim == 0 or B.ndim == 0:
        return unbroadcast(G * A, b)
    na = A.ndim - 1
    if B.ndim == 1:                         # sum over a's leading axes
        return contract(xp, G, A, range(na), range(na))
    nb = B.ndim - 2
    ct = contract(xp, A, G, range(na), range(na))      # (n, J..., m)
    return xp.permute_dims(ct, tuple(range(1, nb + 1)) + (0, nb + 1))


# ---------------------------------------------------------------------------
# matmul: 1-D operands are promoted to matrices, batch dimensions broadcast.

def _matmul_parts(g, a, b):
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    if A.ndim == 0 or B.ndim == 0:
        raise ValueError("matmul: input operand does not have enough dimensions")
    A2 = xp.reshape(A, (1, A.shape[0])) if A.ndim == 1 else A
    B2 = xp.reshape(B, (B.shape[0], 1)) if B.ndim == 1 else B
    if A.ndim == 1:
        G = xp.expand_dims(G, axis=-2 if G.ndim else 0)
    if B.ndim == 1:
        G = xp.expand_dims(G, axis=-1)
    return xp, A, B, A2, B2, G


def _matvec_vjp(g, a, b, k):
    """The cotangent of operand ``k`` of ``a @ b`` when each operand is a vector or
    a matrix (no batch dimensions), or None.  A vector's is written as a vector
    product or an outer product: matmul with a length-1 inner dimension is
    several times slower."""
    if not (hasattr(a, "ndim") and hasattr(b, "ndim") and 1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
        return None
    xp = namespace(g, a, b)
    G = as_array(xp, g, a, b)
    if a.ndim == 2 and b.ndim == 2:
        return G @ mT(xp, b) if k == 0 else mT(xp, a) @ G
    if a.ndim == 1 and b.ndim == 1:             # inner product: g is a scalar
        return G * (b if k == 0 else a)
    if b.ndim == 1:                             # (m, n) @ (n,) -> (m,)
        return xp.reshape(G, (-1, 1)) * b if k == 0 else G @ a
    return b @ G if k == 0 else xp.reshape(a, (-1, 1)) * G    # (n,) @ (n, k) -> (k,)


def matmul_vjp_a(g, a, b):
    """Cotangent of ``a`` in ``a @ b``: ``g @ b.T``, summed over broadcast batches."""
    fast = _matvec_vjp(g, a, b, 0)
    if fast is not None:
        return fast
    xp, A, _, A2, B2, G2 = _matmul_parts(g, a, b)
    return xp.reshape(unbroadcast(G2 @ mT(xp, B2), A2), A.shape)


def matmul_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``a @ b``: ``a.T @ g``, summed over broadcast batches."""
    fast = _matvec_vjp(g, a, b, 1)
    if fast is not None:
        return fast
    xp, _, B, A2, B2, G2 = _matmul_parts(g, a, b)
    return xp.reshape(unbroadcast(mT(xp, A2) @ G2, B2), B.shape)


@loop_sum(matmul_vjp_a, varying=(0, 2))
def matmul_vjp_a_summed(steps, a):
    """``sum(matmul_vjp_a(g, a, b) for g, b in steps)`` for a matrix ``a``: the
    sum of ``g_k b_k^T`` is one product of the ``g_k`` and ``b_k`` set side by
    side as columns."""
    return _matmul_summed(steps, a, 0)


@loop_sum(matmul_vjp_b, varying=(0, 1))
def matmul_vjp_b_summed(steps, b):
    """``sum(matmul_vjp_b(g, a, b) for g, a in steps)`` for a matrix ``b``: the
    ``a_k`` and ``g_k`` stacked as rows, one product."""
    return _matmul_summed(steps, b, 1)


def _matmul_summed(steps, fixed, k):
    """The sum over ``steps`` of operand ``k``'s cotangent, ``fixed`` being that
    operand and each step holding ``(g, the other operand)``."""
    if not steps:
        return 0.0
    if getattr(fixed, "ndim", 0) != 2 or not all(getattr(o, "ndim", 0) in (1, 2)
                                                   and hasattr(g, "ndim") for g, o in steps):
        one = matmul_vjp_a if k == 0 else matmul_vjp_b
        return sum(one(g, fixed, o) if k == 0 else one(g, o, fixed) for g, o in steps)
    xp = namespace(fixed, *steps[0])
    m, n = fixed.shape
    if k == 0:          # g_k: (m,) or (m, j); b_k: (n,) or (n, j)
        G = xp.concat([xp.reshape(g, (m, -1)) for g, _ in steps], axis=1)
        B = xp.concat([xp.reshape(b, (n, -1)) for _, b in steps], axis=1)
        return G @ mT(xp, B)
    A = xp.concat([xp.reshape(a, (-1, m)) for _, a in steps], axis=0)     # a_k: (m,) or (i, m)
    G = xp.concat([xp.reshape(g, (-1, n)) for g, _ in steps], axis=0)     # g_k: (n,) or (i, n)
    return mT(xp, A) @ G


# ---------------------------------------------------------------------------
# outer flattens its inputs; inner sums over the last axes.

def outer_vjp_a(g, a, b):
    """Cotangent of ``a`` in ``np.outer(a, b)`` (``g @ b.ravel()``, reshaped)."""
    xp = namespace(g, a, b)
    fb = xp.reshape(as_array(xp, b, g), (-1,))
    return like_arg(xp.reshape(as_array(xp, g, fb) @ fb, shape_of(a)), a)


def outer_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``np.outer(a, b)``."""
    xp = namespace(g, a, b)
    fa = xp.reshape(as_array(xp, a, g), (-1,))
    return like_arg(xp.reshape(fa @ as_array(xp, g, fa), shape_of(b)), b)


def inner_vjp_a(g, a, b):
    """Cotangent of ``a`` in ``np.inner(a, b)``.

    ``inner(a, b)[I..., J...] = sum_k a[I..., k] b[J..., k]``.
    """
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    if A.ndim == 0 or B.ndim == 0:
        return unbroadcast(G * B, a)
    na, nb = A.ndim - 1, B.ndim - 1
    return contract(xp, G, B, range(na, na + nb), range(nb))


def inner_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``np.inner(a, b)``."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    if A.ndim == 0 or B.ndim == 0:
        return unbroadcast(G * A, b)
    na = A.ndim - 1
    return contract(xp, G, A, range(na), range(na))


# ---------------------------------------------------------------------------
# Registrations

defrule(np.dot, "a, b, out=None", result=results.product, methods=("dot",),
        a="dot_vjp_a(g, a, b)", b="dot_vjp_b(g, a, b)")
defrule(np.matmul, "x1, x2, /, out=None", result=results.product,
        x1="matmul_vjp_a(g, x1, x2)", x2="matmul_vjp_b(g, x1, x2)")
defrule(operator.matmul, "a, b, /", result=results.product,
        a="matmul_vjp_a(g, a, b)", b="matmul_vjp_b(g, a, b)")
defrule(np.outer, "a, b, out=None", result=results.outer_product,
        a="outer_vjp_a(g, a, b)", b="outer_vjp_b(g, a, b)")
defrule(np.inner, "a, b, /", result=results.inner_product,
        a="inner_vjp_a(g, a, b)", b="inner_vjp_b(g, a, b)")
for _product in (np.dot, operator.matmul, np.outer, np.inner):
    deftangent(_product, multilinear="a, b")
deftangent(np.matmul, multilinear="x1, x2")


# ---------------------------------------------------------------------------
# Numba twins: vectors and matrices, and stacks of them (matmul, and dot of an N-D
# array with a vector or a matrix), float arrays.

def _stacked_operands(a, b, name="matmul"):
    """Refuse operands a stacked product's twin does not cover; else (ra, rb)."""
    ra, rb = twins.rank(a), twins.rank(b)
    if not (twins.is_float_array(a) and twins.is_float_array(b)):
        twins.unsupported(f"{name} of stacks (more than 2 dimensions) that are not both float arrays")
    return ra, rb


def _batch_dim(x, y):
    """Numba: the size of a batch dimension where sizes ``x`` and ``y`` broadcast."""
    if x == y or y == 1:
        return x
    if x == 1:
        return y
    raise ValueError("matmul: batch dimensions do not broadcast")


def _batch_index(out_shape, shape):
    """Numba: for each batch of the result (C order over ``out_shape``), the flat index
    of the operand's batch (its batch shape ``shape``, padded with 1s, broadcast)."""
    nb = out_shape.shape[0]
    total = 1
    for d in range(nb):
        total *= out_shape[d]
    index = np.empty(total, np.int64)
    for k in range(total):
        rest, flat, stride = k, 0, 1
        for d in range(nb - 1, -1, -1):
            i = rest % out_shape[d]
            rest //= out_shape[d]
            if shape[d] != 1:
                flat += i * stride
            stride *= shape[d]
        index[k] = flat
    return index


_STACK_PLANS: dict = {}


def _stack_plan(ra: int, rb: int):
    """A compiled ``f(a, b)`` for ``a @ b`` of ranks ``ra``, ``rb`` (one above 2):
    ``(a3, b3, ia, ib, shape)``, each operand as a contiguous stack of matrices (a
    vector promoted to one), the index of each result batch's matrix in each stack
    (batch dimensions broadcast), and the result's shape."""
    if (ra, rb) not in _STACK_PLANS:
        _STACK_PLANS[ra, rb] = twins.jitted(_stack_planner(ra, rb))
    return _STACK_PLANS[ra, rb]


def _stack_planner(ra, rb):
    """``f(a, b)`` of :func:`_stack_plan`."""
    from numba.np.unsafe.ndarray import to_fixed_tuple
    na, nb_ = max(ra - 2, 0), max(rb - 2, 0)
    nb = max(na, nb_)
    rank = nb + (ra > 1) + (rb > 1)             # the result's
    bd, index = twins.jitted(_batch_dim), twins.jitted(_batch_index)

    def f(a, b):
        n = a.shape[ra - 2] if ra > 1 else 1
        m = a.shape[ra - 1]
        p = b.shape[rb - 1] if rb > 1 else 1
        a3 = np.ascontiguousarray(a).reshape((-1, n, m))
        b3 = np.ascontiguousarray(b).reshape((-1, m, p))
        if b3.shape[1] != m:
            raise ValueError('matmul: mismatch in its core dimension')
        sa = np.ones(nb, np.int64)              # the batch shapes, padded with 1s in front
        sb = np.ones(nb, np.int64)
        shape = np.empty(rank, np.int64)
        for d in range(nb):
            if d >= nb - na:
                sa[d] = a.shape[d - (nb - na)]
            if d >= nb - nb_:
                sb[d] = b.shape[d - (nb - nb_)]
            shape[d] = bd(sa[d], sb[d])
        if ra > 1:
            shape[nb] = n
        if rb > 1:
            shape[rank - 1] = p
        shape_o = shape[:nb].copy()
        return a3, b3, index(shape_o, sa), index(shape_o, sb), to_fixed_tuple(shape, rank)
    return f


def stacked_matmul(a, b):
    """``a @ b`` (the Python of the Numba twin below, which the Numba backend calls
    for operands of more than 2 dimensions, Numba's own ``@`` taking at most 2)."""
    return a @ b


@numba_twin(stacked_matmul)
def _stacked_matmul_numba(a, b):
    """Stacks of matrices (a vector promoted to one, as matmul does), the batch
    dimensions broadcast: each result matrix by Numba's 2-D ``@``."""
    ra, rb = _stacked_operands(a, b)
    plan = _stack_plan(ra, rb)

    def impl(a, b):
        a3, b3, ia, ib, shape = plan(a, b)
        out = np.empty((ia.shape[0], a3.shape[1], b3.shape[2]), a3.dtype)
        for k in range(ia.shape[0]):
            out[k] = a3[ia[k]] @ b3[ib[k]]
        return out.reshape(shape)
    return twins.one_dtype(impl, a, b)        # the result in the operands' common dtype


def _stacked_vjp(which, g, a, b):
    """The twin of the cotangent of operand ``which`` of a stacked ``a @ b``: each
    result batch's contribution added into the matrix of the stack it came from
    (the sum over broadcast batch dimensions)."""
    ra, rb = _stacked_operands(a, b)
    plan = _stack_plan(ra, rb)

    def vjp_a(g, a, b):
        a3, b3, ia, ib, shape = plan(a, b)
        g3 = np.ascontiguousarray(g).reshape((ia.shape[0], a3.shape[1], b3.shape[2]))
        out = np.zeros(a3.shape, g3.dtype)
        for k in range(ia.shape[0]):
            out[ia[k]] += g3[k] @ b3[ib[k]].T
        return out.reshape(a.shape)

    def vjp_b(g, a, b):
        a3, b3, ia, ib, shape = plan(a, b)
        g3 = np.ascontiguousarray(g).reshape((ia.shape[0], a3.shape[1], b3.shape[2]))
        out = np.zeros(b3.shape, g3.dtype)
        for k in range(ia.shape[0]):
            out[ib[k]] += a3[ia[k]].T @ g3[k]
        return out.reshape(b.shape)
    return twins.one_dtype(vjp_b if which else vjp_a, g, a, b)


def _product_twin(which, dot=False):
    """The twin of the cotangent of operand ``which`` (0: a, 1: b) of ``a @ b`` or
    (``dot``) ``np.dot(a, b)``, for operands that are vectors, matrices, stacks of
    them or (dot) numbers."""
    def twin(g, a, b):
        ra, rb = twins.rank(a), twins.rank(b)
        if ra is None or rb is None:
            twins.unsupported("the derivative of a product of operands that are not arrays "
                              "or numbers")
        if dot and rb > 2:
            twins.unsupported("the derivative of np.dot with a second operand of more than "
                              "2 dimensions")
        if (ra > 2 or rb > 2) and min(ra, rb) >= 1:
            return _stacked_vjp(which, g, a, b)    # dot(N-D, vector or matrix) is matmul
        if ra == 0 or rb == 0:          # np.dot with a number multiplies
            other_rank = rb if which == 0 else ra
            mine = ra if which == 0 else rb
            if which == 0:
                return (lambda g, a, b: np.sum(g * b)) if mine == 0 and other_rank else \
                    (lambda g, a, b: g * b)
            return (lambda g, a, b: np.sum(g * a)) if mine == 0 and other_rank else \
                (lambda g, a, b: g * a)
        if which == 0:
            fn = {(2, 2): lambda g, a, b: g @ b.T, (2, 1): lambda g, a, b: np.outer(g, b),
                  (1, 2): lambda g, a, b: b @ g, (1, 1): lambda g, a, b: g * b}[ra, rb]
        else:
            fn = {(2, 2): lambda g, a, b: a.T @ g, (2, 1): lambda g, a, b: a.T @ g,
                  (1, 2): lambda g, a, b: np.outer(a, g), (1, 1): lambda g, a, b: g * a}[ra, rb]
        return _one_dtype(fn, g, a, b)
    return twin


def _one_dtype(fn, g, a, b):
    """``fn`` of arrays whose dtypes differ (a float32 operand, a float64 cotangent,
    an int matrix), with each cast to their common dtype first: Numba's ``@`` takes
    operands of one dtype."""
    if not all(twins.is_array(t) for t in (g, a, b)):
        return fn                       # a number times an array: no @
    return twins.one_dtype(fn, g, a, b)


numba_twin(matmul_vjp_a)(_product_twin(0))
numba_twin(matmul_vjp_b)(_product_twin(1))
numba_twin(dot_vjp_a)(_product_twin(0, dot=True))
numba_twin(dot_vjp_b)(_product_twin(1, dot=True))

@numba_twin(outer_vjp_a)
def _outer_vjp_a_numba(g, a, b):
    if not (twins.is_array(a) and twins.is_array(b)):
        twins.unsupported("np.outer of numbers")
    return twins.one_dtype(lambda g, a, b: (g @ np.ascontiguousarray(b).ravel()).reshape(a.shape),
                           g, a, b)


@numba_twin(outer_vjp_b)
def _outer_vjp_b_numba(g, a, b):
    if not (twins.is_array(a) and twins.is_array(b)):
        twins.unsupported("np.outer of numbers")
    return twins.one_dtype(lambda g, a, b: (np.ascontiguousarray(a).ravel() @ g).reshape(b.shape),
                           g, a, b)


@numba_twin(np.matmul)
def _matmul_numba(x1, x2, out=None):
    # Numba has the @ operator (of vectors and matrices) but no np.matmul.
    if not twins.is_none(out):
        return None
    if max(twins.rank(x1) or 0, twins.rank(x2) or 0) > 2:
        return lambda x1, x2, out=None: stacked_matmul(x1, x2)
    return twins.one_dtype(lambda x1, x2, out=None: x1 @ x2, x1, x2)


@numba_twin(np.dot)
def _dot_numba(a, b, out=None):
    # Numba's np.dot takes arrays only; with a number it multiplies.
    if not twins.is_none(out):
        return None
    if twins.is_number(a) or twins.is_number(b):
        return lambda a, b, out=None: a * b
    ra, rb = twins.rank(a), twins.rank(b)
    if ra is not None and rb is not None and rb > 2:
        twins.unsupported("np.dot with a second operand of more than 2 dimensions")
    if ra is not None and ra > 2:        # (..., n, m) . (m,) or (m, p): matmul
        return lambda a, b, out=None: stacked_matmul(a, b)
    return twins.one_dtype(lambda a, b, out=None: np.dot(a, b), a, b)


# inner: the last axes of vectors and matrices (Numba has no np.inner).
def _inner_ranks(a, b):
    ra, rb = twins.rank(a), twins.rank(b)
    if ra is None or rb is None or ra > 2 or rb > 2:
        twins.unsupported("np.inner of arrays with more than 2 dimensions")
    return ra, rb


@numba_twin(np.inner)
def _inner_numba(a, b):
    ra, rb = _inner_ranks(a, b)
    if ra == 0 or rb == 0:
        return lambda a, b: a * b
    return twins.one_dtype({(1, 1): lambda a, b: np.dot(a, b), (2, 2): lambda a, b: a @ b.T,
                            (1, 2): lambda a, b: b @ a, (2, 1): lambda a, b: a @ b}[ra, rb], a, b)


def _inner_twin(which):
    def twin(g, a, b):
        ra, rb = _inner_ranks(a, b)
        mine, other = (ra, rb) if which == 0 else (rb, ra)
        if mine == 0:
            if which == 0:
                return lambda g, a, b: np.sum(g * b)
            return lambda g, a, b: np.sum(g * a)
        if other == 0:
            return (lambda g, a, b: g * b) if which == 0 else (lambda g, a, b: g * a)
        if which == 0:
            fn = {(1, 1): lambda g, a, b: g * b, (2, 2): lambda g, a, b: g @ b,
                  (1, 2): lambda g, a, b: g @ b, (2, 1): lambda g, a, b: np.outer(g, b)}[ra, rb]
        else:
            fn = {(1, 1): lambda g, a, b: g * a, (2, 2): lambda g, a, b: g.T @ a,
                  (1, 2): lambda g, a, b: np.outer(g, a), (2, 1): lambda g, a, b: g @ a}[ra, rb]
        return twins.one_dtype(fn, g, a, b)
    return twin


numba_twin(inner_vjp_a)(_inner_twin(0))
numba_twin(inner_vjp_b)(_inner_twin(1))
