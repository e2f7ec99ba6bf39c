"""rules/prod_twins: np.prod and its cotangent compiled under jit=True.

The forward folds the rows along the axis; the cotangent reuses the forward's
products (one pass when they are finite and nonzero), counts zeros otherwise,
and falls back to running products when a zero-free product under- or
overflows.  Every gradient here is checked against the product of the other
entries of each slice, computed entry by entry with ``np.delete`` (no shared
code), and every value against NumPy's own ``np.prod``.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .checks import SETTINGS

pytest.importorskip("numba")
import pullback  # noqa: E402


def others_product(A, axis):
    """d sum(w * prod(A, axis)) / dA, entry by entry: w times the product of the
    slice's other entries."""
    A = np.asarray(A, dtype=np.float64)
    out = np.empty_like(A)
    moved = np.moveaxis(A, axis, -1)
    res = np.moveaxis(out, axis, -1)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        for i in range(row.size):
            res[idx + (i,)] = np.prod(np.delete(row, i))
    return out


def weighted_prod(A, w, axis):
    return np.sum(np.prod(A, axis=axis) * w)


def with_zeros(rng, shape, axis, per_slice):
    """Random entries in [-2, 2] with ``per_slice`` zeros in every slice along ``axis``."""
    A = rng.uniform(-2.0, 2.0, shape)
    moved = np.moveaxis(A, axis, -1)
    for idx in np.ndindex(moved.shape[:-1]):
        moved[idx][rng.choice(moved.shape[-1], per_slice, replace=False)] = 0.0
    return A


@pytest.mark.parametrize("shape,axis", [((10, 40), 0), ((10, 40), 1), ((3, 4, 5), 1),
                                        ((3, 4, 5), -1), ((3, 4, 5), 0), ((7,), 0)])
@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_gradient_is_the_product_of_the_others(shape, axis, zeros):
    rng = np.random.default_rng(len(shape) * 10 + zeros)
    A = with_zeros(rng, shape, axis, min(zeros, shape[axis]))
    w = rng.uniform(0.5, 1.5, np.prod(A, axis=axis).shape)
    value, (dA,) = pullback.value_and_grad(weighted_prod, argnums=(0,), jit=True)(A, w, axis)
    assert value == pytest.approx(weighted_prod(A, w, axis), rel=1e-13)
    want = others_product(A, axis) * np.expand_dims(w, axis)
    np.testing.assert_allclose(dA, want, rtol=1e-12, atol=1e-300)
    assert np.all(np.isfinite(dA))


def prod_of_columns(A):
    return np.prod(A, axis=0)


def test_forward_gives_numpys_products_bit_for_bit():
    """The fold runs along the axis in NumPy's order over a leading axis."""
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        A = rng.uniform(0.5, 1.5, (30, 200)).astype(dtype)
        w = rng.uniform(size=200).astype(dtype)
        value = pullback.value_and_grad(lambda a: np.sum(prod_of_columns(a) * w),
                                        jit=True)(A)[0]
        assert value == pytest.approx(float(np.sum(np.prod(A, axis=0) * w)),
                                      rel=1e-12 if dtype == np.float64 else 1e-5)
    # the products themselves, through a gradient whose cotangent they are
    A = rng.uniform(0.5, 1.5, (6, 50))
    got = pullback.grad(lambda a, b: np.sum(np.prod(a, axis=0) * b), argnums=1, jit=True)(
        A, np.ones(50))
    assert np.array_equal(got, np.prod(A, axis=0))


def test_a_product_that_underflows_without_zeros_takes_the_running_products():
    """1e-200 * 1e-200 underflows to 0, so p / x would be wrong: the left and right
    running products give the others' product of every entry."""
    A = np.array([[1e-200, 2.0], [1e-200, 3.0], [1e300, 0.5]])
    (dA,) = pullback.grad(weighted_prod, argnums=(0,), jit=True)(A, np.ones(2), 0)
    np.testing.assert_allclose(dA, others_product(A, 0), rtol=1e-12)
    assert dA[0, 0] == pytest.approx(1e100, rel=1e-12)


def test_float32_in_float32_out():
    rng = np.random.default_rng(4)
    A = with_zeros(rng, (5, 8), 0, 1).astype(np.float32)
    w = np.ones(8, np.float32)
    (dA,) = pullback.grad(weighted_prod, argnums=(0,), jit=True)(A, w, 0)
    assert dA.dtype == np.float32
    np.testing.assert_allclose(dA, others_product(A, 0), rtol=1e-5)


@SETTINGS
@given(rows=st.integers(1, 6), cols=st.integers(1, 9), axis=st.sampled_from([0, 1]),
       zeros=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_random_matrices_with_zeros(rows, cols, axis, zeros, seed):
    rng = np.random.default_rng(seed)
    A = with_zeros(rng, (rows, cols), axis, min(zeros, (rows, cols)[axis]))
    w = rng.uniform(-1.0, 1.0, np.prod(A, axis=axis).shape)
    (dA,) = pullback.grad(weighted_prod, argnums=(0,), jit=True)(A, w, axis)
    np.testing.assert_allclose(dA, others_product(A, axis) * np.expand_dims(w, axis),
                               rtol=1e-12, atol=1e-300)
