"""Examples for the twins of the runtime helpers the transform calls (core/runtime,
backends/in_place): cotangent buffers, tuples of cotangents, in-place updates."""
from __future__ import annotations

import numpy as np

from ._base import arr, call, known_bug, num, sizes, upcasts

RT = "pullback.core.runtime."
EXAMPLES: dict = {}


def _buffers(rng, dt):
    m, n = sizes(rng, 2)
    a, b = arr(rng, dt, (m, n)), arr(rng, dt, (m, n))
    return [call(a, b), upcasts(dt, call(num(rng, dt), b)),
            known_bug("an adjoint array of another shape than value's is returned as it is, not "
                      "broadcast to value's shape", call(arr(rng, dt, (n,)), b))]


def _scatter_add(rng, dt):
    m, n = sizes(rng, 2)
    v = arr(rng, dt, (m, n))
    idx = rng.integers(0, m, size=5)
    return [call(arr(rng, dt, (m, n)), v, idx, arr(rng, dt, (5, n))),
            upcasts(dt, call(num(rng, dt), v, idx, arr(rng, dt, (5, n)))),
            call(arr(rng, dt, (m, n)), v, (idx, rng.integers(0, n, size=5)), arr(rng, dt, (5,))),
            known_bug("a 2-d boolean index: Numba fails while lowering (an AssertionError, "
                      "not a refusal)", call(arr(rng, dt, (m, n)), v, v > 0, num(rng, dt)))]


def _tuples(rng, dt):
    return (arr(rng, dt, (3,)), arr(rng, dt, (2, 2)), num(rng, dt))


EXAMPLES[RT + "zeros_like"] = lambda rng, dt: [
    call(arr(rng, dt, (3, 4))), call(num(rng, dt)), call((num(rng, dt), arr(rng, dt, (2,))))]
EXAMPLES[RT + "zeros_tangent"] = lambda rng, dt: [
    call(arr(rng, dt, (3, 4))), call(num(rng, dt)), call(_tuples(rng, dt))]
EXAMPLES[RT + "written_cotangent"] = lambda rng, dt: [
    call(arr(rng, dt, (5,)), np.array([3, 1, 3, -2])), call(arr(rng, dt, (4, 3)), np.array([0, 2, 0])),
    call(arr(rng, dt, (4, 3)), (slice(None), np.array([1, 1]))),
    call(arr(rng, dt, (5,)), arr(rng, dt, (5,)) > 0)]
# Numba's tuple cotangent holds typed zeros already: the twin passes it on.
EXAMPLES[RT + "result_cotangent"] = lambda rng, dt: [
    call(_tuples(rng, dt), _tuples(rng, dt)), call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4)))]
EXAMPLES[RT + "fit"] = lambda rng, dt: [
    call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4))), call(arr(rng, dt, (4,)), arr(rng, dt, (3, 4))),
    call(num(rng, dt), arr(rng, dt, (3, 4))), call(num(rng, dt), num(rng, dt))]
EXAMPLES[RT + "buffer_like"] = _buffers
EXAMPLES[RT + "scatter_add"] = _scatter_add
# A buffer of the same shape is zeroed in place; of another, a new array of zeros.
EXAMPLES[RT + "refill_zeros"] = lambda rng, dt: [
    call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4))), call(arr(rng, dt, (5,)), arr(rng, dt, (3,)))]
EXAMPLES[RT + "snapshot"] = lambda rng, dt: [call(arr(rng, dt, (3, 4))), call(num(rng, dt))]
EXAMPLES[RT + "accumulate"] = lambda rng, dt: [
    call(arr(rng, dt, (3, 4)), arr(rng, dt, (3, 4))), call(num(rng, dt), num(rng, dt)),
    call(_tuples(rng, dt), _tuples(rng, dt)), call(arr(rng, dt, (3, 4)), num(rng, dt))]
EXAMPLES[RT + "item_cotangent"] = lambda rng, dt: [
    call(_tuples(rng, dt), 1), call(arr(rng, dt, (3, 4)), 2), call(num(rng, dt), 0)]
EXAMPLES[RT + "add_item"] = lambda rng, dt: [
    call(_tuples(rng, dt), _tuples(rng, dt), 0, arr(rng, dt, (3,))),
    call(_tuples(rng, dt), _tuples(rng, dt), 2, num(rng, dt)),
    call((arr(rng, dt, (3,)), arr(rng, dt, (3,))), None, 1, arr(rng, dt, (3,)))]


def _add_into(rng, dt):
    m, n = sizes(rng, 2)
    return [call(arr(rng, dt, (m, n)), arr(rng, dt, (m, n))), call(arr(rng, dt, (m, n)), arr(rng, dt, (n,))),
            call(arr(rng, dt, (m, n)), num(rng, dt))]


def _add_product_into(rng, dt):
    m, n = sizes(rng, 2)
    v = arr(rng, dt, (n,))
    return [call(arr(rng, dt, (n,)), arr(rng, dt, (n,)), num(rng, dt)),
            call(arr(rng, dt, (n,)), num(rng, dt), v), call(arr(rng, dt, (n,)), v, arr(rng, dt, (n,))),
            call(arr(rng, dt, (m, n)), arr(rng, dt, (m, n)), v)]


def _add_matmul_vjp(which):
    """``out += matmul_vjp_{which}(g, a, b)``: ``out`` has the shape of a (or b)."""
    def make(rng, dt):
        m, n = sizes(rng, 2)
        out = []
        a = arr(rng, dt, (m, n))
        for b in (arr(rng, dt, (n,)), arr(rng, dt, (n, 3))):
            into = arr(rng, dt, (a if which == "a" else b).shape)
            out.append(call(into, arr(rng, dt, (a @ b).shape), a, b))
        return out
    return make


EXAMPLES[RT + "add_into"] = _add_into
EXAMPLES[RT + "add_product_into"] = _add_product_into
EXAMPLES["pullback.backends.in_place.add_matmul_vjp_a"] = _add_matmul_vjp("a")
EXAMPLES["pullback.backends.in_place.add_matmul_vjp_b"] = _add_matmul_vjp("b")

EXAMPLES[RT + "scan_outputs"] = lambda rng, dt: [call(3, arr(rng, dt, (2, 4))), call(4, num(rng, dt))]
