"""Small functions the generated code calls.

Each is plain Python that Numba can also compile, so the same generated
source runs under both backends.
"""
from __future__ import annotations

import numpy as np


def trip_count(start, stop, step):
    """len(range(start, stop, step)) without building the range."""
    if step > 0:
        n = (stop - start + step - 1) // step
    else:
        n = (start - stop - step - 1) // (-step)
    return n if n > 0 else 0


def segment_length(n, every):
    """Iterations per segment of a checkpointed loop of ``n`` iterations: ``every``,
    or ``ceil(sqrt(n))`` when it is None (:mod:`pullback.core.checkpointing`)."""
    if every is None:
        k = int(n ** 0.5)
        while k * k < n:
            k += 1
        return k if k > 0 else 1
    if every < 1:
        raise ValueError("checkpointed(every=...) takes a positive int or None")
    return every


def reserve(tape, needed):
    """``tape`` with room for at least ``needed`` entries, at least doubled when it
    grows (amortised O(1) pushes)."""
    if needed <= tape.shape[0]:
        return tape
    size = max(needed, 2 * tape.shape[0])
    new = np.empty(size, dtype=tape.dtype)
    for i in range(tape.shape[0]):      # not new[:n] = tape: Numba's first slice assignment
        new[i] = tape[i]                # in a process takes seconds to compile
    return new


def buffer_like(adjoint, value):
    """An adjoint ready for in-place element updates: ``adjoint`` itself when it
    is already a writable array of ``value``'s shape that owns its memory, else
    zeros plus what it holds.  A rule may return a read-only broadcast
    (``sum_vjp``) or a view of another cotangent (``reshape_vjp``); writing into
    those would fail or change a value that is still read, so they are copied.

    A tuple ``value`` (the result of a function whose rule does not say what it
    returns, taken for an array) gets a tuple's cotangent, as :func:`add_item`
    makes it: a list with an item per item of ``value``, its arrays copied."""
    if isinstance(adjoint, np.ndarray) and adjoint.shape == np.shape(value) \
            and adjoint.flags.writeable and adjoint.flags.owndata:
        return adjoint
    if isinstance(value, tuple):
        if isinstance(adjoint, (list, tuple)):
            return [a.copy() if isinstance(a, np.ndarray) else a for a in adjoint]
        if np.ndim(adjoint) == 0 and adjoint == 0:
            return [0.0] * len(value)
    return np.zeros(np.shape(value), dtype=np.result_type(value, 1.0)) + adjoint


def add_into(out, g):
    """``out += g`` in place, ``out`` a view of an adjoint buffer (``da[1:-1]``)."""
    out += g


def refill_zeros(buffer, like):
    """``np.zeros_like(like)``, in ``buffer``'s memory when it has ``like``'s shape
    and dtype (an adjoint reset in every iteration of a loop: no allocation)."""
    if buffer.shape == like.shape and buffer.dtype == like.dtype:
        buffer.fill(0.0)
        return buffer
    return np.zeros_like(like)


def add_product_into(out, a, b):
    """``add_into(out, a * b)``; under Numba without the array of products."""
    out += a * b


def with_shape(value, shape):
    """``value`` itself when it has ``shape``, else a new array of that shape.  For
    a variable the reverse sweep reads only the shape of (``unbroadcast``), whose
    tape keeps the shape alone: its contents are never read."""
    if value.shape == shape:
        return value
    return np.empty(shape, dtype=value.dtype)


def snapshot(value):
    """A copy of an array (a saved row or slice must not change with the array it
    was read from); a number as it is."""
    return value.copy() if isinstance(value, np.ndarray) else value


def zeros_like(value):
    """A float zero of value's shape (a Python float for a scalar or None); a tuple
    or list of them for a tuple or list (as the Numba twin, whose derivatives also
    run as Python while they compile)."""
    if isinstance(value, (tuple, list)):
        items = [zeros_like(v) for v in value]
        return tuple(items) if isinstance(value, tuple) else items   # a named tuple's too
    if np.ndim(value) == 0:
        return 0.0
    return np.zeros(np.shape(value), dtype=np.result_type(value, 1.0))


def scan_outputs(n, y):
    """``scan``'s stacked outputs, allocated from its first step's output ``y``: float
    zeros of shape ``(n,) + y.shape``.  ``y`` None (``f`` returned ``(carry, None)``
    from a ``def``, where the transform cannot see it) is refused: stacking it would
    give NaN."""
    if y is None:
        raise TypeError("scan: f returned (carry, None), so there is nothing to stack; "
                        "write f as a lambda returning (carry, None), or return an output")
    return np.zeros((n,) + np.shape(y))


def cotangent_or_zero(cotangent, arg):
    """``cotangent``, or for None (a user's VJP saying "no derivative" for ``arg``) a
    float zero of ``arg``'s shape: the reverse sweep adds every cotangent it gets, and
    None would come out as NaN (an array) or a TypeError (a number)."""
    return zeros_like(arg) if cotangent is None else cotangent


def result_cotangent(g, ans):
    """The cotangent of a tuple result ``ans`` as a user's VJP receives it: a tuple
    with an item per item of ``ans``, a zero of the item's shape where nothing
    reached it (the reverse sweep holds 0.0 there, or 0.0 for the whole tuple).
    Anything else as it is."""
    if not isinstance(ans, tuple):
        return g
    if not isinstance(g, (list, tuple)):
        if np.ndim(g) != 0 or g != 0:
            return g
        g = [0.0] * len(ans)
    return tuple(result_cotangent(c, a) if isinstance(a, tuple) else
                 zeros_like(a) if np.ndim(c) == 0 and np.ndim(a) != 0 and c == 0 else c
                 for c, a in zip(g, ans))


def zeros_tangent(value):
    """Forward mode's zero tangent of ``value``: :func:`zeros_like`, item by item
    for a tuple."""
    if isinstance(value, tuple):
        return tuple(zeros_tangent(v) for v in value)
    return zeros_like(value)


def fit(tangent, ans):
    """Forward mode: a tangent given the shape of the result ``ans`` (an operand
    that was broadcast), as a float array of its own."""
    shape = np.shape(ans)
    if np.shape(tangent) == shape:
        return tangent
    return np.broadcast_to(tangent, shape).astype(np.result_type(tangent, 1.0))


def scatter_add(adjoint, value, index, g):
    """``adjoint[index] += g`` with repeated indices accumulated (advanced indexing)."""
    buf = buffer_like(adjoint, value)
    np.add.at(buf, index, g)
    return buf


def written_cotangent(adjoint, index):
    """``adjoint[index]``: the cotangent of the value written by ``a[index] = value``
    with advanced indexing, zero where a write did not stay.  An entry that
    ``index`` names more than once keeps the last value written to it, as NumPy
    assigns; the earlier writes to it reach nothing (their cotangent is 0)."""
    g = adjoint[index]
    if isinstance(index, np.ndarray) and (index.dtype == np.bool_ or (
            index.ndim == 1 and index.dtype.kind in "iu" and adjoint.ndim
            and (index.size < 2 or np.unique(index % adjoint.shape[0]).size == index.size))):
        return g        # every entry named once: a mask, or distinct positions
    positions = np.arange(adjoint.size).reshape(adjoint.shape)[index].reshape(-1)
    last = np.full(adjoint.size, -1)
    last[positions] = np.arange(positions.size)     # the write each entry keeps
    stayed = (last[positions] == np.arange(positions.size)).reshape(np.shape(g))
    return np.where(stayed, g, np.zeros((), dtype=g.dtype))


def accumulate(total, more):
    """``total + more`` for cotangents that may be tuples/lists (one per item of a
    tuple-valued primal, such as the arrays passed to np.concatenate)."""
    if isinstance(more, (list, tuple)):
        if isinstance(total, (list, tuple)):
            return [accumulate(a, b) for a, b in zip(total, more)]
        return [accumulate(total, b) if np.ndim(total) == 0 and total == 0 else b for b in more]
    if isinstance(total, (list, tuple)):
        if isinstance(more, np.ndarray) and more.ndim and len(more) == len(total):
            # A tuple's cotangent that came as an array row (a fold's stacked output
            # of tuple steps): item by item.
            return [accumulate(a, m) for a, m in zip(total, more)]
        return [accumulate(a, more) for a in total]
    return total + more


def item_cotangent(cotangent, k):
    """Item ``k`` of a tuple's cotangent (0.0 when nothing reached the tuple)."""
    if isinstance(cotangent, (list, tuple)):
        return cotangent[k]
    if np.ndim(cotangent) == 0:
        return cotangent
    return cotangent[k]


def add_item(cotangent, value, k, g):
    """The cotangent of a tuple ``value`` with ``g`` added at item ``k``.  A ``value``
    that turns out to be an array (its kind was not known when transforming:
    ``w[0]`` of ``w, V = np.linalg.eigh(np.diag(p))``) gets an array's cotangent,
    what ``cotangent`` holds with ``g`` added at row ``k``: a list would replace
    the contributions the array already had."""
    if isinstance(value, np.ndarray):
        out = np.array(buffer_like(cotangent, value), dtype=np.result_type(value, 1.0))
        out[k] += g
        return out
    if isinstance(cotangent, (list, tuple)):
        out = list(cotangent)
    elif isinstance(cotangent, np.ndarray) and cotangent.ndim and len(cotangent) == len(value):
        out = list(cotangent)       # a tuple's cotangent that came as an array row
    else:
        out = [0.0] * len(value)
    out[k] = accumulate(out[k], g)     # an item may be a tuple itself
    return out


class _CallVJP:
    """Stands, while transforming, for ``call_vjp(f, g, *args)``: the cotangents of a
    call ``f(*args)`` whose result has cotangent ``g``, for a call the transform
    cannot inline (recursion), computed when the derivative runs by the public
    ``vjp``: each level differentiates the next.  That function belongs to the API
    layer, above this one, so the transform names this stand-in and the caller of
    :func:`pullback.pipeline.derivative` passes the function that replaces it in the
    generated code's namespace (no import of the API from below it)."""

    __name__ = "call_vjp"

    def __repr__(self):
        return "<the run-time vjp of a recursive call>"


CALL_VJP = _CallVJP()
