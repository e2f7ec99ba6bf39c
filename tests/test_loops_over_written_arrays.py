"""A loop over an array whose body writes into that array follows Python: each
iteration reads the element (or the row, a view) as it is at that moment, so a
write into a later entry is seen when the loop gets there.  References: central
finite differences."""
import numpy as np
import pytest

import pullback
from helpers import fd_grad


def relax_forward(p):
    p = p.copy()
    s = 0.0
    j = 0
    for e in p:
        s += e * e
        nxt = (j + 1) % len(p)
        p[nxt] = p[nxt] + 0.5 * e       # the next iteration reads this
        j += 1
    return s + np.sum(p)


def enumerate_and_write(p):
    q = p * 1.0
    for i, e in enumerate(q):
        if i + 1 < len(q):
            q[i + 1] = q[i + 1] * e
    return np.sum(q)


def rows_written_ahead(A):
    A = A.copy()
    s = 0.0
    k = 0
    for row in A:
        s += np.sum(row * row)
        nxt = (k + 1) % A.shape[0]
        A[nxt] = A[nxt] * 0.5 + row
        k += 1
    return s


@pytest.mark.parametrize("f, x", [
    (relax_forward, np.array([1.0, 2.0, 3.0, -0.5])),
    (enumerate_and_write, np.array([0.5, 1.5, -2.0, 0.7])),
    (rows_written_ahead, np.arange(6.0).reshape(3, 2) / 3),
])
def test_a_loop_sees_the_writes_into_what_it_iterates(f, x, jit_mode):
    g = pullback.grad(f, jit=jit_mode != "python")
    for _ in range(2):
        np.testing.assert_allclose(g(x), fd_grad(f, (x,), 0), rtol=1e-7, atol=1e-9)
        pullback.finish_compiling()


def row_read_after_a_write_into_it(A):
    A = A.copy()
    s = 0.0
    for row in A:
        A[0] = A[0] * 2.0
        s += row[0]                     # row 0 is a view: it sees the write
    return s


def test_a_row_read_after_a_write_into_it_is_refused_by_line():
    with pytest.raises(pullback.UnsupportedSyntaxError, match="view") as info:
        pullback.grad(row_read_after_a_write_into_it)(np.ones((2, 2)))
    assert "A[0] = A[0] * 2.0" in str(info.value)
