"""A function returning ``(loss, aux)``: grad, value_and_grad and vjp's back with one
cotangent refuse it with the same message (which points to has_aux=True), never
differentiating the sum of the items; vjp with one cotangent per item is checked
against central finite differences."""
import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate


def loss_and_aux(x):
    return np.sum(x ** 2), np.sum(x)


def loss_and_array(x):
    return np.sum(x ** 2), x * 3.0


X = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("make", [pullback.grad, pullback.value_and_grad],
                         ids=["grad", "value_and_grad"])
@pytest.mark.parametrize("f", [loss_and_aux, loss_and_array])
def test_grad_and_value_and_grad_refuse_a_tuple_result(make, f, jit):
    with pytest.raises(TypeError) as err:
        make(f, jit=jit)(X)
    msg = str(err.value)
    assert f"{make.__name__} requires {f.__name__} to return a scalar" in msg
    assert "a tuple of 2 values" in msg and "has_aux" in msg and "return the loss alone" in msg


def test_grad_and_value_and_grad_say_the_same(jit):
    messages = []
    for make in (pullback.grad, pullback.value_and_grad):
        with pytest.raises(TypeError) as err:
            make(loss_and_aux, jit=jit)(X)
        messages.append(str(err.value).split(" requires ", 1)[1])
    assert messages[0] == messages[1]


def test_value_and_grad_refuses_an_array_result(jit):
    with pytest.raises(TypeError, match=r"returns a 1-D array; use vjp"):
        pullback.value_and_grad(lambda v: v * 2.0, jit=jit)(X)


def pair_of_entries(x):
    return np.array([x[0], x[1]])


def stacked_rows(M):
    return np.stack([M[0], M[1] * 2.0])


def joined_rows(M):
    return np.concatenate([M[0], M[1] * 2.0])


@pytest.mark.parametrize("make", [pullback.grad, pullback.value_and_grad],
                         ids=["grad", "value_and_grad"])
@pytest.mark.parametrize("f, arg, ndim", [(pair_of_entries, X, 1),
                                          (stacked_rows, np.ones((3, 2)), 2),
                                          (joined_rows, np.ones((3, 2)), 1)])
def test_an_array_result_is_refused_before_its_reverse_sweep_runs(make, f, arg, ndim, jit):
    """The reverse sweep of grad starts from the seed 1.0, which the VJP of np.array
    of a list (or of np.stack) cannot take: the result's kind refuses it first, with
    the message of any non-scalar result, not an error from inside a rule."""
    with pytest.raises(TypeError) as err:
        make(f, jit=jit)(arg)
    msg = str(err.value)
    assert f"{make.__name__} requires {f.__name__} to return a scalar" in msg
    assert f"returns a {ndim}-D array; use vjp for non-scalar outputs" in msg


def test_vjp_of_an_array_built_from_a_list_is_its_identity(jit):
    value, back = pullback.vjp(pair_of_entries, X, jit=jit)
    np.testing.assert_array_equal(value, X[:2])
    np.testing.assert_array_equal(back(np.array([2.0, -1.0]))[0], [2.0, -1.0, 0.0])


@pytest.mark.parametrize("cotangent", [1.0, np.ones(2), (1.0,), (1.0, 0.0, 0.0)])
def test_vjp_of_a_tuple_result_needs_one_cotangent_per_item(cotangent):
    value, back = pullback.vjp(loss_and_aux, X)
    with pytest.raises(TypeError, match=r"back\(\) takes a tuple of 2 cotangents"):
        back(cotangent)


def test_vjp_of_a_tuple_result_with_one_cotangent_per_item(jit):
    value, back = pullback.vjp(loss_and_aux, X, jit=jit)
    assert value[0] == pytest.approx(np.sum(X ** 2)) and value[1] == pytest.approx(np.sum(X))
    for c0, c1 in [(1.0, 0.0), (0.0, 1.0), (0.5, -2.0)]:
        def mixed(x, c0=c0, c1=c1):
            a, b = loss_and_aux(x)
            return c0 * a + c1 * b
        assert_fd_close(back((c0, c1))[0], fd_estimate(mixed, [X]))
