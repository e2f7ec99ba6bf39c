"""The run-time helpers of forward mode's code (rules/forward_helpers.py), whose
rules let reverse mode differentiate that code again."""
from __future__ import annotations

import numpy as np
import pytest

from pullback.core.runtime import fit

from .checks import check_rule, values


@pytest.mark.parametrize("tangent_shape", [(), (4,), (1, 4), (3, 4)])
def test_fit_broadcasts_a_tangent_to_its_result(tangent_shape):
    tangent, ans = values(1, tangent_shape), values(2, (3, 4))
    assert np.shape(fit(tangent, ans)) == (3, 4)
    check_rule(fit, (tangent, ans))
