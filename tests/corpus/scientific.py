"""A corpus of functions typical of scientific and engineering code, written the plain
Python way: loops, branches, in-place array updates, scalar ``math`` calls.

Nothing here is written for pullback.  Each entry of ``CORPUS`` holds the function, a
maker of arguments (points chosen away from kinks: ties in min/max, branch boundaries,
changes of trip count) and the argument numbers to differentiate.

The functions use ``math`` and ``np`` only through module globals and copy arrays
with ``.copy()`` / ``np.array`` / ``np.empty_like``, so tests/test_corpus.py can run
the very same code on PyTorch tensors by rebinding those globals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


# ===================================================================== ODE steppers
def euler_oscillator(p, dt, n):
    """Damped oscillator x'' = -k x - c x', explicit Euler, state in local floats."""
    k = p[0]
    c = p[1]
    x = p[2]
    v = 0.0
    for _ in range(n):
        a = -k * x - c * v
        x = x + dt * v
        v = v + dt * a
    return x * x + 0.5 * v * v


def rk4_lotka_volterra(theta, h, n):
    """Classical RK4 on the predator-prey system, state in local floats."""
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    x, y = 1.0, 0.5
    for _ in range(n):
        k1x = a * x - b * x * y
        k1y = c * x * y - d * y
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = c * x2 * y2 - d * y2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = c * x3 * y3 - d * y3
        x4 = x + h * k3x
        y4 = y + h * k3y
        k4x = a * x4 - b * x4 * y4
        k4y = c * x4 * y4 - d * y4
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
    return x + 2.0 * y


def _lorenz(y, sigma, rho, beta):
    d = np.empty(3)
    d[0] = sigma * (y[1] - y[0])
    d[1] = y[0] * (rho - y[2]) - y[1]
    d[2] = y[0] * y[1] - beta * y[2]
    return d


def rk4_lorenz(y0, params, h, n):
    """RK4 on the Lorenz system, state in a small array, right-hand side in a helper."""
    y = y0.copy()
    s, r, b = params[0], params[1], params[2]
    for _ in range(n):
        k1 = _lorenz(y, s, r, b)
        k2 = _lorenz(y + 0.5 * h * k1, s, r, b)
        k3 = _lorenz(y + 0.5 * h * k2, s, r, b)
        k4 = _lorenz(y + h * k3, s, r, b)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] + y[1] * y[2]


def verlet_two_body(q, m, dt, n):
    """Velocity Verlet for two particles on a line joined by a spring (k = q[2])."""
    x1, x2 = q[0], q[1]
    k = q[2]
    v1 = 0.0
    v2 = 0.0
    f = k * (x2 - x1 - 1.0)
    for _ in range(n):
        v1 += 0.5 * dt * f / m[0]
        v2 -= 0.5 * dt * f / m[1]
        x1 += dt * v1
        x2 += dt * v2
        f = k * (x2 - x1 - 1.0)
        v1 += 0.5 * dt * f / m[0]
        v2 -= 0.5 * dt * f / m[1]
    return x1 * x2 + v1 * v1 + 0.5 * f


def projectile_range(v0, angle, drag, dt):
    """Euler integration of a projectile with drag until it falls below ground
    (a while loop with a data-dependent trip count), then linear interpolation."""
    x = 0.0
    y = 0.0
    vx = v0 * math.cos(angle)
    vy = v0 * math.sin(angle)
    xp, yp = x, y
    steps = 0
    while y >= 0.0 and steps < 10000:
        xp, yp = x, y
        speed = math.sqrt(vx * vx + vy * vy)
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (9.81 + drag * speed * vy)
        x = x + dt * vx
        y = y + dt * vy
        steps += 1
    return xp + (x - xp) * yp / (yp - y)


# ===================================================================== recurrences
def clenshaw_chebyshev(c, x):
    """Clenshaw's recurrence for sum_k c[k] T_k(x)."""
    b1 = 0.0
    b2 = 0.0
    for k in range(len(c) - 1, 0, -1):
        b1, b2 = 2.0 * x * b1 - b2 + c[k], b1
    return x * b1 - b2 + c[0]


def logistic_map(r, x0, n):
    x = x0
    s = 0.0
    for _ in range(n):
        x = r * x * (1.0 - x)
        s += x
    return s / n


def fibonacci_param(a, b, n):
    """f_k = a f_{k-1} + b f_{k-2}."""
    f0 = 0.0
    f1 = 1.0
    for _ in range(n):
        f0, f1 = f1, a * f1 + b * f0
    return f1


def exp_moving_average(p, alpha):
    m = p[0]
    s = 0.0
    for i in range(1, len(p)):
        m = alpha * p[i] + (1.0 - alpha) * m
        s += m * m
    return s


def kalman_1d(zs, q, r):
    """Scalar Kalman filter of a random walk; returns the negative log-likelihood."""
    x = 0.0
    P = 1.0
    nll = 0.0
    for t in range(len(zs)):
        P = P + q
        S = P + r
        innov = zs[t] - x
        nll += 0.5 * (math.log(2.0 * math.pi * S) + innov * innov / S)
        K = P / S
        x = x + K * innov
        P = (1.0 - K) * P
    return nll


# ===================================================================== dynamic programming
def dtw(a, b):
    """Dynamic time warping distance, 2-D cost array filled in place."""
    n = len(a)
    m = len(b)
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = (a[i - 1] - b[j - 1]) ** 2
            D[i, j] = cost + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m]


def dtw_pairwise_min(a, b):
    """The same recurrence with two-argument min calls."""
    n = len(a)
    m = len(b)
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = (a[i - 1] - b[j - 1]) ** 2
            D[i, j] = cost + min(min(D[i - 1, j], D[i, j - 1]), D[i - 1, j - 1])
    return D[n, m]


def binomial_american_put(S0, K, sigma, r, T, n):
    """Cox-Ross-Rubinstein tree for an American put, backward induction in place."""
    dt = T / n
    u = math.exp(sigma * math.sqrt(dt))
    d = 1.0 / u
    disc = math.exp(-r * dt)
    pu = (math.exp(r * dt) - d) / (u - d)
    V = np.zeros(n + 1)
    for j in range(n + 1):
        V[j] = max(K - S0 * u ** j * d ** (n - j), 0.0)
    for step in range(n - 1, -1, -1):
        for j in range(step + 1):
            cont = disc * (pu * V[j + 1] + (1.0 - pu) * V[j])
            exer = K - S0 * u ** j * d ** (step - j)
            V[j] = max(cont, exer)
    return V[0]


def max_drawdown(p):
    peak = p[0]
    dd = 0.0
    for i in range(1, len(p)):
        peak = max(peak, p[i])
        dd = max(dd, peak - p[i])
    return dd


# ===================================================================== statistics
def logsumexp_loop(p):
    m = p[0]
    for i in range(1, len(p)):
        if p[i] > m:
            m = p[i]
    s = 0.0
    for i in range(len(p)):
        s += math.exp(p[i] - m)
    return m + math.log(s)


def softmax_weighted(p, w):
    n = len(p)
    m = p[0]
    for i in range(1, n):
        m = max(m, p[i])
    out = np.empty(n)
    total = 0.0
    for i in range(n):
        out[i] = math.exp(p[i] - m)
        total += out[i]
    for i in range(n):
        out[i] /= total
    s = 0.0
    for i in range(n):
        s += w[i] * out[i]
    return s


def gmm_loglik(x, mu, log_sigma, logit_w):
    """Log-likelihood of data under a 1-D Gaussian mixture; a helper in the loop."""
    K = len(mu)
    lw = np.empty(K)
    for k in range(K):
        lw[k] = logit_w[k]
    norm = logsumexp_loop(lw)
    ll = 0.0
    terms = np.empty(K)
    for i in range(len(x)):
        for k in range(K):
            s = math.exp(log_sigma[k])
            z = (x[i] - mu[k]) / s
            terms[k] = logit_w[k] - norm - 0.5 * z * z - log_sigma[k] - 0.5 * math.log(2.0 * math.pi)
        ll += logsumexp_loop(terms)
    return ll


def cross_entropy_loop(logits, labels):
    """Mean cross-entropy of rows of logits against integer labels."""
    n = logits.shape[0]
    total = 0.0
    for i in range(n):
        m = logits[i, 0]
        for k in range(1, logits.shape[1]):
            if logits[i, k] > m:
                m = logits[i, k]
        s = 0.0
        for k in range(logits.shape[1]):
            s += math.exp(logits[i, k] - m)
        total += m + math.log(s) - logits[i, labels[i]]
    return total / n


def hmm_forward(log_pi, log_A, log_B, obs):
    """Forward algorithm in log space."""
    S = len(log_pi)
    alpha = np.empty(S)
    for s in range(S):
        alpha[s] = log_pi[s] + log_B[s, obs[0]]
    tmp = np.empty(S)
    for t in range(1, len(obs)):
        new = np.empty(S)
        for s in range(S):
            for r in range(S):
                tmp[r] = alpha[r] + log_A[r, s]
            new[s] = logsumexp_loop(tmp) + log_B[s, obs[t]]
        alpha = new
    return logsumexp_loop(alpha)


# ===================================================================== neural nets
def rnn_unrolled(W, U, b, xs):
    """A tanh RNN cell unrolled over time, hidden state in an array."""
    H = len(b)
    h = np.zeros(H)
    for t in range(len(xs)):
        hn = np.empty(H)
        for i in range(H):
            a = b[i] + U[i] * xs[t]
            for j in range(H):
                a += W[i, j] * h[j]
            hn[i] = math.tanh(a)
        h = hn
    s = 0.0
    for i in range(H):
        s += h[i] * (i + 1.0)
    return s


def mlp_leaky_relu(W1, b1, w2, x):
    """One hidden layer, leaky ReLU written with if/else, squared output."""
    H = len(b1)
    out = 0.0
    for i in range(H):
        a = b1[i]
        for j in range(len(x)):
            a += W1[i, j] * x[j]
        if a > 0.0:
            h = a
        else:
            h = 0.01 * a
        out += w2[i] * h
    return out * out


# ===================================================================== sorting, scans
def bubble_sort_weighted(p, w):
    q = p.copy()
    n = len(q)
    for i in range(n):
        for j in range(n - 1 - i):
            if q[j] > q[j + 1]:
                q[j], q[j + 1] = q[j + 1], q[j]
    s = 0.0
    for i in range(n):
        s += w[i] * q[i]
    return s


def cumsum_weighted(p, w):
    n = len(p)
    out = np.zeros(n)
    out[0] = p[0]
    for i in range(1, n):
        out[i] = out[i - 1] + p[i]
    s = 0.0
    for i in range(n):
        s += w[i] * out[i] * out[i]
    return s


def discount_products(p, r):
    """out[i] *= expr: running products of growth factors."""
    n = len(p)
    out = np.ones(n)
    for i in range(n):
        for j in range(i + 1):
            out[i] *= 1.0 + r * p[j]
    s = 0.0
    for i in range(n):
        s += out[i]
    return s


def empty_like_and_array_copy(p):
    q = np.empty_like(p)
    for i in range(len(p)):
        q[i] = p[i] * p[i] - 1.0
    q[0] = q[0] * 3.0
    r = np.array(p)
    r[1] = r[1] + q[2]
    s = 0.0
    for i in range(len(p)):
        s += q[i] * r[i]
    return s


# ===================================================================== linear algebra
def matvec_quadform(A, x):
    n = len(x)
    y = np.zeros(n)
    for i in range(n):
        for j in range(n):
            y[i] += A[i, j] * x[j]
    q = 0.0
    for i in range(n):
        q += x[i] * y[i]
    return q


def matvec_rows(A, x):
    """Row-of-row reads A[i][j], shape from the array."""
    n = A.shape[0]
    s = 0.0
    for i in range(n):
        yi = 0.0
        for j in range(A.shape[1]):
            yi += A[i][j] * x[j]
        s += yi * yi
    return s


def gauss_seidel(A, b, sweeps):
    n = len(b)
    x = np.zeros(n)
    for _ in range(sweeps):
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= A[i, j] * x[j]
            x[i] = s / A[i, i]
    r = 0.0
    for i in range(n):
        r += x[i] * x[i]
    return r


def power_iteration(A, iters):
    n = A.shape[0]
    v = np.ones(n)
    for _ in range(iters):
        w = np.zeros(n)
        for i in range(n):
            for j in range(n):
                w[i] += A[i, j] * v[j]
        norm = 0.0
        for i in range(n):
            norm += w[i] * w[i]
        norm = math.sqrt(norm)
        for i in range(n):
            v[i] = w[i] / norm
    lam = 0.0
    for i in range(n):
        for j in range(n):
            lam += v[i] * A[i, j] * v[j]
    return lam


def tensor_contract3(T, a, b, c):
    """Nested loops of depth 3."""
    s = 0.0
    for i in range(T.shape[0]):
        for j in range(T.shape[1]):
            for k in range(T.shape[2]):
                s += T[i, j, k] * a[i] * b[j] * c[k]
    return s


# ===================================================================== numerics
def newton_sqrt(a, tol=1e-13):
    """Newton's iteration for sqrt(a): a while loop with a tolerance."""
    x = a if a > 1.0 else 1.0
    while abs(x * x - a) > tol * a:
        x = 0.5 * (x + a / x)
    return x


def newton_sqrt_sum(p):
    s = 0.0
    for i in range(len(p)):
        s += newton_sqrt(p[i]) * (i + 1.0)
    return s


def interp_while(xs, ys, qs):
    """Piecewise-linear interpolation; each interval is found with a while loop."""
    total = 0.0
    for q in qs:
        i = 0
        while i < len(xs) - 2 and xs[i + 1] < q:
            i += 1
        t = (q - xs[i]) / (xs[i + 1] - xs[i])
        total += (1.0 - t) * ys[i] + t * ys[i + 1]
    return total


def trapezoid(y, dx):
    s = 0.0
    for i in range(len(y) - 1):
        s += 0.5 * dx * (y[i] + y[i + 1])
    return s


def simpson(f_vals, h):
    n = len(f_vals) - 1
    s = f_vals[0] + f_vals[n]
    for i in range(1, n):
        if i % 2 == 1:
            s += 4.0 * f_vals[i]
        else:
            s += 2.0 * f_vals[i]
    return s * h / 3.0


def laplacian_energy(u):
    s = 0.0
    for i in range(1, len(u) - 1):
        d2 = u[i + 1] - 2.0 * u[i] + u[i - 1]
        s += d2 * d2
    return s


def heat_2d(u0, alpha, steps):
    """Explicit 2-D heat equation on a small grid, a new array per step."""
    u = u0.copy()
    n = u.shape[0]
    m = u.shape[1]
    for _ in range(steps):
        un = u.copy()
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                un[i, j] = u[i, j] + alpha * (u[i + 1, j] + u[i - 1, j] + u[i, j + 1]
                                              + u[i, j - 1] - 4.0 * u[i, j])
        u = un
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += u[i, j] * u[i, j]
    return s


def polyline_length(xs, ys):
    L = 0.0
    for i in range(len(xs) - 1):
        dx = xs[i + 1] - xs[i]
        dy = ys[i + 1] - ys[i]
        L += math.sqrt(dx * dx + dy * dy)
    return L


def spring_chain_energy(x, k, rest=0.95):
    E = 0.0
    for i in range(len(x) - 1):
        stretch = x[i + 1] - x[i] - rest
        E += 0.5 * k[i] * stretch * stretch
    return E


# ===================================================================== branches
def piecewise_branches(p):
    """if/elif/else on data."""
    s = 0.0
    for i in range(len(p)):
        v = p[i]
        if v < -1.0:
            s += -2.0 * v - 1.0
        elif v < 0.5:
            s += v * v
        elif v <= 2.0:
            s += math.sin(v)
        else:
            s += math.log(v)
    return s


def huber_loss(r, delta):
    """Conditional expressions."""
    s = 0.0
    for i in range(len(r)):
        a = abs(r[i])
        s += 0.5 * r[i] * r[i] if a <= delta else delta * (a - 0.5 * delta)
    return s


def band_penalty(p, lo, hi):
    """and / or / not in conditions."""
    s = 0.0
    for i in range(len(p)):
        v = p[i]
        if v > lo and v < hi:
            s += v * v
        elif not (v > lo) or v > 10.0 * hi:
            s += 3.0 * v * lo
        else:
            s += hi * v
    return s


def first_passage(p, threshold):
    """break out of a loop once a running sum passes a threshold."""
    s = 0.0
    k = 0
    for i in range(len(p)):
        s += p[i] * p[i]
        k = i
        if s > threshold:
            break
    return s * (k + 1)


def skip_small(p):
    """continue."""
    s = 0.0
    for i in range(len(p)):
        if abs(p[i]) < 0.2:
            continue
        s += p[i] ** 3
    return s


def first_large(p, w, limit):
    """return inside a loop."""
    for i in range(len(p)):
        if p[i] > limit:
            return w[i] * p[i] * p[i]
    return p[0] * w[0]


def zip_enum_reversed(p, w):
    s = 0.0
    for a, b in zip(p, w):
        s += a * b
    for i, v in enumerate(p):
        s += (i + 1) * v * v
    acc = 0.0
    for i in reversed(range(len(p))):
        acc = acc * 0.5 + p[i] * w[i]
    return s + acc


def scalar_min_max_abs(x, y, z):
    return max(x, y) * min(y, z) + abs(x - z) + max(abs(y), 0.5) * min(x, 2.0)


def scalar_min_max3(x, y, z):
    return max(x, y, z) * 2.0 - min(x, y, z) + abs(x * y - z)


def float_int_conversions(p, x):
    k = int(x)
    frac = x - float(k)
    s = 0.0
    for i in range(len(p)):
        s += p[i] * float(i + k) * frac
    return s + float(p[0]) * x


def _smooth_abs(v, eps=1e-2):
    return math.sqrt(v * v + eps)


def _affine(v, scale=1.0, shift=0.0):
    return scale * v + shift


def helper_kwargs_defaults(p, s):
    """Helpers at module level called with keyword arguments and defaults, in a loop."""
    t = 0.0
    for i in range(len(p)):
        t += _smooth_abs(p[i]) + _smooth_abs(p[i], eps=s) + _affine(p[i], shift=s)
        t += _affine(p[i], 2.0) * _affine(v=p[i], scale=s, shift=1.0)
    return t


# ===================================================================== the corpus
@dataclass
class Entry:
    fn: object
    make_args: object          # () -> tuple of arguments
    argnums: tuple
    rtol: float = 1e-5         # against central finite differences
    atol: float = 1e-6
    torch: bool = True         # run the same function on torch tensors as a reference
    tags: tuple = field(default_factory=tuple)

    @property
    def name(self):
        return self.fn.__name__


def _rng(seed):
    return np.random.default_rng(seed)


def _spd(n, seed):
    g = _rng(seed)
    M = g.normal(size=(n, n))
    return M @ M.T / n + np.eye(n)


def _diag_dominant(n, seed):
    g = _rng(seed)
    A = g.uniform(-1, 1, size=(n, n))
    A += np.diag(np.abs(A).sum(axis=1) + 1.0)
    return A


CORPUS = [
    Entry(euler_oscillator, lambda: (np.array([2.0, 0.3, 1.0]), 0.05, 40), (0, 1)),
    Entry(rk4_lotka_volterra, lambda: (np.array([1.1, 0.4, 0.3, 0.8]), 0.1, 25), (0, 1)),
    Entry(rk4_lorenz, lambda: (np.array([1.0, 1.5, 2.0]), np.array([10.0, 28.0, 8.0 / 3.0]), 0.005, 12),
          (0, 1, 2)),
    Entry(verlet_two_body, lambda: (np.array([0.0, 1.3, 2.0]), np.array([1.0, 2.0]), 0.05, 30), (0, 1, 2)),
    Entry(projectile_range, lambda: (20.0, 0.7, 0.01, 0.01), (0, 1, 2), rtol=1e-4),
    Entry(clenshaw_chebyshev, lambda: (np.array([0.5, -0.2, 0.8, 0.1, -0.4, 0.3]), 0.37), (0, 1)),
    Entry(logistic_map, lambda: (2.8, 0.3, 20), (0, 1)),
    Entry(fibonacci_param, lambda: (0.9, 0.4, 12), (0, 1)),
    Entry(exp_moving_average, lambda: (np.linspace(-1.0, 2.0, 8) ** 2, 0.3), (0, 1)),
    Entry(kalman_1d, lambda: (np.array([0.1, 0.4, 0.2, 0.9, 1.1, 0.7]), 0.05, 0.2), (0, 1, 2)),
    Entry(dtw, lambda: (np.array([0.1, 0.57, 0.93, 0.31, 0.2]), np.array([0.23, 0.81, 0.44, 0.06])), (0, 1)),
    Entry(dtw_pairwise_min, lambda: (np.array([0.1, 0.57, 0.93, 0.31, 0.2]), np.array([0.23, 0.81, 0.44, 0.06])),
          (0, 1)),
    Entry(binomial_american_put, lambda: (100.0, 103.0, 0.25, 0.05, 1.0, 12), (0, 1, 2, 3, 4), rtol=1e-4),
    Entry(max_drawdown, lambda: (np.array([1.0, 1.4, 0.9, 1.2, 1.6, 0.7, 1.1]),), (0,)),
    Entry(logsumexp_loop, lambda: (np.array([0.3, -1.2, 2.1, 0.7, 1.5]),), (0,)),
    Entry(softmax_weighted, lambda: (np.array([0.3, -1.2, 2.1, 0.7]), np.array([1.0, -2.0, 0.5, 3.0])), (0, 1)),
    Entry(gmm_loglik, lambda: (np.array([-1.2, 0.3, 0.8, 2.5, 1.9]), np.array([-1.0, 0.5, 2.0]),
                               np.array([-0.2, 0.1, -0.5]), np.array([0.2, -0.3, 0.5])), (0, 1, 2, 3)),
    Entry(cross_entropy_loop, lambda: (_rng(1).normal(size=(4, 3)), np.array([0, 2, 1, 2])), (0,)),
    Entry(hmm_forward, lambda: (np.log([0.6, 0.4]), np.log([[0.7, 0.3], [0.2, 0.8]]),
                                np.log([[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]]), np.array([0, 2, 1, 2])),
          (0, 1, 2)),
    Entry(rnn_unrolled, lambda: (_rng(2).normal(size=(3, 3)) * 0.5, np.array([0.5, -0.3, 0.8]),
                                 np.array([0.1, 0.0, -0.2]), np.array([0.3, -0.7, 1.1, 0.2])), (0, 1, 2, 3)),
    Entry(mlp_leaky_relu, lambda: (_rng(3).normal(size=(4, 3)), np.array([0.1, -0.2, 0.3, -0.4]),
                                   np.array([0.5, -1.0, 0.7, 1.2]), np.array([0.9, -0.4, 0.6])), (0, 1, 2, 3)),
    Entry(bubble_sort_weighted, lambda: (np.array([0.3, -1.2, 2.1, 0.7, 1.5, -0.4]),
                                         np.arange(1.0, 7.0)), (0, 1)),
    Entry(cumsum_weighted, lambda: (np.array([0.3, -1.2, 2.1, 0.7, 1.5]), np.array([1.0, 0.5, -0.3, 2.0, 1.1])),
          (0, 1)),
    Entry(discount_products, lambda: (np.array([0.3, -0.2, 0.5, 0.1]), 0.7), (0, 1)),
    Entry(empty_like_and_array_copy, lambda: (np.array([0.3, -1.2, 2.1, 0.7]),), (0,)),
    Entry(matvec_quadform, lambda: (_rng(4).normal(size=(4, 4)), _rng(5).normal(size=4)), (0, 1)),
    Entry(matvec_rows, lambda: (_rng(6).normal(size=(3, 4)), _rng(7).normal(size=4)), (0, 1)),
    Entry(gauss_seidel, lambda: (_diag_dominant(4, 8), np.array([1.0, -0.5, 0.3, 2.0]), 5), (0, 1)),
    Entry(power_iteration, lambda: (_spd(4, 9), 30), (0,), rtol=1e-4),
    Entry(tensor_contract3, lambda: (_rng(10).normal(size=(2, 3, 4)), np.array([0.5, -1.0]),
                                     np.array([1.0, 2.0, -0.5]), np.array([0.3, 0.1, -0.2, 0.4])),
          (0, 1, 2, 3)),
    Entry(newton_sqrt, lambda: (2.7,), (0,)),
    Entry(newton_sqrt_sum, lambda: (np.array([0.3, 2.0, 7.5, 0.9]),), (0,)),
    Entry(interp_while, lambda: (np.array([0.0, 0.5, 1.2, 2.0, 3.1]), np.array([1.0, -0.5, 0.3, 2.0, 1.2]),
                                 np.array([0.2, 1.0, 2.5, 1.7, 0.7])), (0, 1, 2)),
    Entry(trapezoid, lambda: (np.sin(np.linspace(0, 2, 9)), 0.25), (0, 1)),
    Entry(simpson, lambda: (np.cos(np.linspace(0, 2, 9)), 0.25), (0, 1)),
    Entry(laplacian_energy, lambda: (np.sin(np.linspace(0, 3, 10)) + np.linspace(0, 1, 10) ** 3,), (0,)),
    Entry(heat_2d, lambda: (_rng(11).uniform(size=(5, 5)), 0.15, 3), (0, 1)),
    Entry(polyline_length, lambda: (np.array([0.0, 1.0, 1.5, 3.0]), np.array([0.0, 0.7, -0.4, 0.2])), (0, 1)),
    Entry(spring_chain_energy, lambda: (np.array([0.0, 1.2, 1.9, 3.3]), np.array([1.0, 2.0, 0.5])), (0, 1)),
    Entry(piecewise_branches, lambda: (np.array([-2.0, -0.3, 0.2, 0.9, 1.7, 3.0]),), (0,)),
    Entry(huber_loss, lambda: (np.array([-2.0, -0.3, 0.2, 0.9, 1.7]), 1.0), (0, 1)),
    Entry(band_penalty, lambda: (np.array([-2.0, 0.3, 0.9, 1.7, 30.0]), 0.1, 1.0), (0, 1, 2)),
    Entry(first_passage, lambda: (np.array([0.3, -0.8, 0.9, 1.7, 0.5, 2.0]), 3.0), (0,)),
    Entry(skip_small, lambda: (np.array([0.3, -0.1, 0.9, 0.05, -0.7]),), (0,)),
    Entry(first_large, lambda: (np.array([0.3, -0.1, 0.9, 1.8, 2.5]), np.arange(1.0, 6.0), 1.0), (0, 1)),
    Entry(zip_enum_reversed, lambda: (np.array([0.3, -0.1, 0.9, 1.8]), np.array([1.0, 2.0, -1.0, 0.5])), (0, 1)),
    Entry(scalar_min_max_abs, lambda: (0.9, 1.3, -0.4), (0, 1, 2)),
    Entry(scalar_min_max3, lambda: (0.9, 1.3, -0.4), (0, 1, 2)),
    Entry(float_int_conversions, lambda: (np.array([0.3, -0.1, 0.9]), 2.6), (0, 1)),
    Entry(helper_kwargs_defaults, lambda: (np.array([0.3, -0.1, 0.9]), 0.4), (0, 1)),
]

assert len({e.name for e in CORPUS}) == len(CORPUS)
