"""The derivative of ``np.linalg.norm``.

The 2-norm (and Frobenius) of a zero vector has gradient 0; ``ord=inf``/``-inf``
split ``g`` among the tied extreme entries; ``ord=1`` uses ``sign`` (0 at 0);
``ord=0`` (a count) has gradient 0.  Matrix norms: ``'fro'``, ``'nuc'``,
``1``, ``-1``, ``inf``, ``-inf``, ``2``, ``-2`` (the last two through the SVD;
repeated singular values make them non-differentiable and the SVD picks one
subgradient).  Conventions are those of :mod:`pullback.rules.reductions`.
"""
from __future__ import annotations

import numpy as np

from . import results, twins
from .elementwise import as_array, expand_reduced, like_arg, namespace
from .forms import numba_twin
from .reductions import along_axis, safe_divisor, spreader, sum_keep
from .reductions_second import kind_of_arg, ones_of, slice_sum  # noqa: F401
from .registry import defrule
from .tangents import deftangent

__all__ = ["norm_vjp"]


# ---------------------------------------------------------------------------
# np.linalg.norm

def _vector_norm_vjp(xp, ge, ae, x, ord, axes):
    """``ge``, ``ae``: g and the norm broadcast to x's shape; ``axes``: the reduced axes."""
    if ord is None or ord == 2:
        return ge * x / safe_divisor(xp, ae)            # x == 0 wherever the norm is 0
    if ord == 1:
        return ge * xp.sign(x)
    absx = xp.abs(x)
    if ord == np.inf or ord == -np.inf:
        hit = xp.astype(absx == ae, x.dtype)   # the max (or min) |x|; ties share
        count = sum_keep(xp, hit, axes)
        return ge * xp.sign(x) * (hit / xp.maximum(count, xp.ones_like(count)))
    if ord == 0:
        return xp.zeros_like(ge * x)            # a count of non-zeros: piecewise constant
    p = float(ord)
    # d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) / norm^(p-1); 0 for a zero vector.
    return ge * xp.sign(x) * absx ** (p - 1) / safe_divisor(xp, ae) ** (p - 1)


def _matrix_norm_vjp(xp, gm, am, xm, ord):
    """Matrix norm over the last two axes of ``xm``; ``gm``/``am`` have shape (..., 1, 1)."""
    if ord == "fro":
        return gm * xm / safe_divisor(xp, am)
    if ord == "nuc":
        u, _, vh = xp.linalg.svd(xm, full_matrices=False)
        return gm * (u @ vh)
    if ord == 2 or ord == -2:
        u, _, vh = xp.linalg.svd(xm, full_matrices=False)
        k = 0 if ord == 2 else min(xm.shape[-2:]) - 1   # singular values come sorted descending
        return gm * (u[..., :, k:k + 1] @ vh[..., k:k + 1, :])
    if ord in (1, -1, np.inf, -np.inf):
        # 1: max over columns of the column sums of |x|; inf: max over rows of the row sums.
        over = -2 if ord in (1, -1) else -1
        sums = xp.sum(xp.abs(xm), axis=over, keepdims=True)
        hit = xp.astype(sums == am, xm.dtype)
        count = xp.sum(hit, axis=-1 if over == -2 else -2, keepdims=True)
        return gm * xp.sign(xm) * (hit / count)
    raise ValueError(f"invalid norm order {ord!r} for matrices")


def norm_vjp(g, ans, x, ord=None, axis=None, keepdims=False):
    """Cotangent of ``x`` in ``np.linalg.norm(x, ord, axis, keepdims)``.

    Follows NumPy's dispatch: ``axis=None`` with ``ord=None`` is the 2-norm of
    the flattened array; ``axis=None`` with an ``ord`` is a vector norm for 1-D
    and a matrix norm for 2-D input; an int axis is a vector norm, a pair of
    axes a matrix norm.
    """
    xp = namespace(g, x)
    xa = as_array(xp, x, g)
    if not xp.isdtype(xa.dtype, "real floating"):
        xa = xp.astype(xa, xp.float64)
    nd = xa.ndim
    if axis is None:
        if ord is None or nd == 1:
            axes = tuple(range(nd))
        elif nd == 2:
            axes = (0, 1)
        else:
            raise ValueError("improper number of dimensions to norm")
        if ord is None:   # 2-norm of everything, whatever the ndim
            ge = expand_reduced(g, xa.shape, axes, keepdims, xp, xa)
            ae = expand_reduced(ans, xa.shape, axes, keepdims, xp, xa)
            return like_arg(_vector_norm_vjp(xp, ge, ae, xa, None, axes), x)
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(int(a) % nd for a in axes)   # keep the order: (1, 0) transposes matrices
    if len(axes) == 1:
        ge = expand_reduced(g, xa.shape, axes, keepdims, xp, xa)
        ae = expand_reduced(ans, xa.shape, axes, keepdims, xp, xa)
        return like_arg(_vector_norm_vjp(xp, ge, ae, xa, ord, axes), x)
    if len(axes) != 2:
        raise ValueError("improper number of dimensions to norm")
    # Matrix norm: move the two axes last, work on (..., rows, cols), move them back.
    row, col = axes
    rest = [i for i in range(nd) if i not in axes]
    perm = rest + [row, col]
    xm = xp.permute_dims(xa, tuple(perm))
    batch = tuple(xm.shape[:-2])
    gm = xp.reshape(as_array(xp, g, xa), batch + (1, 1))
    am = xp.reshape(as_array(xp, ans, xa), batch + (1, 1))
    ctm = _matrix_norm_vjp(xp, gm, am, xm, "fro" if ord is None else ord)
    inverse = tuple(int(i) for i in np.argsort(perm))
    return like_arg(xp.permute_dims(ctm, inverse), x)


# ---------------------------------------------------------------------------
# Registration

defrule(np.linalg.norm, "x, ord=None, axis=None, keepdims=False", result=results.reduction,
        x="norm_vjp(g, ans, x, ord, axis, keepdims)")


# ---------------------------------------------------------------------------
# norm_vjp again (Hessians: norm's tangent calls it, see .reductions_second).  A
# p-norm's weight sign(x) |x|^(p-1) / ans^(p-1) (2 and Frobenius included) has
# derivative (p-1) |x|^(p-2) / ans^(p-1) in x and -(p-1) weight / ans in ans; the
# piecewise linear norms (1, inf, -inf, 0, and the matrix 1, -1, inf, -inf) have
# piecewise constant weights, zero there.  The SVD's norms (nuc, 2, -2 of a matrix)
# are refused.

def _norm_power(x, ord, axis):
    """The norm's p when it is a p-norm over its axes (2 for Frobenius), 0.0 for a
    piecewise linear one; raises for the norms through the SVD."""
    nd = np.ndim(x)
    axes = axis if isinstance(axis, (tuple, list)) else None if axis is None else (axis,)
    matrix = (axes is None and ord is not None and nd == 2) or (axes is not None and len(axes) == 2)
    if matrix:
        if ord is None or ord == "fro":
            return 2.0
        if ord in ("nuc", 2, -2):
            raise NotImplementedError(f"the second derivative of np.linalg.norm(..., ord={ord!r}) "
                                      "of a matrix (through the SVD) is not implemented")
        return 0.0
    if ord is None:
        return 2.0
    return 0.0 if ord in (0, 1, np.inf, -np.inf) else float(ord)


def _norm_spread(c, ans, x, axis, keepdims):
    xp = namespace(c, x)
    xa = as_array(xp, x, c)
    axes = tuple(range(xa.ndim)) if axis is None else \
        tuple(sorted(int(a) % xa.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))))
    ce = expand_reduced(c, xa.shape, axes, keepdims, xp, xa)
    ae = safe_divisor(xp, expand_reduced(ans, xa.shape, axes, keepdims, xp, xa))
    return xp, xa, ce, ae


def norm_vjp_vjp_x(g, c, ans, x, ord=None, axis=None, keepdims=False):
    """Cotangent of ``x`` in ``norm_vjp(c, ans, x, ...)``, ``ans`` held fixed."""
    p = _norm_power(x, ord, axis)
    xp, xa, ce, ae = _norm_spread(c, ans, x, axis, keepdims)
    if p == 0.0:
        return like_arg(xp.zeros_like(xa), x)
    weight = 1.0 if p == 2.0 else xp.abs(xa) ** (p - 2)
    return like_arg(g * ce * (p - 1) * weight / ae ** (p - 1), x)


def norm_vjp_vjp_ans(g, c, ans, x, ord=None, axis=None, keepdims=False):
    """Cotangent of ``ans`` in ``norm_vjp(c, ans, x, ...)``: ``-(p-1) sum(g norm_vjp / ans)``."""
    p = _norm_power(x, ord, axis)
    xp, xa, ce, ae = _norm_spread(c, ans, x, axis, keepdims)
    scale = 0.0 if p == 0.0 else 1.0 - p       # a piecewise linear norm's weight: no ans
    return slice_sum(norm_vjp(c, ans, x, ord, axis, keepdims) * (g * scale / ae), ans, axis,
                     keepdims)


def _norm_dot_x(t, c, ans, x, ord=None, axis=None, keepdims=False):
    """The tangent of ``norm_vjp`` along ``t`` in ``x`` (its Jacobian is diagonal)."""
    return norm_vjp_vjp_x(t, c, ans, x, ord, axis, keepdims)


def _norm_dot_ans(t, c, ans, x, ord=None, axis=None, keepdims=False):
    """The tangent of ``norm_vjp`` along ``t`` in ``ans``: ``-(p-1) norm_vjp t / ans``."""
    p = _norm_power(x, ord, axis)
    xp, xa, te, ae = _norm_spread(t, ans, x, axis, keepdims)
    scale = 0.0 if p == 0.0 else 1.0 - p
    return like_arg(norm_vjp(c, ans, x, ord, axis, keepdims) * te * scale / ae, x)


_NORM_ARGS = "ord, axis, keepdims"
defrule(norm_vjp, "c, r, x, ord=None, axis=None, keepdims=False", result=kind_of_arg(2),
        c=f"slice_sum(g * norm_vjp(ones_of(c), r, x, {_NORM_ARGS}), c, axis, keepdims)",
        r=f"norm_vjp_vjp_ans(g, c, r, x, {_NORM_ARGS})",
        x=f"norm_vjp_vjp_x(g, c, r, x, {_NORM_ARGS})")
deftangent(norm_vjp, shaped=True, c=f"norm_vjp(t, r, x, {_NORM_ARGS})",
           r=f"_norm_dot_ans(t, c, r, x, {_NORM_ARGS})",
           x=f"_norm_dot_x(t, c, r, x, {_NORM_ARGS})")


# ---------------------------------------------------------------------------
# Numba twins of norm_vjp and np.linalg.norm: vector norms (no axis on a vector, or
# one int axis) and the Frobenius and nuclear norms of a matrix.  Numba's own
# np.linalg.norm takes no axis.

def _norm_order(ord):
    """``ord`` as a Python value (None, a number or 'fro'/'nuc'), or unsupported."""
    value = twins.literal(ord, ord)
    if twins.is_none(ord):
        return None
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    twins.unsupported("np.linalg.norm with an ord that is not a constant")


def _vector_weight(p):
    """The compiled ``f(x, n)``: d norm / dx times the norm**(p-1), for the vector p-norm
    ``n`` of ``x`` (broadcast to x's shape); 0 for a zero vector, as the Python rule."""
    if p in (None, 2, 2.0, "fro"):
        return twins.jitted(lambda x, n: x / np.where(n == 0, 1.0, n))
    if p == 1:
        return twins.jitted(lambda x, n: np.sign(x) + 0.0 * n)
    if p in (0, np.inf, -np.inf):
        twins.unsupported(f"the derivative of np.linalg.norm with ord={p!r}")
    q = float(p) - 1.0
    return twins.jitted(lambda x, n: np.sign(x) * np.abs(x) ** q / np.where(n == 0, 1.0, n) ** q)


@numba_twin(norm_vjp)
@twins.keeps_dtype("x")
def _norm_vjp_numba(g, ans, x, ord=None, axis=None, keepdims=False):
    if not twins.is_array(x):
        twins.unsupported("np.linalg.norm of a list or a number")
    p = _norm_order(ord)
    if twins.is_none(axis):
        if p == "nuc" and x.ndim == 2:
            def nuclear(g, ans, x, ord=None, axis=None, keepdims=False):
                u, s, vh = np.linalg.svd(x, full_matrices=False)
                return np.sum(g) * (u @ vh)
            return nuclear
        if not (p is None or (x.ndim == 1 and p != "nuc") or (x.ndim == 2 and p == "fro")):
            twins.unsupported(f"the derivative of np.linalg.norm with ord={p!r} of a matrix")
        weight = _vector_weight(p)
        return lambda g, ans, x, ord=None, axis=None, keepdims=False: \
            np.sum(g) * weight(x, np.full(x.shape, np.sum(ans)))
    if not twins.is_int(axis) or isinstance(p, str):
        twins.unsupported("np.linalg.norm over a tuple of axes")
    weight = _vector_weight(p)
    spread, spread_ans = spreader(g, x, axis), spreader(ans, x, axis)
    return lambda g, ans, x, ord=None, axis=None, keepdims=False: \
        spread(g, x, axis % x.ndim) * weight(x, spread_ans(ans, x, axis % x.ndim))


def _norm_primal(t):
    x, axis = t["x"], t["axis"]
    if not twins.is_array(x):
        return None
    p = _norm_order(t["ord"])
    if twins.is_none(axis) and twins.literal(t["keepdims"], False) is False:
        if p is None or p == "fro":
            return lambda x, ord, axis, keepdims: np.sqrt(np.sum(x * x))
        if p == "nuc" and x.ndim == 2:
            return lambda x, ord, axis, keepdims: np.sum(np.linalg.svd(x)[1])
        return lambda x, ord, axis, keepdims: np.linalg.norm(x, ord)
    if isinstance(p, str) or p in (0, np.inf, -np.inf):
        twins.unsupported(f"np.linalg.norm with ord={p!r} along an axis")
    power = 2.0 if p is None else float(p)
    body = along_axis(lambda v, q: np.sum(np.abs(v) ** q) ** (1.0 / q), x, axis, t["keepdims"])
    if body is None:
        return None
    run = twins.jitted(body)
    return lambda x, ord, axis, keepdims: run(x, axis, keepdims, power)


numba_twin(np.linalg.norm, always=True)(twins.signature_twin("x, ord=None, axis=None, keepdims=False",
                                                _norm_primal))
