import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback.core.kinds import Kind
from pullback.rules import results
from pullback.rules.decompositions import cholesky_vjp, eigh_vjp, fold_triangle, svd_vjp

from .checks import SETTINGS, check_vjp, rule_vjp, seeds, values

dims = st.integers(1, 4)
batches = st.lists(st.integers(1, 3), max_size=2).map(tuple)


def _orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _spread(rng, batch, n):
    """Values at least 0.5 apart (distinct eigen- or singular values), in random order."""
    return rng.permuted(np.broadcast_to(np.arange(1.0, n + 1), batch + (n,)), axis=-1) \
        + rng.uniform(0, 0.5, batch + (n,))


def _symmetric(seed, batch, n, unread="upper"):
    """A symmetric matrix with distinct eigenvalues, plus noise in the triangle
    eigh does not read (the derivative must ignore it)."""
    rng = np.random.default_rng(seed)
    q = _orthogonal(rng, batch, n)
    w = _spread(rng, batch, n) * rng.choice([-1.0, 1.0], batch + (n,))
    a = (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)
    noise = rng.standard_normal(batch + (n, n))
    return a + (np.triu(noise, 1) if unread == "upper" else np.tril(noise, -1))


# ---------------------------------------------------------------------------
# cholesky

@SETTINGS
@given(batch=batches, n=dims, upper=st.booleans(), seed=seeds)
def test_cholesky(batch, n, upper, seed):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(batch + (n, n))
    a = b @ np.swapaxes(b, -1, -2) + n * np.eye(n)
    noise = rng.standard_normal(batch + (n, n))
    a = a + (np.tril(noise, -1) if upper else np.triu(noise, 1))    # not read
    r = rule_vjp(np.linalg.cholesky, "a")
    check_vjp(lambda a: np.linalg.cholesky(a, upper=upper),
              lambda g, ans, a: r(g, ans, a, upper=upper), [a], 0)


def test_fold_triangle():
    g = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(fold_triangle(np, g), [[0, 0, 0], [4, 4, 0], [8, 12, 8]])
    np.testing.assert_array_equal(fold_triangle(np, g, lower=False), fold_triangle(np, g.T).T)


# ---------------------------------------------------------------------------
# eigh: a scalar of (w, v) that does not depend on the signs of the eigenvectors

@SETTINGS
@given(batch=batches, n=dims, uplo=st.sampled_from(["L", "U"]), use=st.sampled_from("wvb"),
       seed=seeds)
def test_eigh(batch, n, uplo, use, seed):
    a = _symmetric(seed, batch, n, unread="upper" if uplo == "L" else "lower")
    ww, wv = values(seed + 1, batch + (n,)), values(seed + 2, batch + (n, n))

    def f(a):
        w, v = np.linalg.eigh(a, uplo)
        return np.sum(ww * w) * (use != "v") + np.sum(wv * v ** 2) * (use != "w")

    def vjp(g, ans, a):
        w, v = np.linalg.eigh(a, uplo)
        cts = [g * ww if use != "v" else 0.0, 2 * g * wv * v if use != "w" else None]
        return rule_vjp(np.linalg.eigh, "a")(cts, (w, v), a, uplo)
    check_vjp(f, vjp, [a], 0)


def test_eigh_eigenvalues_alone_at_a_repeated_eigenvalue():
    a = np.diag([1.0, 1.0, 2.0])
    ct = eigh_vjp([np.ones(3), 0.0], np.linalg.eigh(a), a)
    np.testing.assert_allclose(ct, np.eye(3), atol=1e-12)     # d trace / da = I on the diagonal


# ---------------------------------------------------------------------------
# svd

def _with_singular_values(seed, batch, m, n):
    rng = np.random.default_rng(seed)
    k = min(m, n)
    u = _orthogonal(rng, batch, m)[..., :k]
    v = _orthogonal(rng, batch, n)[..., :k]
    return (u * _spread(rng, batch, k)[..., None, :]) @ np.swapaxes(v, -1, -2)


@SETTINGS
@given(batch=batches, m=dims, n=dims, use=st.sampled_from(["u", "s", "vh", "all"]), seed=seeds)
def test_svd(batch, m, n, use, seed):
    a = _with_singular_values(seed, batch, m, n)
    k = min(m, n)
    wu, ws, wv = (values(seed + i, batch + s) for i, s in
                  enumerate([(m, k), (k,), (k, n)], 1))
    on = {p: use in (p, "all") for p in ("u", "s", "vh")}

    def f(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return (np.sum(wu * u ** 2) * on["u"] + np.sum(ws * s) * on["s"]
                + np.sum(wv * vh ** 2) * on["vh"])

    def vjp(g, ans, a):
        u, s, vh = ans = np.linalg.svd(a, full_matrices=False)
        cts = [2 * g * wu * u if on["u"] else 0.0, g * ws if on["s"] else 0.0,
               2 * g * wv * vh if on["vh"] else None]
        return rule_vjp(np.linalg.svd, "a")(cts, ans, a, False)
    check_vjp(f, vjp, [a], 0)
    # The singular values alone, from compute_uv=False and from full matrices.
    r = rule_vjp(np.linalg.svd, "a")
    check_vjp(lambda a: np.linalg.svd(a, compute_uv=False),
              lambda g, ans, a: r(g, ans, a, compute_uv=False), [a], 0)
    check_vjp(lambda a: np.linalg.svd(a)[1],
              lambda g, ans, a: r([0.0, g, 0.0], np.linalg.svd(a), a), [a], 0)


def test_svd_hermitian_reads_the_lower_triangle():
    a = _symmetric(5, (), 3, unread="upper")
    r = rule_vjp(np.linalg.svd, "a")
    check_vjp(lambda a: np.linalg.svd(a, hermitian=True, compute_uv=False),
              lambda g, ans, a: r(g, ans, a, True, False, True), [a], 0)


def test_svd_full_matrices_of_a_non_square_matrix_refuses_u():
    a = values(1, (3, 2))
    ans = np.linalg.svd(a)
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        svd_vjp([np.ones((3, 3)), 0.0, None], ans, a)


def test_svd_result_kind():
    import ast
    call = ast.parse("f(a, compute_uv=False)", mode="eval").body
    assert results.svd_result(np.linalg.svd, [Kind(2, "f")], {}, call) == Kind(-1, "f")
    call = ast.parse("f(a, False)", mode="eval").body
    assert results.svd_result(np.linalg.svd, [Kind(2, "f")], {}, call).ndim is None


# ---------------------------------------------------------------------------
# pinv

@SETTINGS
@given(batch=batches, m=dims, n=dims, seed=seeds)
def test_pinv(batch, m, n, seed):
    a = _with_singular_values(seed, batch, m, n)
    check_vjp(np.linalg.pinv, rule_vjp(np.linalg.pinv, "a"), [a], 0)
    s = _symmetric(seed, batch, max(m, n))
    r = rule_vjp(np.linalg.pinv, "a")
    check_vjp(lambda a: np.linalg.pinv(a, hermitian=True),
              lambda g, ans, a: r(g, ans, a, hermitian=True), [s], 0)


# ---------------------------------------------------------------------------
# torch

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    from pullback.rules.decompositions import pinv_vjp

    rng = np.random.default_rng(5)
    sym = torch.tensor(_symmetric(6, (2,), 4, unread="upper"), requires_grad=True)
    w, v = torch.linalg.eigh(sym)          # reads the lower triangle, as NumPy
    gw, gv = torch.tensor(rng.standard_normal((2, 4))), torch.tensor(rng.standard_normal((2, 4, 4)))
    ((w * gw).sum() + (v ** 2 * gv).sum()).backward()
    ct = eigh_vjp([gw, 2 * gv * v.detach()], (w.detach(), v.detach()), sym.detach())
    # torch returns the symmetric gradient: the same on symmetric directions.
    direction = torch.tensor(rng.standard_normal((2, 4, 4)))
    direction = direction + direction.mT
    torch.testing.assert_close((ct * direction).sum(), (sym.grad * direction).sum())
    b = torch.tensor(rng.standard_normal((3, 3)))
    a = (b @ b.T + 3 * torch.eye(3, dtype=torch.float64)).requires_grad_(True)
    L = torch.linalg.cholesky(a)
    gL = torch.tensor(rng.standard_normal((3, 3)))
    (L * gL).sum().backward()
    ct = cholesky_vjp(gL, L.detach(), a.detach())
    assert torch.allclose(ct, torch.tril(a.grad + a.grad.T) - torch.diag(torch.diag(a.grad)))
    x = torch.tensor(_with_singular_values(7, (), 4, 3), requires_grad=True)
    p = torch.linalg.pinv(x)
    gp = torch.tensor(rng.standard_normal((3, 4)))
    (p * gp).sum().backward()
    torch.testing.assert_close(pinv_vjp(gp, p.detach(), x.detach()), x.grad)
    u, s, vh = torch.linalg.svd(x, full_matrices=False)
    gu = torch.tensor(rng.standard_normal((4, 3)))
    x.grad = None
    ((u ** 2 * gu).sum() + s.sum()).backward()
    ct = svd_vjp([2 * gu * u.detach(), torch.ones(3, dtype=torch.float64), None],
                 (u.detach(), s.detach(), vh.detach()), x.detach(), False)
    torch.testing.assert_close(ct, x.grad)


def _pinv_case(cut):
    """A 4x3 matrix of singular values 2, 1 and ``cut``, and pinv(rtol=0.1) of it."""
    r = np.random.default_rng(0)
    U, _ = np.linalg.qr(r.normal(size=(4, 4)))
    V, _ = np.linalg.qr(r.normal(size=(3, 3)))
    W = r.normal(size=(3, 4))
    return U[:, :3] @ np.diag([2.0, 1.0, cut]) @ V.T, lambda A: np.sum(np.linalg.pinv(A, rtol=0.1) * W)


@pytest.mark.parametrize("jit", [False, True])
def test_pinv_refuses_a_gradient_where_it_cut_a_singular_value_that_counts(jit):
    """0.05 is cut by rtol=0.1 but is no rounding error: the constant-rank formula
    would be off by about 1%, so the gradient is refused; an exact zero is fine."""
    A, f = _pinv_case(0.05)
    with pytest.raises(NotImplementedError, match="cut off a singular value"):
        pullback.grad(f, jit=jit)(A)
    A, f = _pinv_case(0.0)
    assert_fd_close(pullback.grad(f, jit=jit)(A), fd_estimate(f, (A,), 0))
