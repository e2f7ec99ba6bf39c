"""Derivatives of NumPy's products and linear algebra.

dot, matmul (also the ``@`` operator, ``operator.matmul``), outer, inner,
tensordot, kron, cross, einsum, trace, linalg.solve, linalg.inv, linalg.det,
linalg.slogdet.  (Matrix decompositions are in :mod:`.decompositions`.)

Conventions are those of :mod:`pullback.rules.elementwise`: a helper takes
``g`` first, then ``ans`` when it needs it, then the primal arguments, and
returns the cotangent of ONE argument with that argument's shape; one helper
per argument (``matmul_vjp_a`` / ``matmul_vjp_b``) or an operand number
(``einsum_vjp(g, k, ...)``).  Batched (stacked) matrices broadcast as in NumPy
and the cotangent is summed back over broadcast batch dimensions.

Notes on particular rules:

* ``det`` uses the adjugate computed from the SVD, ``U diag(prod_{j!=i} s_j) Vh``
  times ``det(U) det(Vh)``: exact for singular matrices too (where
  ``det * inv(a).T`` would be NaN), with no branch on the data.
* ``slogdet`` returns the pair ``(sign, logabsdet)``.  Its rule takes the
  cotangent of the pair as a pair ``(g_sign, g_logabsdet)``, as that pair
  stacked into one array (leading axis of length 2), or as ``g_logabsdet``
  alone; ``g_sign`` is ignored because the sign is piecewise
  constant (derivative 0).  The cotangent of ``a`` is
  ``g_logabsdet * inv(a).T``; a singular ``a`` raises like ``inv``.
* ``einsum`` takes any number of operands and any subscripts (explicit or
  implicit output, ``...``, repeated indices such as ``ii->`` or ``ii->i``,
  indices summed inside one operand, size-1 broadcasting): the cotangent of
  operand k is an einsum of ``g`` with the other operands whose output is
  operand k's subscripts; indices that einsum cannot output (repeated ones,
  those present only in operand k) are put back by broadcasting and identity
  masks.  The sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is turned
  into the string form once (:func:`einsum_subscripts`), labels numbered as
  NumPy numbers them.  Numba has no einsum: under ``jit=True`` it is refused.
* ``solve(a, b)`` follows NumPy 2: ``b`` is a vector only when it is 1-D.
* ``cross`` takes 3-vectors, and 2-vectors as NumPy (deprecated there) does: a
  2-vector has z = 0, and the cross product of two 2-vectors is its z component.
"""
from __future__ import annotations

import operator
from collections import Counter

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, float_dtype, like_arg, namespace, shape_of, unbroadcast
from .registry import defrule, loop_sum, numba_twin

__all__ = ["dot_vjp_a", "dot_vjp_b", "matmul_vjp_a", "matmul_vjp_b", "outer_vjp_a",
           "outer_vjp_b", "inner_vjp_a", "inner_vjp_b", "solve_vjp_a", "solve_vjp_b",
           "inv_vjp", "det_vjp", "slogdet_vjp", "trace_vjp", "einsum_vjp", "einsum_subscripts",
           "tensordot_vjp_a", "tensordot_vjp_b", "kron_vjp_a", "kron_vjp_b", "cross_vjp_a", "cross_vjp_b"]


def _mT(xp, x):
    if type(x) is np.ndarray and x.ndim == 2:
        return x.T           # NumPy's own transpose: no wrapper in between
    return xp.matrix_transpose(x)


def _tensordot(xp, x, y, axes_x, axes_y):
    """``tensordot`` that also accepts no contracted axes (an outer product)."""
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
    return _tensordot(xp, G, B, list(range(na, na + nb)) + [G.ndim - 1],
                      list(range(nb)) + [B.ndim - 1])


def dot_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``np.dot(a, b)``."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    if A.ndim == 0 or B.ndim == 0:
        return unbroadcast(G * A, b)
    na = A.ndim - 1
    if B.ndim == 1:                         # sum over a's leading axes
        return _tensordot(xp, G, A, range(na), range(na))
    nb = B.ndim - 2
    ct = _tensordot(xp, A, G, range(na), range(na))      # (n, J..., m)
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
        return G @ _mT(xp, b) if k == 0 else _mT(xp, a) @ G
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
    return xp.reshape(unbroadcast(G2 @ _mT(xp, B2), A2), A.shape)


def matmul_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``a @ b``: ``a.T @ g``, summed over broadcast batches."""
    fast = _matvec_vjp(g, a, b, 1)
    if fast is not None:
        return fast
    xp, _, B, A2, B2, G2 = _matmul_parts(g, a, b)
    return xp.reshape(unbroadcast(_mT(xp, A2) @ G2, B2), B.shape)


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
        return G @ _mT(xp, B)
    A = xp.concat([xp.reshape(a, (-1, m)) for _, a in steps], axis=0)     # a_k: (m,) or (i, m)
    G = xp.concat([xp.reshape(g, (-1, n)) for g, _ in steps], axis=0)     # g_k: (n,) or (i, n)
    return _mT(xp, A) @ G


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
    return _tensordot(xp, G, B, range(na, na + nb), range(nb))


def inner_vjp_b(g, a, b):
    """Cotangent of ``b`` in ``np.inner(a, b)``."""
    xp = namespace(g, a, b)
    A, B, G = as_array(xp, a, g, b), as_array(xp, b, g, a), as_array(xp, g, a, b)
    if A.ndim == 0 or B.ndim == 0:
        return unbroadcast(G * A, b)
    na = A.ndim - 1
    return _tensordot(xp, G, A, range(na), range(na))


# ---------------------------------------------------------------------------
# solve, inv, det, slogdet

def _solve_parts(g, ans, a, b):
    xp = namespace(g, a, b)
    A, B, G, X = as_array(xp, a, b), as_array(xp, b, a), as_array(xp, g, a, b), as_array(xp, ans, a)
    vec = B.ndim == 1
    G2 = xp.expand_dims(G, axis=-1) if vec else G
    X2 = xp.expand_dims(X, axis=-1) if vec else X
    # Broadcast the batches explicitly: torch reads a B with one dimension less
    # than A as a stack of vectors, NumPy 2 does not.
    batch = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(G2.shape[:-2]))
    At = xp.broadcast_to(_mT(xp, A), batch + tuple(A.shape[-2:]))
    G2 = xp.broadcast_to(G2, batch + tuple(G2.shape[-2:]))
    gb = xp.linalg.solve(At, G2)                 # cotangent of b, as a (batch of) matrix
    return xp, A, B, vec, gb, X2


def solve_vjp_b(g, ans, a, b):
    """Cotangent of ``b`` in ``x = np.linalg.solve(a, b)``: ``solve(a.T, g)``."""
    xp, _, B, vec, gb, _ = _solve_parts(g, ans, a, b)
    if vec:
        return xp.reshape(unbroadcast(gb, xp.expand_dims(B, axis=-1)), B.shape)
    return unbroadcast(gb, B)


def solve_vjp_a(g, ans, a, b):
    """Cotangent of ``a`` in ``x = np.linalg.solve(a, b)``: ``-solve(a.T, g) @ x.T``."""
    xp, A, _, _, gb, X2 = _solve_parts(g, ans, a, b)
    return unbroadcast(-(gb @ _mT(xp, X2)), A)


def inv_vjp(g, ans, a):
    """Cotangent of ``a`` in ``np.linalg.inv(a)``: ``-ans.T @ g @ ans.T``."""
    xp = namespace(g, a)
    At = _mT(xp, as_array(xp, ans, a))
    return -(At @ as_array(xp, g, At) @ At)


def det_vjp(g, ans, a):
    """Cotangent of ``a`` in ``np.linalg.det(a)``: ``g`` times the adjugate transposed.

    From ``a = U diag(s) Vh``: ``adj(a).T = det(U) det(Vh) U diag(p) Vh`` with
    ``p_i = prod_{j != i} s_j``, which needs no division and so holds for
    singular matrices.
    """
    xp = namespace(g, a)
    A = as_array(xp, a)
    u, s, vh = xp.linalg.svd(A, full_matrices=False)
    n = s.shape[-1]
    off_diag = ~xp.eye(n, dtype=xp.bool, device=array_api_compat.device(A))
    # others[..., i, j] = s_j for j != i, 1 on the diagonal; its row products are p.
    rows = xp.expand_dims(s, axis=-2)
    others = xp.where(off_diag, rows, xp.ones_like(rows))
    p = xp.prod(others, axis=-1)
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    adj_t = (u * xp.expand_dims(p, axis=-2)) @ vh
    scale = xp.reshape(as_array(xp, g, A) * sign, tuple(sign.shape) + (1, 1))
    return scale * adj_t


def slogdet_vjp(g, ans, a):
    """Cotangent of ``a`` in ``sign, logabsdet = np.linalg.slogdet(a)``.

    ``g`` is the pair ``(g_sign, g_logabsdet)`` (``g_sign`` ignored: the sign is
    piecewise constant), the pair stacked into one array of shape
    ``(2,) + logabsdet.shape`` (told apart from a batch by ``ans``), or
    ``g_logabsdet`` alone.  Returns ``g_logabsdet * inv(a).T``.
    """
    if isinstance(g, (tuple, list)):
        g = g[1]
    elif isinstance(ans, tuple) and shape_of(g) == (2,) + shape_of(ans[1]):
        g = g[1]
    xp = namespace(g, a)
    A = as_array(xp, a)
    if g is None:
        return xp.zeros_like(A)
    G = as_array(xp, g, A)
    return xp.reshape(G, tuple(G.shape) + (1, 1)) * _mT(xp, xp.linalg.inv(A))


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
        diag = _mT(xp, diag)
    mask_shape = tuple(d if i in (ax1, ax2) else 1 for i, d in enumerate(A.shape))
    return G * xp.reshape(diag, mask_shape)


# ---------------------------------------------------------------------------
# einsum

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_fn(xp):
    """The backend's einsum (the array API standard has none)."""
    if array_api_compat.is_numpy_namespace(xp):
        return lambda expr, *ops: np.einsum(expr, *ops, optimize=len(ops) > 2)
    if array_api_compat.is_torch_namespace(xp):
        import torch
        return torch.einsum
    if array_api_compat.is_cupy_namespace(xp):
        import cupy
        return cupy.einsum
    if array_api_compat.is_jax_namespace(xp):
        import jax.numpy as jnp
        return jnp.einsum
    raise NotImplementedError(f"einsum derivative: no einsum known for namespace {xp.__name__}")


def parse_einsum(subscripts: str, ndims):
    """Explicit subscripts for ``einsum(subscripts, *operands)``: (inputs, output).

    ``...`` becomes letters that are otherwise unused (aligned on the right, as
    broadcasting aligns dimensions); an implicit output is made explicit
    (ellipsis dimensions first, then the indices that appear once, sorted).
    """
    s = subscripts.replace(" ", "")
    ins, arrow, out = s.partition("->")
    ins = ins.split(",")
    if len(ins) != len(ndims):
        raise ValueError(f"einsum: {len(ins)} operands in {subscripts!r}, {len(ndims)} given")
    used = {c for c in s if c.isalpha()}
    free = [c for c in _LETTERS if c not in used]
    widths = [nd - (len(t) - 3) for t, nd in zip(ins, ndims) if "..." in t]
    width = max(widths, default=0)
    ell = "".join(free[:width])
    ins = [t.replace("...", ell[width - (nd - (len(t) - 3)):]) if "..." in t else t
           for t, nd in zip(ins, ndims)]
    if arrow:
        out = out.replace("...", ell)
    else:
        counts = Counter("".join(ins))
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    return ins, out


# NumPy numbers sublist labels 0..51 as the letters A..Z, a..z.
_SUBLIST_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _sublist_letters(labels) -> str:
    out = []
    for label in labels:
        if label is Ellipsis:
            out.append("...")
        elif 0 <= int(label) < len(_SUBLIST_LETTERS):
            out.append(_SUBLIST_LETTERS[int(label)])
        else:
            raise ValueError(f"einsum: sublist label {label!r} is not in [0, 52)")
    return "".join(out)


def einsum_subscripts(args):
    """``np.einsum(*args)`` in the string form: ``(subscripts, operands, positions)``
    where ``positions[j]`` is the place of operand j in ``args``.

    The sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (operands and their
    label lists interleaved, an optional output list last) becomes
    ``("AB,BC->AC", [a, b], [0, 2])``; the string form is returned as it is.
    """
    if isinstance(args[0], str):
        return args[0], list(args[1:]), list(range(1, len(args)))
    pairs = len(args) // 2
    ins = [_sublist_letters(args[2 * j + 1]) for j in range(pairs)]
    subscripts = ",".join(ins)
    if len(args) % 2:
        subscripts += "->" + _sublist_letters(args[-1])
    return subscripts, [args[2 * j] for j in range(pairs)], [2 * j for j in range(pairs)]


def einsum_vjp(g, k, *args):
    """Cotangent of ``args[k]``, an operand of ``np.einsum(*args)`` (string or
    sublist form)."""
    subscripts, ops, positions = einsum_subscripts(args)
    k = positions.index(k)
    xp = namespace(g, *ops)
    arrs = [as_array(xp, o, g, *ops) for o in ops]
    ins, out = parse_einsum(subscripts, [o.ndim for o in arrs])
    target, op = ins[k], arrs[k]
    others = [t for j, t in enumerate(ins) if j != k]
    available = set(out).union(*others)
    unique = list(dict.fromkeys(target))            # first occurrences, in order
    kept = [c for c in unique if c in available]
    G = as_array(xp, g, *arrs)
    expr = ",".join([out] + others) + "->" + "".join(kept)
    if not (expr == f"{out}->{out}"):
        G = _einsum_fn(xp)(expr, G, *[a for j, a in enumerate(arrs) if j != k])
    # Lay G out with one axis per position of target: size 1 for an index
    # einsum could not produce (then broadcast) and for repeated positions
    # (then an identity mask puts G on the diagonal).
    sizes = dict(zip(kept, G.shape))
    first = {c: target.index(c) for c in unique}
    layout = tuple(sizes.get(c, 1) if first[c] == pos else 1 for pos, c in enumerate(target))
    G = xp.reshape(G, layout)
    for pos, c in enumerate(target):
        q = first[c]
        if q != pos:
            n = op.shape[q]
            mask_shape = tuple(n if i in (q, pos) else 1 for i in range(len(target)))
            eye = xp.eye(n, dtype=G.dtype, device=array_api_compat.device(G))
            G = G * xp.reshape(eye, mask_shape)
    # Sums size-1 (broadcast) axes of the operand, broadcasts the missing ones.
    return like_arg(unbroadcast(G, op), ops[k])


# ---------------------------------------------------------------------------
# tensordot, kron, cross

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
    ct = _tensordot(xp, G, B, range(len(free_a), G.ndim), free_b)
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
    ct = _tensordot(xp, A, G, free_a, range(len(free_a)))
    order = [xb[xa.index(i)] for i in sorted(xa)] + free_b
    return like_arg(xp.permute_dims(ct, tuple(int(i) for i in np.argsort(order))), b)


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

defrule(np.dot, "a, b, out=None", result=results.product, methods=("dot",),
        a="dot_vjp_a(g, a, b)", b="dot_vjp_b(g, a, b)")
defrule(np.matmul, "x1, x2, /, out=None", result=results.product,
        x1="matmul_vjp_a(g, x1, x2)", x2="matmul_vjp_b(g, x1, x2)")
defrule(operator.matmul, "a, b, /", result=results.product,
        a="matmul_vjp_a(g, a, b)", b="matmul_vjp_b(g, a, b)")
defrule(np.outer, "a, b, out=None", result=results.unknown,
        a="outer_vjp_a(g, a, b)", b="outer_vjp_b(g, a, b)")
defrule(np.inner, "a, b, /", result=results.unknown,
        a="inner_vjp_a(g, a, b)", b="inner_vjp_b(g, a, b)")
defrule(np.linalg.solve, "a, b", result=results.unknown,
        a="solve_vjp_a(g, ans, a, b)", b="solve_vjp_b(g, ans, a, b)")
defrule(np.linalg.inv, "a", result=results.same_shape, a="inv_vjp(g, ans, a)")
defrule(np.linalg.det, "a", result=results.matrix_scalar, a="det_vjp(g, ans, a)")
defrule(np.linalg.slogdet, "a", result=results.factors(2, 2), a="slogdet_vjp(g, ans, a)")
defrule(np.trace, "a, offset=0, axis1=0, axis2=1, dtype=None, out=None",
        result=results.matrix_scalar, methods=("trace",),
        a="trace_vjp(g, a, offset, axis1, axis2)")
defrule(np.einsum, "*operands, out=None, optimize=False", result=results.unknown,
        operands="einsum_vjp(g, k, *operands)")
defrule(np.tensordot, "a, b, axes=2", result=results.unknown,
        a="tensordot_vjp_a(g, a, b, axes)", b="tensordot_vjp_b(g, a, b, axes)")
defrule(np.kron, "a, b", result=results.unknown, a="kron_vjp_a(g, a, b)", b="kron_vjp_b(g, a, b)")
defrule(np.cross, "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None", result=results.array,
        a="cross_vjp_a(g, a, b, axisa, axisb, axisc, axis)",
        b="cross_vjp_b(g, a, b, axisa, axisb, axisc, axis)")


# ---------------------------------------------------------------------------
# Numba twins: vectors and matrices (no stacks), float arrays.

def _product_twin(which):
    """The twin of the cotangent of operand ``which`` (0: a, 1: b) of ``a @ b`` or
    ``np.dot(a, b)``, for operands that are vectors, matrices or (dot) numbers."""
    def twin(g, a, b):
        ra, rb = twins.rank(a), twins.rank(b)
        if ra is None or rb is None or ra > 2 or rb > 2:
            twins.unsupported("the derivative of a product of arrays with more than 2 dimensions")
        if ra == 0 or rb == 0:          # np.dot with a number multiplies
            other_rank = rb if which == 0 else ra
            mine = ra if which == 0 else rb
            if which == 0:
                return (lambda g, a, b: np.sum(g * b)) if mine == 0 and other_rank else \
                    (lambda g, a, b: g * b)
            return (lambda g, a, b: np.sum(g * a)) if mine == 0 and other_rank else \
                (lambda g, a, b: g * a)
        if which == 0:
            return {(2, 2): lambda g, a, b: g @ b.T, (2, 1): lambda g, a, b: np.outer(g, b),
                    (1, 2): lambda g, a, b: b @ g, (1, 1): lambda g, a, b: g * b}[ra, rb]
        return {(2, 2): lambda g, a, b: a.T @ g, (2, 1): lambda g, a, b: a.T @ g,
                (1, 2): lambda g, a, b: np.outer(a, g), (1, 1): lambda g, a, b: g * a}[ra, rb]
    return twin


numba_twin(matmul_vjp_a, dot_vjp_a)(_product_twin(0))
numba_twin(matmul_vjp_b, dot_vjp_b)(_product_twin(1))


def _square(a, what):
    """True for one matrix, False for a stack of them (the twins loop over it)."""
    if not (twins.is_array(a) and a.ndim >= 2):
        twins.unsupported(f"the derivative of {what} of this argument")
    return a.ndim == 2


def _stack3(x):
    """A stack of matrices as a C-contiguous (batch, n, m) array."""
    return np.ascontiguousarray(x).reshape((-1, x.shape[-2], x.shape[-1]))


_s3 = _stack3           # what the kernels below call; _stacked binds the compiled one
_STACKED: dict = {}


def _stacked(kernel):
    """``kernel`` compiled, its global ``_s3`` bound to the compiled :func:`_stack3`
    (a function Numba compiles cannot call a plain Python one)."""
    key = kernel
    if key not in _STACKED:
        import types as _types
        g = dict(kernel.__globals__)
        g["_s3"] = twins.jitted(_stack3)
        _STACKED[key] = twins.jitted(_types.FunctionType(
            kernel.__code__, g, kernel.__name__, kernel.__defaults__, kernel.__closure__))
    return _STACKED[key]


def _solve_stack(a, b):
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError("pullback (Numba backend): np.linalg.solve of stacks of "
                         "different batch shapes is not supported; use jit=False")
    a3, b3 = _s3(a), _s3(b)
    out = np.empty(b3.shape)
    for i in range(a3.shape[0]):
        out[i] = np.linalg.solve(a3[i], b3[i])
    return out.reshape(b.shape)


def _solve_t_stack(a, g):
    """solve(a.T, g) for each matrix of the stacks a and g."""
    if a.shape[:-2] != g.shape[:-2]:
        raise ValueError("pullback (Numba backend): np.linalg.solve of stacks of "
                         "different batch shapes is not supported; use jit=False")
    a3, g3 = _s3(a), _s3(g)
    out = np.empty(g3.shape)
    for i in range(a3.shape[0]):
        out[i] = np.linalg.solve(np.ascontiguousarray(a3[i].T), g3[i])
    return out.reshape(g.shape)


def _solve_a_stack(gb, x):
    gb3, x3 = _s3(gb), _s3(x)
    out = np.empty((gb3.shape[0], gb3.shape[1], x3.shape[1]))
    for i in range(gb3.shape[0]):
        out[i] = -(gb3[i] @ x3[i].T)
    return out


@numba_twin(solve_vjp_b)
def _solve_vjp_b_numba(g, ans, a, b):
    if _square(a, "np.linalg.solve"):
        return lambda g, ans, a, b: np.linalg.solve(np.ascontiguousarray(a.T), g)
    if not twins.is_array(b, a.ndim):
        twins.unsupported("the derivative of np.linalg.solve of a stack and a vector")
    st = _stacked(_solve_t_stack)
    return lambda g, ans, a, b: st(a, g)


@numba_twin(solve_vjp_a)
def _solve_vjp_a_numba(g, ans, a, b):
    if _square(a, "np.linalg.solve"):
        if twins.is_array(b, 1):
            return lambda g, ans, a, b: -np.outer(
                np.linalg.solve(np.ascontiguousarray(a.T), g), ans)
        return lambda g, ans, a, b: -(np.linalg.solve(np.ascontiguousarray(a.T), g) @ ans.T)
    if not twins.is_array(b, a.ndim):
        twins.unsupported("the derivative of np.linalg.solve of a stack and a vector")
    st, sa = _stacked(_solve_t_stack), _stacked(_solve_a_stack)
    return lambda g, ans, a, b: sa(st(a, g), ans).reshape(a.shape)


@numba_twin(np.linalg.solve)
def _solve_numba(a, b):
    if twins.is_array(a, 2):
        return lambda a, b: np.linalg.solve(a, b)
    if twins.is_array(a) and twins.is_array(b, a.ndim):
        st = _stacked(_solve_stack)
        return lambda a, b: st(a, b)
    return None


def _inv_stack(a):
    a3 = _s3(a)
    out = np.empty(a3.shape)
    for i in range(a3.shape[0]):
        out[i] = np.linalg.inv(a3[i])
    return out.reshape(a.shape)


def _one_or_stacked(one, stack):
    """A primal twin: NumPy's ``one`` for a matrix, the compiled loop ``stack`` over
    a stack of matrices, none for anything else."""
    def typer(a):
        if twins.is_array(a, 2):
            return lambda a: one(a)
        if twins.is_array(a) and a.ndim > 2:
            st = _stacked(stack)
            return lambda a: st(a)
        return None
    return typer


numba_twin(np.linalg.inv, always=True)(_one_or_stacked(np.linalg.inv, _inv_stack))


def _inv_grad_stack(g, ans):
    g3, x3 = _s3(g), _s3(ans)
    out = np.empty(g3.shape)
    for i in range(g3.shape[0]):
        out[i] = -(x3[i].T @ g3[i] @ x3[i].T)
    return out.reshape(ans.shape)


@numba_twin(inv_vjp)
def _inv_vjp_numba(g, ans, a):
    if _square(a, "np.linalg.inv"):
        return lambda g, ans, a: -(ans.T @ g @ ans.T)
    st = _stacked(_inv_grad_stack)
    return lambda g, ans, a: st(g, ans)


def _det_adjugate_t(a):
    """Numba: the transposed adjugate of ``a`` from its SVD (exact when singular)."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    n = s.shape[0]
    p = np.ones(n)
    left = 1.0
    for i in range(n):
        p[i] = left
        left *= s[i]
    right = 1.0
    for i in range(n - 1, -1, -1):
        p[i] *= right
        right *= s[i]
    return np.linalg.det(u) * np.linalg.det(vh) * ((u * p) @ vh)


def _det_stack(a):
    a3 = _s3(a)
    out = np.empty(a3.shape[0])
    for i in range(a3.shape[0]):
        out[i] = np.linalg.det(a3[i])
    return out.reshape(a.shape[:-2])


def _slogdet_stack(a):
    a3 = _s3(a)
    sign, logdet = np.empty(a3.shape[0]), np.empty(a3.shape[0])
    for i in range(a3.shape[0]):
        sign[i], logdet[i] = np.linalg.slogdet(a3[i])
    return sign.reshape(a.shape[:-2]), logdet.reshape(a.shape[:-2])


numba_twin(np.linalg.det, always=True)(_one_or_stacked(np.linalg.det, _det_stack))
numba_twin(np.linalg.slogdet, always=True)(_one_or_stacked(np.linalg.slogdet, _slogdet_stack))


def _per_matrix_grad(kernel):
    """A compiled ``f(g, a)``: ``g[i] * kernel(a[i])`` for each matrix of the stack a."""
    k = twins.jitted(kernel)

    def stack(g, a):
        a3 = _s3(a)
        gf = np.ascontiguousarray(g).ravel()
        out = np.empty(a3.shape)
        for i in range(a3.shape[0]):
            out[i] = gf[i] * k(a3[i])
        return out.reshape(a.shape)
    return _stacked(stack)


def _inv_t(a):
    return np.ascontiguousarray(np.linalg.inv(a).T)


@numba_twin(det_vjp)
def _det_vjp_numba(g, ans, a):
    if _square(a, "np.linalg.det"):
        adj = twins.jitted(_det_adjugate_t)
        return lambda g, ans, a: g * adj(a)
    st = _per_matrix_grad(_det_adjugate_t)
    return lambda g, ans, a: st(g, a)


@numba_twin(slogdet_vjp)
def _slogdet_vjp_numba(g, ans, a):
    one = _square(a, "np.linalg.slogdet")
    st = None if one else _per_matrix_grad(_inv_t)
    if twins.is_tuple(g):       # (g_sign, g_logabsdet): the sign is piecewise constant
        if one:
            return lambda g, ans, a: g[1] * np.linalg.inv(a).T
        return lambda g, ans, a: st(g[1], a)
    if one:
        return lambda g, ans, a: g * np.linalg.inv(a).T
    return None


@numba_twin(outer_vjp_a)
def _outer_vjp_a_numba(g, a, b):
    if not (twins.is_array(a) and twins.is_array(b)):
        twins.unsupported("np.outer of numbers")
    return lambda g, a, b: (g @ np.ascontiguousarray(b).ravel()).reshape(a.shape)


@numba_twin(outer_vjp_b)
def _outer_vjp_b_numba(g, a, b):
    if not (twins.is_array(a) and twins.is_array(b)):
        twins.unsupported("np.outer of numbers")
    return lambda g, a, b: (np.ascontiguousarray(a).ravel() @ g).reshape(b.shape)


@numba_twin(np.matmul)
def _matmul_numba(x1, x2, out=None):
    # Numba has the @ operator but no np.matmul.
    if twins.is_none(out):
        return lambda x1, x2, out=None: x1 @ x2
    return None


@numba_twin(np.dot)
def _dot_numba(a, b, out=None):
    # Numba's np.dot takes arrays only; with a number it multiplies.
    if not twins.is_none(out):
        return None
    if twins.is_number(a) or twins.is_number(b):
        return lambda a, b, out=None: a * b
    return lambda a, b, out=None: np.dot(a, b)


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
    return {(1, 1): lambda a, b: np.dot(a, b), (2, 2): lambda a, b: a @ b.T,
            (1, 2): lambda a, b: b @ a, (2, 1): lambda a, b: a @ b}[ra, rb]


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
            return {(1, 1): lambda g, a, b: g * b, (2, 2): lambda g, a, b: g @ b,
                    (1, 2): lambda g, a, b: g @ b, (2, 1): lambda g, a, b: np.outer(g, b)}[ra, rb]
        return {(1, 1): lambda g, a, b: g * a, (2, 2): lambda g, a, b: g.T @ a,
                (1, 2): lambda g, a, b: np.outer(g, a), (2, 1): lambda g, a, b: g @ a}[ra, rb]
    return twin


numba_twin(inner_vjp_a)(_inner_twin(0))
numba_twin(inner_vjp_b)(_inner_twin(1))


# kron of vectors and of matrices: g seen as (p, r, q, s) blocks.
def _kron_twin(which):
    def twin(g, a, b):
        ra, rb = twins.rank(a), twins.rank(b)
        if ra != rb or ra not in (1, 2):
            twins.unsupported("np.kron of these arguments")
        if ra == 1:
            if which == 0:
                return lambda g, a, b: np.ascontiguousarray(g).reshape(
                    (a.shape[0], b.shape[0])) @ b
            return lambda g, a, b: a @ np.ascontiguousarray(g).reshape((a.shape[0], b.shape[0]))

        def blocks(g, a, b):
            p, q = a.shape
            r, s = b.shape
            G4 = np.ascontiguousarray(g).reshape((p, r, q, s))
            out = np.zeros(a.shape if which == 0 else b.shape)
            for i in range(p):
                for j in range(q):
                    block = G4[i, :, j, :]
                    if which == 0:
                        out[i, j] = np.sum(block * b)
                    else:
                        out += block * a[i, j]
            return out
        return blocks
    return twin


numba_twin(kron_vjp_a)(_kron_twin(0))
numba_twin(kron_vjp_b)(_kron_twin(1))
