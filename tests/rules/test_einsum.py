"""rules/einsum.py: einsum's cotangent of each operand against finite differences, for
products, contractions, traces, diagonals, broadcast ellipses and implicit output."""
import numpy as np
import pytest

from .checks import check_vjp, rule_vjp, values

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 2)]),                 # implicit output
    ("ii->", [(3, 3)]),                           # trace
    ("ii->i", [(3, 3)]),                          # diagonal
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),  # a batch broadcast against a matrix
    ("bij,bjk,bkl->bil", [(2, 2, 3), (2, 3, 2), (2, 2, 2)]),
    ("ij->ji", [(2, 3)]),
]


@pytest.mark.parametrize("subscripts, shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum(subscripts, shapes):
    ops = [values(k + 1, s) for k, s in enumerate(shapes)]
    for k in range(len(ops)):
        # The template of *operands' item k + 1 (item 0 is the subscripts string).
        r = rule_vjp(np.einsum, f"operands[{k + 1}]")
        check_vjp(lambda *a: np.einsum(subscripts, *a),
                  lambda g, ans, *a, r=r: r(g, ans, subscripts, *a), ops, k)


def test_einsum_sublist_form():
    a, b = values(1, (2, 3)), values(2, (3, 2))
    for k, pos in ((0, 0), (1, 2)):     # operands at items 0 and 2
        r = rule_vjp(np.einsum, f"operands[{pos}]")
        check_vjp(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                  lambda g, ans, a, b, r=r: r(g, ans, a, [0, 1], b, [1, 2], [0, 2]), [a, b], k)
