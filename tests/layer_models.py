"""A model written once in NumPy (a layer pullback differentiates) and once for any
framework given its ``sin`` and ``stack`` (the reference, differentiated by that
framework's own autodiff): shared by tests/test_torch_function.py and
tests/test_jax_function.py."""
import numpy as np


def damped(p, y0, n):
    """A two-state Euler recurrence written into a state array, one output per step."""
    y = y0.copy()
    out = np.zeros(n)
    for i in range(n):
        k1 = -p[0] * y[0] + p[1] * np.sin(y[1])
        k2 = -p[2] * y[1] + 0.1 * y[0] * y[0]
        y[0] = y[0] + 0.1 * k1
        y[1] = y[1] + 0.1 * k2
        out[i] = y[0] * y[1]
    return out


def damped_in(sin, stack):
    """``damped`` written with a framework's ``sin`` and ``stack`` on its scalars."""
    def model(p, y0, n):
        y = [y0[0], y0[1]]
        out = []
        for _ in range(n):
            k1 = -p[0] * y[0] + p[1] * sin(y[1])
            k2 = -p[2] * y[1] + 0.1 * y[0] * y[0]
            y = [y[0] + 0.1 * k1, y[1] + 0.1 * k2]
            out.append(y[0] * y[1])
        return stack(out)
    return model
