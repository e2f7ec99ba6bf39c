"""rules/tensor_products.py: kron and cross against finite differences, for vectors,
matrices, operands of different ranks, 2-vectors, other axes and broadcast stacks."""
import numpy as np
import pytest

from .checks import check_rule, values


@pytest.mark.parametrize("sa, sb", [((3,), (2,)), ((2, 3), (2, 2)), ((2,), (2, 3)), ((2, 1, 2), (3, 2))])
def test_kron(sa, sb):
    check_rule(np.kron, [values(1, sa), values(2, sb)])


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("sa, sb, kw", [((3,), (3,), {}), ((2,), (2,), {}), ((2,), (3,), {}),
                                        ((4, 3), (3,), {}), ((2, 1, 3), (4, 3), {}),
                                        ((3, 4), (4, 3), {"axisa": 0}),
                                        ((3, 4), (3, 4), {"axis": 0}),
                                        ((4, 3), (4, 3), {"axisc": 0})])
def test_cross(sa, sb, kw):
    check_rule(np.cross, [values(1, sa), values(2, sb)], kwargs=kw)
