"""Programs that gave a different answer (or an error) under jit=True than on the
Python backend, each run on the Python backend, compiled, and in the default
background-compile mode (whose first calls run the Numba-flavoured code as
Python).  References: central finite differences (helpers.fd_grad)."""
import numpy as np
import pytest
from helpers import fd_grad

import pullback


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
        l, t = carry
        return (a * yt + l, t), l * l
    (l, t), sq = pullback.scan(step, (0.0, 0.0), y)
    return np.sum(sq)


def scan_tuple_carry_both_items(a, y):
    def step(carry, yt):
        l, t = carry
        return (a * yt + l, t + l), l
    (l, t), s = pullback.scan(step, (0.0, 0.0), y)
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
