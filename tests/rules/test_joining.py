import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pullback.rules.joining import item_cotangents, split_vjp

from .checks import SETTINGS, check_vjp, rule_vjp, seeds
from .checks import array_values as values

dims = st.integers(1, 4)


def _item(vjp_of_seq, k):
    """The cotangent of item ``k`` of a sequence argument, as check_vjp wants it."""
    return lambda g, ans, *xs: vjp_of_seq(g, ans, list(xs))[k]


def _check_all(fn, param, xs, **kw):
    r = rule_vjp(fn, param)
    for k in range(len(xs)):
        check_vjp(lambda *xs: fn(list(xs), **kw),
                  _item(lambda g, ans, seq: r(g, ans, seq, **kw), k), xs, k)


# ---------------------------------------------------------------------------
# split: the cotangent of the pieces as a list, with items nothing reached

SPLITS = [
    (np.split, {"indices_or_sections": 2, "axis": 1}, (3, 4)),
    (np.split, {"indices_or_sections": [1, 3], "axis": -1}, (2, 5)),
    (np.split, {"indices_or_sections": 1}, (7,)),
    (np.array_split, {"indices_or_sections": 3, "axis": 0}, (7, 2)),
    (np.array_split, {"indices_or_sections": [3, 5]}, (7,)),
    (np.hsplit, {"indices_or_sections": [1, 2]}, (3, 4)),
    (np.hsplit, {"indices_or_sections": 2}, (4,)),
    (np.vsplit, {"indices_or_sections": 2}, (4, 3)),
    (np.dsplit, {"indices_or_sections": 2}, (2, 3, 4)),
]


@pytest.mark.parametrize("fn, kw, shape", SPLITS,
                         ids=[f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(SPLITS)])
@SETTINGS
@given(seed=seeds, used=st.lists(st.booleans(), min_size=7, max_size=7))
def test_split(fn, kw, shape, seed, used):
    x = values(seed, shape)
    weights = [values(seed + 1 + i, p.shape) for i, p in enumerate(fn(x, **kw))]

    def f(x):       # a scalar of the pieces that uses some of them only
        return sum(np.sum(w * p) for w, p, u in zip(weights, fn(x, **kw), used) if u)

    def vjp(g, ans, x):
        pieces = fn(x, **kw)
        cts = [g * w if u else 0.0 for w, u in zip(weights, used)][:len(pieces)]
        return rule_vjp(fn, "ary")(cts, pieces, x, **kw)
    check_vjp(f, vjp, [x], 0)


def test_item_cotangents_accepts_every_form():
    items = [np.zeros(2), np.zeros(3)]
    np.testing.assert_array_equal(item_cotangents(np, [None, np.ones(3)], items)[0], [0.0, 0.0])
    np.testing.assert_array_equal(item_cotangents(np, 2.0, items)[1], [2.0, 2.0, 2.0])
    stacked = item_cotangents(np, np.arange(4.0).reshape(2, 2), [np.zeros(2), np.zeros(2)])
    np.testing.assert_array_equal(stacked[1], [2.0, 3.0])
    ct = split_vjp((0.0, np.ones((2, 1))), [np.zeros((2, 2)), np.zeros((2, 1))], np.zeros((2, 3)), 1)
    np.testing.assert_array_equal(ct, [[0, 0, 1], [0, 0, 1]])


# ---------------------------------------------------------------------------
# stacks

@pytest.mark.parametrize("fn", [np.hstack, np.vstack, np.dstack, np.column_stack],
                         ids=lambda f: f.__name__)
@SETTINGS
@given(rank=st.integers(0, 3), n=st.integers(1, 3), sizes=st.lists(dims, min_size=3, max_size=3),
       data=st.data(), seed=seeds)
def test_stacks(fn, rank, n, sizes, data, seed):
    axis = {np.hstack: 1, np.vstack: 0, np.dstack: 2, np.column_stack: 1}[fn]
    if fn is np.hstack and rank == 1:
        axis = 0
    if fn is np.column_stack and rank > 2:
        rank = 2
    base = tuple(sizes[:rank])
    xs = []
    for i in range(n):
        s = list(base)
        if axis < rank and not (fn is np.vstack and rank == 1):   # vectors become rows
            s[axis] = data.draw(dims)
        xs.append(values(seed + i, tuple(s)) if s or data.draw(st.booleans())
                  else float(values(seed + i, ())))
    _check_all(fn, "tup", xs)


@SETTINGS
@given(shape=st.lists(dims, min_size=1, max_size=3).map(tuple), data=st.data(), seed=seeds)
def test_append(shape, data, seed):
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    other = list(shape)
    if axis is not None:
        other[axis] = data.draw(dims)
    else:
        other = data.draw(st.lists(dims, max_size=2))
    args = [values(seed, shape), values(seed + 1, tuple(other))]
    for k, param in enumerate(["arr", "values"]):
        r = rule_vjp(np.append, param)
        check_vjp(lambda a, b: np.append(a, b, axis),
                  lambda g, ans, a, b, r=r: r(g, ans, a, b, axis), args, k)


# ---------------------------------------------------------------------------
# torch

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    from pullback.rules import joining

    rng = np.random.default_rng(4)
    x = torch.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    a, b = torch.split(x, [2, 3], dim=1)
    loss = (a * 2.0).sum() + (b ** 2).sum()
    loss.backward()
    ct = joining.split_vjp([2.0 * torch.ones(3, 2, dtype=torch.float64), 2 * b.detach()],
                           [a.detach(), b.detach()], x.detach(), 1)
    torch.testing.assert_close(ct, x.grad)
    y = torch.tensor(rng.standard_normal(4), requires_grad=True)
    z = torch.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    out = torch.column_stack([y, z])
    g = torch.tensor(rng.standard_normal(tuple(out.shape)))
    out.backward(g)
    gy, gz = joining.column_stack_vjp(g, [y.detach(), z.detach()])
    torch.testing.assert_close(gy, y.grad)
    torch.testing.assert_close(gz, z.grad)
