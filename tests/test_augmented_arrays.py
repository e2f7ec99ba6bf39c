"""``h += e`` on an array writes into ``h``'s memory (NumPy), which a view of ``h``
or another name bound to it sees.  The transform follows values by name, so it
refuses such a write while another name for the memory is read later, and
differentiates it where none is (found by the random programs: the value and
gradient of ``r = h[1:]; h += np.dot(r, r); ... r ...`` were those of a new
array bound to ``h``)."""
from __future__ import annotations

import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate


def view_read_after(p):
    h = p * 1.0
    r = h[1:]
    h += np.dot(r, r)
    return np.sum(r) + np.sum(h)


def second_name_read_after(p):
    h = p * 1.0
    a = h
    h += 2.0 * p
    return np.sum(a * a)


def view_read_before(p):
    h = p * 1.0
    r = h[1:]
    s = np.sum(r * r)
    h += np.dot(r, r)
    return s + np.sum(h * h)


def accumulate_in_a_loop(p):
    h = np.zeros(len(p))
    for k in range(3):
        h += p * k
        h *= 0.5
    return np.sum(h * h)


P = np.array([1.0, 2.0, 3.0, -0.5])


@pytest.mark.parametrize("f, name", [(view_read_after, "'r'"), (second_name_read_after, "'a'")])
def test_a_whole_array_update_seen_through_another_name_is_refused(f, name, jit):
    with pytest.raises(pullback.UnsupportedSyntaxError, match=f"write into 'h' while {name}") as err:
        pullback.grad(f, jit=jit)(P)
    assert "+=" in str(err.value)          # the user's line is quoted


@pytest.mark.parametrize("f", [view_read_before, accumulate_in_a_loop])
def test_a_whole_array_update_no_other_name_sees_is_differentiated(f, jit):
    value, g = pullback.value_and_grad(f, jit=jit)(P)
    assert value == pytest.approx(f(P.copy()), rel=1e-12)
    assert_fd_close(g, fd_estimate(f, (P,)), rtol=1e-6, atol=1e-8)
