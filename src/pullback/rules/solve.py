"""Derivatives of NumPy's linear systems, inverses and determinants.

linalg.solve, linalg.inv, linalg.det, linalg.slogdet, and their Numba twins,
which loop over stacks of matrices with compiled kernels.

Conventions are those of :mod:`pullback.rules.linalg`.  Notes on particular
rules:

* ``det`` uses the adjugate computed from the SVD, ``U diag(prod_{j!=i} s_j) Vh``
  times ``det(U) det(Vh)``: exact for singular matrices too (where
  ``det * inv(a).T`` would be NaN), with no branch on the data.
* ``slogdet`` returns the pair ``(sign, logabsdet)``.  Its rule takes the
  cotangent of the pair as a pair ``(g_sign, g_logabsdet)``, as that pair
  stacked into one array (leading axis of length 2), or as ``g_logabsdet``
  alone; ``g_sign`` is ignored because the sign is piecewise
  constant (derivative 0).  The cotangent of ``a`` is
  ``g_logabsdet * inv(a).T``; a singular ``a`` raises like ``inv``.
* ``solve(a, b)`` follows NumPy 2: ``b`` is a vector only when it is 1-D.
"""
from __future__ import annotations

import array_api_compat
import numpy as np

from . import results, twins
from .elementwise import as_array, namespace, shape_of, unbroadcast
from .forms import numba_twin
from .linalg import mT
from .registry import defrule
from .tangents import deftangent

__all__ = ["solve_vjp_a", "solve_vjp_b", "inv_vjp", "det_vjp", "slogdet_vjp"]


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
    At = xp.broadcast_to(mT(xp, A), batch + tuple(A.shape[-2:]))
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
    return unbroadcast(-(gb @ mT(xp, X2)), A)


def inv_vjp(g, ans, a):
    """Cotangent of ``a`` in ``np.linalg.inv(a)``: ``-ans.T @ g @ ans.T``."""
    xp = namespace(g, a)
    At = mT(xp, as_array(xp, ans, a))
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
    return xp.reshape(G, tuple(G.shape) + (1, 1)) * mT(xp, xp.linalg.inv(A))


# ---------------------------------------------------------------------------
# Registrations

defrule(np.linalg.solve, "a, b", result=results.solved,
        a="solve_vjp_a(g, ans, a, b)", b="solve_vjp_b(g, ans, a, b)")
defrule(np.linalg.inv, "a", result=results.same_shape, a="inv_vjp(g, ans, a)")
defrule(np.linalg.det, "a", result=results.matrix_scalar, a="det_vjp(g, ans, a)")
deftangent(np.linalg.inv, a="-(ans @ t @ ans)")
deftangent(np.linalg.solve, a="-np.linalg.solve(a, t @ ans)", b="np.linalg.solve(a, t)")
deftangent(np.linalg.det, a="ans * np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1)")
defrule(np.linalg.slogdet, "a", result=results.factors(2, 2), a="slogdet_vjp(g, ans, a)")
# The sign is piecewise constant; d log|det a| = trace(a^-1 da).
deftangent(np.linalg.slogdet, shaped=True,
           a="(0.0 * ans[0], np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1))")


# ---------------------------------------------------------------------------
# Numba twins: a matrix, or a compiled loop over a stack of them.

def _square(a, what):
    """True for one matrix, False for a stack of them (the twins loop over it)."""
    if not (twins.is_array(a) and a.ndim >= 2):
        twins.unsupported(f"the derivative of {what} of this argument")
    return a.ndim == 2


_stack3 = twins.stack3


def _same_batches(a, b):
    """Refuse two stacks of matrices of different batch shapes (NumPy would
    broadcast them; the kernels below pair their matrices one to one)."""
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError("pullback (Numba backend): np.linalg.solve of stacks of "
                         "different batch shapes is not supported; use jit=False")


_s3 = _stack3           # what the kernels below call; _stacked binds the compiled one


def _stacked(kernel):
    """``kernel`` compiled, its globals ``_s3`` and ``_same_batches`` bound to the
    compiled :func:`_stack3` and :func:`_same_batches`."""
    return twins.compiled_with(kernel, _s3=_stack3, _same_batches=_same_batches)


def _solve_stack(a, b):
    _same_batches(a, b)
    a3, b3 = _s3(a), _s3(b)
    out = np.empty(b3.shape, b3.dtype)
    for i in range(a3.shape[0]):
        out[i] = np.linalg.solve(a3[i], b3[i])
    return out.reshape(b.shape)


def _solve_t_stack(a, g):
    """solve(a.T, g) for each matrix of the stacks a and g."""
    _same_batches(a, g)
    a3, g3 = _s3(a), _s3(g)
    out = np.empty(g3.shape, g3.dtype)
    for i in range(a3.shape[0]):
        out[i] = np.linalg.solve(np.ascontiguousarray(a3[i].T), g3[i])
    return out.reshape(g.shape)


def _solve_a_stack(gb, x):
    gb3, x3 = _s3(gb), _s3(x)
    out = np.empty((gb3.shape[0], gb3.shape[1], x3.shape[1]), gb3.dtype)
    for i in range(gb3.shape[0]):
        out[i] = -(gb3[i] @ x3[i].T)
    return out


# The twins below cast operands of different dtypes (a float32 matrix, the float64
# cotangent Numba computes for it, an int right-hand side) to their common dtype
# (twins.one_dtype): Numba's np.linalg and @ take operands of one dtype.  The
# kernels allocate in their operands' dtype, as NumPy returns.

@numba_twin(solve_vjp_b)
def _solve_vjp_b_numba(g, ans, a, b):
    return twins.one_dtype(_solve_vjp_b_impl(g, ans, a, b), g, ans, a, b)


def _solve_vjp_b_impl(g, ans, a, b):
    if _square(a, "np.linalg.solve"):
        return lambda g, ans, a, b: np.linalg.solve(np.ascontiguousarray(a.T), g)
    if not twins.is_array(b, a.ndim):
        twins.unsupported("the derivative of np.linalg.solve of a stack and a vector")
    st = _stacked(_solve_t_stack)
    return lambda g, ans, a, b: st(a, g)


@numba_twin(solve_vjp_a)
def _solve_vjp_a_numba(g, ans, a, b):
    return twins.one_dtype(_solve_vjp_a_impl(g, ans, a, b), g, ans, a, b)


def _solve_vjp_a_impl(g, ans, a, b):
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
        return twins.one_dtype(lambda a, b: np.linalg.solve(a, b), a, b)
    if twins.is_array(a) and twins.is_array(b, a.ndim):
        st = _stacked(_solve_stack)
        return twins.one_dtype(lambda a, b: st(a, b), a, b)
    return None


def _inv_stack(a):
    a3 = _s3(a)
    out = np.empty(a3.shape, a3.dtype)
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
    out = np.empty(g3.shape, g3.dtype)
    for i in range(g3.shape[0]):
        out[i] = -(x3[i].T @ g3[i] @ x3[i].T)
    return out.reshape(ans.shape)


@numba_twin(inv_vjp)
def _inv_vjp_numba(g, ans, a):
    if _square(a, "np.linalg.inv"):
        return twins.one_dtype(lambda g, ans, a: -(ans.T @ g @ ans.T), g, ans, a)
    st = _stacked(_inv_grad_stack)
    return twins.one_dtype(lambda g, ans, a: st(g, ans), g, ans, a)


def _det_adjugate_t(a):
    """Numba: the transposed adjugate of ``a`` from its SVD (exact when singular)."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    n = s.shape[0]
    p = np.ones(n, s.dtype)             # a's dtype: u * p @ vh takes one dtype
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
    out = np.empty(a3.shape[0], a3.dtype)
    for i in range(a3.shape[0]):
        out[i] = np.linalg.det(a3[i])
    return out.reshape(a.shape[:-2])


def _slogdet_stack(a):
    a3 = _s3(a)
    sign, logdet = np.empty(a3.shape[0], a3.dtype), np.empty(a3.shape[0], a3.dtype)
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
        out = np.empty(a3.shape, a3.dtype)
        for i in range(a3.shape[0]):
            out[i] = gf[i] * k(a3[i])
        return out.reshape(a.shape)
    return _stacked(stack)


def _inv_t(a):
    return np.ascontiguousarray(np.linalg.inv(a).T)


@numba_twin(det_vjp)
@twins.keeps_dtype("a")
def _det_vjp_numba(g, ans, a):
    if _square(a, "np.linalg.det"):
        adj = twins.jitted(_det_adjugate_t)
        return lambda g, ans, a: g * adj(a)
    st = _per_matrix_grad(_det_adjugate_t)
    return twins.one_dtype(lambda g, ans, a: st(g, a), g, ans, a)


@numba_twin(slogdet_vjp)
def _slogdet_vjp_numba(g, ans, a):
    one = _square(a, "np.linalg.slogdet")
    st = None if one else _per_matrix_grad(_inv_t)
    if twins.is_tuple(g):       # (g_sign, g_logabsdet): the sign is piecewise constant
        if one:
            return lambda g, ans, a: g[1] * np.linalg.inv(a).T
        return twins.one_dtype(lambda g, ans, a: st(g[1], a), g, ans, a)
    if one:
        return lambda g, ans, a: g * np.linalg.inv(a).T
    return None
