"""Array rules under the Numba backend (issue #12): each gradient compiled with
``jit=True`` against the Python backend and against central finite differences.

The twins that make these compile are registered beside their rules
(``pullback.rules.forms.numba_twin``); a rule without one is refused when the
derivative is generated, with a located ``NumbaCompileError``.
"""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate
from helpers import check_jit as check

RNG = np.random.default_rng(12)


# ---------------------------------------------------------------- reductions
def _sum(A):
    return np.sum(np.sum(A, axis=-1) ** 2) + np.sum(np.sum(A, axis=0, keepdims=True) * A)


def _mean(A):
    return np.sum(np.mean(A, axis=0) ** 2) + np.sum(A.mean(axis=1, keepdims=True) * A)


def _max_min(A):
    return np.sum(np.max(A, axis=1) ** 2) + np.sum(A.min(axis=0, keepdims=True) * A) + np.max(A)


def _var(A):
    return (np.sum(np.var(A, axis=1) ** 2) + np.var(A)
            + np.sum(np.var(A, axis=0, ddof=1, keepdims=True) * A))


def _std(A):
    return np.sum(np.std(A, axis=1)) + np.std(A, ddof=1) + np.sum(A.std(axis=0) * A[0])


def _prod(A):
    return np.sum(np.prod(A, axis=0) ** 2) + np.sum(np.prod(A, axis=-1, keepdims=True) * A) \
        + np.prod(A[0])


def _cumsum(A):
    return np.sum(np.cumsum(A, axis=0) ** 2) + np.sum(np.cumsum(A) ** 2)


def _cumprod(A):
    return np.sum(np.cumprod(A, axis=1) * A) + np.sum(np.cumprod(A))


@pytest.mark.parametrize("f", [_sum, _mean, _max_min, _var, _std, _cumsum],
                         ids=lambda f: f.__name__)
def test_reductions_with_axis_and_keepdims(f):
    check(f, (RNG.random((3, 4)) + 0.5,))


@pytest.mark.parametrize("f", [_prod, _cumprod], ids=lambda f: f.__name__)
def test_prod_and_cumprod_are_exact_with_zeros(f):
    A = RNG.random((3, 4)) + 0.5
    A[0, 0] = A[1, 2] = A[2, 0] = 0.0        # one zero in some slices, two in another
    check(f, (A,))


# ---------------------------------------------------- products, linalg, shapes
def _linalg(A, b):
    return (np.sum(np.linalg.solve(A, b)) + np.sum(np.linalg.inv(A) * A) + np.linalg.det(A)
            + np.linalg.slogdet(A)[1] + np.sum(np.linalg.solve(A, A.T))
            + np.dot(b, np.dot(A, b)) + np.sum(b @ A))


def _shapes_and_broadcasting(M, b):
    return (np.sum(np.concatenate((M, M * 2.0), axis=1) ** 2)
            + np.sum(np.stack((b, b * b), axis=1) ** 2) + np.sum(np.transpose(M) @ b)
            + np.sum(M.reshape(2, 6)[1] ** 2) + np.sum(np.maximum(M, 0.5) ** 2)
            + np.sum(np.minimum(M, M[0])) + np.sum(np.where(M > 0.5, M, M[0] * 2.0) ** 2)
            + np.sum(M[1:, ::2] ** 2) + M[2, 3] * b[0])


def test_products_and_linear_algebra():
    A = RNG.random((3, 3)) + 3 * np.eye(3)
    check(_linalg, (A, RNG.random(3)), (0, 1))


def test_shapes_indexing_and_broadcasting():
    check(_shapes_and_broadcasting, (RNG.random((3, 4)), RNG.random(3)), (0, 1))


# ------------------------------------------------------------------ workloads
def mlp_loss(W1, b1, W2, b2, X, Y):
    """Softmax cross-entropy of a one-hidden-layer MLP (Y one-hot)."""
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    s = z - np.max(z, axis=1, keepdims=True)
    logp = s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def heat(u, c):
    """200 explicit steps of the 1-D heat equation, then the energy."""
    u = u.copy()
    for _ in range(200):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u * u)


def rnn(W, U, h, x):
    for t in range(50):
        h = np.tanh(W @ h + U @ x[t])
    return np.sum(h * h)


def gp_nll(K, y):
    """Negative log-likelihood of a Gaussian process (up to the constant)."""
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))


def workloads():
    r = np.random.default_rng(4)
    Y = np.eye(3)[r.integers(0, 3, 10)]
    B = r.normal(size=(6, 6))
    return {
        "mlp": (mlp_loss, (r.normal(size=(4, 8)), r.normal(size=8), r.normal(size=(8, 3)),
                           r.normal(size=3), r.normal(size=(10, 4)), Y), (0, 1, 2, 3)),
        "heat": (heat, (r.random(20), 0.2), (0, 1)),
        "rnn": (rnn, (0.3 * r.normal(size=(5, 5)), r.normal(size=(5, 3)), r.normal(size=5),
                      r.normal(size=(50, 3))), (0, 1, 2)),
        "gp": (gp_nll, (B @ B.T + 6 * np.eye(6), r.normal(size=6)), (0, 1)),
    }


@pytest.mark.parametrize("name", ["mlp", "heat", "rnn", "gp"])
def test_workloads_compile_and_match(name):
    f, args, argnums = workloads()[name]
    check(f, args, argnums, rtol=1e-5, atol=1e-7)


def test_a_call_without_a_compiled_form_runs_through_object_mode_keywords_and_all():
    # np.gradient: no twin, no Numba implementation; its keywords (axis= is
    # keyword-only, spacing positional) reach it by name from the object-mode block.
    def f(K):
        return np.sum(np.sin(np.gradient(K, 0.5, axis=1, edge_order=2)))
    K = np.arange(12.0).reshape(3, 4) ** 1.5 / 7.0
    with pytest.warns(pullback.PerformanceWarning, match="gradient runs as Python"):
        got = pullback.grad(f, jit=True)(K)
    np.testing.assert_allclose(got, pullback.grad(f)(K), rtol=1e-12)
    assert_fd_close(got, fd_estimate(f, (K,)))


# ------------------------------------------- shape-only tapes and view recomputation
def growing_slices(x, w, b):
    """Temporaries whose shape changes every iteration, read back only for their
    shape (their tape keeps the shape) and views of an array written in place
    (computed again in the reverse sweep), with broadcasting against b[:1]."""
    u = x.copy()
    s = 0.0
    for k in range(2, 7):
        u[1:4] = u[1:4] + 0.5 * (u[:3] - 2.0 * w * u[2:5]) + b[:1]
        s = s + np.sum((w * u[:k] - 0.5 * u[k:2 * k] + b[:1]) * u[1:k + 1])
    return s + np.sum(u * u)


def rows_of_constant(W, x, h):
    """Rows of an array never written, read as values (x[t] in U @ x[t])."""
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t] * h)
    return np.sum(h * h)


def matrix_rnn(W, X, H):
    """2-D temporaries read back only for their shape (two ints a push)."""
    for t in range(X.shape[0]):
        H = np.tanh(W @ H + X[t])
    return np.sum(H * H)


def test_shape_only_tapes_and_recomputed_views():
    r = np.random.default_rng(7)
    check(growing_slices, (r.normal(size=14), 0.7, r.normal(size=3)), (0, 1, 2))
    check(rows_of_constant, (0.3 * r.normal(size=(4, 4)), r.normal(size=(6, 4)), r.normal(size=4)),
          (0, 1, 2))
    check(matrix_rnn, (0.3 * r.normal(size=(4, 4)), r.normal(size=(5, 4, 3)), r.normal(size=(4, 3))),
          (0, 1, 2))
    g = pullback.grad(growing_slices, (0, 1, 2), jit=True)
    g(r.normal(size=14), 0.7, r.normal(size=3))
    src = g.source
    assert "with_shape(" in src, src


def _triangles_and_new_axes(A, v):
    B = np.tril(A, -1) + np.triu(A, 1) * 2.0
    w = np.atleast_2d(v)
    e = np.expand_dims(v, 0)
    return np.sum(B * B) + np.sum(w @ A) + np.sum(e * v) + np.sum(np.atleast_3d(A) * 3.0)


def test_triangles_atleast_and_expand_dims_compile():
    rng = np.random.default_rng(1)
    check(_triangles_and_new_axes, (rng.normal(size=(3, 3)), rng.normal(size=3)), (0, 1))


# ------------------------------------------------ integer-array and boolean indexing
def _repeated_and_negative_positions(a, idx):
    return np.sum(a[idx] ** 2)


def _rows_and_columns(A, idx):
    return np.sum(A[:, idx] ** 2) + np.sum(A[idx] * A[idx]) + np.sum(A[1, idx] * 3.0)


def _masks(A, v):
    w = v[v > 0]
    return np.sum(w * w) + np.sum(A[v > 0] ** 2) + np.sum(A[v > 0.4, 1:] * 3.0)


def _masked_write(A, v):
    B = A * 1.0
    B[v > 0.1] = 2.0 * A[v > 0.1] ** 2
    u = v * 1.0
    u[v < 0.4] = 0.5 * v[v < 0.4]
    return np.sum(B * A) + np.sum(u * v)


def _gather_in_a_loop(x, idx):
    s = 0.0
    for t in range(3):
        s = s + np.sum(x[idx] * x[idx[::-1]]) * (t + 1.0)
    return s


def test_integer_array_and_mask_reads_scatter_add_under_numba():
    """A read through an index array or a mask becomes a scatter-add in the reverse
    sweep; a position read twice (or through a negative index) accumulates."""
    r = np.random.default_rng(3)
    idx = np.array([0, 2, 2, -1, 1])
    check(_repeated_and_negative_positions, (r.normal(size=5), idx))
    check(_rows_and_columns, (r.normal(size=(5, 4)), np.array([3, 0, 3])))
    v = np.array([0.5, -1.0, 2.0, 0.3])
    check(_masks, (r.normal(size=(4, 3)), v), (0, 1))
    check(_masked_write, (r.normal(size=(4, 3)), v), (0, 1))
    check(_gather_in_a_loop, (r.normal(size=6), np.array([5, 1, 1, 0])))


def _two_dimensional_mask(A):
    return np.sum(A[A > 0.2] ** 3)


def _two_dimensional_masked_write(A):
    B = A * 1.0
    B[A > 0.1] = 0.0
    return np.sum(B * A)


@pytest.mark.parametrize("f", [_two_dimensional_mask, _two_dimensional_masked_write])
def test_a_mask_of_two_dimensions_is_refused_located_under_numba(f):
    """Numba takes 1-D masks only (a 2-D one fails inside it with no message): refused
    when the derivative is generated, naming the line; the Python backend runs it."""
    A = np.random.default_rng(5).normal(size=(3, 4))
    with pytest.raises(pullback.NumbaCompileError,
                       match="(?s)boolean mask of more than one dimension.*test_numba_arrays.py"
                             ".*line.*ravel"):
        pullback.grad(f, jit=True)(A)
    assert_fd_close(pullback.grad(f)(A), fd_estimate(f, (A,), 0))


# ------------------------------------------------------------ NaN-ignoring reductions
def _nan_reductions(A):
    return (np.nansum(A * 1.5) + np.sum(np.nansum(A, axis=0) ** 2)
            + np.sum(np.nanmean(A, axis=1, keepdims=True) * 2.0) + np.nanmean(A)
            + np.sum(np.nanmean(A, axis=-1) ** 2))


def test_nansum_and_nanmean_compile_with_an_axis():
    """A NaN entry gets 0, the others match finite differences; a row of NaNs only
    (its nanmean NaN) gives its entries 0, not NaN, as on the Python backend."""
    A = np.random.default_rng(8).normal(size=(4, 3))
    A[1, 2] = np.nan
    nan = np.isnan(A)
    nb = pullback.grad(_nan_reductions, jit=True)(A)
    assert_close(nb, pullback.grad(_nan_reductions)(A), rtol=1e-9, atol=1e-11)
    assert np.all(nb[nan] == 0.0)
    assert_fd_close(nb[~nan], fd_estimate(_nan_reductions, (A,), 0)[~nan])

    def row_means(A):
        return np.sum(np.nanmean(A, axis=1) * 2.0)
    A[3, :] = np.nan
    # d/dA of 2 * nanmean along rows: 2 / (entries present in the row), 0 at a NaN.
    expected = np.array([[2 / 3] * 3, [1.0, 1.0, 0.0], [2 / 3] * 3, [0.0] * 3])
    assert_close(pullback.grad(row_means, jit=True)(A), expected, rtol=1e-12, atol=0)


def _rolled_axes(A, w):
    B = np.rollaxis(A, 2) * w
    return np.sum(B ** 2) + np.sum(np.rollaxis(A, 0, 3)[0] * 3.0) + np.sum(np.rollaxis(A, -1, 1)[:, 0] ** 3)


def test_rollaxis_compiles():
    r = np.random.default_rng(9)
    check(_rolled_axes, (r.normal(size=(2, 3, 4)), r.normal(size=(4, 1, 1))), (0, 1))


def _list_indices(A, v):
    B = A * 1.0
    B[[0, 2]] = v
    return np.sum(B ** 2 * A) + np.sum(A[[True, False, True, True]] * 3.0) + np.sum(A[[3, 3, 0], 1:] ** 2)


def _squeezed(A):
    return np.sum(np.squeeze(A, axis=1) ** 2) + np.sum(A.squeeze(1) @ np.arange(1.0, 3.0))


def test_list_indices_and_squeeze_with_an_axis_compile():
    """A list written as an index is indexed with as its array (Numba takes no list);
    np.squeeze with an int axis is a reshape."""
    r = np.random.default_rng(10)
    check(_list_indices, (r.normal(size=(4, 2)), r.normal(size=2)), (0, 1))
    check(_squeezed, (r.normal(size=(3, 1, 2)),))


def test_squeeze_without_an_axis_is_refused_under_numba():
    def f(A):
        return np.sum(np.squeeze(A) ** 2)
    with pytest.raises(pullback.NumbaCompileError,
                       match="(?s)np.squeeze\\(A\\).*np.squeeze without an int axis="):
        pullback.grad(f, jit=True)(np.ones((3, 1, 2)))


def _numbers_listed(x, y):
    s = 0.0
    for k in range(3):
        s = s + np.mean([x, y * k, 1.0]) * np.std([x * y, y, 0.5 * k])
    return s + np.linalg.norm([x, y]) + np.max((x, 2.0 * y)) + np.sum(np.array([x, y]) ** 2)


def test_numbers_listed_as_an_array_argument_compile():
    """np.mean([x, y]): under Numba the tuple of numbers is made an array first."""
    check(_numbers_listed, (0.3, 0.7), (0, 1))
    check(_numbers_listed, (-1.2, 0.4), (0, 1))


def _averages(A, W):
    return (np.average(A) + np.sum(np.average(A, axis=0) ** 2)
            + np.sum(np.average(A, axis=1, weights=W, keepdims=True) * A)
            + np.average(A, weights=W) ** 2 + np.sum(np.average(A, axis=(0,), weights=W) ** 3))


def test_average_compiles_with_weights_of_the_arrays_shape():
    r = np.random.default_rng(11)
    check(_averages, (r.normal(size=(3, 4)), r.uniform(0.5, 2.0, size=(3, 4))), (0, 1))


def test_nan_reductions_over_a_tuple_of_axes():
    def f(A):
        return np.sum(np.nanmean(A, axis=(0, 2)) ** 2) + np.sum(np.nansum(A, axis=(1, 2)) ** 3)
    A = np.random.default_rng(12).normal(size=(2, 3, 4))
    A[1, 2, 3] = np.nan
    nb = pullback.grad(f, jit=True)(A)
    assert_close(nb, pullback.grad(f)(A), rtol=1e-9, atol=1e-11)
    nan = np.isnan(A)
    assert nb[nan] == 0.0
    assert_fd_close(nb[~nan], fd_estimate(f, (A,), 0)[~nan])
