"""Functions through the primitives that got tangent rules for issue #23 (a file of its
own: pullback reads their source)."""
import operator

import numpy as np
from scipy import linalg, special


def sorted_and_partitioned(x):
    return np.sum(np.sort(x) * np.arange(x.size)) + np.sum(np.partition(x, 1)[:2] ** 2)


def cumulative_product(x):
    return np.sum(np.cumprod(x) * np.linspace(x[0], x[1], x.size))


def polynomial_and_interpolation(x):
    knots = np.array([-1.0, 0.0, 1.0, 2.0])
    return np.sum(np.polyval(x[:3], x) + np.interp(x, knots, x[:4] ** 2, left=x[0], right=1.0))


def factorizations(x):
    a = np.outer(x, x) + 4.0 * np.eye(x.size)
    sign, logdet = np.linalg.slogdet(a)
    c = np.linalg.cholesky(a)
    y = linalg.solve_triangular(c, x, lower=True)
    z = linalg.cho_solve((c, True), x)
    return logdet + np.sum(c) + np.sum(y * z)


def softmaxes(x):
    m = np.reshape(x, (2, -1))
    return np.sum(special.softmax(m, axis=1) * m) + np.sum(special.log_softmax(x) ** 2) \
        + operator.getitem(m, (1, 0))


def log_determinant(x):
    sign, logdet = np.linalg.slogdet(np.outer(x, x) + 4.0 * np.eye(x.size))
    return logdet + np.sum(np.linspace(x[0], x[1], 4) ** 2)


def spectra(x):
    a = np.outer(x, x) + np.diag(np.arange(1.0, x.size + 1))
    w, v = np.linalg.eigh(a)
    projector = v[:, -2:] @ v[:, -2:].T     # the top two eigenvectors' span: sign-free
    return np.sum(w ** 3) + np.sum(projector * a) + np.sum(np.linalg.pinv(a[:, :3])) \
        + np.sum(np.gradient(x) ** 2) + np.sum(np.linalg.svd(a[:, :3], compute_uv=False))


def polynomial(x):
    return np.sum(np.polyval(x[:3], x) ** 2)
