"""rules/solve.py: solve, inv, det and slogdet against finite differences, for single
matrices, stacks and right-hand sides broadcast against a stack."""
import numpy as np
import pytest

from .checks import check_rule, check_vjp, rule_vjp, values


def _well_conditioned(shape, seed):
    n = shape[-1]
    return values(seed, shape) + 3.0 * np.eye(n)


@pytest.mark.parametrize("sa, sb", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1)),
                                    ((2, 3, 3), (3, 2))])
def test_solve(sa, sb):
    check_rule(np.linalg.solve, [_well_conditioned(sa, 1), values(2, sb)])


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 3, 3)])
def test_inv_det(shape):
    a = _well_conditioned(shape, 3)
    check_rule(np.linalg.inv, [a])
    check_rule(np.linalg.det, [a])


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_slogdet(shape):
    a = _well_conditioned(shape, 4) * np.where(np.arange(shape[-1]) == 0, -1.0, 1.0)   # det < 0 too
    r = rule_vjp(np.linalg.slogdet, "a")
    check_vjp(lambda a: np.linalg.slogdet(a)[1], lambda g, ans, a: r((0.0 * g, g), np.linalg.slogdet(a), a),
              [a], 0)


@pytest.mark.parametrize("sa, sb, ndim", [((3, 3), (3,), 1), ((3, 3), (3, 2), 2),
                                          ((2, 3, 3), (2, 3, 1), 3), ((2, 3, 3), (3,), 2),
                                          ((2, 3, 3), (3, 2), 3)])
def test_solve_result_rank_is_numpys(sa, sb, ndim):
    """Kind inference knows solve's rank (NumPy 2: b is a vector only when 1-D), so
    ``u = solve(M, u)`` in a loop keeps u's type under Numba."""
    import ast

    from pullback.core.kinds import Kind
    from pullback.rules import results
    got = results.solved(np.linalg.solve, [Kind(len(sa), "f"), Kind(len(sb), "f")], {},
                         ast.parse("np.linalg.solve(a, b)").body[0].value)
    assert got == Kind(ndim, "f")
    assert np.ndim(np.linalg.solve(_well_conditioned(sa, 1), values(2, sb))) == ndim


def test_solve_in_a_loop_compiles_under_numba():
    import pullback

    def f(M, u0):
        u = u0.copy()
        for _ in range(3):
            u = np.linalg.solve(M, u)
        return np.sum(u * u)
    M, u0 = _well_conditioned((3, 3), 5), values(6, (3,))
    want = pullback.grad(f, argnums=(0, 1))(M, u0)
    got = pullback.grad(f, argnums=(0, 1), jit=True)(M, u0)
    h = 1e-6
    fd = np.array([(f(M, u0 + h * e) - f(M, u0 - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(want[1], fd, rtol=1e-6, atol=1e-9)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_a_call_of_unknown_rank_in_a_loop_says_to_give_it_a_rank():
    """Where the rank of a call's result is not known, Numba's refusal says to give
    the result a visible rank (assigning the variable earlier would not help)."""
    import pullback
    from pullback.pipeline import clear_cache
    from pullback.rules import registry, results

    def f(M, u0):
        u = u0.copy()
        for _ in range(3):
            u = np.linalg.solve(M, u)
        return np.sum(u * u)
    registry.amend(np.linalg.solve, result=results.unknown)
    clear_cache()
    try:
        with pytest.raises(pullback.NumbaCompileError, match="np.reshape") as err:
            pullback.grad(f, jit=True)(_well_conditioned((3, 3), 5), values(6, (3,)))
        assert "u = np.linalg.solve(M, u)" in str(err.value)
    finally:
        registry.amend(np.linalg.solve, result=results.solved)
        clear_cache()
