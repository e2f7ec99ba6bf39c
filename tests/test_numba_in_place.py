"""The Numba backend's in-place adjoint updates: slices of a buffer added into
(``add_into``), matrix-vector products' cotangents added without building them
(``add_matmul_vjp_a/b``), a number's cotangent in an elementwise product summed
without the array of products (``unbroadcast_product``), and ``unbroadcast`` left out where
the argument is the only array of an elementwise call.  Each function is checked
under jit=True against jit=False and against finite differences."""
from __future__ import annotations

import numpy as np

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate


def check(f, args, argnums, rtol=1e-6, atol=1e-8):
    py = pullback.grad(f, argnums=argnums, jit=False)(*args)
    g = pullback.grad(f, argnums=argnums, jit=True)
    for _ in range(2):                       # the second call reuses the workspace
        nb = g(*args)
        for k, a, b in zip(argnums, py, nb):
            assert_close(np.asarray(b), np.asarray(a), rtol=1e-9, atol=1e-11)
            assert_fd_close(np.asarray(b), fd_estimate(f, args, k), rtol=rtol, atol=atol)
    return g.source


def products(W, V, h, v):
    """W @ h and np.dot(W, h) (the in-place forms), h @ W, W @ W and V.T @ v (not)."""
    s = 0.0
    for t in range(3):
        h = np.tanh(W @ h + 0.5 * np.dot(W, h))
        s = s + np.sum(h @ W) + np.sum((W @ W) @ h)
        v = np.sin(V.T @ v) + V[0]
    return s + np.sum(h * h) + np.sum(v)


def test_products_added_in_place():
    r = np.random.default_rng(1)
    args = (0.3 * r.normal(size=(4, 4)), r.normal(size=(3, 3)), r.normal(size=4), r.normal(size=3))
    src = check(products, args, (0, 1, 2, 3))
    assert "add_matmul_vjp_a(dW" in src and "add_matmul_vjp_b(" in src, src


def slices(u, w, c, A):
    """Slices and rows of 1-D and 2-D buffers added into; a number times arrays (its
    cotangent a sum of products, 1-D and 2-D); elementwise calls of one array."""
    u = u.copy()
    A = A.copy()
    s = 0.0
    for k in range(4):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2]) * w[1:-1]
        A[1:, :-1] = A[1:, :-1] + (A[:-1, 1:] * c) - np.tanh(A[1:, :-1]) / 3.0
        A[0:1] = A[0:1] * c + u[:A.shape[1]]
        s = s + np.sum(np.exp(-u) * c) + np.sum(A[:, 1] * u[2])
    return s + np.sum(u * u) + np.sum(A * A * c)


def test_slices_added_in_place_and_sums_of_products():
    r = np.random.default_rng(2)
    args = (r.normal(size=9), r.normal(size=9), 0.3, r.normal(size=(3, 4)))
    src = check(slices, args, (0, 1, 2, 3), rtol=1e-5, atol=1e-7)
    assert "add_into(du[1:-1]" in src and "unbroadcast_product(" in src, src
