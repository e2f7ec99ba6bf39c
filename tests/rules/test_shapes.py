import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pullback.rules.registry import lookup as rule_of
from pullback.rules.shapes import (
    astype,
    concatenate_vjp,
    flatten,
    reshape_method,
    stack_vjp,
    transpose_method,
    transpose_vjp,
)

from .checks import SETTINGS, check_rule, check_vjp, rule_vjp, seeds, shapes
from .checks import array_values as values

nonempty = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def _kw_rule(fn, param, **kw):
    r = rule_vjp(fn, param)
    return lambda g, ans, *args: r(g, ans, *args, **kw)


@SETTINGS
@given(shape=shapes, order=st.sampled_from(["C", "F"]), how=st.sampled_from(["flat", "rev", "col"]),
       seed=seeds)
def test_reshape_ravel_flatten(shape, order, how, seed):
    x = values(seed, shape)
    new = {"flat": (-1,), "rev": tuple(reversed(shape)), "col": (x.size, 1)}[how]
    check_vjp(lambda x: np.reshape(x, new, order=order), _kw_rule(np.reshape, "a", order=order),
              [x], 0)
    check_vjp(lambda x: np.ravel(x, order), _kw_rule(np.ravel, "a", order=order), [x], 0)
    check_vjp(lambda x: x.flatten(order), _kw_rule(flatten, "a", order=order), [x], 0)
    # ndarray.reshape with the shape as separate ints, through the method's rule.
    if new:
        check_vjp(lambda x: x.reshape(*new, order=order),
                  lambda g, ans, x: rule_vjp(reshape_method, "a")(g, ans, x, *new, order=order),
                  [x], 0)


def test_reshape_order_a_on_fortran_arrays():
    # Not by finite differences: a perturbed copy of x would not keep the Fortran layout.
    x = np.asfortranarray(values(1, (2, 3)))
    g = values(2, (3, 2))
    ct = rule_vjp(np.reshape, "a")(g, None, x, (3, 2), "A")
    np.testing.assert_array_equal(ct, np.reshape(g, (2, 3), order="F"))
    ct = rule_vjp(np.reshape, "a")(g, None, np.ascontiguousarray(x), (3, 2), "A")
    np.testing.assert_array_equal(ct, np.reshape(g, (2, 3)))


@SETTINGS
@given(shape=shapes, data=st.data(), seed=seeds)
def test_transpose(shape, data, seed):
    nd = len(shape)
    perm = data.draw(st.permutations(range(nd)))
    axes = tuple(p - nd if data.draw(st.booleans()) else p for p in perm)
    x = values(seed, shape)
    check_vjp(lambda x: np.transpose(x, axes), _kw_rule(np.transpose, "a", axes=axes), [x], 0)
    check_vjp(np.transpose, rule_vjp(np.transpose, "a"), [x], 0)
    check_vjp(lambda x: x.T, lambda g, ans, x: transpose_vjp(g, x), [x], 0)
    meth = rule_vjp(transpose_method, "a")
    check_vjp(lambda x: x.transpose(*axes), lambda g, ans, x: meth(g, ans, x, *axes), [x], 0)
    check_vjp(lambda x: x.transpose(axes), lambda g, ans, x: meth(g, ans, x, axes), [x], 0)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4).map(tuple), data=st.data(),
       seed=seeds)
def test_swapaxes_moveaxis(shape, data, seed):
    nd = len(shape)
    i, j = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
    x = values(seed, shape)
    check_vjp(lambda x: np.swapaxes(x, i, j), _kw_rule(np.swapaxes, "a", axis1=i, axis2=j), [x], 0)
    src = data.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    dst = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=len(src), max_size=len(src),
                             unique_by=lambda a: a % nd))
    check_vjp(lambda x: np.moveaxis(x, src, dst),
              _kw_rule(np.moveaxis, "a", source=src, destination=dst), [x], 0)


@SETTINGS
@given(shape=nonempty, data=st.data(), seed=seeds)
def test_concatenate(shape, data, seed):
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    ax = 0 if axis is None else axis % nd
    arrays = []
    for i in range(data.draw(st.integers(1, 3))):
        s = list(shape)
        s[ax] = data.draw(st.integers(1, 3)) if axis is not None else s[ax]
        arrays.append(values(seed + i, tuple(s)))
    for k in range(len(arrays)):
        def fn(x, k=k):
            return np.concatenate(arrays[:k] + [x] + arrays[k + 1:], axis=axis)

        check_vjp(fn, lambda g, ans, x, k=k: concatenate_vjp(g, arrays, axis)[k], [arrays[k]], 0)
    r = rule_vjp(np.concatenate, "arrays")
    cts = r(np.ones(np.concatenate(arrays, axis=axis).shape), None, arrays, axis)
    assert [c.shape for c in cts] == [a.shape for a in arrays]


@SETTINGS
@given(shape=shapes, n=st.integers(1, 3), data=st.data(), seed=seeds)
def test_stack(shape, n, data, seed):
    nd = len(shape) + 1
    axis = data.draw(st.integers(-nd, nd - 1))
    arrays = [values(seed + i, shape) for i in range(n)]
    for k in range(n):
        def fn(x, k=k):
            return np.stack(arrays[:k] + [x] + arrays[k + 1:], axis=axis)

        check_vjp(fn, lambda g, ans, x, k=k: stack_vjp(g, arrays, axis)[k], [arrays[k]], 0)


def test_stack_of_python_scalars():
    cts = stack_vjp(np.array([1.0, 2.0]), [0.5, 1.5])
    assert all(isinstance(c, np.float64) for c in cts) and cts == [1.0, 2.0]


@SETTINGS
@given(shape=shapes, seed=seeds)
def test_squeeze_expand_dims_broadcast_to(shape, seed):
    x = values(seed, shape)
    padded = values(seed, (1,) + shape + (1,))
    check_vjp(np.squeeze, rule_vjp(np.squeeze, "a"), [padded], 0)
    check_vjp(lambda x: np.squeeze(x, axis=0), _kw_rule(np.squeeze, "a", axis=0), [padded], 0)
    check_vjp(lambda x: np.expand_dims(x, 0), _kw_rule(np.expand_dims, "a", axis=0), [x], 0)
    target = (2,) + tuple(3 if d == 1 else d for d in shape)
    check_vjp(lambda x: np.broadcast_to(x, target), _kw_rule(np.broadcast_to, "array",
                                                            shape=target), [x], 0)


def test_identities():
    x = values(1, (2, 3))
    for fn in (np.copy, np.asarray):
        check_vjp(fn, rule_vjp(fn, "a"), [x], 0)
    check_vjp(np.array, rule_vjp(np.array, "object"), [x], 0)
    check_vjp(lambda x: np.array(x, ndmin=4), rule_vjp(np.array, "object"), [x], 0)
    # np.array of a list of arrays: a list of cotangents.
    parts = [values(2, (3,)), values(3, (3,))]
    cts = rule_vjp(np.array, "object")(np.arange(6.0).reshape(2, 3), None, parts)
    np.testing.assert_array_equal(cts[1], [3.0, 4.0, 5.0])
    assert isinstance(rule_vjp(np.asarray, "a")(np.array(2.0), None, 1.5), np.float64)
    x32 = x.astype(np.float32)
    ct = rule_vjp(astype, "a")(np.ones((2, 3)), None, x32, np.float64)
    assert ct.dtype == np.float32
    check_vjp(astype, rule_vjp(astype, "a"), [x, np.float64], 0)


@SETTINGS
@given(shape=nonempty, seed=seeds)
def test_full_and_full_like_send_the_sum_of_g_to_the_fill_value(shape, seed):
    # A number fill value gets the sum of g; an array one, g summed over the axes it
    # was broadcast along; the shape (and full_like's array) gets nothing.
    x = values(seed, shape)
    row = values(seed + 1, shape[-1:])
    check_rule(np.full, [shape, 1.5])
    check_rule(np.full, [shape, row])
    check_rule(np.full_like, [x, -0.7])
    check_rule(np.full_like, [x, row])
    ct = rule_vjp(np.full, "fill_value")(np.ones(shape), None, shape, 1.5)
    assert ct == pytest.approx(float(np.prod(shape))) and np.ndim(ct) == 0
    assert not np.any(rule_vjp(np.full_like, "a")(np.ones(shape), None, x, 2.0))


def test_joining_vjps_take_a_number_cotangent_for_every_entry():
    # grad seeds the reverse sweep with 1.0: a VJP of an array result must not index
    # it (np.array of a list failed with "'float' object is not subscriptable").  A
    # number g is the cotangent g * ones of the result: checked as <g, f(x)>.
    a, b = values(1, (2, 3)), values(2, (2, 3))
    for fn, param in ((np.stack, "arrays"), (np.concatenate, "arrays"), (np.array, "object")):
        r = rule_vjp(fn, param)
        check_vjp(lambda a: fn([a, b]), lambda g, ans, a, r=r: r(g, ans, [a, b])[0], [a], 0,
                  g=1.5)
    cts = rule_vjp(np.array, "object")(2.0, None, [0.5, np.ones(2)])
    assert cts[0] == 2.0 and np.array_equal(cts[1], [2.0, 2.0])


def test_stack_and_concatenate_of_a_display_know_their_rank():
    import ast

    from pullback.core.kinds import FLOAT, Kind
    vec, mat = Kind(1, "f"), Kind(2, "f")
    call = ast.parse("f(a)", mode="eval").body
    flat = ast.parse("f(a, axis=None)", mode="eval").body
    stack, cat = rule_of(np.stack).result, rule_of(np.concatenate).result
    assert stack(np.stack, [Kind(None, "o", (vec, vec))], {}, call) == mat
    assert stack(np.stack, [Kind(None, "o", (FLOAT, FLOAT))], {}, call) == vec
    assert cat(np.concatenate, [Kind(None, "o", (mat, mat))], {}, call) == mat
    assert cat(np.concatenate, [Kind(None, "o", (mat, mat))], {"axis": Kind(None, "o")},
               flat) == vec
    # items of different ranks, or not known: of unknown rank, as before
    assert stack(np.stack, [Kind(None, "o", (vec, mat))], {}, call).ndim == -1
    assert cat(np.concatenate, [Kind(-1, "f")], {}, call).ndim == -1


# ---------------------------------------------------------------------------
# torch

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    from pullback.rules.shapes import broadcast_to_vjp, reshape_vjp

    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    y = torch.tensor(rng.standard_normal((2, 1, 4)), requires_grad=True)
    out = torch.cat([x.permute(2, 0, 1), y.permute(2, 0, 1).expand(4, 2, 5)], dim=-1)
    g = torch.tensor(rng.standard_normal(tuple(out.shape)))
    out.backward(g)
    gx, gy = concatenate_vjp(g, [x.detach().permute(2, 0, 1), torch.zeros(4, 2, 5)], -1)
    gx = transpose_vjp(gx, x.detach(), (2, 0, 1))
    gy = transpose_vjp(broadcast_to_vjp(gy, torch.zeros(4, 2, 1)), y.detach(), (2, 0, 1))
    torch.testing.assert_close(gx, x.grad)
    torch.testing.assert_close(gy, y.grad)
    # Fortran-order reshape.
    a = torch.tensor(rng.standard_normal((2, 3)))
    g = torch.tensor(rng.standard_normal((3, 2)))
    want = np.reshape(g.cpu().numpy(), (2, 3), order="F")
    np.testing.assert_allclose(reshape_vjp(g, a, "F").cpu().numpy(), want)
    parts = stack_vjp(g, [torch.zeros(3), torch.zeros(3)], axis=1)
    torch.testing.assert_close(parts[1], g[:, 1])
