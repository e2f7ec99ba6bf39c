"""The finite-difference reference itself: its error bound covers its own noise, and a
wrong gradient still fails against it."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import assert_fd_close, fd_estimate, fd_grad


def _large_and_small(x):
    # |f| near 1e4 from the first term, while the gradient in x[1] is about 1: the
    # difference's rounding (relative to |f|) is far above 1e-6 of that entry.
    return 1e4 * np.exp(x[0]) + np.sin(x[1])


@settings(max_examples=30, deadline=None)
@given(st.floats(-1, 1), st.floats(-3, 3))
def test_error_bound_covers_rounding_of_a_large_function(a, b):
    x = np.array([a, b])
    exact = np.array([1e4 * np.exp(a), np.cos(b)])
    fd = fd_estimate(_large_and_small, (x,))
    assert np.all(np.abs(fd.value - exact) <= fd.error)
    assert_fd_close(exact, fd, rtol=1e-9, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.floats(-1, 1), st.floats(-3, 3), st.sampled_from([0, 1]))
def test_a_wrong_gradient_still_fails(a, b, k):
    x = np.array([a, b])
    wrong = np.array([1e4 * np.exp(a), np.cos(b)])
    wrong[k] += 1e-3 * max(1.0, abs(wrong[k]))
    with pytest.raises(AssertionError, match="finite differences"):
        assert_fd_close(wrong, fd_estimate(_large_and_small, (x,)), rtol=1e-6, atol=1e-9)


def test_numbers_and_arrays_alike():
    assert fd_grad(np.sin, (0.3,)) == pytest.approx(np.cos(0.3), rel=1e-8)
    fd = fd_estimate(lambda v: v ** 3, (2.0,))
    assert fd.value.shape == () and abs(float(fd.value) - 12.0) <= fd.error
    with pytest.raises(AssertionError, match="shape"):
        assert_fd_close(np.zeros(2), fd_estimate(lambda v: np.sum(v ** 2), (np.ones(3),)))
