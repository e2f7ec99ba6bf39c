"""The functions whose generated derivative source is kept as golden files.

Each case covers one shape of statement the transform handles.  They exist to
make every change to the transform visible as a diff of the generated code.
"""
from __future__ import annotations

import math

import numpy as np


def horner(x, p):
    N = len(p)
    ex = p[N - 1]
    for i in range(N - 2, -1, -1):
        ex = x * ex + p[i]
    return ex


def branch_with_array_write(x, p):
    out = np.zeros(len(p))
    for i in range(len(p)):
        if p[i] > 0.0:
            out[i] = x * p[i]
        else:
            out[i] = math.sin(p[i])
    return np.sum(out * out)


def _scaled_square(a, c):
    return c * a * a


def helper_call(x, p):
    s = 0.0
    for i in range(len(p)):
        s += _scaled_square(p[i], x)
    return s


def while_loop(x):
    y = x
    it = 0
    while y > 0.1 and it < 50:
        y = 0.5 * y + 0.01 * math.sin(y)
        it += 1
    return y * x


def break_and_return_in_loop(x, p):
    s = 0.0
    for i in range(len(p)):
        if p[i] < 0.0:
            break
        s = s * x + p[i]
        if s > 100.0:
            return s * s
    return s


def prod_of_columns(A):
    return np.sum(np.prod(A, axis=0))


def slice_write(u, c):
    v = u.copy()
    for step in range(3):
        v[1:-1] = v[1:-1] + c * (v[2:] - 2.0 * v[1:-1] + v[:-2])
    return np.sum(v * v)


def _polar(r, t):
    return r * math.cos(t), r * math.sin(t)


def tuple_returning_call(r, t):
    a, b = _polar(r, t)
    c, d = _polar(a + b, t * 0.5)
    return a * d - b * c


def log_softmax_loss(z, y):
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(y * logp)


_P = np.array([1.0, -2.0, 0.5, 3.0])
_A = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])

# name -> (function, example arguments, argnums)
CASES = {
    "horner": (horner, (0.5, _P), (0, 1)),
    "branch_with_array_write": (branch_with_array_write, (0.7, _P), (0, 1)),
    "helper_call": (helper_call, (0.7, _P), (0, 1)),
    "while_loop": (while_loop, (2.0,), 0),
    "break_and_return_in_loop": (break_and_return_in_loop, (1.5, _P), (0, 1)),
    "prod_of_columns": (prod_of_columns, (_A,), 0),
    "slice_write": (slice_write, (_P, 0.1), (0, 1)),
    "tuple_returning_call": (tuple_returning_call, (1.2, 0.4), (0, 1)),
    "log_softmax_loss": (log_softmax_loss, (np.array([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]]),
                                            np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])), 0),
}
