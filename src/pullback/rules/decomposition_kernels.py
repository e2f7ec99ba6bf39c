"""The Numba kernels of the decompositions' twins (:mod:`.decompositions`).

Plain code in the NumPy subset Numba compiles, which Python never calls: the
derivatives of cholesky, eigh, svd and pinv for one matrix (``_*_grad``), and
the loops that apply one of those, or Numba's own np.linalg function, to each
matrix of a stack (``_*_stack``: Numba's np.linalg functions take one matrix).
A twin compiles them with :func:`.twins.compiled_with`, which binds ``_s3``
(:func:`.twins.stack3`) and ``_one`` (the compiled kernel for one matrix) in a
copy of this module's globals: a kernel reads no other global but ``np``.  The
names keep their underscore: they are the twins' internals, not an API.
"""
from __future__ import annotations

import numpy as np

from . import twins

_s3 = twins.stack3
_one = None         # bound by twins.compiled_with to the compiled kernel for one matrix


def _cholesky_grad(G, L, lower):
    """Numba: cholesky_vjp for the lower factor ``L`` with cotangent ``G``, folded onto
    the lower triangle (``lower``) or the upper one."""
    n = L.shape[0]
    P = L.T @ G
    for i in range(n):
        for j in range(n):
            if i < j:
                P[i, j] = 0.0
            elif i == j:
                P[i, j] *= 0.5
    Lt = np.ascontiguousarray(L.T)
    Y = np.linalg.solve(Lt, P)
    S = np.linalg.solve(Lt, np.ascontiguousarray(Y.T)).T
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            sym = 0.5 * (S[i, j] + S[j, i])
            if i == j:
                out[i, j] = sym
            elif (i > j) == lower:
                out[i, j] = 2.0 * sym
    return out


def _cholesky_stack(a, upper):
    """Numba's cholesky of each matrix (it reads the lower triangle: the upper
    factor of ``a`` is the transposed lower factor of ``a.T``)."""
    a3 = _s3(a)
    out = np.empty(a3.shape, a3.dtype)
    for i in range(a3.shape[0]):
        if upper:
            out[i] = np.linalg.cholesky(np.ascontiguousarray(a3[i].T)).T
        else:
            out[i] = np.linalg.cholesky(a3[i])
    return out.reshape(a.shape)


def _cholesky_grad_stack(g, ans, upper):
    g3, f3 = _s3(g), _s3(ans)
    out = np.empty(f3.shape)
    for i in range(f3.shape[0]):
        if upper:
            out[i] = _one(np.ascontiguousarray(g3[i].T), np.ascontiguousarray(f3[i].T), False)
        else:
            out[i] = _one(g3[i], f3[i], True)
    return out.reshape(ans.shape)


def _eigh_grad(gw, gv, w, v, lower):
    n = w.shape[0]
    inner = np.zeros((n, n))
    for i in range(n):
        inner[i, i] = gw[i]
    if np.any(gv != 0.0):
        vtgv = v.T @ gv
        for i in range(n):
            for j in range(n):
                if i != j:
                    inner[i, j] += vtgv[i, j] / (w[j] - w[i])
    G = v @ inner @ v.T
    out = np.zeros((n, n))          # folded onto the triangle that is read
    for i in range(n):
        for j in range(n):
            if i == j:
                out[i, j] = G[i, j]
            elif (i > j) == lower:
                out[i, j] = G[i, j] + G[j, i]
    return out


def _eigh_stack(a, lower):
    """Numba's eigh (which reads the lower triangle) of each matrix, or of its
    transpose for the upper triangle."""
    a3 = _s3(a)
    n = a3.shape[1]
    w, v = np.empty((a3.shape[0], n), a3.dtype), np.empty(a3.shape, a3.dtype)
    for i in range(a3.shape[0]):
        if lower:
            w[i], v[i] = np.linalg.eigh(a3[i])
        else:
            w[i], v[i] = np.linalg.eigh(np.ascontiguousarray(a3[i].T))
    return w.reshape(a.shape[:-1]), v.reshape(a.shape)


def _eigh_grad_stack(g, ans, lower):
    w, v = ans
    gw = np.zeros(w.shape) + g[0]
    gv = np.zeros(v.shape) + g[1]
    n = w.shape[-1]
    gw2, w2 = gw.reshape((-1, n)), np.ascontiguousarray(w).reshape((-1, n))
    gv3, v3 = _s3(gv), _s3(v)
    out = np.empty(v3.shape)
    for i in range(v3.shape[0]):
        out[i] = _one(gw2[i], gv3[i], w2[i], v3[i], lower)
    return out.reshape(v.shape)


def _svd_grad(gu, gs, gvt, u, s, vt):
    """The cotangent of ``a = u diag(s) vt`` (thin factors) from those of u, s and vt."""
    k = s.shape[0]
    F = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                F[i, j] = 1.0 / (s[j] * s[j] - s[i] * s[i])
    inner = np.zeros((k, k))
    for i in range(k):
        inner[i, i] = gs[i]
    outer = np.zeros((u.shape[0], vt.shape[1]))
    if np.any(gu != 0.0):
        ut_gu = u.T @ gu
        inner += (F * (ut_gu - ut_gu.T)) * s.reshape((1, k))
        gu_s = gu / s.reshape((1, k))
        outer += (gu_s - u @ (u.T @ gu_s)) @ vt
    if np.any(gvt != 0.0):
        v = np.ascontiguousarray(vt.T)
        vt_gv = vt @ np.ascontiguousarray(gvt.T)
        inner += s.reshape((k, 1)) * (F * (vt_gv - vt_gv.T))
        s_gvt = gvt / s.reshape((k, 1))
        outer += u @ (s_gvt - (s_gvt @ v) @ vt)
    return u @ inner @ vt + outer


def _svd_stack(a, full):
    """Numba's svd of each matrix: (u, s, vh)."""
    a3 = _s3(a)
    b, m, n = a3.shape
    k = min(m, n)
    mu, nv = (m, n) if full else (k, k)
    dt = a3.dtype
    u, s, vt = np.empty((b, m, mu), dt), np.empty((b, k), dt), np.empty((b, nv, n), dt)
    for i in range(b):
        u[i], s[i], vt[i] = np.linalg.svd(a3[i], full)
    lead = a.shape[:-2]
    return u.reshape(lead + (m, mu)), s.reshape(lead + (k,)), vt.reshape(lead + (nv, n))


def _svd_values_stack(a):
    a3 = _s3(a)
    s = np.empty((a3.shape[0], min(a3.shape[1], a3.shape[2])), a3.dtype)
    for i in range(a3.shape[0]):
        s[i] = np.linalg.svd(a3[i], False)[1]
    return s.reshape(a.shape[:-2] + (s.shape[1],))


def _svd_grad_stack(g, ans):
    """svd_vjp from the factors, thin or full: the extra columns of u (rows of vt) of
    a non-square matrix are arbitrary, so a cotangent reaching them is refused at
    run time."""
    u, s, vt = ans
    k = s.shape[-1]
    gu3, gvt3 = _s3(np.zeros(u.shape) + g[0]), _s3(np.zeros(vt.shape) + g[2])
    gs2 = (np.zeros(s.shape) + g[1]).reshape((-1, k))
    u3, vt3, s2 = _s3(u), _s3(vt), np.ascontiguousarray(s).reshape((-1, k))
    out = np.empty((u3.shape[0], u3.shape[1], vt3.shape[2]))
    for i in range(u3.shape[0]):
        if np.any(gu3[i][:, k:] != 0.0) or np.any(gvt3[i][k:, :] != 0.0):
            raise NotImplementedError("the derivative of u or vh from np.linalg.svd(a, "
                                      "full_matrices=True) of a non-square matrix is not "
                                      "defined (its extra columns are arbitrary): use "
                                      "full_matrices=False")
        out[i] = _one(np.ascontiguousarray(gu3[i][:, :k]), gs2[i],
                      np.ascontiguousarray(gvt3[i][:k, :]), np.ascontiguousarray(u3[i][:, :k]),
                      s2[i], np.ascontiguousarray(vt3[i][:k, :]))
    return out.reshape(u.shape[:-1] + (vt.shape[-1],))


def _svd_values_grad_stack(g, a):
    """svd_vjp with compute_uv=False: the factors computed again, each matrix's."""
    a3 = _s3(a)
    k = min(a3.shape[1], a3.shape[2])
    gs2 = (np.zeros(a.shape[:-2] + (k,)) + g).reshape((-1, k))
    zero = np.zeros((1, 1))
    out = np.empty(a3.shape)
    for i in range(a3.shape[0]):
        u, s, vt = np.linalg.svd(a3[i], False)
        out[i] = _one(zero, gs2[i], zero, u, s, vt)
    return out.reshape(a.shape)


def _pinv_stack(a, rcond):
    a3 = _s3(a)
    out = np.empty((a3.shape[0], a3.shape[2], a3.shape[1]), a3.dtype)
    for i in range(a3.shape[0]):
        out[i] = np.linalg.pinv(a3[i], rcond)
    return out.reshape(a.shape[:-2] + (a.shape[-1], a.shape[-2]))


def _pinv_grad(G, X, A):
    """pinv_vjp for one matrix ``A``, its pseudo-inverse ``X`` and cotangent ``G``."""
    Xt, Gt = np.ascontiguousarray(X.T), np.ascontiguousarray(G.T)
    s = np.linalg.svd(np.ascontiguousarray(A), full_matrices=False)[1]
    rank = np.sum(s > max(A.shape) * np.finfo(A.dtype).eps * s[0]) if s.size else 0
    if rank > np.round(np.sum(Xt * A)):
        raise NotImplementedError("the derivative of np.linalg.pinv where it cut off a "
                                  "singular value that is not negligible is not implemented")
    left = Gt @ (X @ Xt)
    right = (Xt @ X) @ Gt
    return -(Xt @ G @ Xt) + (left - A @ (X @ left)) + (right - (right @ X) @ A)


def _pinv_grad_stack(g, ans, a):
    g3, x3, a3 = _s3(g), _s3(ans), _s3(a)
    out = np.empty(a3.shape)
    for i in range(a3.shape[0]):
        out[i] = _one(g3[i], x3[i], a3[i])
    return out.reshape(a.shape)
