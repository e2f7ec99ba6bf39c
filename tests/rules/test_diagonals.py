"""rules/diagonals.py: diagonal, diag, tril, triu and trace against finite differences,
with offsets, other axes and stacks of matrices."""
import numpy as np
import pytest

from .checks import check_rule, values


@pytest.mark.parametrize("shape, kw", [((3, 3), {}), ((3, 4), {"offset": 1}), ((4, 3), {"offset": -2}),
                                       ((2, 3, 3), {"axis1": 1, "axis2": 2}),
                                       ((3, 2, 4), {"offset": 1, "axis1": 2, "axis2": 0})])
def test_diagonal_and_trace(shape, kw):
    a = values(1, shape)
    check_rule(np.diagonal, [a], kwargs=kw)
    check_rule(np.trace, [a], kwargs=kw)


@pytest.mark.parametrize("shape, k", [((4,), 0), ((3,), 1), ((3,), -2), ((3, 3), 0), ((3, 4), 1),
                                      ((4, 3), -1)])
def test_diag(shape, k):
    check_rule(np.diag, [values(2, shape)], kwargs={"k": k})


@pytest.mark.parametrize("fn", [np.tril, np.triu], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape, k", [((3, 3), 0), ((3, 4), 1), ((4, 3), -1), ((2, 3, 3), 0)])
def test_triangles(fn, shape, k):
    check_rule(fn, [values(3, shape)], kwargs={"k": k})
