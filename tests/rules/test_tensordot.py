"""rules/tensordot.py: tensordot's cotangents of both operands against finite differences,
for integer axes (0, 1, 2) and explicit axis pairs in any order."""
import numpy as np
import pytest

from .checks import check_rule, values

CASES = [((3, 4), (4, 2), 1), ((2, 3, 4), (3, 4, 2), 2), ((2, 3), (4,), 0),
         ((2, 3, 4), (4, 3), ([1, 2], [1, 0])), ((3, 2), (2, 3), ([0], [1])),
         ((2, 3), (3, 2), ((0, 1), (1, 0)))]


@pytest.mark.parametrize("sa, sb, axes", CASES)
def test_tensordot(sa, sb, axes):
    check_rule(np.tensordot, [values(1, sa), values(2, sb)], kwargs={"axes": axes})
