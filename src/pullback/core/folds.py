"""Loop primitives: ``scan``, ``foldl``, ``foldr``, ``accumulate``.

Called outside a derivative they run here, as plain Python loops over the
first axis of ``xs``.  Inside a function pullback differentiates, the frontend
(:mod:`pullback.frontend.folds`) writes each call as the same loop calling
``f``, which is then inlined like any helper: the derivative is the plain
loop's, one carry saved per step and the cotangent of ``xs`` added element by
element.  The two must agree, so both follow the orders documented here.
"""
from __future__ import annotations

import numpy as np


def _check_f(name, f):
    if not callable(f):
        raise TypeError(f"{name}: f must be a function, got {type(f).__name__}")


def _length(name, xs) -> int:
    """The number of steps over ``xs`` (its first axis); a scalar has none."""
    if np.ndim(xs) == 0:
        raise TypeError(f"{name}: xs must be an array or a sequence to loop over its first "
                        f"axis, got {type(xs).__name__}")
    return len(xs)


def _stack(name, ys):
    """The per-step outputs along a new leading axis."""
    if not ys:
        raise ValueError(f"{name}: no steps to stack (xs is empty or length is 0), so the "
                         "shape of the stacked outputs is not known")
    return np.stack([np.asarray(y) for y in ys])


def foldl(f, xs, init):
    """``f(...f(f(init, xs[0]), xs[1])..., xs[-1])``: the accumulator first."""
    _check_f("foldl", f)
    acc = init
    for i in range(_length("foldl", xs)):
        acc = f(acc, xs[i])
    return acc


def foldr(f, xs, init):
    """``f(xs[0], f(xs[1], ...f(xs[-1], init)))``: from the last element, the
    element first (Horner's rule is ``foldr(lambda c, y: x * y + c, p, 0.0)``)."""
    _check_f("foldr", f)
    acc = init
    for i in range(_length("foldr", xs) - 1, -1, -1):
        acc = f(xs[i], acc)
    return acc


def accumulate(f, xs, init):
    """The running values of :func:`foldl`, one per element of ``xs``, stacked
    along a new leading axis: ``out[i] = f(out[i - 1], xs[i])``, ``out[-1]`` the
    fold (``init`` itself is not included)."""
    _check_f("accumulate", f)
    acc, out = init, []
    for i in range(_length("accumulate", xs)):
        acc = f(acc, xs[i])
        out.append(acc)
    return _stack("accumulate", out)


def scan(f, init, xs, length=None, reverse=False):
    """``carry, y = f(carry, x)`` for each ``x`` of ``xs``; returns ``(carry, ys)``
    with the ``y`` stacked along a new leading axis (``ys[i]`` is the output of
    the step over ``xs[i]``, also when ``reverse=True`` runs from the last).
    ``xs=None`` with ``length`` calls ``f(carry, None)`` ``length`` times.  A ``y``
    that is None at every step stacks to ``ys = None``; a tuple ``y`` is stacked as
    ``np.stack`` stacks it (a row per step)."""
    _check_f("scan", f)
    if xs is None:
        if length is None:
            raise TypeError("scan: give xs, or xs=None with length")
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool):
            raise TypeError(f"scan: length must be an int, got {type(length).__name__}")
        n = int(length)
    else:
        n = _length("scan", xs)
        if length is not None and length != n:
            raise ValueError(f"scan: length={length} but xs has {n} elements")
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, [None] * n
    for i in order:
        out = f(carry, None if xs is None else xs[i])
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("scan: f must return a pair (carry, y)")
        carry, ys[i] = out
    if n and all(y is None for y in ys):
        return carry, None
    return carry, _stack("scan", ys)
