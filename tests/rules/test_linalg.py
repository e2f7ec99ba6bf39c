import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback.rules.diagonals import trace_vjp
from pullback.rules.einsum import einsum_subscripts, einsum_vjp, parse_einsum
from pullback.rules.linalg import matmul_vjp_a, matmul_vjp_b
from pullback.rules.solve import det_vjp, inv_vjp, slogdet_vjp, solve_vjp_a, solve_vjp_b
from pullback.rules.tensor_products import cross_vjp_a, cross_vjp_b, kron_vjp_a, kron_vjp_b
from pullback.rules.tensordot import tensordot_vjp_a, tensordot_vjp_b

from .checks import SETTINGS, check_vjp, rule_vjp, seeds, values

dims = st.integers(1, 3)
batch_shapes = hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)


def _both(fn, params, args, **kw):
    for k, p in enumerate(params):
        check_vjp(fn, rule_vjp(fn, p), args, k, **kw)


# ---------------------------------------------------------------------------
# dot, matmul, outer, inner

@SETTINGS
@given(na=st.integers(0, 3), nb=st.integers(0, 3), n=dims, data=st.data(), seed=seeds)
def test_dot(na, nb, n, data, seed):
    # a: (I..., n), b: (J..., n, m), or a scalar, or b a vector.
    lead = tuple(data.draw(st.lists(dims, min_size=max(na - 1, 0), max_size=max(na - 1, 0))))
    a_shape = () if na == 0 else lead + (n,)
    if nb == 0:
        b_shape = ()
    elif nb == 1:
        b_shape = (n,) if na else (2,)
    else:
        b_shape = tuple(data.draw(st.lists(dims, min_size=nb - 2, max_size=nb - 2))) + (n, 2)
    args = [values(seed, a_shape), values(seed + 1, b_shape)]
    _both(np.dot, ["a", "b"], args)


@SETTINGS
@given(batches=batch_shapes, n=dims, m=dims, k=dims, vec=st.sampled_from(["", "a", "b", "ab"]),
       seed=seeds)
def test_matmul(batches, n, m, k, vec, seed):
    ba, bb = batches.input_shapes
    a_shape = (k,) if "a" in vec else ba + (n, k)
    b_shape = (k,) if "b" in vec else bb + (k, m)
    args = [values(seed, a_shape), values(seed + 1, b_shape)]
    _both(np.matmul, ["x1", "x2"], args)
    _both(operator.matmul, ["a", "b"], args)


@SETTINGS
@given(sa=st.lists(dims, max_size=2).map(tuple), sb=st.lists(dims, max_size=2).map(tuple),
       seed=seeds)
def test_outer(sa, sb, seed):
    _both(np.outer, ["a", "b"], [values(seed, sa), values(seed + 1, sb)])


@SETTINGS
@given(sa=st.lists(dims, max_size=2).map(tuple), sb=st.lists(dims, max_size=2).map(tuple),
       k=dims, seed=seeds)
def test_inner(sa, sb, k, seed):
    a_shape = sa + (k,) if sa or k > 1 else ()
    b_shape = sb + (k,)
    _both(np.inner, ["a", "b"], [values(seed, a_shape), values(seed + 1, b_shape)])


# ---------------------------------------------------------------------------
# solve, inv, det, slogdet

def _well_conditioned(seed, shape):
    n = shape[-1]
    return values(seed, shape) + 3.0 * np.eye(n)


@SETTINGS
@given(batches=batch_shapes, n=dims, k=st.integers(0, 2), seed=seeds)
def test_solve(batches, n, k, seed):
    ba, bb = batches.input_shapes
    a = _well_conditioned(seed, ba + (n, n))
    b = values(seed + 1, (n,) if k == 0 else bb + (n, k))   # k == 0: b is a vector
    _both(np.linalg.solve, ["a", "b"], [a, b])


@SETTINGS
@given(batch=st.lists(dims, max_size=2).map(tuple), n=dims, seed=seeds)
def test_inv_det_slogdet(batch, n, seed):
    a = _well_conditioned(seed, batch + (n, n)) * np.where(seed % 2, 1.0, -1.0)
    check_vjp(np.linalg.inv, rule_vjp(np.linalg.inv, "a"), [a], 0)
    check_vjp(np.linalg.det, rule_vjp(np.linalg.det, "a"), [a], 0)
    check_vjp(lambda a: np.linalg.slogdet(a)[1], rule_vjp(np.linalg.slogdet, "a"), [a], 0)


def test_det_of_singular_matrix_is_the_adjugate():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])     # rank 2
    ct = det_vjp(1.0, np.linalg.det(a), a)
    assert np.all(np.isfinite(ct))
    check_vjp(np.linalg.det, lambda g, ans, a: det_vjp(g, ans, a), [a], 0)
    zero = det_vjp(1.0, 0.0, np.zeros((3, 3)))          # rank 0: adjugate is 0
    np.testing.assert_allclose(zero, np.zeros((3, 3)), atol=1e-15)


def test_slogdet_cotangent_conventions():
    a = _well_conditioned(1, (3, 3))
    ans = np.linalg.slogdet(a)
    expected = np.linalg.inv(a).T * 2.0
    np.testing.assert_allclose(slogdet_vjp(2.0, ans, a), expected)
    np.testing.assert_allclose(slogdet_vjp((0.0, 2.0), ans, a), expected)
    np.testing.assert_allclose(slogdet_vjp((5.0, 2.0), ans, a), expected)    # sign ignored
    np.testing.assert_array_equal(slogdet_vjp((1.0, None), ans, a), np.zeros((3, 3)))
    np.testing.assert_allclose(slogdet_vjp(np.array([5.0, 2.0]), ans, a), expected)   # stacked
    # A batch of two matrices: g of shape (2,) is g_logabsdet, (2, 2) the stacked pair.
    b = np.stack([a, 2 * a])
    ans = np.linalg.slogdet(b)
    want = np.linalg.inv(b).transpose(0, 2, 1) * np.array([1.0, 3.0])[:, None, None]
    np.testing.assert_allclose(slogdet_vjp(np.array([1.0, 3.0]), ans, b), want)
    np.testing.assert_allclose(slogdet_vjp(np.array([[0.0, 0.0], [1.0, 3.0]]), ans, b), want)


# ---------------------------------------------------------------------------
# trace

@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4).map(tuple), data=st.data(),
       seed=seeds)
def test_trace(shape, data, seed):
    nd = len(shape)
    ax1, ax2 = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2)
                         .filter(lambda p: p[0] % nd != p[1] % nd))
    offset = data.draw(st.integers(-2, 2))
    a = values(seed, shape)
    f = lambda a: np.trace(a, offset, ax1, ax2)     # noqa: E731
    r = rule_vjp(np.trace, "a")
    check_vjp(f, lambda g, ans, a: r(g, ans, a, offset, ax1, ax2), [a], 0)


# ---------------------------------------------------------------------------
# tensordot, kron, cross

@SETTINGS
@given(free_a=st.lists(dims, max_size=2), free_b=st.lists(dims, max_size=2),
       summed=st.lists(dims, max_size=3), data=st.data(), seed=seeds)
def test_tensordot(free_a, free_b, summed, data, seed):
    # Contracted dimension j sits at a_axes[j] in a and b_axes[j] in b, places drawn at random.
    k = len(summed)
    a_axes = data.draw(st.permutations(range(len(free_a) + k)))[:k]
    b_axes = data.draw(st.permutations(range(len(free_b) + k)))[:k]

    def shape(free, places):
        rest = iter(free)
        return tuple(summed[places.index(i)] if i in places else next(rest)
                     for i in range(len(free) + k))
    axes = (list(a_axes), list(b_axes))
    args = [values(seed, shape(free_a, a_axes)), values(seed + 1, shape(free_b, b_axes))]
    f = lambda a, b: np.tensordot(a, b, axes)     # noqa: E731
    for j, p in enumerate(["a", "b"]):
        r = rule_vjp(np.tensordot, p)
        check_vjp(f, lambda g, ans, a, b, r=r: r(g, ans, a, b, axes), args, j)


@pytest.mark.parametrize("sa, sb, axes", [((2, 3), (3, 4), 1), ((2, 3), (2, 3), 2),
                                          ((2,), (3,), 0), ((), (2, 2), 0), ((3, 2), (2, 3), 1),
                                          ((2, 3, 4), (4, 3), [(1, 2), (1, 0)])])
def test_tensordot_int_axes(sa, sb, axes):
    args = [values(3, sa), values(4, sb)]
    f = lambda a, b: np.tensordot(a, b, axes)     # noqa: E731
    for j, p in enumerate(["a", "b"]):
        r = rule_vjp(np.tensordot, p)
        check_vjp(f, lambda g, ans, a, b, r=r: r(g, ans, a, b, axes), args, j)


@SETTINGS
@given(sa=st.lists(dims, max_size=3).map(tuple), sb=st.lists(dims, max_size=3).map(tuple),
       seed=seeds)
def test_kron(sa, sb, seed):
    _both(np.kron, ["a", "b"], [values(seed, sa), values(seed + 1, sb)])


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated")
@SETTINGS
@given(batches=batch_shapes, na=st.sampled_from([2, 3]), nb=st.sampled_from([2, 3]),
       data=st.data(), seed=seeds)
def test_cross(batches, na, nb, data, seed):
    ba, bb = batches.input_shapes
    ia = data.draw(st.integers(0, len(ba)))
    ib = data.draw(st.integers(0, len(bb)))
    a = values(seed, ba[:ia] + (na,) + ba[ia:])
    b = values(seed + 1, bb[:ib] + (nb,) + bb[ib:])
    out_nd = max(len(ba), len(bb)) + 1
    kw = dict(axisa=ia - len(ba) - 1, axisb=ib, axisc=data.draw(st.integers(-out_nd, out_nd - 1)))
    if na == nb == 2:
        kw["axisc"] = -1
    f = lambda a, b: np.cross(a, b, **kw)     # noqa: E731
    for j, p in enumerate(["a", "b"]):
        r = rule_vjp(np.cross, p)
        check_vjp(f, lambda g, ans, a, b, r=r: r(g, ans, a, b, **kw), [a, b], j)


def test_cross_axis_overrides():
    a, b = values(1, (3, 2)), values(2, (3, 4))
    f = lambda a, b: np.cross(a, b, axis=0)     # noqa: E731
    for j, p in enumerate(["a", "b"]):
        r = rule_vjp(np.cross, p)
        check_vjp(f, lambda g, ans, a, b, r=r: r(g, ans, a, b, axis=0), [a, b[:, :1]], j)


# ---------------------------------------------------------------------------
# einsum

EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,j->i", [(2, 3), (3,)]),
    ("i,i->", [(4,), (4,)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->ij", [(2, 3)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->i", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),                       # implicit output: ik
    ("ba", [(2, 3)]),                                   # implicit: transpose
    ("i,j->ij", [(2,), (3,)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),   # ellipsis with broadcasting
    ("...i,...i", [(2, 3), (3,)]),                       # implicit with ellipsis
    ("ij,ij->ij", [(1, 3), (2, 3)]),                     # size-1 broadcast
    ("ijk,ikl->jl", [(2, 3, 2), (2, 2, 3)]),
    ("i,->i", [(3,), ()]),
]


@pytest.mark.parametrize("subscripts, shapes_", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(subscripts, shapes_):
    ops = [values(7 + i, s) for i, s in enumerate(shapes_)]
    f = lambda *ops: np.einsum(subscripts, *ops)       # noqa: E731
    for k in range(len(ops)):
        r = rule_vjp(np.einsum, f"operands[{k + 1}]")
        check_vjp(f, lambda g, ans, *ops: r(g, ans, subscripts, *ops), ops, k)


def test_einsum_parse():
    assert parse_einsum("ij,jk", [2, 2]) == (["ij", "jk"], "ik")
    ins, out = parse_einsum("...ij,...jk->...ik", [4, 3])
    assert [len(t) for t in ins] == [4, 3] and len(out) == 4 and out.endswith("ik")
    assert ins[0][1] == ins[1][0] and out[:2] == ins[0][:2]     # right-aligned letters


def test_einsum_sublist_form_becomes_the_string_form():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    assert einsum_subscripts((a, [0, 1], b, [1, 2], [0, 2]))[::2] == ("AB,BC->AC", [0, 2])
    assert einsum_subscripts((a, [Ellipsis, 27]))[0] == "...b"       # implicit output
    assert einsum_subscripts(("ij->", a)) == ("ij->", [a], [1])
    with pytest.raises(ValueError, match="sublist label"):
        einsum_subscripts((a, [0, 52]))


def _labels(draw, letters, nops):
    """Subscripts of ``nops`` operands over ``letters`` (repeats allowed), and maybe
    an ellipsis in each; then an output (None: implicit)."""
    ins = [draw(st.lists(st.sampled_from(letters), max_size=3)) for _ in range(nops)]
    ell = [draw(st.booleans()) for _ in range(nops)]
    if draw(st.booleans()):
        return ins, ell, None
    used = sorted(set().union(*map(set, ins)))
    out = draw(st.permutations(used).flatmap(
        lambda p: st.integers(0, len(p)).map(lambda n: list(p[:n]))))
    return ins, ell, out


@st.composite
def random_einsums(draw, max_ops=5):
    """A random ``np.einsum`` call: (subscripts, sublist arguments without the
    arrays, operand shapes).  One to ``max_ops`` operands, repeated indices (a
    letter has one size throughout), implicit or explicit output, and ``...``
    with broadcasting batch dimensions."""
    nops = draw(st.integers(1, max_ops))
    letters = "abcde"
    size = {c: draw(st.integers(1, 3)) for c in letters}
    ins, ell, out = _labels(draw, letters, nops)
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=nops, max_dims=2, max_side=2))
    shapes, terms, sublists = [], [], []
    for j, idx in enumerate(ins):
        lead = batch.input_shapes[j] if ell[j] else ()
        shapes.append(tuple(lead) + tuple(size[c] for c in idx))
        terms.append(("..." if ell[j] else "") + "".join(idx))
        sublists.append(([Ellipsis] if ell[j] else []) + ["abcde".index(c) for c in idx])
    subscripts = ",".join(terms)
    if out is not None:
        prefix = "..." if any(ell) else ""
        subscripts += "->" + prefix + "".join(out)
        tail = [([Ellipsis] if any(ell) else []) + ["abcde".index(c) for c in out]]
    else:
        tail = []
    return subscripts, sublists + tail, shapes


def _sublist_call(ops, lists):
    """The arguments of the sublist form: operands and label lists interleaved."""
    args = []
    for op, labels in zip(ops, lists):
        args += [op, labels]
    return args + lists[len(ops):]


@SETTINGS
@given(random_einsums(), seeds)
def test_einsum_random_calls_against_finite_differences(call, seed):
    subscripts, lists, shapes_ = call
    ops = [values(seed + j, s) for j, s in enumerate(shapes_)]
    for k in range(len(ops)):
        string = rule_vjp(np.einsum, f"operands[{k + 1}]")
        check_vjp(lambda *o: np.einsum(subscripts, *o),
                  lambda g, ans, *o, r=string: r(g, ans, subscripts, *o), ops, k)
        sub = rule_vjp(np.einsum, f"operands[{2 * k}]")
        check_vjp(lambda *o: np.einsum(*_sublist_call(o, lists)),
                  lambda g, ans, *o, r=sub: r(g, ans, *_sublist_call(o, lists)), ops, k)


@SETTINGS
@given(random_einsums(), seeds)
def test_einsum_random_calls_against_torch(call, seed):
    torch = pytest.importorskip("torch")
    subscripts, lists, shapes_ = call
    ops = [values(seed + j, s) for j, s in enumerate(shapes_)]
    ts = [torch.tensor(np.asarray(o), dtype=torch.float64, requires_grad=True) for o in ops]
    out = torch.einsum(subscripts, *ts)
    g = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    out.backward(torch.tensor(g))
    for k, t in enumerate(ts):
        want = t.grad.numpy()
        np.testing.assert_allclose(einsum_vjp(g, k + 1, subscripts, *ops), want,
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(einsum_vjp(g, 2 * k, *_sublist_call(ops, lists)), want,
                                   rtol=1e-10, atol=1e-12)


def _chain(a, b, c, d, e):
    """Five operands in the sublist form: eleven arguments."""
    return np.sum(np.sin(np.einsum(a, [0, 1], b, [1, 2], c, [2, 3], d, [3, 3], e, [3],
                                   [0, 3])))


def _diagonal_string(a, b, c):
    return np.sum(np.einsum("ii,ij,...j", a, b, c) ** 2)


def test_einsum_any_number_of_operands_through_grad():
    r = np.random.default_rng(3)
    args = [r.normal(size=s) for s in [(2, 3), (3, 2), (2, 4), (4, 4), (4,)]]
    got = pullback.grad(_chain, argnums=(0, 1, 2, 3, 4))(*args)
    for k, gk in enumerate(got):
        assert_fd_close(gk, fd_estimate(_chain, args, k), rtol=1e-6, atol=1e-8)
    args = [r.normal(size=s) for s in [(3, 3), (3, 2), (4, 2)]]
    got = pullback.grad(_diagonal_string, argnums=(0, 1, 2))(*args)
    for k, gk in enumerate(got):
        assert_fd_close(gk, fd_estimate(_diagonal_string, args, k), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------
# The same helpers on torch tensors, against torch autograd (float64)

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    t = lambda *s: torch.tensor(rng.standard_normal(s), requires_grad=True)   # noqa: E731
    well = lambda *s: torch.tensor(rng.standard_normal(s) + 3 * np.eye(s[-1]),  # noqa: E731
                                   requires_grad=True)
    cases = [
        (lambda a, b: a @ b, [t(2, 1, 3, 4), t(5, 4, 2)], [matmul_vjp_a, matmul_vjp_b], False),
        (lambda a, b: a @ b, [t(4), t(3, 4, 2)], [matmul_vjp_a, matmul_vjp_b], False),
        (lambda a, b: torch.linalg.solve(a, b), [well(2, 3, 3), t(3, 2)],
         [solve_vjp_a, solve_vjp_b], True),
        (lambda a, b: torch.linalg.solve(a, b.unsqueeze(-1)).squeeze(-1), [well(3, 3), t(3)],
         [solve_vjp_a, solve_vjp_b], True),
        (torch.linalg.inv, [well(2, 3, 3)], [inv_vjp], True),
        (torch.linalg.det, [t(2, 3, 3)], [det_vjp], True),
        (lambda a: torch.linalg.slogdet(a)[1], [well(3, 3)], [slogdet_vjp], True),
        (lambda a: torch.diagonal(a, 1, 0, 2).sum(-1), [t(3, 2, 4)],
         [lambda g, a: trace_vjp(g, a, 1, 0, 2)], False),
        (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [t(2, 2, 3), t(2, 3, 4)],
         [lambda g, a, b: einsum_vjp(g, 1, "bij,bjk->bik", a, b),
          lambda g, a, b: einsum_vjp(g, 2, "bij,bjk->bik", a, b)], False),
        (lambda a: torch.einsum("ii->i", a), [t(3, 3)],
         [lambda g, a: einsum_vjp(g, 1, "ii->i", a)], False),
        (lambda a, b: torch.tensordot(a, b, dims=([1, 2], [1, 0])), [t(2, 3, 4), t(4, 3)],
         [lambda g, a, b: tensordot_vjp_a(g, a, b, [(1, 2), (1, 0)]),
          lambda g, a, b: tensordot_vjp_b(g, a, b, [(1, 2), (1, 0)])], False),
        (torch.kron, [t(2, 3), t(3, 2)], [kron_vjp_a, kron_vjp_b], False),
        (lambda a, b: torch.linalg.cross(a, b.expand(4, 3)), [t(4, 3), t(3)],
         [cross_vjp_a, cross_vjp_b], False),
    ]
    for fwd, args, vjps, takes_ans in cases:
        out = fwd(*args)
        g = torch.tensor(rng.standard_normal(tuple(out.shape)))
        out.backward(g)
        plain = [a.detach() for a in args]
        for arg, vjp in zip(args, vjps):
            ct = vjp(g, out.detach(), *plain) if takes_ans else vjp(g, *plain)
            assert isinstance(ct, torch.Tensor)
            torch.testing.assert_close(ct, arg.grad, rtol=1e-9, atol=1e-10)
