"""np.pad: the cotangent of the array for every mode that copies entries or a
constant, and of a number constant_values, against finite differences."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pullback
from helpers import assert_fd_close, check_jit, fd_estimate
from pullback.rules.padding import _COPYING, _axis_index, pad_vjp_array, pad_vjp_constant

from .checks import SETTINGS, check_vjp, seeds
from .checks import array_values as values

MODES = ["constant", "edge", "reflect", "symmetric", "wrap"]


@st.composite
def pads(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    mode = draw(st.sampled_from(MODES))
    if mode == "reflect":
        shape = tuple(max(n, 2) for n in shape)     # reflecting needs two entries
    width = st.integers(0, 5)
    form = draw(st.sampled_from(["int", "pair", "each"]))
    if form == "int":
        pad_width = draw(width)
    elif form == "pair":
        pad_width = (draw(width), draw(width))
    else:
        pad_width = tuple((draw(width), draw(width)) for _ in shape)
    return shape, pad_width, mode


@SETTINGS
@given(problem=pads(), seed=seeds)
def test_pad_cotangent_of_the_array(problem, seed):
    shape, pad_width, mode = problem
    check_vjp(lambda x: np.pad(x, pad_width, mode),
              lambda g, ans, x: pad_vjp_array(g, x, pad_width, mode), [values(seed, shape)], 0)


@SETTINGS
@given(problem=pads(), seed=seeds, c=st.floats(-2, 2))
def test_pad_cotangent_of_constant_values(problem, seed, c):
    shape, pad_width, _ = problem
    x = values(seed, shape)
    check_vjp(lambda c: np.pad(x, pad_width, constant_values=c),
              lambda g, ans, c: pad_vjp_constant(g, x, pad_width, "constant", c), [c], 0)


def test_pad_in_differentiated_functions():
    r = np.random.default_rng(2)
    W = r.normal(size=(6, 7))

    def f(x, c):
        padded = np.pad(x, ((1, 2), (3, 1)), constant_values=c)
        return np.sum(np.sin(padded) * W[:5, :7]) + np.sum(np.pad(x, 2, "reflect") * W[:6, :7])

    args = (r.normal(size=(2, 3)), 0.4)
    for k, g in enumerate(pullback.grad(f, argnums=(0, 1))(*args)):
        assert_fd_close(g, fd_estimate(f, args, k))


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "mean"}, "mode='mean'"),
    ({"mode": "linear_ramp"}, "mode='linear_ramp'"),
    ({"mode": "reflect", "reflect_type": "odd"}, "reflect_type='odd'"),
])
def test_modes_that_compute_their_border_are_refused(kwargs, match):
    with pytest.raises(NotImplementedError, match=match):
        pad_vjp_array(np.ones((5, 5)), np.ones((3, 3)), 1, **kwargs)


# ---------------------------------------------------------------------------
# Numba twins

@given(n=st.integers(1, 7), before=st.integers(0, 16), after=st.integers(0, 16),
       mode=st.sampled_from(MODES))
@SETTINGS
def test_the_twins_index_map_is_numpys(n, before, after, mode):
    """Entry j of a padded axis copies entry idx[j] (-1: the constant): np.pad of the
    positions, for any width, also wider than the axis (reflected again and again)."""
    expected = np.pad(np.arange(n), (before, after), mode,
                      **({"constant_values": -1} if mode == "constant" else {}))
    np.testing.assert_array_equal(_axis_index(_COPYING.index(mode), n, before, after), expected)


def _padded_by(mode):
    def f(x, pad_width):
        padded = np.pad(x, pad_width, mode)
        return np.sum(np.sin(padded) * np.cos(np.arange(padded.size).reshape(padded.shape)))
    return f


_PADDED = {mode: _padded_by(mode) for mode in MODES}


@settings(max_examples=3, deadline=None)        # each mode, rank and width type compiles anew
@given(problem=pads(), seed=seeds)
def test_pad_compiles_under_numba(problem, seed):
    """The forward twin and the cotangent's, for every mode and form of pad_width, against
    jit=False and finite differences."""
    shape, pad_width, mode = problem
    check_jit(_PADDED[mode], (values(seed, shape), pad_width), 0)


def _padded_with_a_constant(x, c):
    return np.sum(np.pad(x, ((1, 0), (2, 3)), constant_values=c) ** 3)


def test_pad_constant_values_compiles_under_numba():
    check_jit(_padded_with_a_constant, (np.random.default_rng(4).normal(size=(2, 3)), 0.7), (0, 1))
