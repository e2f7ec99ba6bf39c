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
