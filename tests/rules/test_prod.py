"""prod_vjp and cumprod_vjp against independent references.

References, none of which shares code with the rules:
(a) brute force: for each element, the product of the other elements of its
    slice, by plain loops and ``np.delete`` (exact with zeros);
(b) central finite differences (``prod`` is multilinear, so they are accurate
    even at zeros);
(c) PyTorch float64 autograd (``torch.prod``'s backward is exact with zeros).

The rules run on NumPy arrays (fast path, row-loop exact path, cumprod exact
path), on PyTorch tensors and on an ndarray subclass that refuses any access
to a single element, as CUDA arrays do with scalar indexing switched off.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pullback.examples import seed_matrices
from pullback.rules import prod as prod_module
from pullback.rules.cumulative import cumprod_vjp, cumprod_vjp_exact
from pullback.rules.prod import prod_vjp, prod_vjp_exact
from pullback.rules.registry import lookup

from .checks import axes_for, check_vjp, rule_vjp

SETTINGS = settings(max_examples=40, deadline=None)
# The torch_device fixture is set up once for all the examples of a test, as meant.
TORCH_SETTINGS = settings(SETTINGS, suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---------------------------------------------------------------------------
# references

def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def brute_prod_grad(g, x, axis=None, keepdims=False):
    """For each element: g of its slice times the product of the others in the slice."""
    axes = _axes(axis, x.ndim)
    kshape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
    gx = np.broadcast_to(np.reshape(g, kshape), x.shape)
    out = np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        piece = x[tuple(slice(None) if d in axes else i for d, i in enumerate(idx))]
        here = np.ravel_multi_index(tuple(idx[d] for d in axes), piece.shape) if axes else 0
        out[idx] = gx[idx] * np.prod(np.delete(piece.ravel(), here))
    return out


def brute_cumprod_grad(g, x, axis=None):
    """ct[k] = sum_{i >= k} g[i] * prod_{j <= i, j != k} x[j], slice by slice."""
    shape = x.shape
    if axis is None:
        x, g, axis = x.ravel(), np.ravel(g), 0
    xm, gm = np.moveaxis(x, axis, -1), np.moveaxis(np.asarray(g, dtype=float), axis, -1)
    out = np.zeros(xm.shape)
    for idx in np.ndindex(xm.shape[:-1]):
        v, w = xm[idx], gm[idx]
        for k in range(len(v)):
            out[idx + (k,)] = sum(w[i] * np.prod(np.delete(v[:i + 1], k)) for i in range(k, len(v)))
    return np.moveaxis(out, -1, axis).reshape(shape)


def brute_prod_hvp(g, x, v, axis):
    """H v for phi(x) = sum(g * prod(x, axis)): H[i, j] = g * prod of the slice without i and j."""
    axes = _axes(axis, x.ndim)
    kshape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
    reduced = tuple(x.shape[d] for d in axes)
    gx = np.broadcast_to(np.reshape(g, kshape), x.shape)
    out = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        piece = x[tuple(slice(None) if d in axes else i for d, i in enumerate(idx))].ravel()
        i = np.ravel_multi_index(tuple(idx[d] for d in axes), reduced)
        for jdx in np.ndindex(x.shape):
            same_slice = all(idx[d] == jdx[d] for d in range(x.ndim) if d not in axes)
            if same_slice and idx != jdx:
                j = np.ravel_multi_index(tuple(jdx[d] for d in axes), reduced)
                out[idx] += gx[idx] * np.prod(np.delete(piece, [i, j])) * v[jdx]
    return out


def brute_cumprod_hvp(g, x, v):
    """H v for phi(x) = sum(g * cumprod(x)) of a vector x."""
    n = len(x)
    out = np.zeros(n)
    for a in range(n):
        for b in range(n):
            if a != b:
                h = sum(g[i] * np.prod(np.delete(x[:i + 1], [a, b])) for i in range(max(a, b), n))
                out[a] += h * v[b]
    return out


def with_zeros_per_slice(x, axis, counts, rng):
    """x with exactly counts[s] zeros (at random places) in slice s of the reduction."""
    axes = _axes(axis, x.ndim)
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    moved = np.ascontiguousarray(np.transpose(x, kept + axes))
    rows = moved.reshape(-1, int(np.prod([x.shape[d] for d in axes])))
    for r, k in zip(rows, counts):
        r[rng.choice(len(r), size=min(k, len(r)), replace=False)] = 0.0
    return np.transpose(moved, np.argsort(kept + axes))


# ---------------------------------------------------------------------------
# an ndarray that refuses element access (like a CUDA array with scalar indexing off)

class ScalarAccess(AssertionError):
    pass


class NoScalarArray(np.ndarray):
    """Any read of one element, or conversion to a Python scalar, raises."""

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if not isinstance(out, np.ndarray):
            raise ScalarAccess(f"element access x[{key!r}]")
        return out

    def _refuse(self, *args, **kwargs):
        raise ScalarAccess("conversion of a device array to a Python scalar")

    __float__ = __int__ = __bool__ = __index__ = __complex__ = _refuse
    item = tolist = __iter__ = _refuse


def no_scalar(a):
    return np.asarray(a).view(NoScalarArray)


def test_no_scalar_array_refuses_element_access():
    a = no_scalar(np.arange(6.0).reshape(2, 3))
    for touch in (lambda: a[0, 1], lambda: float(a[0, :1]), lambda: bool(a.all()),
                  lambda: a.item(0), lambda: a.tolist(), lambda: list(a[0])):
        with pytest.raises(ScalarAccess):
            touch()
    assert isinstance(a[:, 1:] * 2, NoScalarArray)


# ---------------------------------------------------------------------------
# the seed's matrices (see shared/seeds/prod-gradients-with-zeros.txt)

SEED = seed_matrices()


@pytest.mark.parametrize("name", ["M", "Z", "MM", "ZZ"])
@pytest.mark.parametrize("exact", [None, True])
def test_seed_matrices_axis0(name, exact):
    A = SEED[name]
    ans = np.prod(A, axis=0)
    g = np.ones_like(ans)
    ct = prod_vjp(g, ans, A, 0, exact=exact)
    assert ct.shape == A.shape and np.isfinite(ct).all()
    if A.size <= 50:
        np.testing.assert_allclose(ct, brute_prod_grad(g, A, 0), rtol=1e-13, atol=0)
    else:
        # column by column: the product of the other nine entries
        others = np.stack([np.prod(np.delete(A, i, axis=0), axis=0) for i in range(A.shape[0])])
        np.testing.assert_allclose(ct, others, rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["M", "Z", "MM", "ZZ"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
def test_seed_matrices_all_axes_on_every_backend(name, axis, torch_device):
    torch = pytest.importorskip("torch")
    A = SEED[name]
    g = np.random.default_rng(0).standard_normal(np.shape(np.prod(A, axis=axis)))
    # reference (c): torch.prod's own backward, one dim at a time
    t = torch.tensor(A, requires_grad=True)
    y = t
    for d in sorted(_axes(axis, A.ndim), reverse=True):
        y = y.prod(dim=d)
    (want,) = torch.autograd.grad(y, t, torch.as_tensor(g))
    want = want.cpu().numpy()
    got_np = prod_vjp(g, np.prod(A, axis=axis), A, axis)
    got_exact = prod_vjp(g, np.prod(A, axis=axis), A, axis, exact=True)
    got_torch = prod_vjp(torch.as_tensor(g), y.detach(), torch.tensor(A), axis)
    got_device = prod_vjp(no_scalar(g), no_scalar(np.prod(A, axis=axis)), no_scalar(A), axis)
    assert isinstance(got_torch, torch.Tensor)
    for got in (got_np, got_exact, got_torch.cpu().numpy(), np.asarray(got_device)):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------
# hypothesis: random shapes, axes, keepdims and zeros

@st.composite
def prod_cases(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    axis = draw(st.one_of(axes_for(ndim), st.just(())))
    keepdims = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    zeros = draw(st.sampled_from(["none", "one", "two", "many", "mixed", "sprinkled"]))
    rng = np.random.default_rng(seed)
    # magnitudes in [0.5, 2): products of up to 256 of them stay far from over/underflow
    x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    slices = int(np.prod([s for d, s in enumerate(shape) if d not in _axes(axis, ndim)]))
    counts = {"none": [0] * slices, "one": [1] * slices, "two": [2] * slices,
              "many": [64] * slices, "mixed": list(rng.integers(0, 4, slices))}.get(zeros)
    if counts is not None:
        x = with_zeros_per_slice(x, axis, counts, rng)
    else:
        x[rng.random(shape) < 0.3] = 0.0
    g = rng.standard_normal(np.shape(np.prod(x, axis=axis, keepdims=keepdims)))
    return x, axis, keepdims, g


@SETTINGS
@given(prod_cases())
def test_prod_vjp_matches_brute_force(case):
    x, axis, keepdims, g = case
    ans = np.prod(x, axis=axis, keepdims=keepdims)
    want = brute_prod_grad(g, x, axis, keepdims)
    for got in (prod_vjp(g, ans, x, axis, keepdims),
                prod_vjp(g, None, x, axis, keepdims),
                prod_vjp(g, ans, x, axis, keepdims, exact=True),
                prod_vjp_exact(g, x, axis, keepdims),
                np.asarray(prod_vjp(no_scalar(g), no_scalar(ans), no_scalar(x), axis, keepdims))):
        assert got.shape == x.shape
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@TORCH_SETTINGS
@given(prod_cases())
def test_prod_vjp_torch_against_autograd(torch_device, case):
    torch = pytest.importorskip("torch")
    x, axis, keepdims, g = case
    t = torch.tensor(x, requires_grad=True)
    y = t
    for d in sorted(_axes(axis, x.ndim), reverse=True):
        y = y.prod(dim=d, keepdim=keepdims)
    if not _axes(axis, x.ndim):
        y = t * 1.0                      # prod over no axes is the identity
    (want,) = torch.autograd.grad(y, t, torch.as_tensor(g))
    for ans, exact in ((y.detach(), None), (None, None), (y.detach(), True)):
        got = prod_vjp(torch.as_tensor(g), ans, torch.tensor(x), axis, keepdims, exact=exact)
        assert isinstance(got, torch.Tensor) and got.shape == t.shape
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_torch_meta_tensors_need_no_data():
    """Meta tensors have shapes but no data: reading a value (a zero test, a
    host round-trip) raises, so this shows the device path never reads one."""
    torch = pytest.importorskip("torch")
    x = torch.empty((4, 5, 3), device="meta", dtype=torch.float64)
    for axis in (None, 0, -1, (0, 2)):
        g = torch.empty(x.sum(dim=axis).shape if axis is not None else (), device="meta",
                        dtype=torch.float64)
        assert prod_vjp(g, None, x, axis).shape == x.shape
    assert cumprod_vjp(torch.empty(60, device="meta", dtype=torch.float64), None, x).shape == x.shape
    assert cumprod_vjp(torch.empty_like(x), None, x, 1).shape == x.shape


@pytest.mark.device
def test_cuda_without_host_synchronisation():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.tensor(SEED["ZZ"], device="cuda")
    g = torch.ones(x.shape[1], dtype=x.dtype, device="cuda")
    torch.cuda.set_sync_debug_mode("error")       # any device-to-host copy raises
    try:
        ct = prod_vjp(g, None, x, 0)
        cc = cumprod_vjp(torch.ones_like(x), None, x, 0)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    np.testing.assert_allclose(ct.cpu().numpy(), prod_vjp(np.ones(1000), None, SEED["ZZ"], 0),
                               rtol=1e-12)
    np.testing.assert_allclose(cc.cpu().numpy(),
                               cumprod_vjp(np.ones((10, 1000)), None, SEED["ZZ"], 0), rtol=1e-12)


@pytest.mark.device
def test_jax_arrays_under_jit():
    """A device namespace: always the branch-free path, so it traces under jax.jit."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = SEED["Z"].copy()
    x[1, 0] = 0.0                                          # column 0: two zeros
    g = np.random.default_rng(0).standard_normal(x.shape[1])
    want = brute_prod_grad(g, x, 0)
    got = jax.jit(lambda g, x: prod_vjp(g, None, x, 0))(jnp.asarray(g), jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)
    v = jnp.asarray(x[:, 3])
    got = jax.jit(lambda g, v: cumprod_vjp(g, None, v))(jnp.asarray(g[:5]), v)
    np.testing.assert_allclose(np.asarray(got), brute_cumprod_grad(g[:5], x[:, 3]), rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(prod_cases())
def test_prod_vjp_against_finite_differences(case):
    x, axis, keepdims, _ = case
    check_vjp(lambda a: np.prod(a, axis=axis, keepdims=keepdims),
              lambda g, ans, a: prod_vjp(g, ans, a, axis, keepdims), [x], 0)


def test_registered_template():
    assert lookup(np.prod) is not None and lookup(np.cumprod) is not None
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 2))
    x[1, 2, 0] = x[1, 0, 0] = x[2, 3, 1] = 0.0
    check_vjp(lambda a: np.prod(a, axis=(0, 2)), lambda g, ans, a: rule_vjp(np.prod, "a")(
        g, ans, a, (0, 2)), [x], 0)
    check_vjp(lambda a: np.prod(a, axis=1, keepdims=True, initial=2.5),
              lambda g, ans, a: rule_vjp(np.prod, "a")(g, ans, a, 1, None, None, True, 2.5), [x], 0)
    mask = rng.random(x.shape) < 0.6
    check_vjp(lambda a: np.prod(a, axis=-1, where=mask),
              lambda g, ans, a: rule_vjp(np.prod, "a")(g, ans, a, -1, where=mask), [x], 0)
    check_vjp(lambda a: np.cumprod(a, axis=1), lambda g, ans, a: rule_vjp(np.cumprod, "a")(
        g, ans, a, 1), [x], 0)
    check_vjp(np.cumprod, rule_vjp(np.cumprod, "a"), [x], 0)


# ---------------------------------------------------------------------------
# exact slices per count, each numpy path, edge cases

@pytest.mark.parametrize("zeros", [0, 1, 2, 3, 7])
@pytest.mark.parametrize("shape,axis", [((6, 300), 0),        # row loop, many slices
                                        ((3, 300), 1),        # few long slices: cumprod path
                                        ((7, 5, 4), (0, 2)),  # non-leading tuple of axes
                                        ((4, 9), -1)])
def test_numpy_paths_with_k_zeros_per_slice(zeros, shape, axis):
    rng = np.random.default_rng(zeros)
    x = rng.uniform(0.9, 1.1, shape)
    slices = int(np.prod(np.shape(np.prod(x, axis=axis))))
    x = with_zeros_per_slice(x, axis, [zeros] * slices, rng)
    g = rng.standard_normal(np.shape(np.prod(x, axis=axis)))
    got = prod_vjp(g, np.prod(x, axis=axis), x, axis)
    assert np.isfinite(got).all()
    if x.size <= 200:
        np.testing.assert_allclose(got, brute_prod_grad(g, x, axis), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, prod_vjp_exact(g, x, axis), rtol=1e-12, atol=1e-300)
    if zeros >= 2:
        assert not got.any()
    if zeros == 1:
        assert np.count_nonzero(got) == slices    # only at each slice's zero


def test_mixed_slices_and_exact_zero_pattern():
    x = np.array([[2.0, 0.0, 0.0, 5.0],
                  [3.0, 4.0, 0.0, 0.0],
                  [4.0, 5.0, 6.0, 0.0]])
    want = np.array([[12.0, 20.0, 0.0, 0.0],     # columns: no zero, one zero, two, two
                     [8.0, 0.0, 0.0, 0.0],
                     [6.0, 0.0, 0.0, 0.0]])
    for exact in (None, True):
        np.testing.assert_array_equal(prod_vjp(np.ones(4), np.prod(x, axis=0), x, 0, exact=exact),
                                      want)
    np.testing.assert_array_equal(prod_vjp(np.ones(4), None, no_scalar(x), 0), want)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, None])
@pytest.mark.parametrize("zeros", ["none", "mixed", "one each"])
def test_compiled_kernel_every_form_of_g_and_ans(axis, zeros):
    """The compiled float64 path: with the primal's products (one pass where a row
    of slices has no zero) and without them, rows of both kinds in one call
    (the first half of the slices zero-free), and g as an array, as sum's
    broadcast cotangent, float32, Fortran-ordered and as a scalar."""
    rng = np.random.default_rng(11)
    x = rng.uniform(0.5, 1.5, (3, 4, 5))
    slices = np.size(np.prod(x, axis=axis))
    half = slices // 2
    counts = {"none": [0] * slices, "one each": [1] * slices,
              "mixed": [0] * half + [k % 3 for k in range(slices - half)]}[zeros]
    x = np.ascontiguousarray(with_zeros_per_slice(x, axis, counts, rng))
    ans = np.prod(x, axis=axis)
    shape = np.shape(ans)
    gs = [rng.standard_normal(shape), np.broadcast_to(0.7, shape),
          rng.standard_normal(shape).astype(np.float32)]
    gs += [np.asfortranarray(gs[0])] if len(shape) == 2 else [0.7, np.float64(0.7), np.array(0.7)]
    for g in gs:
        want = brute_prod_grad(np.asarray(g, dtype=np.float64), x, axis)
        for a in (ans, None):
            got = prod_module._prod_vjp_kernel(g, a, x, axis)
            assert got is not None and got.shape == x.shape and np.isfinite(got).all()
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
            np.testing.assert_array_equal(prod_vjp(g, a, x, axis), got)
            if zeros == "one each":
                assert np.count_nonzero(got) <= slices


@np.errstate(over="ignore", invalid="ignore")    # the primal itself overflows here
def test_no_nan_where_the_gradient_is_finite():
    cases = [np.array([np.inf, 2.0, 3.0]),                 # d/dx0 = 6
             np.array([1e200, 1e200, 1e-200]),             # the product overflows, d/dx0 = 1
             np.array([1e-300, 1e-30]),                    # the product underflows to 0
             np.array([0.0, np.inf, 2.0])]                 # d/dx1 = 0, d/dx0 = inf
    wants = [[6.0, np.inf, np.inf], [1.0, 1.0, np.inf], [1e-30, 1e-300], [np.inf, 0.0]]
    for x, want in zip(cases, wants):
        for got in (prod_vjp(1.0, np.prod(x), x), prod_vjp(1.0, np.prod(x), x, exact=True)):
            np.testing.assert_allclose(got[:len(want)], want, rtol=1e-12)


def test_shapes_dtypes_and_scalars():
    # empty reductions and empty kept axes
    for shape, axis in [((0, 3), 0), ((3, 0), 0), ((0, 3), 1), ((2, 0, 2), (0, 1))]:
        x = np.ones(shape)
        g = np.ones(np.shape(np.prod(x, axis=axis)))
        for exact in (None, True):
            assert prod_vjp(g, np.prod(x, axis=axis), x, axis, exact=exact).shape == shape
    # a 0-d array, a NumPy scalar and a Python float
    assert prod_vjp(2.0, 3.0, np.array(3.0)).shape == ()
    ct = prod_vjp(2.0, np.float64(3.0), np.float64(3.0))
    assert np.ndim(ct) == 0 and not isinstance(ct, np.ndarray) and ct == 2.0
    assert prod_vjp(2.0, 3.0, 3.0) == 2.0
    # float32 stays float32 on the exact paths too
    x = np.array([[1.0, 0.0], [2.0, 3.0]], dtype=np.float32)
    for exact in (None, True):
        ct = prod_vjp(np.ones(2, np.float32), np.prod(x, axis=0), x, 0, exact=exact)
        assert ct.dtype == np.float32
        np.testing.assert_array_equal(ct, [[2.0, 3.0], [1.0, 0.0]])


def test_cumprod_fallback_scan_matches_cumprod():
    import array_api_compat.numpy as xnp

    class Bare:                      # a namespace with neither cumulative_prod nor cumprod
        def __getattr__(self, name):
            if name in ("cumulative_prod", "cumprod"):
                raise AttributeError(name)
            return getattr(xnp, name)

    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 3, 5, 8, 13):
        y = rng.standard_normal((3, n))
        y[0, n // 2:n // 2 + 1] = 0.0
        np.testing.assert_allclose(prod_module.cumprod_last(Bare(), y), np.cumprod(y, axis=-1),
                                   rtol=1e-13)
    x = rng.standard_normal((4, 6))
    x[1, 2] = x[3, 0] = x[3, 4] = 0.0
    np.testing.assert_allclose(prod_module._others_product_last(Bare(), x),
                               brute_prod_grad(np.ones(4), x, -1), rtol=1e-13)


# ---------------------------------------------------------------------------
# cumprod

@st.composite
def cumprod_cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    x[rng.random(shape) < draw(st.sampled_from([0.0, 0.2, 0.5]))] = 0.0
    g = rng.standard_normal(np.shape(np.cumprod(x, axis=axis)))
    return x, axis, g


@SETTINGS
@given(cumprod_cases())
def test_cumprod_vjp_matches_brute_force(case):
    x, axis, g = case
    ans = np.cumprod(x, axis=axis)
    want = brute_cumprod_grad(g, x, axis)
    for got in (cumprod_vjp(g, ans, x, axis), cumprod_vjp(g, None, x, axis),
                cumprod_vjp(g, ans, x, axis, exact=True), cumprod_vjp_exact(g, x, axis),
                np.asarray(cumprod_vjp(no_scalar(g), no_scalar(ans), no_scalar(x), axis))):
        assert got.shape == x.shape and np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@TORCH_SETTINGS
@given(cumprod_cases())
def test_cumprod_vjp_torch_against_autograd(torch_device, case):
    torch = pytest.importorskip("torch")
    x, axis, g = case
    t = torch.tensor(x, requires_grad=True)
    y = torch.cumprod(t.reshape(-1), 0) if axis is None else torch.cumprod(t, axis)
    (want,) = torch.autograd.grad(y, t, torch.as_tensor(g))
    for exact in (None, True):
        got = cumprod_vjp(torch.as_tensor(g), y.detach(), torch.tensor(x), axis, exact=exact)
        assert isinstance(got, torch.Tensor) and torch.isfinite(got).all()
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_cumprod_long_slices_and_scalars():
    rng = np.random.default_rng(5)
    x = rng.uniform(0.99, 1.01, (2, 300))
    x[0, [10, 200]] = 0.0
    x[1, 150] = 0.0
    g = rng.standard_normal(x.shape)
    want = brute_cumprod_grad_fast(g, x)
    for exact in (None, True):
        got = cumprod_vjp(g, np.cumprod(x, axis=1), x, 1, exact=exact)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert cumprod_vjp(2.0, np.array([3.0]), 3.0) == 2.0


def brute_cumprod_grad_fast(g, x):
    """Along axis 1, O(n^2) per row with the k-th entry replaced by 1 (exact with zeros)."""
    out = np.zeros_like(x)
    for r in range(x.shape[0]):
        for k in range(x.shape[1]):
            v = x[r].copy()
            v[k] = 1.0
            out[r, k] = np.dot(g[r, k:], np.cumprod(v)[k:])
    return out


# ---------------------------------------------------------------------------
# second derivatives: the exact path differentiated again by torch

@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_exact_prod_path_is_twice_differentiable(axis, torch_device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x = rng.uniform(0.5, 1.5, (4, 3))
    x[1, 0] = x[3, 0] = 0.0          # exactly two zeros in column 0
    x[2, 2] = 0.0                    # one zero in column 2
    x[3, 1] = 0.0                    # and two in row 3
    g = rng.standard_normal(np.shape(np.prod(x, axis=axis)))
    v = rng.standard_normal(x.shape)
    want = brute_prod_hvp(g, x, v, axis)

    t = torch.tensor(x, requires_grad=True)
    gt = torch.as_tensor(g)
    ct = prod_vjp(gt, None, t, axis, exact=True)
    (ours,) = torch.autograd.grad(ct, t, torch.as_tensor(v))
    np.testing.assert_allclose(ours.cpu().numpy(), want, rtol=1e-12, atol=1e-12)

    # torch's own double backward agrees
    y = t
    for d in sorted(_axes(axis, 2), reverse=True):
        y = y.prod(dim=d)
    (gx,) = torch.autograd.grad(y, t, gt, create_graph=True)
    (theirs,) = torch.autograd.grad(gx, t, torch.as_tensor(v))
    np.testing.assert_allclose(theirs.cpu().numpy(), want, rtol=1e-12, atol=1e-12)

    # the two zeros of column 0: the gradient is 0 there, the mixed second
    # derivative is the product of the rest
    if axis == 0:
        e = np.zeros_like(x)
        e[3, 0] = 1.0
        (col,) = torch.autograd.grad(prod_vjp(gt, None, t, 0, exact=True), t, torch.as_tensor(e))
        assert col[1, 0].item() == pytest.approx(g[0] * x[0, 0] * x[2, 0], rel=1e-14)


def test_exact_cumprod_path_is_twice_differentiable(torch_device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    x = rng.uniform(0.5, 1.5, 9)
    x[[2, 6]] = 0.0
    g = rng.standard_normal(9)
    v = rng.standard_normal(9)
    t = torch.tensor(x, requires_grad=True)
    ct = cumprod_vjp(torch.as_tensor(g), None, t, exact=True)
    (ours,) = torch.autograd.grad(ct, t, torch.as_tensor(v))
    np.testing.assert_allclose(ours.cpu().numpy(), brute_cumprod_hvp(g, x, v), rtol=1e-12, atol=1e-12)


def test_fast_path_on_torch_is_differentiable_without_zeros(torch_device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    x = rng.uniform(0.5, 1.5, (3, 4))
    g, v = rng.standard_normal(4), rng.standard_normal(x.shape)
    t = torch.tensor(x, requires_grad=True)
    ans = torch.prod(t, 0)                        # ans carries its own graph
    ct = prod_vjp(torch.as_tensor(g), ans, t, 0)  # auto: the fast path, g * ans / x
    (ours,) = torch.autograd.grad(ct, t, torch.as_tensor(v))
    np.testing.assert_allclose(ours.cpu().numpy(), brute_prod_hvp(g, x, v, 0), rtol=1e-12, atol=1e-12)
