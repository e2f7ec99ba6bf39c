"""The tangent rules of the decompositions (rules/decomposition_tangents.py), against
their derivative rules (``<g, J v> = <J^T g, v>``) and central differences of NumPy's
factorizations (factors' signs aligned where they are free)."""
from __future__ import annotations

import numpy as np
import pytest

from .checks import check_rule, rule_jvp, rule_vjp, values


def _spd(seed, n):
    m = values(seed, (n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_and_slogdet_tangents(upper):
    A = _spd(28, 4)
    A[0, 3] += 0.3          # not symmetric: only the triangle read counts
    check_rule(np.linalg.cholesky, (A,), kwargs={"upper": upper})
    check_rule(np.linalg.slogdet, (values(29, (3, 3)),))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_tangent(uplo):
    # A pair of results: the adjoint test by hand, and differences (eigenvectors'
    # signs aligned; distinct eigenvalues, so each is differentiable).
    A = _spd(40, 4)
    A[3, 0] += 0.5          # not symmetric: only the triangle UPLO names counts
    V, gw, gv = values(45, (4, 4)), values(46, (4,)), values(47, (4, 4))
    ans = np.linalg.eigh(A, UPLO=uplo)
    dw, dv = rule_jvp(np.linalg.eigh)([A], {0: V}, {"UPLO": uplo})
    ct = rule_vjp(np.linalg.eigh, "a")((gw, gv), ans, A, UPLO=uplo)
    np.testing.assert_allclose(np.sum(gw * dw) + np.sum(gv * dv), np.sum(ct * V), rtol=1e-11)
    eps = 1e-6
    (wp, vp), (wm, vm) = (np.linalg.eigh(A + s * eps * V, UPLO=uplo) for s in (1, -1))
    vp, vm = (u * np.sign(np.sum(u * ans[1], axis=0)) for u in (vp, vm))
    np.testing.assert_allclose(dw, (wp - wm) / (2 * eps), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dv, (vp - vm) / (2 * eps), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape, hermitian", [((3, 3), False), ((4, 2), False), ((2, 4), False),
                                              ((3, 3), True)])
def test_pinv_tangent(shape, hermitian):
    A = _spd(41, 3) if hermitian else values(41, shape)
    check_rule(np.linalg.pinv, (A,), kwargs={"hermitian": hermitian})


def _aligned(u, vh, ref_u):
    """``u``, ``vh`` with each pair of singular vectors' sign flipped to match ``ref_u``."""
    sign = np.sign(np.sum(u * ref_u, axis=0))
    return u * sign, vh * sign[:, None]


@pytest.mark.parametrize("shape, full, hermitian", [((3, 3), True, False), ((4, 3), False, False),
                                                    ((3, 5), False, False), ((3, 3), True, True)])
def test_svd_tangent(shape, full, hermitian):
    A = _spd(48, 3) if hermitian else values(48, shape)
    V = values(49, shape)
    kw = {"full_matrices": full, "hermitian": hermitian}
    ans = np.linalg.svd(A, **kw)
    du, ds, dvh = rule_jvp(np.linalg.svd)([A], {0: V}, kw)
    gs = [values(50 + i, np.shape(x)) for i, x in enumerate(ans)]
    ct = rule_vjp(np.linalg.svd, "a")(tuple(gs), ans, A, **kw)
    got = sum(np.sum(g * d) for g, d in zip(gs, (du, ds, dvh)))
    np.testing.assert_allclose(got, np.sum(ct * V), rtol=1e-10)
    eps = 1e-6
    plus, minus = (np.linalg.svd(A + s * eps * V, **kw) for s in (1, -1))
    (up, vp), (um, vm) = (_aligned(f[0], f[2], ans[0]) for f in (plus, minus))
    np.testing.assert_allclose(ds, (plus[1] - minus[1]) / (2 * eps), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(du, (up - um) / (2 * eps), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dvh, (vp - vm) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_singular_values_tangent():
    check_rule(np.linalg.svd, (values(51, (4, 3)),), kwargs={"compute_uv": False})
