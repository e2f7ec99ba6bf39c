"""Programs that gave a different answer (or an error) under jit=True than on the
Python backend, each run on the Python backend, compiled, and in the default
background-compile mode (whose first calls run the Numba-flavoured code as
Python).  References: central finite differences (helpers.fd_grad)."""
import numpy as np
import pytest

import pullback
from helpers import fd_grad


def _calls(f, jit_mode, *args, argnums=0):
    """The gradient called twice, the second time after any background compile
    ended: the interim Python path and the compiled code both answer."""
    g = pullback.grad(f, argnums=argnums, jit=jit_mode != "python")
    first = g(*args)
    pullback.finish_compiling()
    return first, g(*args)


def _check(f, jit_mode, *args):
    for got in _calls(f, jit_mode, *args, argnums=tuple(range(len(args)))):
        for k, a in enumerate(args):
            np.testing.assert_allclose(got[k], fd_grad(f, args, k), rtol=1e-6, atol=1e-8)


def scan_tuple_carry(a, y):
    def step(carry, yt):
        level, t = carry
        return (a * yt + level, t), level * level
    (level, t), sq = pullback.scan(step, (0.0, 0.0), y)
    return np.sum(sq)


def scan_tuple_carry_both_items(a, y):
    def step(carry, yt):
        level, t = carry
        return (a * yt + level, t + level), level
    (level, t), s = pullback.scan(step, (0.0, 0.0), y)
    return np.sum(s) + t * t


def scan_nested_carry(a, y):
    def step(carry, yt):
        (u, v), w = carry
        return ((u + a * yt, v * 0.5 + u), w + v * yt), u * v
    ((u, v), w), out = pullback.scan(step, ((0.1, 0.2), 0.0), y)
    return np.sum(out) + w


@pytest.mark.parametrize("f", [scan_tuple_carry, scan_tuple_carry_both_items,
                               scan_nested_carry])
def test_scan_with_a_tuple_carry(f, jit_mode):
    _check(f, jit_mode, 0.5, np.array([1.0, 2.0, 3.0, -0.5]))


def test_scan_tuple_carry_value_from_the_issue(jit_mode):
    for da, dy in _calls(scan_tuple_carry, jit_mode, 0.5, np.array([1.0, 2.0, 3.0]),
                         argnums=(0, 1)):
        assert da == pytest.approx(10.0)
        np.testing.assert_allclose(dy, [2.0, 1.5, 0.0])


def logdet(S):
    sign, logabsdet = np.linalg.slogdet(S)
    return logabsdet


def eig_energy(S):
    w, V = np.linalg.eigh(S)
    return np.sum(w * w) + np.sum(V[:, 0] ** 4)


@pytest.mark.parametrize("f", [logdet, eig_energy])
def test_linalg_functions_returning_named_tuples(f, jit_mode):
    S = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])
    for got in _calls(f, jit_mode, S):
        np.testing.assert_allclose(got, fd_grad(f, (S,), 0), rtol=1e-6, atol=1e-8)


@pullback.custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(res, g):
    return (np.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


@pullback.custom_vjp
def safe_norm(v):
    return np.sqrt(np.sum(v * v))


def _norm_fwd(v):
    n = np.sqrt(np.sum(v * v))
    return n, (v, n)


def _norm_bwd(res, g):
    v, n = res
    return (g * v / n,)


safe_norm.defvjp(_norm_fwd, _norm_bwd)


def clipped_loss(w, x):
    pred = w * x
    pred = clip_gradient(pred)      # assigned back to its argument's name
    return np.sum(pred ** 2)


def norm_alone(x):
    return safe_norm(x)


def norms_in_a_loop(X):
    total = 0.0
    for i in range(X.shape[0]):
        total += safe_norm(X[i]) ** 1.5
    return total


@pytest.mark.filterwarnings("ignore::pullback.PerformanceWarning")   # object mode, said once
def test_custom_vjp_with_plain_python_rules_under_jit(jit_mode):
    w, x = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, -2.0])
    dw, dx = pullback.grad(clipped_loss, argnums=(0, 1), jit=jit_mode != "python")(w, x)
    # The clipped cotangent: 2 * pred clipped to [-1, 1], times the other factor.
    np.testing.assert_allclose(dw, np.clip(2 * w * x, -1, 1) * x)
    np.testing.assert_allclose(dx, np.clip(2 * w * x, -1, 1) * w)
    X = np.array([[1.0, 2.0], [3.0, -1.0]])
    for got in _calls(norm_alone, jit_mode, X[0]):
        np.testing.assert_allclose(got, X[0] / np.linalg.norm(X[0]), rtol=1e-14)
    for got in _calls(norms_in_a_loop, jit_mode, X):
        np.testing.assert_allclose(got, fd_grad(norms_in_a_loop, (X,), 0), rtol=1e-7)


def loss_with_notes(x):
    return np.sum(x * x), {"note": "hello", "n": np.sum(x), "k": 3, "flag": True, "none": None}


def test_has_aux_with_an_aux_that_is_not_numbers(jit_mode):
    x = np.array([1.0, 2.0])
    g = pullback.value_and_grad(loss_with_notes, has_aux=True, jit=jit_mode != "python")
    for _ in range(2):
        (value, aux), dx = g(x)
        assert value == 5.0
        assert aux == {"note": "hello", "n": 3.0, "k": 3, "flag": True, "none": None}
        np.testing.assert_allclose(dx, 2 * x)
        pullback.finish_compiling()


class Model:
    def __init__(self, c):
        self.c = c

    def loss(self, x):
        t = 0.0
        for i in range(len(x)):
            t += self.c * x[i] ** 2
        return t


def test_a_bound_method_under_jit_runs_on_python_and_says_so_once():
    m, x = Model(2.0), np.array([1.0, 2.0])
    said = r"Model.loss \(.*line \d+\) is a bound method"
    with pytest.warns(pullback.PerformanceWarning, match=said) as rec:
        g = pullback.grad(m.loss, jit=True)
        pullback.grad(m.loss, jit=True)
    assert len([w for w in rec if issubclass(w.category, pullback.PerformanceWarning)]) <= 1
    assert rec[0].filename == __file__          # the user's line, not pullback's
    assert "python backend" in repr(g)
    np.testing.assert_allclose(g(x), 2 * m.c * x)
    m.c = 5.0                                   # an attribute read at call time
    np.testing.assert_allclose(g(x), 2 * m.c * x)


def slogdet_field(S):
    return np.linalg.slogdet(S).logabsdet


def test_a_field_of_a_named_tuple_result_is_refused_by_line_not_dropped(jit_mode):
    # It gave a zero gradient: the attribute was taken for one with no derivative.
    S = np.array([[2.0, 0.3], [0.3, 1.0]])
    with pytest.raises(pullback.UnsupportedSyntaxError, match=r"\.logabsdet.*slogdet\(S\)\[1\]"):
        pullback.grad(slogdet_field, jit=jit_mode != "python")(S)
    with pytest.raises(pullback.UnsupportedSyntaxError, match=r"\.logabsdet"):
        pullback.jvp(slogdet_field, (S,), (S,), jit=jit_mode != "python")


def eigenvalues_of_diag(p):
    w, V = np.linalg.eigh(np.diag(p))
    return w[0] + np.sum(w)


def test_an_item_of_an_array_whose_kind_was_not_known_adds_to_its_cotangent():
    # w's kind is not known (np.diag's result): w[0]'s cotangent replaced np.sum's.
    p = np.array([0.3, 0.5, 0.7])
    np.testing.assert_allclose(pullback.grad(eigenvalues_of_diag)(p),
                               fd_grad(eigenvalues_of_diag, (p,), 0), rtol=1e-7)


def aux_written_in_place(p):
    h = p * 1.0
    h[0] *= 2.0
    return np.sum(h), h


def returned_after_a_write(p):
    h = p * 1.0
    h[np.array([1])] *= 3.0
    return h


def test_a_returned_array_keeps_the_writes_into_it(jit_mode):
    # The reverse sweep restored the overwritten entries in the very array returned.
    p, jit = np.array([0.3, 0.5, 0.7]), jit_mode != "python"
    for _ in range(2):
        (value, aux), dp = pullback.value_and_grad(aux_written_in_place, has_aux=True, jit=jit)(p)
        np.testing.assert_allclose(aux, [0.6, 0.5, 0.7])
        np.testing.assert_allclose(dp, [2.0, 1.0, 1.0])
        out, back = pullback.vjp(returned_after_a_write, p, jit=jit)
        np.testing.assert_allclose(out, [0.3, 1.5, 0.7])
        np.testing.assert_allclose(back(np.ones(3))[0], [1.0, 3.0, 1.0])
        pullback.finish_compiling()


PAIR = (0.5, 1.5)


def global_pair_item_updated(x):
    s = PAIR[1]
    s += x
    return s * x


def accumulate_pair(x, p):
    A = pullback.accumulate(lambda acc, v: (acc[0] * v, acc[1] + v), p, (x, 1.0))
    return np.sum(A)


def test_an_item_of_a_global_tuple_of_numbers_is_a_number(jit_mode):
    # s = PAIR[1] was taken for a view of an array, and s += x refused.
    assert pullback.grad(global_pair_item_updated, jit=jit_mode != "python")(0.3) == \
        pytest.approx(1.5 + 2 * 0.3)


def test_accumulate_with_a_pair_carry():
    # A tuple's cotangent that came as a row of the stacked outputs was added to each
    # item whole (a ValueError when the gradient was made an array).
    p = np.array([0.3, 0.5, 0.7])
    dx, dp = pullback.grad(accumulate_pair, argnums=(0, 1))(0.3, p)
    assert dx == pytest.approx(fd_grad(accumulate_pair, (0.3, p), 0), rel=1e-7)
    np.testing.assert_allclose(dp, fd_grad(accumulate_pair, (0.3, p), 1), rtol=1e-7)


def aux_holding_an_array(x):
    return x * x, (x, np.ones(2) * x)


def test_has_aux_with_a_tuple_aux_holding_an_array(jit_mode):
    g = pullback.grad(aux_holding_an_array, has_aux=True, jit=jit_mode != "python")
    for _ in range(2):
        dx, (a, b) = g(0.3)
        assert dx == pytest.approx(0.6) and a == 0.3
        np.testing.assert_allclose(b, [0.3, 0.3])
        pullback.finish_compiling()


def _carry_step(carry, v):
    a, b = carry
    return (a * v + np.sum(b), b * v), a


def scan_then_write_its_array(x, p):
    (u, w), ys = pullback.scan(_carry_step, (x, p), p)
    p[0] = -1.5             # after the scan, whose carry holds p itself
    return u + np.sum(w) + np.sum(ys)


def test_a_write_after_a_fold_whose_carry_holds_the_array(jit_mode):
    # The reverse sweep read p through the carry tuple after the write had changed it
    # (a random program found it under Numba; the Python backend was wrong too).
    p = np.array([-0.47, -1.6, -0.47, -1.6])
    for got in _calls(scan_then_write_its_array, jit_mode, -1.94, p.copy(), argnums=1):
        np.testing.assert_allclose(got, fd_grad(scan_then_write_its_array, (-1.94, p), 1),
                                   rtol=1e-7)
