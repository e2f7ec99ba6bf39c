"""Examples for the twins of rules/shapes, joining, manipulation, reorder, padding,
diagonals, piecewise, interpolation and polynomial."""
from __future__ import annotations

import numpy as np

from ._base import arr, call, like, num, sizes

R = "pullback.rules."
EXAMPLES: dict = {}


def _vjp_of(rng, primal, a, *rest, **kw):
    """(g, a, *rest) with ``g`` a cotangent of ``primal(a, *rest, **kw)``."""
    return (like(rng, primal(a, *rest, **kw)), a) + rest


# ---- shapes
def _reshape_vjp(rng, dt):
    a = arr(rng, dt, sizes(rng, 3))
    return [call(arr(rng, dt, (a.size,)), a), call(arr(rng, dt, a.shape[::-1]), a)]


def _squeeze(rng, dt):
    m, n = sizes(rng, 2)
    a = arr(rng, dt, (m, 1, n))
    # (without an int axis the twin refuses: the rank of the result depends on the shape)
    return [call(a, axis=1), call(a, 1), call(arr(rng, dt, (1, 1)), axis=0)]


def _squeeze_vjp(rng, dt):
    m, n = sizes(rng, 2)
    return [call(arr(rng, dt, (m, n)), arr(rng, dt, (m, 1, n))),
            call(arr(rng, dt, (m, 1, n)), arr(rng, dt, (m, n)))]


def _transpose_vjp(rng, dt):
    a = arr(rng, dt, sizes(rng, 3))
    return [call(*_vjp_of(rng, np.transpose, a)), call(*_vjp_of(rng, np.transpose, a, (1, 2, 0))),
            call(*_vjp_of(rng, np.transpose, a, axes=(2, 0, 1)), axes=(2, 0, 1))]


def _parts(rng, dt, axis, rank=2):
    shape = list(sizes(rng, rank))
    out = []
    for _ in range(3):
        shape[axis] = int(rng.integers(1, 4))
        out.append(arr(rng, dt, tuple(shape)))
    return tuple(out)


def _concatenate_vjp(rng, dt):
    out = []
    for axis in (0, 1, -1):
        parts = _parts(rng, dt, axis)
        out.append(call(like(rng, np.concatenate(parts, axis)), parts, axis))
    return out


def _stack_vjp(rng, dt):
    parts = tuple(arr(rng, dt, (3, 4)) for _ in range(3))
    return [call(like(rng, np.stack(parts, axis)), parts, axis) for axis in (0, 1, -1)]


EXAMPLES[R + "shapes.array_vjp"] = lambda rng, dt: [
    call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4))),
    call(arr(rng, dt, (2, 3)), (arr(rng, dt, (3,)), arr(rng, dt, (3,)))),
    call(num(rng, dt), (arr(rng, dt, (3,)), arr(rng, dt, (2,))))]   # g a number: each item gets it
EXAMPLES[R + "shapes.reshape_vjp"] = _reshape_vjp
EXAMPLES["numpy.squeeze"] = _squeeze
EXAMPLES[R + "shapes.squeeze_vjp"] = _squeeze_vjp
EXAMPLES[R + "shapes.method_axes"] = lambda rng, dt: [call((2, 0, 1)), call(None)]
EXAMPLES[R + "shapes.transpose_vjp"] = _transpose_vjp
EXAMPLES[R + "shapes.concatenate_vjp"] = _concatenate_vjp
EXAMPLES[R + "shapes.stack_vjp"] = _stack_vjp
EXAMPLES[R + "shapes.swapaxes_vjp"] = lambda rng, dt: [
    call(*_vjp_of(rng, np.swapaxes, arr(rng, dt, sizes(rng, 3)), 0, 2)),
    call(*_vjp_of(rng, np.swapaxes, arr(rng, dt, sizes(rng, 3)), -1, 1))]
EXAMPLES[R + "shapes.moveaxis_vjp"] = lambda rng, dt: [
    call(*_vjp_of(rng, np.moveaxis, arr(rng, dt, sizes(rng, 3)), 0, -1)),
    call(*_vjp_of(rng, np.moveaxis, arr(rng, dt, sizes(rng, 3)), 2, 1))]
EXAMPLES[R + "shapes.astype_vjp"] = lambda rng, dt: [
    call(arr(rng, np.float64, (3, 4)), arr(rng, dt, (3, 4))),
    call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4)))]


# ---- joining
def _join_vjp(primal, ranks):
    def make(rng, dt):
        out = []
        for rank in ranks:
            parts = tuple(arr(rng, dt, (3, 4, 2)[:rank]) for _ in range(2))
            out.append(call(like(rng, primal(parts)), parts))
        return out
    return make


EXAMPLES[R + "joining.hstack_vjp"] = _join_vjp(np.hstack, (1, 2, 3))
EXAMPLES[R + "joining.vstack_vjp"] = _join_vjp(np.vstack, (1, 2, 3))
EXAMPLES[R + "joining.column_stack_vjp"] = _join_vjp(np.column_stack, (1, 2))
EXAMPLES[R + "joining.dstack_vjp"] = _join_vjp(np.dstack, (1, 2, 3))
EXAMPLES["numpy.column_stack"] = lambda rng, dt: [
    call(tuple(arr(rng, dt, (4,)) for _ in range(3))),
    call((arr(rng, dt, (4,)), arr(rng, dt, (4, 2))))]


def _append_vjp(rng, dt):
    m, n = sizes(rng, 2)
    a = arr(rng, dt, (m, n))
    out = []
    for values, axis in ((arr(rng, dt, (2, n)), 0), (arr(rng, dt, (m, 3)), 1),
                         (arr(rng, dt, (5,)), None)):
        out.append(call(like(rng, np.append(a, values, axis)), a, values, axis))
    return out


EXAMPLES[R + "joining.append_vjp_arr"] = _append_vjp
EXAMPLES[R + "joining.append_vjp_values"] = _append_vjp


def _split_vjp(rng, dt):
    a = arr(rng, dt, (6, 4))
    out = []
    for sections, axis in ((3, 0), (2, 1), (2, -1)):
        ans = np.split(a, sections, axis)
        out.append(call([like(rng, p) for p in ans], ans, a, axis))
    return out


def _hsplit_vjp(rng, dt):
    out = []
    for a in (arr(rng, dt, (3, 4)), arr(rng, dt, (6,))):
        ans = np.hsplit(a, 2)
        out.append(call([like(rng, p) for p in ans], ans, a))
    return out


EXAMPLES[R + "joining.split_vjp"] = _split_vjp
EXAMPLES[R + "joining.hsplit_vjp"] = _hsplit_vjp


# ---- manipulation
def _atleast(rng, dt):
    return [call(arr(rng, dt, (4,))), call(arr(rng, dt, (3, 4))), call(num(rng, dt))]


def _atleast_vjp(rng, dt):
    return [call(arr(rng, dt, (1, 4)), arr(rng, dt, (4,))), call(arr(rng, dt, (1, 1)), num(rng, dt)),
            call(arr(rng, dt, (1, 4, 1)), arr(rng, dt, (4,)))]


def _repeat(rng, dt):
    a = arr(rng, dt, sizes(rng, 2))
    return [call(a, 2, axis=0), call(a, 3, 1), call(a, 2)]


def _repeat_vjp(rng, dt):
    a = arr(rng, dt, sizes(rng, 2))
    return [call(*_vjp_of(rng, np.repeat, a, 2, 0)), call(*_vjp_of(rng, np.repeat, a, 3, 1)),
            call(*_vjp_of(rng, np.repeat, a, 2))]


def _tile_vjp(rng, dt):
    a = arr(rng, dt, sizes(rng, 2))
    return [call(*_vjp_of(rng, np.tile, a, (2, 3))), call(*_vjp_of(rng, np.tile, a, 2)),
            call(*_vjp_of(rng, np.tile, a, (2, 1, 2)))]


def _diff(rng, dt):
    a = arr(rng, dt, (5, 6))
    return [call(a, 2), call(a, axis=0), call(a, 1, 0), call(a[0], 3)]


def _diff_vjp(rng, dt):
    a = arr(rng, dt, (5, 6))
    return [call(*_vjp_of(rng, np.diff, a)), call(*_vjp_of(rng, np.diff, a, 2)),
            call(*_vjp_of(rng, np.diff, a, axis=0), axis=0), call(*_vjp_of(rng, np.diff, a[0], 3))]


EXAMPLES[R + "manipulation.atleast_vjp"] = _atleast_vjp
EXAMPLES["numpy.atleast_1d"] = EXAMPLES["numpy.atleast_2d"] = EXAMPLES["numpy.atleast_3d"] = _atleast
EXAMPLES["numpy.repeat"] = _repeat
EXAMPLES[R + "manipulation.repeat_vjp"] = _repeat_vjp
EXAMPLES["numpy.tile"] = lambda rng, dt: [call(arr(rng, dt, (2, 3)), (2, 3)), call(arr(rng, dt, (3,)), 2),
                                          call(arr(rng, dt, (2, 3)), (2, 1, 2))]
EXAMPLES[R + "manipulation.tile_vjp"] = _tile_vjp
EXAMPLES["numpy.diff"] = _diff
EXAMPLES[R + "manipulation.diff_vjp"] = _diff_vjp


# ---- reorder
def _reorder_vjp(primal, calls):
    """Cotangents for ``primal(a, *args)``, passed on as ``vjp(g, a, *args)``."""
    def make(rng, dt):
        a = arr(rng, dt, (3, 4, 5))
        return [call(*_vjp_of(rng, primal, a, *args)) for args in calls]
    return make


def _sorted_vjp(primal, calls):
    def make(rng, dt):
        a = arr(rng, dt, (3, 4, 5))
        out = []
        for args in calls:
            ans = primal(a, *args)
            out.append(call(like(rng, ans), ans, a, *args))
        return out
    return make


EXAMPLES[R + "reorder.roll_vjp"] = _reorder_vjp(np.roll, ((2,), (1, 0), (-2, 2)))
EXAMPLES["numpy.roll"] = lambda rng, dt: [call(arr(rng, dt, (3, 4)), 1, axis=0),
                                          call(arr(rng, dt, (3, 4)), -2, 1)]
EXAMPLES[R + "reorder.sort_vjp"] = lambda rng, dt: [
    call(*_vjp_of(rng, np.sort, a, axis)) for a in (arr(rng, dt, (3, 4, 5)),) for axis in (-1, 0, 1)]
EXAMPLES["numpy.sort"] = lambda rng, dt: [call(arr(rng, dt, (3, 4)), axis=0),
                                          call(arr(rng, dt, (3, 4)), -1)]
EXAMPLES["numpy.partition"] = lambda rng, dt: [call(arr(rng, dt, (7,)), 3),
                                               call(arr(rng, dt, (3, 4)), 1, axis=0)]
EXAMPLES[R + "reorder.partition_vjp"] = _sorted_vjp(np.partition, ((2, -1), (1, 0), (2, None)))
EXAMPLES[R + "reorder.flip_vjp"] = _reorder_vjp(np.flip, ((), (0,), (-1,)))    # (a tuple of axes is refused)
EXAMPLES["numpy.flip"] = lambda rng, dt: [call(arr(rng, dt, (3, 4)), axis=0),
                                          call(arr(rng, dt, (3, 4)), 1), call(arr(rng, dt, (3, 4)))]
EXAMPLES[R + "reorder.rot90_vjp"] = _reorder_vjp(np.rot90, ((), (2,), (-1, (1, 2)), (3, (2, 0))))
EXAMPLES["numpy.rot90"] = lambda rng, dt: [call(arr(rng, dt, (3, 4))), call(arr(rng, dt, (3, 4)), 3),
                                           call(arr(rng, dt, (2, 3, 4)), 1, (1, 2))]
EXAMPLES["numpy.rollaxis"] = lambda rng, dt: [call(arr(rng, dt, (2, 3, 4)), 2),
                                              call(arr(rng, dt, (2, 3, 4)), 0, 2)]
EXAMPLES[R + "reorder.rollaxis_vjp"] = _reorder_vjp(np.rollaxis, ((2,), (0, 2), (1, 3)))


# ---- padding
_WIDTHS = (((1, 2), (0, 1)), 2, ((1, 1),), (1, 3))


def _pad(rng, dt):
    a = arr(rng, dt, (3, 4))
    return [call(a, w) for w in _WIDTHS] + [call(a, 1, "edge"), call(a, ((1, 2), (2, 1)), mode="reflect"),
                                            call(a, 2, "wrap"), call(a, 1, constant_values=num(rng, dt))]


def _pad_vjp(with_mode):
    def make(rng, dt):
        a = arr(rng, dt, (3, 4))
        out = [call(*_vjp_of(rng, np.pad, a, w)) for w in _WIDTHS]
        if with_mode:
            out += [call(*_vjp_of(rng, np.pad, a, 1, m))
                    for m in ("edge", "reflect", "symmetric", "wrap")]
        else:
            out += [call(*_vjp_of(rng, np.pad, a, 2), "constant", num(rng, dt))]
        return out
    return make


EXAMPLES["numpy.pad"] = _pad
EXAMPLES[R + "padding.pad_vjp_array"] = _pad_vjp(True)
EXAMPLES[R + "padding.pad_vjp_constant"] = _pad_vjp(False)


# ---- diagonals
def _tri_vjp(rng, dt):
    g, m = arr(rng, dt, (4, 5)), arr(rng, dt, (4, 5))
    return [call(g, m), call(g, m, 1), call(g, m, -2), call(arr(rng, dt, (2, 4, 5)), arr(rng, dt, (2, 4, 5)))]


def _diagonal(rng, dt):
    a = arr(rng, dt, (4, 5))
    b = arr(rng, dt, (2, 3, 4))
    return [call(a), call(a, 1), call(a, -1), call(b, 0, 1, 2), call(b, offset=1, axis1=2, axis2=0)]


def _diagonal_vjp(rng, dt):
    return [call(like(rng, np.diagonal(c.args[0], *c.args[1:], **c.kwargs)), *c.args, **c.kwargs)
            for c in _diagonal(rng, dt)]


def _diag_vjp(rng, dt):
    v, m = arr(rng, dt, (4,)), arr(rng, dt, (4, 5))
    return [call(like(rng, np.diag(v, k)), v, k) for k in (0, 1, -2)] + \
        [call(like(rng, np.diag(m, k)), m, k) for k in (0, 2, -1)]


def _trace(rng, dt):
    a = arr(rng, dt, (4, 5))
    return [call(a), call(a, 1), call(a, -2)]      # (a stack of matrices is refused)


def _trace_vjp(rng, dt):
    return [call(like(rng, np.trace(*c.args, **c.kwargs)), *c.args, **c.kwargs) for c in _trace(rng, dt)]


EXAMPLES[R + "diagonals.tril_vjp"] = EXAMPLES[R + "diagonals.triu_vjp"] = _tri_vjp
EXAMPLES["numpy.diagonal"] = _diagonal
EXAMPLES[R + "diagonals.diagonal_vjp"] = _diagonal_vjp
EXAMPLES[R + "diagonals.diag_vjp"] = _diag_vjp
EXAMPLES["numpy.trace"] = _trace
EXAMPLES[R + "diagonals.trace_vjp"] = _trace_vjp


def _full(rng, dt):
    m, n = sizes(rng, 2)
    return [call((m, n), num(rng, dt)), call(n, num(rng, dt)), call((m, n), arr(rng, dt, (n,))),
            call((m, n), arr(rng, dt, (m, 1))), call(n, num(rng, dt), dt)]


def _full_like(rng, dt):
    a = arr(rng, dt, sizes(rng, 2))
    return [call(a, num(rng, dt)), call(a, arr(rng, dt, a.shape[1:])), call(a, 0.5, dt),
            call(a, arr(rng, dt, (a.shape[0], 1)))]


EXAMPLES["numpy.full"] = _full
EXAMPLES["numpy.full_like"] = _full_like
