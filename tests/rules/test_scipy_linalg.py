import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .checks import SETTINGS, check_vjp, rule_vjp, seeds, values

linalg = pytest.importorskip("scipy.linalg")

dims = st.integers(1, 4)


def _triangular(seed, n):
    """Well-conditioned triangles (the solvers read one; the other is noise)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) * 0.3 + np.diag(rng.uniform(1.0, 2.0, n))


@SETTINGS
@given(n=dims, k=st.integers(0, 3), trans=st.sampled_from([0, 1, 2, "N", "T", "C"]),
       lower=st.booleans(), unit=st.booleans(), seed=seeds)
def test_solve_triangular(n, k, trans, lower, unit, seed):
    a = _triangular(seed, n)
    b = values(seed + 1, (n,) if k == 0 else (n, k))
    kw = dict(trans=trans, lower=lower, unit_diagonal=unit)
    f = lambda a, b: linalg.solve_triangular(a, b, **kw)     # noqa: E731
    for j, p in enumerate(["a", "b"]):
        r = rule_vjp(linalg.solve_triangular, p)
        check_vjp(f, lambda g, ans, a, b, r=r: r(g, ans, a, b, **kw), [a, b], j)


@SETTINGS
@given(n=dims, k=st.integers(0, 3), lower=st.booleans(), seed=seeds)
def test_cho_solve(n, k, lower, seed):
    c = _triangular(seed, n)
    b = values(seed + 1, (n,) if k == 0 else (n, k))
    r_c = rule_vjp(linalg.cho_solve, "c_and_lower")
    r_b = rule_vjp(linalg.cho_solve, "b")
    f = lambda c, b: linalg.cho_solve((c, lower), b)     # noqa: E731
    check_vjp(f, lambda g, ans, c, b: r_c(g, ans, (c, lower), b)[0], [c, b], 0)
    check_vjp(f, lambda g, ans, c, b: r_b(g, ans, (c, lower), b), [c, b], 1)
    assert r_c(np.ones(b.shape), f(c, b), (c, lower), b)[1] is None


def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    from pullback.rules.scipy_linalg import solve_triangular_vjp_a, solve_triangular_vjp_b

    rng = np.random.default_rng(9)
    a = torch.tensor(_triangular(1, 3), requires_grad=True)
    b = torch.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    x = torch.linalg.solve_triangular(a.tril(), b, upper=False)
    g = torch.tensor(rng.standard_normal((3, 2)))
    x.backward(g)
    args = (g, x.detach(), a.detach(), b.detach(), 0, True)
    torch.testing.assert_close(solve_triangular_vjp_a(*args), a.grad)
    torch.testing.assert_close(solve_triangular_vjp_b(*args), b.grad)
