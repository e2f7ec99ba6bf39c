"""Kinds and activity on small programs: what carries a derivative and what never does."""
from __future__ import annotations

import numpy as np

from pullback.core.kinds import BOOL, FLOAT, INT, Kind

from .programs import ARGS_MIXED, lower, mixed, through_nondifferentiable


def test_kinds_of_ints_lengths_indices_and_bools():
    _, kinds, _ = lower(mixed, **ARGS_MIXED)
    assert kinds["k"] == INT and kinds["m"] == INT and kinds["idx"] == INT
    assert kinds["flag"] == BOOL
    assert kinds["y"] == FLOAT and kinds["z"] == Kind(1, "f")


def test_only_floats_that_depend_on_an_input_and_reach_the_result_are_active():
    _, _, active = lower(mixed, **ARGS_MIXED)
    assert {"x", "p", "y", "z"} <= active
    assert not {"k", "m", "flag", "idx", "n"} & active


def test_a_value_that_reaches_the_result_only_through_a_product_with_zero_is_still_active():
    # Activity is structural, not numeric: `0.0 * unused` still reaches the result.
    _, _, active = lower(mixed, **ARGS_MIXED)
    assert "unused" in active


def test_nothing_flows_through_non_differentiable_primitives():
    _, _, active = lower(through_nondifferentiable, x=FLOAT)
    assert "s" not in active and "f" not in active


def _reshapes(p, n):
    a = p.reshape(2, 2)
    b = p.reshape((2, 2, 1))
    c = p.reshape(-1)
    d = np.reshape(p, (4, 1))
    e = np.expand_dims(p, 0)
    f = np.broadcast_to(p, (3, 4))
    g = np.squeeze(d)
    h = p.reshape(n, -1)
    return a, b, c, d, e, f, g, h


def test_reshapes_take_the_rank_of_their_shape():
    # Regression: reshape once took its input's rank, so a row of the reshaped
    # array looked like a scalar and a view of it escaped the aliasing check.
    _, kinds, _ = lower(_reshapes, p=Kind(1, "f"), n=INT)
    ranks = {v: kinds[v].ndim for v in "abcdefgh"}
    assert ranks == {"a": 2, "b": 3, "c": 1, "d": 2, "e": 2, "f": 2, "g": -1, "h": 2}


def _products(v, M):
    a = np.dot(v, v)
    b = np.dot(M, v)
    c = v @ M
    d = np.matmul(M, M)
    e = np.dot(2.0, v)
    return a, b, c, d, e


def test_products_take_the_rank_numpy_gives_them():
    # np.dot of two vectors is a number: with an unknown rank, a while condition
    # on it had no Numba type and the transform crashed (StopIteration).
    _, kinds, _ = lower(_products, v=Kind(1, "f"), M=Kind(2, "f"))
    assert {n: kinds[n].ndim for n in "abcde"} == {"a": 0, "b": 1, "c": 1, "d": 2, "e": 1}


def _arrays_from_lists(x, y):
    a = np.array([x, y, 0.5])
    b = np.array([[x, 0.5], [y, x]])
    c = np.array((1, 2))
    return a, b, c


def test_an_array_from_a_list_literal_has_one_dimension_per_level():
    # np.maximum(np.array([x, ...]), np.array([[...]])) was taken for a scalar and
    # its cotangent not unbroadcast.
    _, kinds, _ = lower(_arrays_from_lists, x=FLOAT, y=FLOAT)
    assert (kinds["a"], kinds["b"], kinds["c"]) == (Kind(1, "f"), Kind(2, "f"), Kind(1, "i"))
