"""rules/scipy_special_twins: scipy.special compiled under jit=True with SciPy's own
kernels (each twin against its target is walked by tests/test_every_twin.py)."""
import numpy as np
import pytest

from .checks import values

special = pytest.importorskip("scipy.special")
pytest.importorskip("numba")


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_polygamma_series_matches_scipy(n):
    """cython_special has no polygamma kernel: the twin's series, on both sides of 0
    and across the recurrence's cut-off at 20."""
    from pullback.rules.scipy_special_twins import polygamma_scalar
    for x in (0.05, 0.3, 1.0, 2.5, 7.0, 19.9, 20.0, 60.0, -0.5, -2.3):
        np.testing.assert_allclose(polygamma_scalar(n, x), special.polygamma(n, x), rtol=1e-13)


def test_compiled_under_numba_with_scipys_values():
    """jit=True compiles the scipy.special functions and their derivatives (SciPy's
    own kernels and softmax's loops, see rules/scipy_special_twins) and agrees with
    jit=False."""
    import pullback

    def f(x, y):
        return np.sum(special.gammaln(x) + special.erf(y) * special.xlogy(x, y + 1.0)
                      + special.expit(y) - special.log_ndtr(y) + special.digamma(x)
                      + special.softmax(x) * y + special.log_softmax(y) ** 2)
    x, y = values(1, (4,), 0.3, 3.0), values(2, (4,), -0.5, 2.0)
    want = pullback.grad(f, argnums=(0, 1))(x, y)
    got = pullback.grad(f, argnums=(0, 1), jit=True)(x, y)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    h = 1e-6
    fd = [(f(x + h * e, y) - f(x - h * e, y)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(want[0], fd, rtol=1e-6)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (0, False), (1, True),
                                           (-1, False)])
def test_logsumexp_compiled_under_numba(axis, keepdims):
    """logsumexp and its VJP compiled (no object mode), against jit=False, central
    differences, and an entry of -inf (no cotangent reaches it, no NaN)."""
    import warnings

    import pullback
    from helpers import assert_fd_close, fd_estimate

    def f(a):
        return np.sum(np.sin(special.logsumexp(a * 1.5, axis, None, keepdims)))
    a = values(3, (3, 4), -2.0, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pullback.PerformanceWarning)
        got = pullback.grad(f, jit=True)(a)
    np.testing.assert_allclose(got, pullback.grad(f)(a), rtol=1e-12)
    assert_fd_close(got, fd_estimate(f, (a,)))
    a[1, 2] = -np.inf
    got = pullback.grad(f, jit=True)(a)
    np.testing.assert_allclose(got, pullback.grad(f)(a), rtol=1e-12)
    assert got[1, 2] == 0.0 and np.all(np.isfinite(got))


def test_logsumexp_of_an_infinite_slice_shares_the_cotangent_among_its_infinities():
    import pullback

    def f(a):
        return np.sum(special.logsumexp(a, 0, None, False) * np.array([1.0, 2.0]))
    a = np.array([[np.inf, 1.0], [np.inf, np.inf], [0.0, 2.0]])
    np.testing.assert_array_equal(pullback.grad(f, jit=True)(a), pullback.grad(f)(a))
    np.testing.assert_array_equal(pullback.grad(f, jit=True)(a)[:, 0], [0.5, 0.5, 0.0])


@pytest.mark.parametrize("axis,keepdims,b_shape", [(1, False, (3, 4)), (None, False, (4,)),
                                                   (0, True, (1, 4)), (None, True, (3, 4)),
                                                   (-1, False, ())])
def test_weighted_logsumexp_compiled_under_numba(axis, keepdims, b_shape):
    """logsumexp(a, b=w) and the cotangents of a and w compiled (no object mode),
    with w broadcast to a's shape and an entry of w = 0 (left out, as SciPy does):
    against the formula log(sum(w exp(a))), its derivatives, and central differences."""
    import warnings

    import pullback
    from helpers import assert_fd_close, fd_estimate

    def f(a, w):
        return np.sum(np.sin(special.logsumexp(a * 1.5, axis, w, keepdims)))

    def formula(a, w):
        return np.sum(np.sin(np.log(np.sum(np.broadcast_to(w, a.shape) * np.exp(a * 1.5),
                                           axis=axis, keepdims=keepdims))))
    a, w = values(5, (3, 4), -2.0, 2.0), values(6, b_shape, 0.3, 2.0)
    if w.ndim and not (axis == 0 and w.shape[0] == 1):   # (else a whole slice is left out)
        w.flat[1] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", pullback.PerformanceWarning)
        value, (da, dw) = pullback.value_and_grad(f, argnums=(0, 1), jit=True)(a, w)
    assert value == pytest.approx(formula(a, w), rel=1e-12)
    assert_fd_close(da, fd_estimate(formula, (a, w), 0))
    assert_fd_close(dw, fd_estimate(formula, (a, w), 1))
    want = pullback.grad(f, argnums=(0, 1))(a, w)
    np.testing.assert_allclose(da, want[0], rtol=1e-12)
    np.testing.assert_allclose(dw, want[1], rtol=1e-12)
