"""rules/norm.py: np.linalg.norm against finite differences for vector and matrix orders,
axes and keepdims (away from kinks: distinct entries and singular values)."""
import numpy as np
import pytest

from .checks import check_rule, values

VECTOR = [None, 2, 1, 3, 0.5, np.inf, -np.inf, -1]
MATRIX = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR, ids=str)
def test_vector_norms(ord):
    check_rule(np.linalg.norm, [values(1, (5,), 0.2, 2.0) * np.array([1, -1, 1, -1, 1])],
               kwargs={"ord": ord})
    check_rule(np.linalg.norm, [values(2, (3, 4))], kwargs={"ord": ord, "axis": 1, "keepdims": True})


@pytest.mark.parametrize("ord", MATRIX, ids=str)
def test_matrix_norms(ord):
    check_rule(np.linalg.norm, [values(3, (3, 4))], kwargs={"ord": ord})
    check_rule(np.linalg.norm, [values(4, (2, 3, 3))], kwargs={"ord": ord, "axis": (1, 2)})


def test_default_norm_of_any_rank():
    check_rule(np.linalg.norm, [values(5, (2, 3, 2))])
    check_rule(np.linalg.norm, [3.0])
