import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pullback.rules.indexing import getitem_vjp, is_basic_index, setitem_vjp_v, setitem_vjp_x

from .checks import SETTINGS, array_values, check_vjp, rule_vjp, seeds

nonempty = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def _check_adjoint(x, index, seed):
    """getitem is linear: <getitem_vjp(g), v> must equal <g, v[index]> for every v."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(np.shape(x[index]))
    ct = getitem_vjp(g, x, index)
    assert ct.shape == x.shape
    v = rng.standard_normal(x.shape)
    np.testing.assert_allclose(np.sum(ct * v), np.sum(g * v[index]), rtol=1e-10, atol=1e-10)
    # The registered rule for operator.getitem is the same.
    np.testing.assert_array_equal(rule_vjp(operator.getitem, "x")(g, None, x, index), ct)


@SETTINGS
@given(data=st.data(), shape=nonempty, seed=seeds)
def test_basic_indices(data, shape, seed):
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    _check_adjoint(array_values(seed, shape), index, seed)


@SETTINGS
@given(data=st.data(), shape=nonempty, seed=seeds)
def test_integer_array_indices_accumulate(data, shape, seed):
    index = data.draw(hnp.integer_array_indices(
        shape, result_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=5)))
    _check_adjoint(array_values(seed, shape), index, seed)


@SETTINGS
@given(data=st.data(), shape=nonempty, seed=seeds)
def test_boolean_masks(data, shape, seed):
    mask = data.draw(hnp.arrays(bool, shape))
    x = array_values(seed, shape)
    _check_adjoint(x, mask, seed)
    row_mask = data.draw(hnp.arrays(bool, shape[:1]))
    _check_adjoint(x, (row_mask, Ellipsis), seed)


def test_mixed_and_repeated_indices():
    x = np.arange(12.0).reshape(3, 4)
    for index in [(slice(None), [0, 0, 2]), ([1, 1], slice(1, 3)), (np.array([[0, 2], [2, 2]]),),
                  [0, 0, 0], (Ellipsis, [3, 3]), (None, [0, 1], 1), np.array([2, -1, 2])]:
        _check_adjoint(x, index, 0)
    ct = getitem_vjp(np.ones(3), np.zeros(4), [1, 1, 3])
    np.testing.assert_array_equal(ct, [0, 2, 0, 1])


def test_by_finite_differences():
    x = array_values(1, (4, 3))
    check_vjp(lambda x: x[[0, 2, 2], 1:], lambda g, ans, x: getitem_vjp(g, x, ([0, 2, 2],
                                                                              slice(1, None))),
              [x], 0)


def test_is_basic_index():
    assert is_basic_index((0, slice(1, 2), None, Ellipsis))
    assert is_basic_index(np.int64(3))
    assert not is_basic_index([0, 1])
    assert not is_basic_index((True,))
    assert not is_basic_index((slice(None), np.array([0])))


# ---------------------------------------------------------------------------
# slice writes into local arrays: y = x.copy(); y[index] = v

@pytest.mark.parametrize("index, vshape", [
    (slice(1, 3), (2, 4)), (slice(1, 3), (4,)), (slice(1, 3), ()), ((0, slice(None)), (4,)),
    ((slice(None), [0, 2]), (3, 2)), (np.array([True, False, True]), (1, 4)),
])
def test_setitem(index, vshape):
    x = array_values(1, (3, 4))
    v = array_values(2, vshape) if vshape else 0.5

    def write(x, v):
        y = np.array(x, copy=True)
        y[index] = v
        return y

    check_vjp(write, lambda g, ans, x, v: setitem_vjp_x(g, x, index, v), [x, v], 0)
    check_vjp(write, lambda g, ans, x, v: setitem_vjp_v(g, x, index, v), [x, v], 1)


# ---------------------------------------------------------------------------
# torch: scatter-add through index_add_, against autograd

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    indices = [
        (slice(1, None), None, 0), Ellipsis, (0,),
        ([0, 0, 2],), (slice(None), np.array([1, 1, 3])), (np.array([[0, 2], [2, 2]]), 1),
        (np.array([True, False, True]),), (torch.tensor([2, 2]), slice(0, 2)),
    ]
    for index in indices:
        x = torch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
        tindex = tuple(torch.as_tensor(i) if isinstance(i, (np.ndarray, list)) else i
                       for i in (index if isinstance(index, tuple) else (index,)))
        out = x[tindex]
        g = torch.tensor(rng.standard_normal(tuple(out.shape)))
        out.backward(g)
        ct = getitem_vjp(g, x.detach(), index)
        assert isinstance(ct, torch.Tensor)
        torch.testing.assert_close(ct, x.grad)
    x = torch.zeros(3, 4, dtype=torch.float64)
    g = torch.ones(3, 4, dtype=torch.float64)
    ct = setitem_vjp_x(g, x, (slice(None), np.array([0, 2])))
    assert float(ct.sum()) == 6.0
    assert tuple(setitem_vjp_v(g, x, (slice(None), np.array([0, 2])), torch.zeros(2)).shape) == (2,)


@pytest.mark.parametrize("index", [1, slice(1, None), (slice(None), 0), ([0, 2, 2], slice(1, None)),
                                   (Ellipsis, None, 1), np.array([[True, False, True, True]] * 3)])
def test_getitem_rule_against_finite_differences(index):
    x = array_values(4, (3, 4))
    check_vjp(operator.getitem, rule_vjp(operator.getitem, "x"), [x, index], 0)
