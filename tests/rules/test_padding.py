"""np.pad: the cotangent of the array for every mode that copies entries or a
constant, and of a number constant_values, against finite differences."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback.rules.padding import pad_vjp_array, pad_vjp_constant

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
