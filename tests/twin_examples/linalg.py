"""Examples for the twins of rules/linalg, decompositions, solve, einsum, tensordot and
tensor_products."""
from __future__ import annotations

import numpy as np

from ._base import arr, call, like, spd, square

R = "pullback.rules."
EXAMPLES: dict = {}


# ---- products: operand shapes (broadcast stacks too) and their cotangents
_MATMUL_SHAPES = (((3, 4), (4, 5)), ((3, 4), (4,)), ((4,), (4, 5)), ((4,), (4,)),
                  ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)))
_DOT_SHAPES = (((3, 4), (4, 5)), ((3, 4), (4,)), ((4,), (4, 5)), ((4,), (4,)), ((), (3, 4)),
               ((3, 4), ()))
_INNER_SHAPES = (((3, 4), (5, 4)), ((4,), (4,)), ((3, 4), (4,)))    # (more than 2-d is refused)


def _operands(rng, dt, shapes):
    return [(arr(rng, dt, sa) if sa else dt(rng.standard_normal()),
             arr(rng, dt, sb) if sb else dt(rng.standard_normal())) for sa, sb in shapes]


def _product(shapes):
    return lambda rng, dt: [call(a, b) for a, b in _operands(rng, dt, shapes)]


def _product_vjp(primal, shapes):
    return lambda rng, dt: [call(like(rng, primal(a, b)), a, b) for a, b in _operands(rng, dt, shapes)]


EXAMPLES[R + "linalg.stacked_matmul"] = _product(_MATMUL_SHAPES[4:])
EXAMPLES["numpy.matmul"] = _product(_MATMUL_SHAPES)
EXAMPLES[R + "linalg.matmul_vjp_a"] = EXAMPLES[R + "linalg.matmul_vjp_b"] = \
    _product_vjp(np.matmul, _MATMUL_SHAPES)
EXAMPLES["numpy.dot"] = _product(_DOT_SHAPES[:4] + (((2, 3, 4), (4,)),))
EXAMPLES[R + "linalg.dot_vjp_a"] = EXAMPLES[R + "linalg.dot_vjp_b"] = _product_vjp(np.dot, _DOT_SHAPES)
EXAMPLES[R + "linalg.outer_vjp_a"] = EXAMPLES[R + "linalg.outer_vjp_b"] = \
    _product_vjp(np.outer, (((3,), (4,)), ((2, 3), (4,))))
EXAMPLES["numpy.inner"] = _product(_INNER_SHAPES)
EXAMPLES[R + "linalg.inner_vjp_a"] = EXAMPLES[R + "linalg.inner_vjp_b"] = \
    _product_vjp(np.inner, _INNER_SHAPES)


# ---- decompositions (their cotangents: one per result)
def _matrices(rng, dt):
    return [spd(rng, dt, 3), spd(rng, dt, 5), np.stack([spd(rng, dt, 4), spd(rng, dt, 4)])]


def _decomposition(**kw):
    return lambda rng, dt: [call(a, **kw) for a in _matrices(rng, dt)]


def _decomposition_vjp(primal, **kw):
    def make(rng, dt):
        out = []
        for a in _matrices(rng, dt):
            ans = primal(a, **kw)
            g = tuple(like(rng, x) for x in ans) if isinstance(ans, tuple) else like(rng, ans)
            out.append(call(g, tuple(ans) if isinstance(ans, tuple) else ans, a, **kw))
        return out
    return make


def _svd_args(rng, dt):
    return [arr(rng, dt, (4, 3)), arr(rng, dt, (3, 5)), arr(rng, dt, (2, 3, 3))]


def _svd_vjp(rng, dt):
    out = []
    for a in _svd_args(rng, dt):
        ans = tuple(np.linalg.svd(a, full_matrices=False))
        out.append(call(tuple(like(rng, x) for x in ans), ans, a, False))
        s = np.linalg.svd(a, compute_uv=False)
        out.append(call(like(rng, s), s, a, compute_uv=False))
    return out


EXAMPLES["numpy.linalg.cholesky"] = _decomposition()
EXAMPLES[R + "decompositions.cholesky_vjp"] = _decomposition_vjp(np.linalg.cholesky)
EXAMPLES["numpy.linalg.eigh"] = _decomposition()
EXAMPLES[R + "decompositions.eigh_vjp"] = _decomposition_vjp(np.linalg.eigh)
EXAMPLES["numpy.linalg.svd"] = lambda rng, dt: [call(a, full_matrices=False) for a in _svd_args(rng, dt)] \
    + [call(a, compute_uv=False) for a in _svd_args(rng, dt)]
EXAMPLES[R + "decompositions.svd_vjp"] = _svd_vjp
EXAMPLES["numpy.linalg.pinv"] = lambda rng, dt: [call(a) for a in _svd_args(rng, dt)]
EXAMPLES[R + "decompositions.pinv_vjp"] = lambda rng, dt: [
    call(like(rng, ans), ans, a) for a in _svd_args(rng, dt) for ans in (np.linalg.pinv(a),)]


# ---- solve, inv, det
def _systems(rng, dt):
    a, b = square(rng, dt, 4), np.stack([square(rng, dt, 3), square(rng, dt, 3)])
    return [(a, arr(rng, dt, (4,))), (a, arr(rng, dt, (4, 2))), (b, arr(rng, dt, (2, 3, 2)))]


def _solve_vjp(rng, dt):
    out = []
    for a, b in _systems(rng, dt):
        ans = np.linalg.solve(a, b)
        out.append(call(like(rng, ans), ans, a, b))
    return out


def _square_vjp(primal):
    def make(rng, dt):
        out = []
        for a in (square(rng, dt, 4), np.stack([square(rng, dt, 3), square(rng, dt, 3)])):
            ans = primal(a)
            g = tuple(like(rng, x) for x in ans) if isinstance(ans, tuple) else like(rng, ans)
            out.append(call(g, tuple(ans) if isinstance(ans, tuple) else ans, a))
        return out
    return make


def _square_primal(rng, dt):
    return [call(square(rng, dt, 4)), call(np.stack([square(rng, dt, 3), square(rng, dt, 3)]))]


EXAMPLES["numpy.linalg.solve"] = lambda rng, dt: [call(a, b) for a, b in _systems(rng, dt)]
EXAMPLES[R + "solve.solve_vjp_a"] = EXAMPLES[R + "solve.solve_vjp_b"] = _solve_vjp
for _name in ("inv", "det", "slogdet"):
    EXAMPLES[f"numpy.linalg.{_name}"] = _square_primal
    EXAMPLES[R + f"solve.{_name}_vjp"] = _square_vjp(getattr(np.linalg, _name))


# ---- einsum, tensordot, kron, cross
_EINSUMS = (("ij,jk->ik", (3, 4), (4, 5)), ("ij,ij->i", (3, 4), (3, 4)), ("ii->i", (4, 4)),
            ("ij->", (3, 4)), ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("i,j->ij", (3,), (4,)))


def _einsum(rng, dt):
    return [call(spec, *(arr(rng, dt, s) for s in shapes)) for spec, *shapes in _EINSUMS]


def _einsum_vjp(rng, dt):
    out = []
    for c in _einsum(rng, dt):
        g = like(rng, np.einsum(*c.args))
        out += [call(g, k, *c.args) for k in range(1, len(c.args))]
    return out


_TENSORDOTS = (((3, 4), (4, 5), 1), ((2, 3, 4), (3, 4, 5), 2), ((3, 4), (5, 4), ((1,), (1,))),
               ((2, 3, 4), (4, 2), ((0, 2), (1, 0))), ((3,), (4,), 0))


def _tensordot(rng, dt):
    return [call(arr(rng, dt, sa), arr(rng, dt, sb), axes) for sa, sb, axes in _TENSORDOTS]


def _tensordot_vjp(rng, dt):
    return [call(like(rng, np.tensordot(*c.args)), *c.args) for c in _tensordot(rng, dt)]


def _kron_vjp(rng, dt):
    out = []
    for sa, sb in (((2, 3), (3, 2)), ((3,), (4,))):     # (operands of two ranks are refused)
        a, b = arr(rng, dt, sa), arr(rng, dt, sb)
        out.append(call(like(rng, np.kron(a, b)), a, b))
    return out


def _cross(rng, dt):
    return [call(arr(rng, dt, (4, 3)), arr(rng, dt, (4, 3))), call(arr(rng, dt, (3,)), arr(rng, dt, (3,))),
            call(arr(rng, dt, (4, 3)), arr(rng, dt, (3,))),
            call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4)), axis=0)]


def _cross_vjp(rng, dt):
    return [call(like(rng, np.cross(*c.args, **c.kwargs)), *c.args, **c.kwargs) for c in _cross(rng, dt)]


EXAMPLES["numpy.einsum"] = _einsum
EXAMPLES[R + "einsum.einsum_vjp"] = _einsum_vjp
EXAMPLES["numpy.tensordot"] = _tensordot
EXAMPLES[R + "tensordot.tensordot_vjp_a"] = EXAMPLES[R + "tensordot.tensordot_vjp_b"] = _tensordot_vjp
EXAMPLES[R + "tensor_products.kron_vjp_a"] = EXAMPLES[R + "tensor_products.kron_vjp_b"] = _kron_vjp
EXAMPLES["numpy.cross"] = _cross
EXAMPLES[R + "tensor_products.cross_vjp_a"] = EXAMPLES[R + "tensor_products.cross_vjp_b"] = _cross_vjp
