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


def _index_item(draw, st, shape, axis):
    """An index item for ``axis`` of ``shape`` and what index_rank is told of it."""
    from pullback.core.kinds import kind_of_value
    n = shape[axis] if axis < len(shape) else 1
    choice = draw(st.sampled_from(["slice", "int", "ints", "ints2", "mask", "none"]))
    if choice == "slice":
        return slice(None, None, draw(st.sampled_from([1, -1, 2]))), None, 1
    if choice == "none":
        return None, "none", 0
    if choice == "int":
        return draw(st.integers(-n, n - 1)), kind_of_value(0), 1
    if choice in ("ints", "ints2"):
        size = (2,) if choice == "ints" else (2, 3)
        i = np.array(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(size)),
                                   max_size=int(np.prod(size))))).reshape(size)
        return i, kind_of_value(i), 1
    dims = draw(st.integers(1, max(1, len(shape) - axis)))
    m = np.ones(shape[axis:axis + dims], dtype=bool)
    return m, kind_of_value(m), dims


def test_index_rank_is_numpys_rank_of_the_result():
    """index_rank against NumPy itself, on random mixes of slices, ints, index arrays,
    masks, new axes and Ellipsis (a mask is all True so that masks broadcast)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pullback.core.kinds import index_rank

    @settings(max_examples=300, deadline=None)
    @given(st.data())
    def run(data):
        shape = tuple(data.draw(st.lists(st.integers(2, 3), min_size=1, max_size=4)))
        x = np.zeros(shape)
        items, told, axis = [], [], 0
        while axis < len(shape) and data.draw(st.booleans()):
            item, kind, taken = _index_item(data.draw, st, shape, axis)
            items.append(item)
            told.append(kind)
            axis += taken
        if data.draw(st.booleans()):
            k = data.draw(st.integers(0, len(items)))
            items.insert(k, Ellipsis)
            told.insert(k, "...")
        try:
            expected = x[tuple(items)].ndim
        except (IndexError, ValueError):
            return          # index arrays that do not broadcast together
        assert index_rank(len(shape), told) == expected, (shape, items)
    run()
