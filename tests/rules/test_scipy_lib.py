"""rules/scipy_lib.py: the conversions of SciPy's array API layer that the derivative
passes through (xp_promote, _asarray, xp_copy, xp_ravel, atleast_nd), against finite
differences: the cotangent comes back in the argument's shape, broadcasting summed."""
import numpy as np
import pytest

from .checks import check_rule, check_vjp, rule_vjp, values

api = pytest.importorskip("scipy._lib._array_api")
extra = pytest.importorskip("scipy._lib.array_api_extra")


@pytest.mark.parametrize("shape", [(), (4,), (2, 3)])
def test_conversions(shape):
    x = values(1, shape)
    check_rule(api._asarray, [np.asarray(x)], kwargs={"xp": np})
    check_rule(api.xp_copy, [np.asarray(x)], kwargs={"xp": np})
    check_rule(api.xp_ravel, [np.asarray(x)], kwargs={"xp": np})
    check_rule(extra.atleast_nd, [np.asarray(x)], kwargs={"ndim": 3, "xp": np})


def test_asarray_of_a_python_float():
    check_rule(api._asarray, [0.7], kwargs={"xp": np})


def test_xp_promote_one_and_several():
    check_rule(api.xp_promote, [values(1, (3,))], kwargs={"xp": np})
    x, y = values(2, (2, 3)), values(3, (3,))
    for k in range(2):
        r = rule_vjp(api.xp_promote, f"a{k}")
        # A scalar function of the promoted pair, so the cotangent is the pair of its partials.
        check_vjp(lambda x, y: np.sum(np.stack(api.xp_promote(x, y, broadcast=True, xp=np)) ** 2),
                  lambda g, ans, x, y, r=r: r(tuple(2 * g * p for p in
                                                    api.xp_promote(x, y, broadcast=True, xp=np)),
                                              api.xp_promote(x, y, broadcast=True, xp=np), x, y,
                                              broadcast=True, xp=np),
                  [x, y], k)


def test_scipy_rosen_under_numba():
    """SciPy's Python rosen (inlined, its xp_promote through the twin) compiles under
    jit=True; its gradient is SciPy's rosen_der."""
    import pullback
    optimize = pytest.importorskip("scipy.optimize")
    pytest.importorskip("numba")
    x = values(3, (5,))
    np.testing.assert_allclose(pullback.grad(optimize.rosen, jit=True)(x),
                               optimize.rosen_der(x), rtol=1e-12)
