"""A rule helper that the user's module also imports under its own name: the
generated code may read the user's global only where the backend calls the helper
as it is (Numba compiles a copy of a plain helper, which a global cannot name)."""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback.rules.elementwise import unbroadcast  # noqa: F401  (the names the generated code uses)
from pullback.rules.reductions import sum_vjp  # noqa: F401


def weighted_sines(x):
    return np.sum(np.sin(x) * 2.0)


@pytest.mark.parametrize("jit", [False, True])
def test_a_helper_imported_by_the_users_module(jit):
    x = np.linspace(-1.0, 2.0, 5)
    np.testing.assert_allclose(pullback.grad(weighted_sines, jit=jit)(x), 2.0 * np.cos(x),
                               rtol=1e-13)
