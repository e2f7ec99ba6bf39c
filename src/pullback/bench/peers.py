"""The workloads written the natural way for each peer library, in float64.

Each ``*_versions()`` imports its library (lazily: peers are optional) and
returns ``{workload name: function}``; the functions take the same positional
arguments as the primal in :mod:`pullback.bench.workloads`, as that library's
arrays.  Loops stay Python loops where the library runs eagerly; the versions
for ``jax.jit`` use ``lax.fori_loop`` instead, so that tracing does not unroll them.
"""
from __future__ import annotations

from pullback.examples import horner, lotka_volterra_misfit


def torch_versions():
    import torch
    import torch.nn.functional as F

    def prod_sum(A):
        return torch.prod(A, 0).sum()

    def heat(u0, c, steps):
        u = u0.clone()
        for k in range(steps):
            u[1:-1] = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        return torch.sum(u * u)

    def rnn(W, U, h0, X):
        h = h0
        for t in range(X.shape[0]):
            h = torch.tanh(W @ h + U @ X[t])
        return torch.sum(h * h)

    def mlp_loss(W1, b1, W2, b2, X, Y):
        h = torch.tanh(X @ W1 + b1)
        return F.cross_entropy(h @ W2 + b2, Y)          # Y: class probabilities (one-hot)

    return {"horner": horner, "prod": prod_sum, "rk4": lotka_volterra_misfit, "heat": heat,
            "rnn": rnn, "mlp": mlp_loss}


def autograd_versions():
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def prod_sum(A):
        return anp.sum(anp.prod(A, axis=0))

    def heat(u0, c, steps):
        u = u0
        for k in range(steps):      # autograd arrays are immutable: rebuild instead of u[1:-1] = ...
            inner = u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2])
            u = anp.concatenate([u[:1], inner, u[-1:]])
        return anp.sum(u * u)

    def rnn(W, U, h0, X):
        h = h0
        for t in range(X.shape[0]):
            h = anp.tanh(anp.dot(W, h) + anp.dot(U, X[t]))
        return anp.sum(h * h)

    def mlp_loss(W1, b1, W2, b2, X, Y):
        z = anp.dot(anp.tanh(anp.dot(X, W1) + b1), W2) + b2
        return -anp.sum(Y * (z - logsumexp(z, axis=1, keepdims=True))) / X.shape[0]

    return {"horner": horner, "prod": prod_sum, "rk4": lotka_volterra_misfit, "heat": heat,
            "rnn": rnn, "mlp": mlp_loss}


def _jax_common():
    import jax
    import jax.numpy as jnp

    def prod_sum(A):
        return jnp.sum(jnp.prod(A, axis=0))

    def mlp_loss(W1, b1, W2, b2, X, Y):
        z = jnp.tanh(X @ W1 + b1) @ W2 + b2
        return -jnp.sum(Y * jax.nn.log_softmax(z, axis=1)) / X.shape[0]

    return {"prod": prod_sum, "mlp": mlp_loss}


def _jax_rnn_loop(W, U, h0, X):
    """The RNN as a Python loop (JAX eager; under ``jit`` it would unroll)."""
    import jax.numpy as jnp
    h = h0
    for t in range(X.shape[0]):
        h = jnp.tanh(W @ h + U @ X[t])
    return jnp.sum(h * h)


def jax_eager_versions():
    """For ``jax.grad`` without ``jit``: Python loops, functional slice updates."""
    import jax.numpy as jnp

    def heat(u0, c, steps):
        u = u0
        for k in range(steps):
            u = u.at[1:-1].set(u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2]))
        return jnp.sum(u * u)

    return {"horner": horner, "rk4": lotka_volterra_misfit, "heat": heat, "rnn": _jax_rnn_loop,
            **_jax_common()}


def jax_jit_versions():
    """For ``jax.jit(jax.grad(...))``: loops as ``lax.fori_loop`` (the loop bounds are static)."""
    import jax.numpy as jnp
    from jax import lax

    def horner_lax(x, p):
        N = p.shape[0]
        return lax.fori_loop(0, N - 1, lambda k, ex: x * ex + p[N - 2 - k], p[N - 1])

    def rk4_lax(theta, observed, h):
        a, b, c, d = theta[0], theta[1], theta[2], theta[3]

        def f(x, y):
            return a * x - b * x * y, c * x * y - d * y

        def step(k, carry):
            x, y, loss = carry
            k1x, k1y = f(x, y)
            k2x, k2y = f(x + 0.5 * h * k1x, y + 0.5 * h * k1y)
            k3x, k3y = f(x + 0.5 * h * k2x, y + 0.5 * h * k2y)
            k4x, k4y = f(x + h * k3x, y + h * k3y)
            x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
            y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
            return x, y, loss + (x - observed[k, 0]) ** 2 + (y - observed[k, 1]) ** 2

        start = (jnp.asarray(1.0, theta.dtype), jnp.asarray(0.5, theta.dtype), jnp.zeros((), theta.dtype))
        return lax.fori_loop(0, observed.shape[0], step, start)[2]

    def heat_lax(u0, c, steps):
        def step(k, u):
            return u.at[1:-1].set(u[1:-1] + c * (u[2:] - 2.0 * u[1:-1] + u[:-2]))
        u = lax.fori_loop(0, steps, step, u0)
        return jnp.sum(u * u)

    def rnn_lax(W, U, h0, X):
        h = lax.fori_loop(0, X.shape[0], lambda t, h: jnp.tanh(W @ h + U @ X[t]), h0)
        return jnp.sum(h * h)

    return {"horner": horner_lax, "rk4": rk4_lax, "heat": heat_lax, "rnn": rnn_lax,
            **_jax_common()}
