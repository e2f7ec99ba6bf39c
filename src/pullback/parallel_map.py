"""``vmap`` of a gradient that Numba compiled: one compiled loop over the batch.

``vmap(grad(loss, jit=True), in_axes=(None, 0))(w, X)`` calls the derivative
``grad(loss)`` calls, once per example, from one compiled loop split across
Numba's threads (:mod:`pullback.backends.batch_loop`), and writes the value and
gradients into arrays stacked along the batch.

Invariant: each example's numbers are those of ``grad(loss)`` called on it; the
loop calls the very code that call runs, on the same argument types.  ``run``
returns None wherever that does not hold or is not ready (another kind of
``f``, pytree or keyword arguments, ``has_aux``, the loop still compiling in the
background, a call that raised): the caller then loops in Python, which gives
the same numbers, or the error located at the user's line.
"""
from __future__ import annotations

import numpy as np

from .api import GradientFunction
from .backends import batch_loop


def run(mapped, batch):
    """The stacked results of ``mapped.f`` over ``batch`` (:class:`pullback.vmap._Batch`)
    by the compiled loop, or None (see the module)."""
    f = mapped.f
    if not (isinstance(f, GradientFunction) and f.backend.name == "numba" and not f.has_aux
            and not f._bound and not batch.kwargs and batch.size > 1
            and all(s is None for s, _ in batch.structures)
            and len(batch.args) == f._nparams):
        return None
    first = f(*batch.rebuild(batch.example_leaves(0))[0])    # builds (or checks) the entry
    args0 = batch.example_leaves(0)
    entry = f._fast.get(tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a)
                               for a in args0]))
    if entry is None:
        return None
    c, plan, single, seed = entry
    grads = first[-1] if f.with_value else first
    grads = (grads,) if single else tuple(grads)
    outs = [((1, k), np.empty((batch.size,) + np.shape(g), np.asarray(g).dtype))
            for k, g in enumerate(grads)]
    values = np.empty(batch.size)
    if not batch_loop.run(c.fn, (*batch.leaves, 1.0), (*batch.axes, None),
                          [((0,), values)] + outs, batch.size):
        return None
    out = tuple(a for _, a in outs) if not single else outs[0][1]
    return batch.placed((values, out) if f.with_value else out)
