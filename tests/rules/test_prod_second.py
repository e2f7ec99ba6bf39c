"""The tangent of np.prod (prod_jvp) and its derivative, against independent references.

References, none of which shares code with the rules:
(a) brute force: the Hessian of ``sum(prod(A, axis))``, entry ``(i, k)`` of one
    slice the product of the slice without entries i and k (``np.delete``);
(b) central finite differences (prod_jvp is multilinear in x, linear in v, so
    they are accurate at zeros too);
(c) PyTorch float64 double backward (``torch.func.hessian``).

The Hessian is taken reverse over forward: the forward-mode code of ``f`` is
differentiated again by the reverse transform, one Hessian-vector product per
unit direction.
"""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback.backends.python import PYTHON
from pullback.core.kinds import kind_of_value
from pullback.pipeline import derivative
from pullback.rules.prod_second import prod_jvp, prod_jvp_vjp_x

from .checks import check_rule, check_vjp, rule_vjp
from .test_prod import no_scalar, with_zeros_per_slice

ZEROS = [0, 1, 2, 3]
AXES = [0, 1, None, (0, 2), -1]


def _case(shape, axis, zeros, seed=0):
    """x with exactly ``zeros`` zeros per reduced slice, and a direction v."""
    rng = np.random.default_rng(seed + 10 * zeros)
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    slices = int(np.prod(np.shape(np.prod(x, axis=axis))))
    x = np.ascontiguousarray(with_zeros_per_slice(x, axis, [zeros] * slices, rng))
    return x, rng.standard_normal(shape)


def brute_prod_jvp(v, x, axis, keepdims=False):
    """sum_i v_i prod_{j != i} x_j per slice, by deleting each entry in turn."""
    out = np.zeros(np.shape(np.prod(x, axis=axis, keepdims=True)))
    for idx in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[idx] = v[idx]
        others = x.copy()
        others[idx] = 1.0
        out += np.prod(others, axis=axis, keepdims=True) * (
            np.sum(e, axis=axis, keepdims=True))
    return out if keepdims else np.reshape(out, np.shape(np.prod(x, axis=axis)))


def brute_prod_jvp_vjp_x(g, v, x, axis):
    """g * sum_{i != k} v_i prod_{j not in {i, k}} x_j at each x_k, by setting x_k to 1
    and v_k to 0 and taking the tangent of the rest."""
    gk = np.reshape(g, np.shape(np.prod(x, axis=axis, keepdims=True)))
    out = np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        xs, vs = x.copy(), v.copy()
        xs[idx], vs[idx] = 1.0, 0.0
        out[idx] = np.broadcast_to(gk * brute_prod_jvp(vs, xs, axis, True), x.shape)[idx]
    return out


# ---------------------------------------------------------------------------
# every path (division, compiled, doubling scan) against brute force

@pytest.mark.parametrize("zeros", ZEROS)
@pytest.mark.parametrize("axis", AXES)
def test_every_path_against_brute_force(zeros, axis):
    x, v = _case((4, 3, 5), axis, zeros, seed=3)
    p = np.prod(x, axis=axis)
    g = np.random.default_rng(5).standard_normal(np.shape(p))
    want_jvp, want_ct = brute_prod_jvp(v, x, axis), brute_prod_jvp_vjp_x(g, v, x, axis)
    inputs = [(x, v, g), (np.asfortranarray(x), v, g),            # compiled or division
              (no_scalar(x), no_scalar(v), no_scalar(g))]         # the doubling scan
    for xi, vi, gi in inputs:
        for pi in (None, p):
            got = np.asarray(prod_jvp(vi, pi, xi, axis))
            assert got.shape == np.shape(p)
            np.testing.assert_allclose(got, want_jvp, rtol=1e-12, atol=1e-14)
            got = np.asarray(prod_jvp_vjp_x(gi, vi, pi, xi, axis))
            assert got.shape == x.shape and np.isfinite(got).all()
            np.testing.assert_allclose(got, want_ct, rtol=1e-10, atol=1e-14)
    # float32 tangents and a broadcast cotangent through the compiled kernels
    got = prod_jvp_vjp_x(np.broadcast_to(0.5, np.shape(p)), v.astype(np.float32), None, x, axis)
    np.testing.assert_allclose(got, brute_prod_jvp_vjp_x(np.full(np.shape(p), 0.5),
                                                         v.astype(np.float32), x, axis),
                               rtol=1e-10, atol=1e-14)


def test_many_short_slices_and_one_long_one():
    """The compiled kernels' layouts: many slices along the last axis (the transposed
    loop), and one long slice with zeros."""
    for shape, axis in (((300, 7), 1), ((7, 300), 0), ((2000,), None)):
        x, v = _case(shape, axis, 2, seed=9)
        p = np.prod(x, axis=axis)
        g = np.random.default_rng(6).standard_normal(np.shape(p))
        exact = prod_jvp_vjp_x(no_scalar(g), no_scalar(v), None, no_scalar(x), axis)
        np.testing.assert_allclose(prod_jvp_vjp_x(g, v, p, x, axis), np.asarray(exact),
                                   rtol=1e-10, atol=1e-300)
        np.testing.assert_allclose(prod_jvp(v, p, x, axis),
                                   np.asarray(prod_jvp(no_scalar(v), None, no_scalar(x), axis)),
                                   rtol=1e-10, atol=1e-300)


# ---------------------------------------------------------------------------
# prod's tangent (now prod_jvp) and prod_jvp's own rule, by finite differences

@pytest.mark.parametrize("zeros", ZEROS)
@pytest.mark.parametrize("axis,keepdims", [(0, False), (1, True), (None, False), ((0, 2), True)])
def test_prod_rule_and_tangent_with_zeros(zeros, axis, keepdims):
    x, _ = _case((4, 3, 2), axis, zeros)
    check_rule(np.prod, [x], kwargs=dict(axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("zeros", ZEROS)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_prod_jvp_rule_with_zeros(zeros, axis, keepdims):
    """The templates of v and x (p passed as None: the value is then a function of
    v and x alone, as finite differences need), and prod_jvp's own tangent."""
    x, v = _case((4, 3, 2), axis, zeros)
    check_rule(prod_jvp, [v, None, x], kwargs=dict(axis=axis, keepdims=keepdims),
               only=("v", "x"))


@pytest.mark.parametrize("zeros", ZEROS)
@pytest.mark.parametrize("axis", AXES)
def test_prod_jvp_with_the_products_given(zeros, axis):
    """With ``p = prod(x)`` passed, as forward mode does (the fast paths read it)."""
    x, v = _case((4, 3, 2), axis, zeros)

    def jvp(v, x):
        return prod_jvp(v, np.prod(x, axis=axis), x, axis)

    want = brute_prod_jvp(v, x, axis)
    np.testing.assert_allclose(jvp(v, x), want, rtol=1e-12, atol=1e-14)
    r = rule_vjp(prod_jvp, "x")
    check_vjp(lambda x: jvp(v, x), lambda g, ans, x: r(g, ans, v, np.prod(x, axis=axis), x, axis),
              [x], 0)
    r = rule_vjp(prod_jvp, "v")
    check_vjp(lambda v: jvp(v, x), lambda g, ans, v: r(g, ans, v, np.prod(x, axis=axis), x, axis),
              [v], 0)


def test_prod_jvp_initial_where_and_scalars():
    rng = np.random.default_rng(4)
    x, v = rng.uniform(0.5, 1.5, (3, 4)), rng.standard_normal((3, 4))
    x[0, 1] = x[2, 1] = x[1, 3] = 0.0
    mask = rng.random(x.shape) < 0.7
    for kwargs in (dict(initial=2.5), dict(where=mask), dict(initial=-1.5, where=mask)):
        check_rule(prod_jvp, [v, None, x], kwargs=dict(axis=0, **kwargs), only=("v", "x"))
        want = brute_prod_jvp(np.where(mask, v, 0) if "where" in kwargs else v,
                              np.where(mask, x, 1) if "where" in kwargs else x, 0)
        got = prod_jvp(v, np.prod(x, axis=0, **kwargs), x, 0, **kwargs)
        np.testing.assert_allclose(got, want * kwargs.get("initial", 1.0), rtol=1e-12)
    assert prod_jvp(2.0, 3.0, 3.0) == 2.0
    assert prod_jvp_vjp_x(1.0, 2.0, 3.0, 3.0) == 0.0


def test_no_scalar_access_and_torch_tensors():
    """The exact (device) path reads no single element; torch tensors stay tensors."""
    for zeros in ZEROS:
        for axis in AXES:
            x, v = _case((4, 3, 2), axis, zeros)
            g = np.random.default_rng(1).standard_normal(np.shape(np.prod(x, axis=axis)))
            want_jvp = prod_jvp(v, None, x, axis)
            want_ct = prod_jvp_vjp_x(g, v, None, x, axis)
            got_jvp = prod_jvp(no_scalar(v), None, no_scalar(x), axis)
            got_ct = prod_jvp_vjp_x(no_scalar(g), no_scalar(v), None, no_scalar(x), axis)
            np.testing.assert_allclose(np.asarray(got_jvp), want_jvp, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(np.asarray(got_ct), want_ct, rtol=1e-12, atol=1e-14)
            assert np.isfinite(np.asarray(got_ct)).all()


def test_torch_tensors(torch_device):
    torch = pytest.importorskip("torch")
    for zeros in ZEROS:
        x, v = _case((4, 3, 2), 0, zeros)
        g = np.random.default_rng(2).standard_normal((3, 2))
        as_t = torch.as_tensor
        got = prod_jvp_vjp_x(as_t(g), as_t(v), torch.prod(as_t(x), 0), as_t(x), 0)
        assert isinstance(got, torch.Tensor)
        np.testing.assert_allclose(got.cpu().numpy(), prod_jvp_vjp_x(g, v, None, x, 0),
                                   rtol=1e-12, atol=1e-14)
        got = prod_jvp(as_t(v), None, as_t(x), 0)
        np.testing.assert_allclose(got.cpu().numpy(), brute_prod_jvp(v, x, 0), rtol=1e-12,
                                   atol=1e-14)


# ---------------------------------------------------------------------------
# Hessians reverse over forward, against brute force and torch

def prod_axis0(A):
    return np.sum(np.prod(A, axis=0))


def prod_axis0_kept(A):
    return np.sum(np.prod(A, axis=0, keepdims=True))


def prod_axis1(A):
    return np.sum(np.prod(A, axis=1))


def prod_all(A):
    return np.sum(np.prod(A))


def prod_rows_initial(A):
    return np.sum(np.prod(A, axis=1, initial=2.5))


FUNCTIONS = {(0, False): prod_axis0, (0, True): prod_axis0_kept, (1, False): prod_axis1,
             (None, False): prod_all}


def hessian_reverse_over_forward(f, A):
    """H by one Hessian-vector product per unit direction: the reverse pass of the
    forward-mode code, for the cotangent (0, 1) of its (value, tangent)."""
    jvp_fn = derivative(f, (0,), (kind_of_value(A),), PYTHON, mode="forward").fn
    H = np.empty((A.size, A.size))
    for b in range(A.size):
        V = np.zeros(A.size)
        V[b] = 1.0
        _, back = pullback.vjp(jvp_fn, A, V.reshape(A.shape))
        H[:, b] = np.ravel(back((0.0, 1.0))[0])
    return H


def brute_hessian(A, axis):
    """H[(i, j), (k, l)]: the product of the slice without i and k when both are in
    one slice and differ, else 0."""
    idx = list(np.ndindex(A.shape))
    H = np.zeros((A.size, A.size))
    flat = np.arange(A.size).reshape(A.shape)
    for a, ia in enumerate(idx):
        for b, ib in enumerate(idx):
            same = axis is None or all(ia[d] == ib[d] for d in range(A.ndim) if d != axis)
            if same and a != b:
                if axis is None:
                    piece, pos = A.ravel(), (a, b)
                else:
                    where = tuple(slice(None) if d == axis else ia[d] for d in range(A.ndim))
                    piece, pos = A[where], (ia[axis], ib[axis])
                    assert flat[where][pos[0]] == a
                H[a, b] = np.prod(np.delete(piece, list(pos)))
    return H


@pytest.mark.parametrize("zeros", ZEROS)
@pytest.mark.parametrize("axis,keepdims", list(FUNCTIONS))
def test_hessian_reverse_over_forward_is_exact(zeros, axis, keepdims):
    A, _ = _case((5, 4), axis, zeros)
    H = hessian_reverse_over_forward(FUNCTIONS[(axis, keepdims)], A)
    assert np.isfinite(H).all()
    np.testing.assert_allclose(H, brute_hessian(A, axis), rtol=1e-12, atol=1e-14)
    if axis == 1 and not keepdims:
        H = hessian_reverse_over_forward(prod_rows_initial, A)
        np.testing.assert_allclose(H, 2.5 * brute_hessian(A, axis), rtol=1e-12, atol=1e-14)
    if zeros == 2 and axis == 0:
        # the gradient vanishes on a column with two zeros, the mixed second
        # derivative at the two zeros is the product of the rest
        (i, k), j = np.flatnonzero(A[:, 0] == 0), 0
        rest = np.prod(np.delete(A[:, j], [i, k]))
        assert rest != 0 and H[i * 4 + j, k * 4 + j] == pytest.approx(rest, rel=1e-14)


@pytest.mark.parametrize("zeros", ZEROS)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_hessian_against_torch(zeros, axis):
    torch = pytest.importorskip("torch")
    A, _ = _case((5, 4), axis, zeros, seed=7)
    ours = hessian_reverse_over_forward(FUNCTIONS[(axis, False)], A)
    assert np.isfinite(ours).all()

    def f(t):
        return torch.sum(torch.prod(t, dim=axis) if axis is not None else torch.prod(t))
    theirs = torch.func.hessian(f)(torch.tensor(A)).reshape(A.size, A.size).numpy()
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-12, atol=1e-14)


def test_jvp_under_numba_against_the_brute_force_tangent():
    """prod_jvp's Numba twin (the dual-number kernel), with a zero in a column."""
    pytest.importorskip("numba")
    A, V = _case((4, 3), 0, 1)
    _, tangent = pullback.jvp(prod_axis0, (A,), (V,), jit=True)
    expected = sum(V[i] * np.prod(np.delete(A, i, axis=0), axis=0) for i in range(A.shape[0]))
    np.testing.assert_allclose(tangent, np.sum(expected), rtol=1e-13)
