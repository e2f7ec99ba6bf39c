"""Numba twins of array rules beyond the basics (issue #12): each gradient compiled
with ``jit=True`` against ``jit=False`` and central finite differences, on random
shapes where that is cheap (each new shape rank is one more Numba compile)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from test_numba_arrays import check

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate
from pullback.rules.elementwise import SIMD_MIN_SIZE, SIMD_UFUNCS, _sum_onto, unbroadcast

RNG = np.random.default_rng(21)
# Each new shape rank is one more Numba compile; tests/test_every_twin.py checks each
# twin against its target directly, so two random examples a test suffice here.
FEW = settings(max_examples=2, deadline=None)


# ------------------------------------------------------------- manipulation
def _roll(x):
    return (np.sum(np.sin(np.roll(x, 2, axis=1)) * np.arange(x.size).reshape(x.shape))
            + np.sum(np.roll(x, -3) * x) + np.sum(np.cos(np.roll(x, 1, axis=-1))))


@FEW
@given(st.integers(1, 5), st.integers(1, 5))
def test_roll(n, m):
    check(_roll, (RNG.normal(size=(n, m)),))


def _sort(x):
    w = np.arange(x.size, dtype=np.float64).reshape(x.shape)
    return (np.sum(np.sin(np.sort(x)) * w) + np.sum(np.sort(x, axis=0) * w)
            + np.sum(np.sort(x, axis=None) ** 3))


@FEW
@given(st.integers(1, 5), st.integers(1, 5))
def test_sort(n, m):
    check(_sort, (RNG.normal(size=(n, m)),))


def _atleast(x, v):
    return (np.sum(np.sin(np.atleast_1d(x))) + np.sum(np.atleast_2d(x) * 2.0)
            + np.sum(np.atleast_3d(x * v)) + np.sum(np.atleast_3d(v) ** 2)
            + np.sum(np.atleast_2d(v) ** 3))


def test_atleast_of_a_number_and_of_a_vector():
    check(_atleast, (0.7, RNG.normal(size=4)), (0, 1))


# ---------------------------------------------------------------- joining
CONST = np.linspace(0.0, 1.0, 12).reshape(3, 4)        # a read-only global in a tuple


def _joins(x, y, v):
    w = np.arange(3.0)
    return (np.sum(np.sin(np.concatenate((CONST, x, CONST))))
            + np.sum(np.concatenate((x, y), axis=1) ** 2)
            + np.sum(np.sin(np.stack((x, CONST), axis=-1)))
            + np.sum(np.sin(np.hstack((x, y)))) + np.sum(np.hstack((v, w, v)) ** 2)
            + np.sum(np.sin(np.vstack((x, CONST * v[0])))) + np.sum(np.vstack((v, w)) ** 3)
            + np.sum(np.sin(np.column_stack((v, y, w))))
            + np.sum(np.sin(np.dstack((x, CONST))))
            + np.sum(np.sin(np.append(x, y))) + np.sum(np.append(x, y, axis=1) ** 2)
            + np.sum(np.append(v, 2.0) ** 2))


def test_joins_of_mixed_tuples():
    check(_joins, (RNG.normal(size=(3, 4)), RNG.normal(size=(3, 2)), RNG.normal(size=3)),
          (0, 1, 2))


def _array_of(x):
    A = np.array([x, x * 1.0, x + 2.5])
    return np.sum(np.sin(A + A)) + np.sum(np.sin(A) * A)


def test_array_of_a_tuple():
    check(_array_of, (0.3,))


# ---------------------------------------------------------------- products, trace, axes
def _products(A, x, y, s):
    return (np.sum(np.sin(np.outer(x, y))) + np.sum(np.dot(s, x) ** 2) + np.sum(np.dot(A, s))
            + np.sum(np.sin(np.matmul(A, y))) + np.sin(np.trace(A)) + np.trace(A, offset=1)
            + np.trace(A, -1) + np.sum(np.outer(A, x) ** 2))


def test_outer_dot_with_a_number_matmul_trace():
    check(_products, (RNG.normal(size=(3, 4)), RNG.normal(size=3), RNG.normal(size=4), 0.7),
          (0, 1, 2, 3))


def _axes(T):
    w = np.arange(T.size, dtype=np.float64)
    return (np.sum(np.sin(np.trace(T, offset=1)) * w[:T.shape[2]])
            + np.sum(np.sin(np.swapaxes(T, 0, 2)) * w.reshape(T.shape[::-1]))
            + np.sum(np.sin(np.moveaxis(T, 0, 2)) * w.reshape(T.shape[1], T.shape[2], T.shape[0]))
            + np.sum(np.sin(np.flip(T, 1)) * w.reshape(T.shape)) + np.sum(np.flip(T) * T[0, 0])
            + np.sum(np.sin(np.fliplr(T[0])) * T[1]) + np.sum(np.flipud(T[:, 0]) ** 3))


@FEW
@given(st.integers(2, 4), st.integers(2, 4), st.integers(1, 3))
def test_trace_swapaxes_moveaxis_flip(n, m, k):
    check(_axes, (RNG.normal(size=(n, m, k)),))


def _linspace(a, b):
    return np.sum(np.sin(np.linspace(a, b, 5)) * np.arange(5.0)) + np.sum(np.linspace(a, b, 1))


def test_linspace_in_its_endpoints():
    check(_linspace, (0.3, 1.7), (0, 1))


# ------------------------------------------------------------------- norms
def _norms(v, A, T):
    return (np.linalg.norm(v) + np.linalg.norm(v, 3) + np.linalg.norm(v, ord=1)
            + np.linalg.norm(A) + np.linalg.norm(A, "fro") + np.linalg.norm(A, "nuc")
            + np.linalg.norm(T) + np.sum(np.sin(np.linalg.norm(T, axis=1)))
            + np.sum(np.linalg.norm(T, axis=-1, keepdims=True) * T)
            + np.sum(np.linalg.norm(A, 4, axis=0)))


def test_norms():
    check(_norms, (RNG.normal(size=5), RNG.normal(size=(4, 3)), RNG.normal(size=(2, 3, 4))),
          (0, 1, 2))


def _splits(x, T):
    a, b = np.split(x, 2, axis=1)
    c, d, e = np.hsplit(x, [1, 3])
    f, h = np.vsplit(x, 2)
    p, q, r = np.array_split(T, 3, axis=2)
    (s,) = np.split(T, 1)
    u, w = np.dsplit(T, [1])
    return (np.sum(np.sin(a) * b) + np.sum(c ** 2) + np.sum(np.cos(e)) + np.sum(h * 3.0)
            + np.sum(np.sin(p)) + np.sum(r ** 2) + np.sum(s * s) + np.sum(np.sin(w)))


def test_splits():
    check(_splits, (RNG.normal(size=(4, 4)), RNG.normal(size=(2, 3, 4))), (0, 1))


# ---------------------------------------------------------------- decompositions
def _eigh(A):
    w, v = np.linalg.eigh(A)
    w2, v2 = np.linalg.eigh(A, "U")
    # (Functions of the eigenvectors that do not depend on their signs, which
    # LAPACK may choose differently for NumPy and Numba.)
    return (np.sum(np.sin(w)) + np.sum(np.abs(v[:, 0]) * w) + np.sum(w2 * w2)
            + np.sum(np.sin(v2[0, :] * v2[1, :])))


def test_eigh_reads_one_triangle():
    check(_eigh, (RNG.normal(size=(4, 4)),))            # not symmetric: one triangle is read


def _svd(A, B):
    # (Powers of the factors are avoided: on the Python backend their kind is not
    # known and `u ** 3` takes the scalar rule.)
    u, s, vh = np.linalg.svd(A, full_matrices=False)
    u2, s2, vh2 = np.linalg.svd(B)
    # (u[:, j] and vh[j] may both change sign: products of the two do not.)
    return (np.sum(np.sin(s)) + np.sum(np.sin(u[:, 0] * u[:, 1])) + np.sum(vh[1, :] * vh[1, :])
            + np.sum(np.sin(np.linalg.svd(A, compute_uv=False))) + np.sum(s2 * s2)
            + np.sum(np.sin(u2[:, 0] * vh2[0, :])))


def test_svd():
    check(_svd, (RNG.normal(size=(5, 3)), RNG.normal(size=(3, 3))), (0, 1))


def test_svd_full_matrices_of_a_wide_matrix_is_refused_at_run_time():
    def f(A):
        u, s, vh = np.linalg.svd(A)
        return np.sum(np.sin(vh))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        pullback.grad(f, jit=True)(RNG.normal(size=(3, 5)))


def _repeat_inner_kron(T, A, B, v, w, s):
    return (np.sum(np.sin(np.repeat(T, 2, axis=1)) * np.arange(2.0 * T.size).reshape(
                T.shape[0], 2 * T.shape[1], T.shape[2]))
            + np.sum(np.sin(np.repeat(T, 3))) + np.sum(np.repeat(v, 2, axis=0) ** 2)
            + np.sum(np.sin(np.inner(A, B))) + np.sum(np.inner(v, w) ** 2)
            + np.sum(np.sin(np.inner(s, w))) + np.sum(np.inner(v, B) ** 2)
            + np.sum(np.sin(np.inner(A, w)))
            + np.sum(np.sin(np.kron(A, B))) + np.sum(np.sin(np.kron(v, w))))


def test_repeat_inner_kron():
    args = (RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 3)), RNG.normal(size=(4, 3)),
            RNG.normal(size=3), RNG.normal(size=3), 1.5)
    check(_repeat_inner_kron, args, (0, 1, 2, 3, 4, 5))


def _clip_astype_pinv(x, A, lo):
    return (np.sum(np.sin(np.clip(x, a_min=0.1, a_max=1.1))) + np.sum(np.clip(x, lo, 0.5) ** 2)
            + np.sum(np.clip(x, None, 0.3) * x) + np.sum(np.sin(x.astype(np.float64)))
            + np.sum(np.sin(np.linalg.pinv(A))))


def test_clip_astype_pinv():
    check(_clip_astype_pinv, (RNG.normal(size=(3, 4)), RNG.normal(size=(5, 3)), -0.2), (0, 1, 2))


def _astype32(x):
    return np.sum(np.sin(x.astype(np.float64)) * x)


def test_astype_keeps_float32_cotangents():
    x = np.arange(3, dtype=np.float32)
    g = pullback.grad(_astype32, jit=True)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, pullback.grad(_astype32, jit=False)(x), rtol=1e-6)


# ------------------------------------------------------------ stacks of matrices
def _stacks(A, B):
    return (np.sum(np.sin(np.linalg.inv(A))) + np.sum(np.sin(np.linalg.det(A)))
            + np.sum(np.linalg.slogdet(A)[1]) + np.sum(np.sin(np.linalg.solve(A, B)))
            + np.linalg.det(A[0, 1]) + np.sum(np.linalg.inv(A[1, 0]) ** 2))


def test_stacks_of_matrices():
    A = RNG.normal(size=(2, 3, 3, 3)) + 4 * np.eye(3)
    check(_stacks, (A, RNG.normal(size=(2, 3, 3, 2))), (0, 1))


# ----------------------------------------------------------------------- einsum
def _einsums(A, B, C):
    """A (n, m), B (m, p), C (p, n): products, transposes, sums, implicit output."""
    return (np.sum(np.sin(np.einsum("ij,jk->ik", A, B)))
            + np.sum(np.sin(np.einsum("ij->ji", A)) * np.arange(A.size).reshape(A.shape[::-1]))
            + np.sum(np.einsum("ij,jk", A, B) ** 2)
            + np.sum(np.cos(np.einsum("ij,jk,kl->il", A, B, C)))
            + np.sum(np.einsum("ij->i", A) ** 3)
            + np.einsum("ij,ij->", A, np.cos(A))
            + np.sum(np.sin(np.einsum("i,j->ij", A[0], B[:, 0]))))


@FEW
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))
def test_einsum_products_transposes_sums(n, m, p):
    check(_einsums, (RNG.normal(size=(n, m)), RNG.normal(size=(m, p)), RNG.normal(size=(p, n))),
          (0, 1, 2))


def _batched(X, Y):
    return np.sum(np.sin(np.einsum("bij,bjk->bik", X, Y)))


@FEW
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))
def test_einsum_batch_matmul(b, n, m, p):
    check(_batched, (RNG.normal(size=(b, n, m)), RNG.normal(size=(b, m, p))), (0, 1))


def _diagonals(S, T, v, s):
    """Repeated indices (a trace, a diagonal, a diagonal summed out), a number
    operand, ``...`` and a size-1 axis broadcast against its index."""
    return (np.sin(np.einsum("ii->", S)) + np.sum(np.einsum("ii->i", S) ** 2)
            + np.sum(np.sin(np.einsum("iij->j", T))) + np.sum(np.einsum("i,->i", v, s) ** 2)
            + np.sum(np.sin(np.einsum("...ij,...jk->...ik", T, S)))
            + np.sum(np.sin(np.einsum("ij,ij->ij", v[None, :], S))))


def test_einsum_repeated_indices_ellipsis_broadcasting():
    check(_diagonals, (RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3, 3)), RNG.normal(size=3),
                       0.7), (0, 1, 2, 3))


def _sublists(a, b, c, d, e):
    return np.sum(np.sin(np.einsum(a, [0, 1], b, [1, 2], c, [2, 3], d, [3, 3], e, [3], [0, 3]))) \
        + np.sum(np.einsum(a, [Ellipsis, 1], [Ellipsis]) ** 2)


def test_einsum_sublist_form():
    check(_sublists, tuple(RNG.normal(size=s) for s in [(2, 3), (3, 2), (2, 4), (4, 4), (4,)]),
          (0, 1, 2, 3, 4))


def _runtime_subscripts(x, flip):
    s = "ij->ji" if flip else "ij->ij"
    return np.sum(np.einsum(s, x) ** 2)


def test_einsum_with_subscripts_known_only_at_run_time_is_refused():
    with pytest.raises(pullback.NumbaCompileError, match="(?s)einsum with subscripts that are "
                       "not a constant string.*jit=False"):
        pullback.grad(_runtime_subscripts, jit=True)(np.ones((2, 3)), True)


# ------------------------------------------------------------------------- tile
def _tiles(x, v, s):
    return (np.sum(np.sin(np.tile(x, (2, 3))) * np.arange(6.0 * x.size).reshape(
                2 * x.shape[0], 3 * x.shape[1]))
            + np.sum(np.tile(x, 2) ** 2) + np.sum(np.tile(x, [1, 2]) * 0.5)
            + np.sum(np.sin(np.tile(x, (1, 1))))
            + np.sum(np.cos(np.tile(x, (2, 1, 1)))) + np.sum(np.sin(np.tile(v, (3, 1, 2))))
            + np.sum(np.tile(v, 1) * v) + np.sum(np.sin(np.tile(s, 3)))
            + np.sum(np.tile(s * v[0], (2, 2)) ** 2))


@FEW
@given(st.integers(1, 4), st.integers(1, 4))
def test_tile_with_int_and_tuple_reps(n, m):
    check(_tiles, (RNG.normal(size=(n, m)), RNG.normal(size=n), 0.4), (0, 1, 2))


def test_tile_with_reps_of_zero():
    check(lambda x: np.sum(np.tile(x, (0, 2))) + np.sum(np.sin(x)), (RNG.normal(size=(2, 3)),))


def _tile_by_array(x, r):
    return np.sum(np.sin(np.tile(x, r)))


def test_tile_with_reps_an_array_is_refused_naming_the_line():
    # (A list literal of reps is passed as a tuple; an array's length is not known
    # when compiling.)
    with pytest.raises(pullback.NumbaCompileError, match=r"(?s)np\.tile\(x, r\).*np\.tile with "
                       r"reps of type array.*not supported under jit=True"):
        pullback.grad(_tile_by_array, jit=True)(np.ones((2, 3)), np.array([2, 3]))


# ------------------------------------------------------------------------- diff
def _diffs(x, v):
    w = np.arange(1.0, 1.0 + x.size).reshape(x.shape)
    return (np.sum(np.sin(np.diff(x))) + np.sum(np.diff(x, 2) ** 2)
            + np.sum(np.sin(np.diff(x, axis=0)) * np.diff(w, axis=0))
            + np.sum(np.diff(x, n=2, axis=0) ** 2) + np.sum(np.cos(np.diff(x, 1, -1)))
            + np.sum(np.diff(x * w, 0) ** 2) + np.sum(np.sin(np.diff(v, 3)))
            + np.sum(np.diff(v, n=5) ** 2))         # n past the length: empty


@FEW
@given(st.integers(1, 5), st.integers(1, 5))
def test_diff_orders_and_axes(n, m):
    check(_diffs, (RNG.normal(size=(n, m)), RNG.normal(size=4)), (0, 1))


def _diff3(T, k):
    return np.sum(np.sin(np.diff(T, axis=1))) + np.sum(np.diff(T, k, axis=-1) ** 2)


def test_diff_of_a_3d_array_with_a_runtime_order():
    check(_diff3, (RNG.normal(size=(2, 4, 3)), 2))


def _diff_prepend(x):
    return np.sum(np.sin(np.diff(x, prepend=0.0)))


def test_diff_with_prepend_is_refused_naming_the_line():
    with pytest.raises(pullback.NumbaCompileError, match=r"(?s)np\.diff\(x, prepend=0\.0\).*"
                       r"np\.diff with prepend or append.*not supported under jit=True"):
        pullback.grad(_diff_prepend, jit=True)(np.ones(4))


# ------------------------------------------------------------------------ cross
def _crosses(u, v, P, Q):
    return (np.sum(np.sin(np.cross(u, v))) + np.sum(np.cross(P, Q) ** 2)
            + np.sum(np.sin(np.cross(P, v)))                    # a vector against a stack
            + np.sum(np.cos(np.cross(u[:2], Q)))                # a 2-vector against 3-vectors
            + np.sum(np.sin(np.cross(P.T, Q.T, axisa=0, axisb=0, axisc=0)))
            + np.sum(np.cross(P, Q.T, axisb=0) * P)
            + np.sum(np.sin(np.cross(P.T, Q.T, axis=0))))


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
def test_cross_of_vectors_stacks_and_axes():
    check(_crosses, (RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=(4, 3)),
                     RNG.normal(size=(4, 3))), (0, 1, 2, 3))


def _cross_batch(S, T):
    return np.sum(np.sin(np.cross(S, T)))


def test_cross_broadcasts_stacks():
    check(_cross_batch, (RNG.normal(size=(2, 1, 3)), RNG.normal(size=(4, 3))), (0, 1))


def _cross2(u, v):
    return np.sin(np.cross(u, v))


def test_cross_of_two_2_vectors_is_refused_at_run_time():
    # Its result drops the vector axis: a rank Numba would need before it runs.
    with pytest.raises(NotImplementedError, match=r"np\.cross of two 2-vectors.*jit=False"):
        pullback.grad(_cross2, jit=True)(np.ones(2), np.arange(2.0))


# -------------------------------------------------------------------- tensordot
def _tensordots(A, B, T, U, v):
    return (np.sum(np.sin(np.tensordot(A, B, 1))) + np.sum(np.tensordot(T, U, axes=2) ** 2)
            + np.sum(np.sin(np.tensordot(T, U, axes=([1, 2], [0, 1]))))
            + np.sum(np.cos(np.tensordot(T, A, axes=((2,), (-1,)))))
            + np.sum(np.tensordot(T, B, axes=(-1, 0)) ** 2)
            + np.sum(np.sin(np.tensordot(A, v, 0)))                 # an outer product
            + np.tensordot(A, B.T, 2) + np.sum(np.tensordot(v, v, axes=1) * A))


def test_tensordot_int_and_pair_axes():
    A, B = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2))
    T, U = RNG.normal(size=(2, 2, 3)), RNG.normal(size=(2, 3, 4))
    check(_tensordots, (A, B, T, U, RNG.normal(size=3)), (0, 1, 2, 3, 4))


def _tensordot_full(x):
    return np.sum(np.tensordot(x * np.ones((2, 2)), x * np.ones((2, 2)), 2))


def test_tensordot_to_a_number():
    check(_tensordot_full, (0.7,))


def _tensordot_runtime_axes(A, B, k):
    return np.sum(np.sin(np.tensordot(A, B, k)))


def test_tensordot_with_axes_known_only_at_run_time_is_refused():
    with pytest.raises(pullback.NumbaCompileError, match=r"(?s)np\.tensordot\(A, B, k\).*"
                       r"np\.tensordot with an int axes not known when compiling"):
        pullback.grad(_tensordot_runtime_axes, jit=True)(np.ones((2, 3)), np.ones((3, 2)), 1)


def bool_casts(x, p):
    return x * float(p[0] > 0.5) + math.cos(float(x > 1.0)) * p[1] + int(p[1] > 0.0) * x * x


def test_float_and_int_of_a_comparison_compile():
    # Numba types neither float(bool) nor int(bool); Python gives 1.0/0.0 and 1/0.
    for p in (np.array([0.7, -0.2]), np.array([0.2, 0.4])):
        for x in (0.3, 1.7):
            got = pullback.grad(bool_casts, argnums=(0, 1), jit=True)(x, p)
            want = pullback.grad(bool_casts, argnums=(0, 1), jit=False)(x, p)
            for k in range(2):
                assert_close(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-12, atol=0)
                assert_fd_close(np.asarray(got[k]), fd_estimate(bool_casts, (x, p), k),
                             rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------- polyval
def _polyvals(p, x, v, s):
    return (np.sum(np.sin(np.polyval(p, x))) + np.sum(np.polyval(p, v) * v)
            + np.cos(np.polyval(p, s)) + np.polyval(p, 0.5) * s
            + np.sum(np.polyval(p[:1], x) ** 2))          # a constant polynomial


@FEW
@given(st.integers(1, 5), st.integers(1, 4))
def test_polyval_in_coefficients_and_points(n, m):
    check(_polyvals, (RNG.normal(size=n), RNG.normal(size=(m, 2)), RNG.normal(size=m), 0.7),
          (0, 1, 2, 3))


def _polyval_list(a, b, x):
    return np.sum(np.sin(np.polyval([a, b, 2.0], x))) + np.polyval((b, a), a)


def test_polyval_of_a_list_of_coefficients():
    check(_polyval_list, (0.3, -0.8, RNG.normal(size=3)), (0, 1, 2))


# ------------------------------------------------------------------------ rot90
def _weights(a):
    return np.arange(1.0, 1.0 + a.size).reshape(a.shape)


def _rot90s(M, T, k):
    return (np.sum(np.sin(np.rot90(M)) * _weights(np.rot90(M))) + np.sum(np.rot90(M, 2) ** 3)
            + np.sum(np.cos(np.rot90(M, -1)) * _weights(np.rot90(M, 3)))
            + np.sum(np.rot90(M, 4) * M)
            + np.sum(np.sin(np.rot90(T, 1, (1, 2))) * _weights(np.rot90(T, 1, (1, 2))))
            + np.sum(np.rot90(T, k, axes=(2, 0)) * _weights(np.rot90(T, k, axes=(2, 0))))
            + np.sum(np.cos(np.rot90(T, 3, (-1, -3)))))


@FEW
@given(st.integers(1, 4), st.integers(1, 4), st.integers(-5, 5))
def test_rot90_of_matrices_and_3d_arrays(n, m, k):
    check(_rot90s, (RNG.normal(size=(n, m)), RNG.normal(size=(2, n, m)), k), (0, 1))


def _rot90_runtime_axes(T, k, axes):
    return np.sum(np.sin(np.rot90(T, k, axes)) * _weights(np.rot90(T, k, axes)))


def test_rot90_with_k_and_axes_known_only_at_run_time():
    for k, axes in ((1, (2, 1)), (-2, (0, 2)), (3, (1, -3))):
        check(_rot90_runtime_axes, (RNG.normal(size=(2, 3, 4)), k, axes))


def _rot90_float_k(m, k):
    return np.sum(np.sin(np.rot90(m, k)))


def test_rot90_with_a_k_not_an_int_is_refused_naming_the_line():
    with pytest.raises(pullback.NumbaCompileError, match=r"(?s)np\.rot90\(m, k\).*"
                       r"np\.rot90 with k of type float64.*not supported under jit=True"):
        pullback.grad(_rot90_float_k, jit=True)(np.ones((2, 3)), 1.0)


def _rot90_array_axes(m, axes):
    return np.sum(np.sin(np.rot90(m, 1, axes)))


def test_rot90_with_axes_an_array_is_refused_naming_the_line():
    with pytest.raises(pullback.NumbaCompileError, match=r"(?s)np\.rot90\(m, 1, axes\).*"
                       r"np\.rot90 with axes of type array.*not supported under jit=True"):
        pullback.grad(_rot90_array_axes, jit=True)(np.ones((2, 3)), np.array([0, 1]))


# ----------------------------------------------------------------------- interp
KNOTS = np.array([0.0, 0.5, 1.3, 2.0, 3.1])
# Inside, outside and repeated values, none on a knot (the derivative jumps there).
POINTS = np.array([-0.5, 0.1, 0.7, 0.7, 1.9, 2.5, 3.5, 4.0])


def _interps(x, fp, s):
    return (np.sum(np.sin(np.interp(x, KNOTS, fp)) * _weights(x))
            + np.sin(np.interp(s, KNOTS, fp)) + np.interp(2.2, KNOTS, fp * fp)
            + np.sum(np.interp(x[::-1] * s, KNOTS, np.cos(fp)) ** 2))


def test_interp_in_points_and_values():
    for s in (-0.3, 0.3, 1.5, 3.4):
        check(_interps, (POINTS, RNG.normal(size=5), s), (0, 1, 2))
    check(_interps, (POINTS.reshape(2, 4), RNG.normal(size=5), 0.9), (0, 1, 2))


def _interp_bounds(x, fp, lo, hi):
    return (np.sum(np.sin(np.interp(x, KNOTS, fp, lo, hi)))
            + np.sum(np.interp(x, KNOTS, fp, left=lo) ** 2)
            + np.sum(np.interp(x, KNOTS, fp, right=hi) ** 3)
            + np.interp(x[0], KNOTS, fp, lo, right=2.0) * hi)


def test_interp_with_left_and_right():
    check(_interp_bounds, (POINTS, RNG.normal(size=5), 0.3, -0.4), (0, 1, 2, 3))


def _interp_one_knot(x, fp):
    return np.sum(np.sin(np.interp(x, KNOTS[:1], fp[:1]))) + np.sum(np.interp(x, KNOTS[:2], fp[:2]))


def test_interp_on_one_and_two_knots():
    check(_interp_one_knot, (POINTS, RNG.normal(size=5)), (0, 1))


def _interp_period(x, fp):
    return np.sum(np.interp(x, KNOTS, fp, period=4.0))


def test_interp_with_period_is_refused_naming_the_line():
    with pytest.raises(pullback.NumbaCompileError, match=r"(?s)np\.interp\(x, KNOTS, fp, "
                       r"period=4\.0\).*np\.interp with period=.*not supported under jit=True"):
        pullback.grad(_interp_period, jit=True)(POINTS, np.ones(5))


# ------------------------------------- transcendental ufuncs of large float64 arrays
# From SIMD_MIN_SIZE entries the twin has NumPy compute them (SIMD loops, several
# times as fast as Numba's libm call per entry): NumPy's numbers, bit for bit.


def _transcendental(x, u):
    # x: any reals; u: in (0.1, 0.9) (the inverse trigonometric and hyperbolic ones).
    return (np.sum(np.exp(0.5 * x) * u) + np.sum(np.log(u + 1.0)) + np.sum(np.tanh(x.T))
            + np.sum(np.tan(0.3 * u)) + np.sum(np.expm1(0.2 * x[:, ::2]))
            + np.sum(np.log1p(u) * u) + np.sum(np.arctan(x)) + np.sum(np.sinh(0.3 * x))
            + np.sum(np.cosh(0.3 * x) * u) + np.sum(np.arcsin(u)) + np.sum(np.arccos(u) * x)
            + np.sum(np.arctanh(u)) + np.sum(np.arcsinh(x)) + np.sum(np.arccosh(u + 1.5))
            + np.sum(np.exp2(0.3 * x)) + np.sum(np.log2(u) * x)
            + np.sum(np.log10(u + x * x)))


def test_transcendental_ufuncs_of_large_and_strided_arrays():
    assert len(SIMD_UFUNCS) == 17
    # Small: Numba's loops, against jit=False and finite differences.
    check(_transcendental, (RNG.normal(size=(8, 6)), RNG.uniform(0.1, 0.9, size=(8, 6))),
          (0, 1), rtol=1e-6, atol=1e-8)
    # Large (x.T and x[:, ::2] strided, both above SIMD_MIN_SIZE): NumPy's loops,
    # against jit=False (finite differences over 8704 entries would take minutes).
    x = RNG.normal(size=(32, 136))
    u = RNG.uniform(0.1, 0.9, size=(32, 136))
    assert x[:, ::2].size >= SIMD_MIN_SIZE
    want = pullback.grad(_transcendental, (0, 1), jit=False)(x, u)
    got = pullback.grad(_transcendental, (0, 1), jit=True)(x, u)
    for a, b in zip(got, want):
        assert_close(a, b, rtol=1e-12, atol=1e-14)


def _tanh_of(x, w):
    return np.sum(np.tanh(x) * w)


@pytest.mark.parametrize("n", [SIMD_MIN_SIZE - 1, SIMD_MIN_SIZE])
def test_tanh_at_the_size_where_numpy_takes_over(n):
    x = np.linspace(-3.0, 3.0, n)
    w = np.cos(np.arange(n))
    value, dx = pullback.value_and_grad(_tanh_of, jit=True)(x, w)
    assert_close(value, _tanh_of(x, w), rtol=1e-13, atol=0)
    assert_close(dx, w * (1.0 - np.tanh(x) ** 2), rtol=1e-12, atol=1e-15)
    if n >= SIMD_MIN_SIZE:      # NumPy's tanh, bit for bit (ans in g * (1 - ans * ans))
        t = np.tanh(x)
        assert np.array_equal(dx, w * (1.0 - t * t))


def _float32_and_numbers(x32, p):
    s = 0.0
    for i in range(len(p)):
        s += np.exp(p[i]) * np.tanh(p[i])      # numbers: Numba's own np.exp
    return s + float(np.sum(np.exp(x32))) + np.sum(np.log(p * p + 1.0))


def test_transcendental_twin_is_only_called_for_arrays():
    x32 = np.linspace(-1.0, 1.0, 3000, dtype=np.float32)    # float32: Numba's loop
    p = RNG.normal(size=2500)
    check(_float32_and_numbers, (x32, p), 1, rtol=1e-5, atol=1e-6)
    g = pullback.grad(_float32_and_numbers, argnums=1, jit=True)
    g(x32, p)
    src = g.source
    assert "np.exp(" in src and "np.tanh(" in src        # of the numbers p[i]
    assert "log_numba(" in src and "exp_numba(x32)" in src


# ------------------------- unbroadcast onto size-1 and missing axes; max along an axis
def _broadcast_sums(A, r, c, v, B):
    # r (n, 1), c (1, m), v (m,), B (k, 1, m): cotangents summed over size-1 axes,
    # leading axes and both, from C-ordered and transposed (strided) cotangents.
    return (np.sum(np.sin(A + r) * c) + np.sum((A.T * r.T) ** 2) + np.sum(np.cos(A * v))
            + np.sum(np.sin(A * B)) + np.sum(np.exp(c.T * r.T) * A.T))


@FEW
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 3))
def test_unbroadcast_onto_size_one_and_missing_axes(n, m, k):
    check(_broadcast_sums, (RNG.normal(size=(n, m)), RNG.normal(size=(n, 1)),
                            RNG.normal(size=(1, m)), RNG.normal(size=m),
                            RNG.normal(size=(k, 1, m))), (0, 1, 2, 3, 4))


def _sum_onto_by_division(g, x):
    """The twin's sum before it carried the index: each entry's index by division."""
    gc = np.ascontiguousarray(g).ravel()
    out = np.zeros(x.size)
    off = g.ndim - x.ndim
    for i in range(gc.size):
        rem, at, stride = i, 0, 1
        for d in range(g.ndim - 1, off - 1, -1):
            k = rem % g.shape[d]
            rem //= g.shape[d]
            if x.shape[d - off] != 1:
                at += k * stride
            stride *= x.shape[d - off]
        out[at] += gc[i]
    return out.reshape(x.shape)


def test_unbroadcast_sums_in_the_same_order_as_before():
    # Bit for bit: each entry's terms added in g's C order, as the division form did.
    fast, slow = njit(_sum_onto), njit(_sum_onto_by_division)
    for gshape in [(7,), (0,), (3, 4), (3, 0), (5, 1), (2, 3, 4), (3, 1, 5), (2, 2, 3, 4)]:
        g = RNG.normal(size=gshape) * 10.0 ** RNG.integers(-8, 8, size=gshape)
        for r in range(len(gshape) + 1):
            for xshape in itertools.product(*[(1, n) for n in gshape[len(gshape) - r:]]):
                x = np.zeros(xshape)
                for gg in (g, np.asfortranarray(g), g[..., ::-1]):
                    want = slow(gg, x)
                    assert np.array_equal(fast(gg, x), want), (gshape, xshape)
                    if xshape:
                        assert_close(want, unbroadcast(gg, x), rtol=1e-12, atol=1e-300)


def _max_along(A, T):
    return (np.sum(np.max(A, axis=1, keepdims=True) * A) + np.sum(np.max(A, axis=0) ** 2)
            + np.sum(np.min(T, axis=1) * 1.5) + np.sum(np.max(T, axis=-1, keepdims=True) ** 2)
            + np.sum(np.min(T.T, axis=1) * T[:, 0].T) + np.sum(np.amax(A[:, ::2], axis=0)))


def test_max_and_min_along_an_axis():
    A, T = RNG.normal(size=(5, 6)), RNG.normal(size=(3, 4, 5))
    check(_max_along, (A, T), (0, 1))
    # Ties share g equally: against jit=False only (no derivative there).
    A, T = RNG.integers(0, 3, size=(5, 6)) * 1.0, RNG.integers(0, 2, size=(3, 4, 5)) * 1.0
    want = pullback.grad(_max_along, (0, 1), jit=False)(A, T)
    got = pullback.grad(_max_along, (0, 1), jit=True)(A, T)
    for a, b in zip(got, want):
        assert_close(a, b, rtol=1e-13, atol=1e-15)
