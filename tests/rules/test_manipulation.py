import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import check_jit
from pullback.rules import results
from pullback.rules.diagonals import diag_vjp, tril_vjp
from pullback.rules.manipulation import repeat_vjp
from pullback.rules.registry import lookup
from pullback.rules.reorder import partition_vjp, sort_vjp

from .checks import SETTINGS, check_vjp, rule_vjp, seeds, shapes
from .checks import array_values as values

nonempty = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
matrices = st.lists(st.integers(1, 4), min_size=2, max_size=4).map(tuple)


def _kw(fn, param, **kw):
    r = rule_vjp(fn, param)
    return lambda g, ans, *args: r(g, ans, *args, **kw)


def _check(fn, param, x, **kw):
    check_vjp(lambda x: fn(x, **kw), _kw(fn, param, **kw), [x], 0)


# ---------------------------------------------------------------------------
# repeat, tile

@SETTINGS
@given(shape=shapes, data=st.data(), seed=seeds)
def test_repeat(shape, data, seed):
    x = values(seed, shape)
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1))) if nd else None
    _check(np.repeat, "a", x, repeats=data.draw(st.integers(0, 3)), axis=axis)
    n = x.size if axis is None else shape[axis]
    reps = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    _check(np.repeat, "a", x, repeats=reps, axis=axis)
    _check(np.repeat, "a", x, repeats=np.array(reps[:1]), axis=axis)


def test_repeat_of_a_scalar():
    ct = repeat_vjp(np.ones(3), 1.5, 3)
    assert isinstance(ct, np.float64) and ct == 3.0


@SETTINGS
@given(shape=shapes, reps=st.one_of(st.integers(1, 3), st.lists(st.integers(1, 3), max_size=4)),
       seed=seeds)
def test_tile(shape, reps, seed):
    _check(np.tile, "A", values(seed, shape), reps=reps)


# ---------------------------------------------------------------------------
# diff

@SETTINGS
@given(shape=nonempty, data=st.data(), seed=seeds)
def test_diff(shape, data, seed):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    n = data.draw(st.integers(0, shape[axis] + 1))
    x = values(seed, shape)
    _check(np.diff, "a", x, n=n, axis=axis)
    pre = values(seed + 1, shape[:axis % nd] + (2,) + shape[axis % nd + 1:])
    for k, param in enumerate(["a", "prepend", "append"]):
        r = rule_vjp(np.diff, param)
        check_vjp(lambda x, p, q: np.diff(x, n, axis, prepend=p, append=q),
                  lambda g, ans, x, p, q, r=r: r(g, ans, x, n, axis, p, q), [x, pre, 0.5], k)


# ---------------------------------------------------------------------------
# flips, rotations, rolls

@SETTINGS
@given(shape=matrices, data=st.data(), seed=seeds)
def test_flip_rot90_roll(shape, data, seed):
    nd = len(shape)
    x = values(seed, shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                               st.lists(st.integers(0, nd - 1), min_size=1, unique=True)
                               .map(tuple)))
    _check(np.flip, "m", x, axis=axis)
    check_vjp(np.fliplr, rule_vjp(np.fliplr, "m"), [x], 0)
    check_vjp(np.flipud, rule_vjp(np.flipud, "m"), [x], 0)
    axes = tuple(data.draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2)
                           .filter(lambda p: p[0] % nd != p[1] % nd)))
    _check(np.rot90, "m", x, k=data.draw(st.integers(-5, 5)), axes=axes)
    shift = data.draw(st.integers(-7, 7))
    _check(np.roll, "a", x, shift=shift)
    _check(np.roll, "a", x, shift=shift, axis=axes[0])
    _check(np.roll, "a", x, shift=(shift, 1), axis=axes)
    _check(np.rollaxis, "a", x, axis=axes[0], start=data.draw(st.integers(-nd, nd)))


# ---------------------------------------------------------------------------
# diag, diagonal, tril, triu

@SETTINGS
@given(n=st.integers(1, 4), m=st.integers(1, 4), k=st.integers(-4, 4), seed=seeds)
def test_diag(n, m, k, seed):
    _check(np.diag, "v", values(seed, (n,)), k=k)
    _check(np.diag, "v", values(seed, (n, m)), k=k)


@SETTINGS
@given(shape=matrices, data=st.data(), seed=seeds)
def test_diagonal(shape, data, seed):
    nd = len(shape)
    ax1, ax2 = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2)
                         .filter(lambda p: p[0] % nd != p[1] % nd))
    _check(np.diagonal, "a", values(seed, shape), offset=data.draw(st.integers(-3, 3)),
           axis1=ax1, axis2=ax2)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
       k=st.integers(-3, 3), seed=seeds)
def test_tril_triu(shape, k, seed):
    x = values(seed, shape)
    _check(np.tril, "m", x, k=k)
    _check(np.triu, "m", x, k=k)


def test_diag_and_tril_put_g_where_the_entries_came_from():
    g = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(diag_vjp(g, np.ones(2), 1), [1.0, 5.0])
    np.testing.assert_array_equal(diag_vjp(np.array([7.0]), np.ones((2, 3)), 2),
                                  [[0, 0, 7], [0, 0, 0]])
    np.testing.assert_array_equal(tril_vjp(g, np.ones((3, 3)), -1), np.tril(g, -1))


# ---------------------------------------------------------------------------
# atleast_nd, sort

@pytest.mark.parametrize("fn", [np.atleast_1d, np.atleast_2d, np.atleast_3d],
                         ids=lambda f: f.__name__)
@SETTINGS
@given(shape=shapes, seed=seeds)
def test_atleast(fn, shape, seed):
    check_vjp(fn, rule_vjp(fn, "ary"), [values(seed, shape)], 0)


@pytest.mark.parametrize("fn, n", [(np.atleast_1d, 1), (np.atleast_2d, 2), (np.atleast_3d, 3)])
def test_atleast_result_kinds(fn, n):
    from pullback.core.kinds import FLOAT, Kind
    kind = lookup(fn).result
    assert kind(fn, [FLOAT], {}, None) == Kind(n, "f")
    assert kind(fn, [Kind(4, "f")], {}, None) == Kind(4, "f")
    assert kind is not results.like


@SETTINGS
@given(shape=shapes, data=st.data(), seed=seeds)
def test_sort(shape, data, seed):
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1))) if nd else None
    _check(np.sort, "a", values(seed, shape), axis=axis)


def test_sort_with_ties():
    x = np.array([2.0, 1.0, 2.0, 0.0])
    g = np.array([1.0, 2.0, 3.0, 4.0])
    ct = sort_vjp(g, x)
    np.testing.assert_array_equal(np.sort(x), [0.0, 1.0, 2.0, 2.0])
    # Tied entries are interchangeable: together they get the sum of their slots.
    assert ct[1] == 2.0 and ct[3] == 1.0 and ct[0] + ct[2] == 7.0


@SETTINGS
@given(shape=nonempty, data=st.data(), seed=seeds)
def test_partition(shape, data, seed):
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    kth = data.draw(st.one_of(st.integers(-n, n - 1),
                              st.lists(st.integers(0, n - 1), min_size=1, max_size=3).map(tuple)))
    _check(np.partition, "a", values(seed, shape), kth=kth, axis=axis)


def test_partition_with_ties():
    x = np.array([2.0, 1.0, 2.0, 0.0, 5.0])
    ans = np.partition(x, 2)
    g = np.arange(1.0, 6.0)
    ct = partition_vjp(g, ans, x, 2)
    # Each entry of x gets g at the slot its value went to; tied ones share theirs.
    for v in (0.0, 1.0, 5.0):
        assert ct[x == v] == g[ans == v]
    assert ct[0] + ct[2] == g[ans == 2.0].sum()


def _partition_by_position(x):
    # Reads every slot of the partition, so it depends on how np.partition arranged
    # the entries on either side of the k-th: under jit=True too it is NumPy's choice.
    return np.sum(np.sin(np.partition(x, 2)) * np.arange(x.size).reshape(x.shape))


def _partition_along_rows(x):
    return np.sum(np.sin(np.partition(x, 1, axis=0)) * np.arange(x.size).reshape(x.shape))


def _partition_flat(x):
    p = np.partition(x, 2, axis=None)
    return np.sum(p[:3] ** 2 * np.arange(3.0)) + np.sum(np.exp(p[3:]))


@SETTINGS
@given(rows=st.integers(2, 3), n=st.integers(3, 8), seed=seeds)
def test_partition_compiles_under_numba(rows, n, seed):
    """NumPy's partition in the forward sweep (object mode) and the cotangent's twin, on
    a vector, along the last axis, the first and all, against jit=False and finite
    differences (ties are kinks: the Python rule's tests cover them)."""
    x = np.random.default_rng(seed).normal(size=(rows, n))
    check_jit(_partition_by_position, (x[0],))
    check_jit(_partition_by_position, (x,))
    check_jit(_partition_along_rows, (x,))
    check_jit(_partition_flat, (x,))


# ---------------------------------------------------------------------------
# torch

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    from pullback.rules import diagonals as d
    from pullback.rules import manipulation as m
    from pullback.rules import reorder as r

    rng = np.random.default_rng(3)
    t = lambda *s: torch.tensor(rng.standard_normal(s), requires_grad=True)   # noqa: E731
    cases = [
        (lambda x: torch.repeat_interleave(x, 2, dim=1), t(2, 3),
         lambda g, x: m.repeat_vjp(g, x, 2, 1)),
        (lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 2]), dim=1), t(2, 3),
         lambda g, x: m.repeat_vjp(g, x, torch.tensor([1, 0, 2]), 1)),
        (lambda x: x.tile((2, 1, 3)), t(2, 3), lambda g, x: m.tile_vjp(g, x, (2, 1, 3))),
        (lambda x: torch.diff(x, n=2, dim=0), t(4, 3), lambda g, x: m.diff_vjp(g, x, 2, 0)),
        (lambda x: torch.rot90(x, 3, (0, 2)), t(2, 3, 4),
         lambda g, x: r.rot90_vjp(g, x, 3, (0, 2))),
        (lambda x: torch.roll(x, 2, 1), t(2, 3), lambda g, x: r.roll_vjp(g, x, 2, 1)),
        (lambda x: torch.diagonal(x, 1, 0, 2), t(3, 2, 4),
         lambda g, x: d.diagonal_vjp(g, x, 1, 0, 2)),
        (lambda x: torch.diag(x, -1), t(3), lambda g, x: d.diag_vjp(g, x, -1)),
        (lambda x: torch.triu(x, 1), t(2, 3, 3), lambda g, x: d.triu_vjp(g, x, 1)),
        (lambda x: torch.sort(x, dim=0).values, t(4, 3), lambda g, x: r.sort_vjp(g, x, 0)),
    ]
    for fwd, x, vjp in cases:
        out = fwd(x)
        g = torch.tensor(rng.standard_normal(tuple(out.shape)))
        out.backward(g)
        ct = vjp(g, x.detach())
        assert isinstance(ct, torch.Tensor)
        torch.testing.assert_close(ct, x.grad)
