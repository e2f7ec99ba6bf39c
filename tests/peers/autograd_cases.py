"""HIPS autograd's own test suites, re-expressed as data for pullback.

Sources (github.com/HIPS/autograd): tests/test_numpy.py, tests/test_systematic.py,
tests/test_linalg.py, tests/test_scalar_ops.py and tests/test_binary_ops.py. Each
peer test becomes one or more :class:`~peers.cases.Case` (see cases.py): the
function the peer checks, written as plain NumPy, with example arguments of the
shapes and ranges the peer uses. Where the peer's ``check_grads`` differentiates a
non-scalar result, the function here returns ``np.sum(np.sin(result))``.

Not ported: the complex-valued variants (pullback differentiates real code), the
forward-mode and higher-order parts of ``check_grads``, autograd-only API
(``np.make_diagonal``, ``autograd.tuple``, ``np.linalg._dot``), the deprecated
``np.row_stack`` and ``np.msort``, and tests of autograd internals
(``test_numpy_version``).

Every function reads NumPy through the module global ``np`` only, so the test can
run the very same code under HIPS autograd by rebinding ``np`` to ``autograd.numpy``
(cases with ``ref=False`` use something autograd does not support as written).
"""
from __future__ import annotations

import numpy as np

from peers.cases import Catalogue

_R = np.random.RandomState(1)


def _psd(r, d):
    m = r.randn(d, d)
    return m @ m.T + d * np.eye(d)


# =========================================================================== test_numpy.py
NP = Catalogue("numpy", "autograd:tests/test_numpy.py", ref=True)


@NP.case(lambda r: (r.randn(10, 11), r.randn(11)), (0, 1), tag="mat_vec")
@NP.case(lambda r: (r.randn(10, 11), r.randn(11, 10)), (0, 1), tag="mat_mat")
@NP.case(lambda r: (r.randn(10), r.randn(10, 11)), (0, 1), tag="vec_mat")
@NP.case(lambda r: (r.randn(11), r.randn(11)), (0, 1), tag="vec_vec")
def dot(x, y):
    return np.sum(np.sin(np.dot(x, y)))


@NP.case(lambda r: (r.randn(10, 11), float(r.randn())), (0, 1), tag="mat_float",
         peer="test_dot_with_floats")
@NP.case(lambda r: (float(r.randn()), r.randn(10, 11)), (0, 1), tag="float_mat",
         peer="test_dot_with_floats")
@NP.case(lambda r: (r.randn(10), float(r.randn())), (0, 1), tag="vec_float",
         peer="test_dot_with_floats")
@NP.case(lambda r: (float(r.randn()), r.randn(10)), (0, 1), tag="float_vec",
         peer="test_dot_with_floats")
def dot_float(x, y):
    return np.sum(np.sin(np.dot(x, y)))


@NP.case(lambda r: (r.randn(11), r.randn(11)), (0, 1))
def outer(x, y):
    return np.sum(np.sin(np.outer(x, y)))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_max")
def max_all(x):
    return np.max(x)


@NP.case(lambda r: (r.randn(3, 4, 5),), peer="test_max_axis")
def max_axis(x):
    return np.sum(np.sin(np.max(x, axis=1)))


@NP.case(lambda r: (r.randn(3, 4, 5),), peer="test_max_axis_keepdims")
def max_axis_keepdims(x):
    return np.sum(np.sin(np.max(x, axis=1, keepdims=True)))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_min")
def min_all(x):
    return np.min(x)


@NP.case(lambda r: (r.randn(3, 4, 5),), peer="test_min_axis")
def min_axis(x):
    return np.sum(np.sin(np.min(x, axis=1)))


@NP.case(lambda r: (r.randn(3, 4, 5),), peer="test_min_axis_keepdims")
def min_axis_keepdims(x):
    return np.sum(np.sin(np.min(x, axis=1, keepdims=True)))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_sum_1")
def sum_all(x):
    return np.sin(np.sum(x))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_sum_2")
def sum_axis0(x):
    return np.sum(np.sin(np.sum(x, axis=0)))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_sum_3")
def sum_axis0_keepdims(x):
    return np.sum(np.sin(np.sum(x, axis=0, keepdims=True)))


@NP.case(lambda r: (r.randn(5, 4, 3),))
def sum_with_axis_tuple(x):
    return np.sum(np.sin(np.sum(x, axis=(1, 2))))


BASE = np.abs(_R.randn(5)) + 0.5


@NP.case(lambda r: (0.7,), peer="test_plain_numpy_reductions_on_box")
def reduction_of_scalar_sum(a):
    return np.sum(np.exp(a) * BASE)


@NP.case(lambda r: (0.7,), peer="test_plain_numpy_reductions_on_box")
def reduction_of_scalar_prod(a):
    return np.prod(np.exp(a) * BASE)


@NP.case(lambda r: (0.7,), peer="test_plain_numpy_reductions_on_box")
def reduction_of_scalar_max(a):
    return np.max(np.exp(a) * BASE)


@NP.case(lambda r: (0.7,), peer="test_plain_numpy_reductions_on_box")
def reduction_of_scalar_min(a):
    return np.min(np.exp(a) * BASE)


@NP.case(lambda r: (r.randn(10, 11),))
def flipud(x):
    return np.sum(np.sin(np.flipud(x)))


@NP.case(lambda r: (r.randn(10, 11),))
def fliplr(x):
    return np.sum(np.sin(np.fliplr(x)))


@NP.case(lambda r: (r.randn(10, 11),))
def rot90(x):
    return np.sum(np.sin(np.rot90(x)))


@NP.case(lambda r: (r.randn(10, 11),))
def cumsum_axis0(x):
    return np.sum(np.sin(np.cumsum(x, axis=0)))


@NP.case(lambda r: (r.randn(10, 11),))
def cumsum_axis1(x):
    return np.sum(np.sin(np.cumsum(x, axis=1)))


@NP.case(lambda r: (r.randn(10),))
def cumsum_1d(x):
    return np.sum(np.sin(np.cumsum(x)))


@NP.case(lambda r: (r.randn(10, 11),))
def cumsum_no_axis(x):
    return np.sum(np.sin(np.cumsum(x)))


@NP.case(lambda r: (r.randn(10, 11), r.randn(10, 11)), (0, 1))
def non_numpy_sum(x, y):
    return np.sum(np.sin(sum([x, y])))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_mean_1")
def mean_all(x):
    return np.sin(np.mean(x))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_mean_2")
def mean_axis0(x):
    return np.sum(np.sin(np.mean(x, axis=0)))


@NP.case(lambda r: (r.randn(10, 11),), peer="test_mean_3")
def mean_axis0_keepdims(x):
    return np.sum(np.sin(np.mean(x, axis=0, keepdims=True)))


@NP.case(lambda r: [(0.0,), (0.3,)])
def mean_list_of_boxes(x):
    return np.mean([x, x + 2]) + np.mean((x, x + 2))


@NP.case(lambda r: [(0.0,), (0.3,)])
def std_list_of_boxes(x):
    return np.std([x, x + 2]) + np.std((x, 2 * x + 2))


@NP.case(lambda r: [(0.0,), (0.3,)])
def var_list_of_boxes(x):
    return np.var([x, x + 2]) + np.var((x, 2 * x + 2))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def index_ints(x):
    return np.sin(x[3, 0, 1])


@NP.case(lambda r: (r.randn(5, 6, 4),))
def index_slice(x):
    return np.sum(np.sin(x[::-1, 2:4, :]))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def index_lists(x):
    return np.sum(np.sin(x[[0, 1, 2], :, :]))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def index_mixed(x):
    return np.sum(np.sin(x[3, 2:, [1, 3]]))


@NP.case(lambda r: (r.randn(5),))
def vector_slice(x):
    return np.sum(np.sin(x[2:4]))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def index_slice_fanout(x):
    y = x[::-1, 2:4, :]
    z = x[::-1, 3:5, :]
    return np.sum(np.sin(y + z))


@NP.case(lambda r: (r.randn(7),))
def index_multiple_slices(x):
    y = x[2:6]
    z = y[1:3]
    return np.sum(np.sin(z))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def reshape_method(x):
    return np.sum(np.sin(x.reshape((5 * 4, 6))))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def reshape_call(x):
    return np.sum(np.sin(np.reshape(x, (5 * 4, 6))))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def reshape_method_nolist(x):
    return np.sum(np.sin(x.reshape(5 * 4, 6)))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def ravel_method(x):
    return np.sum(np.sin(x.ravel()))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def ravel_call(x):
    return np.sum(np.sin(np.ravel(x)))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def flatten_method(x):
    return np.sum(np.sin(x.flatten()))


@NP.case(lambda r: (np.array([1.0, 2.0, 3.0]), 4.0), (0, 1))
def simple_append_arr(a, b):
    return np.sum(np.sin(np.append(a, b)))


@NP.case(lambda r: (np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([[7.0, 8.0, 9.0]])),
         (0, 1))
def simple_append_2d(a, b):
    return np.sum(np.sin(np.append(a, b, axis=0)))


CONCAT_A = _R.randn(5, 6, 4)


@NP.case(lambda r: (r.randn(4, 6, 4),))
def simple_concatenate(x):
    return np.sum(np.sin(np.concatenate((CONCAT_A, x))))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def concatenate_axis_0(x):
    return np.sum(np.sin(np.concatenate((CONCAT_A, x, CONCAT_A))))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def concatenate_axis_1(x):
    return np.sum(np.sin(np.concatenate((CONCAT_A, x, CONCAT_A), axis=1)))


@NP.case(lambda r: (r.randn(5, 6, 4),))
def concatenate_axis_1_unnamed(x):
    return np.sum(np.sin(np.concatenate((CONCAT_A, x, CONCAT_A), 1)))


@NP.case(lambda r: (r.randn(10, 11),))
def trace(x):
    return np.sin(np.trace(x, offset=3))


@NP.case(lambda r: (r.randn(11, 10),))
def trace2(x):
    return np.sin(np.trace(x, offset=-4))


@NP.case(lambda r: (r.randn(5, 6, 4, 3),))
def trace_extradims(x):
    return np.sum(np.sin(np.trace(x, offset=2)))


@NP.case(lambda r: (r.randn(10, 10),))
def diag(x):
    return np.sum(np.sin(np.diag(x)))


@NP.case(lambda r: (r.randn(8, 8),))
def transpose(x):
    return np.sum(np.sin(x.T) * np.arange(64.0).reshape(8, 8))


@NP.case(lambda r: (r.randn(4, 5),))
def roll(x):
    return np.sum(np.sin(np.roll(x, 2, axis=1)) * np.arange(20.0).reshape(4, 5))


@NP.case(lambda r: (r.randn(4, 5),))
def roll_no_axis(x):
    return np.sum(np.sin(np.roll(x, 2)) * np.arange(20.0).reshape(4, 5))


@NP.case(lambda r: (r.randn(5, 5),))
def triu(x):
    return np.sum(np.sin(np.triu(x, k=2)))


@NP.case(lambda r: (r.randn(5, 5),))
def tril(x):
    return np.sum(np.sin(np.tril(x, k=2)))


@NP.case(lambda r: (r.randn(5, 5),))
def clip(x):
    return np.sum(np.sin(np.clip(x, a_min=0.1, a_max=1.1)))


@NP.case(lambda r: (r.randn(2, 3) ** 2 / 10.0 + 0.1,), peer="test_prod_1")
def prod_all(x):
    return np.prod(x)


@NP.case(lambda r: (r.randn(2, 3) ** 2 + 0.1,), peer="test_prod_2")
def prod_axis0(x):
    return np.sum(np.sin(np.prod(x, axis=0)))


@NP.case(lambda r: (r.randn(2, 3) ** 2 + 0.1,), peer="test_prod_3")
def prod_axis0_keepdims(x):
    return np.sum(np.sin(np.prod(x, axis=0, keepdims=True)))


@NP.case(lambda r: (r.randn(7) ** 2 + 0.1,), peer="test_prod_4")
def prod_vector(x):
    return np.prod(x)


@NP.case(lambda r: (3.0,))
def array_1d(x):
    return np.sum(np.sin(np.array([x, x * 1.0, x + 2.5])))


@NP.case(lambda r: (3.0,))
def array_2d(x):
    return np.sum(np.sin(np.array([[x, x * 1.0, x + 2.5], [x ** 2, x, x / 2.0]])))


@NP.case(lambda r: (3.0,))
def array_1d_fanout(x):
    A = np.array([x, x * 1.0, x + 2.5])
    return np.sum(np.sin(A + A))


@NP.case(lambda r: (3.0,))
def array_2d_fanout(x):
    A = np.array([[x, x * 1.0, x + 2.5], [x ** 2, x, x / 2.0]])
    return np.sum(np.sin(A + A))


@NP.case(lambda r: (3.0,))
def array_from_scalar(x):
    return np.sin(np.array(x))


@NP.case(lambda r: (3.0,))
def scalar_array_box_attributes(x):
    assert np.ndim(x) == 0
    return x ** 2


@NP.case(lambda r: (r.randn(3, 2),))
def array_from_arrays(x):
    return np.sum(np.sin(np.array([x, x])) * np.arange(12.0).reshape(2, 3, 2))


@NP.case(lambda r: (r.randn(3, 2),))
def array_from_arrays_2(x):
    return np.sum(np.sin(np.array([[2 * x, x + 1], [x, x]])))


@NP.case(lambda r: (r.randn(3, 2),))
def len_(x):
    if len(x) != 3:
        return 0.0
    return np.sum(np.sin(x))


R_C = _R.randn(3, 2)
R_V = _R.randn(10)


@NP.case(lambda r: (r.randn(3, 2),))
def r_basic(x):
    return np.sum(np.sin(np.r_[x]))


@NP.case(lambda r: (r.randn(3, 2),))
def r_double(x):
    return np.sum(np.sin(np.r_[x, x]))


@NP.case(lambda r: (r.randn(3, 2),))
def no_relation(x):
    return np.sum(np.sin(R_C))


@NP.case(lambda r: (r.randn(3, 2),))
def r_node_and_const(x):
    return np.sum(np.sin(np.r_[x, R_C]))


@NP.case(lambda r: (r.randn(3, 2),))
def r_mixed(x):
    return np.sum(np.sin(np.r_[x, R_C, x]))


@NP.case(lambda r: (r.randn(10),))
def r_slicing(x):
    return np.sum(np.sin(np.r_[x, R_V, 1:10]))


@NP.case(lambda r: (r.randn(3, 2),))
def c_(x):
    return np.sum(np.sin(np.c_[x, R_C, x]))


@NP.case(lambda r: (r.randn(3),), tag="vec")
@NP.case(lambda r: (r.randn(3, 4),), tag="mat")
def var_ddof1(x):
    return np.sin(np.var(x, ddof=1))


@NP.case(lambda r: (r.randn(3, 4),), tag="mat")
@NP.case(lambda r: (r.randn(1, 3),), tag="row")
def var_ddof2_axis1_keepdims(x):
    return np.sum(np.sin(np.var(x, axis=1, keepdims=True, ddof=2)))


@NP.case(lambda r: (r.randn(3),), tag="vec")
@NP.case(lambda r: (r.randn(3, 4),), tag="mat")
def std_ddof1(x):
    return np.sin(np.std(x, ddof=1))


@NP.case(lambda r: (r.randn(3, 4),), tag="mat")
@NP.case(lambda r: (r.randn(1, 3),), tag="row")
def std_ddof2_axis1_keepdims(x):
    return np.sum(np.sin(np.std(x, axis=1, keepdims=True, ddof=2)))


WHERE_C = _R.randn(4, 5) > 0


@NP.case(lambda r: (r.randn(4, 5), r.randn(4, 5)), (0, 1))
def where(x, y):
    return np.sum(np.sin(np.where(WHERE_C, x, y)))


@NP.case(lambda r: (r.randn(5, 1, 4),))
def squeeze_func(x):
    return np.sum(np.sin(np.squeeze(x)))


@NP.case(lambda r: (r.randn(5, 1, 4),))
def squeeze_method(x):
    return np.sum(np.sin(x.squeeze()))


@NP.case(lambda r: (r.randn(5, 3, 4),))
def repeat(x):
    return np.sum(np.sin(np.repeat(x, 2, axis=1)) * np.arange(120.0).reshape(5, 6, 4))


@NP.case(lambda r: (r.randn(5),))
def repeat_1d_axis0(x):
    return np.sum(np.sin(np.repeat(x, 2, axis=0)) * np.arange(10.0))


@NP.case(lambda r: (r.randn(5, 1),))
def repeat_axis0_rep1(x):
    return np.sum(np.sin(np.repeat(x, 1, axis=0)))


@NP.case(lambda r: (r.randn(5, 1, 4),))
def expand_dims(x):
    return np.sum(np.sin(np.expand_dims(x, 2)))


@NP.case(lambda r: (1.0,))
def tensordot_kwargs_by_position(x):
    return np.sum(np.tensordot(x * np.ones((2, 2)), x * np.ones((2, 2)), 2))


@NP.case(lambda r: (r.randn(3),))
def multi_index(x):
    return np.sum(np.sin(x[[0, 0]]))


@NP.case(lambda r: (r.randn(3),))
def multi_index2(x):
    return np.sum(np.sin(x[[0, 1, 0]]))


@NP.case(lambda r: (r.randn(4),))
def index_dot_slices(x):
    return np.dot(x[:2], x[2:])


CAST_INDS = np.ones(5)[:, None]


@NP.case(lambda r: (np.concatenate((r.randn(5, 9), np.array([[0.5], [1.5], [2.5], [-0.5], [3.5]])),
                                   axis=1),))
def cast_to_int(W):
    glued_together = np.concatenate((W, CAST_INDS), axis=1)
    new_W = W[:, :-1]
    new_inds = np.int64(W[:, -1])
    return np.sum(np.sin(new_W[new_inds]))


@NP.case(lambda r: (r.randn(4, 4),), tag="2d")
@NP.case(lambda r: (r.randn(3, 4, 4),), tag="3d")
def diagonal(D):
    return np.sum(np.sin(np.diagonal(D, axis1=-1, axis2=-2)))


NAN_Y = np.array([0.0, np.nan, np.inf, -np.inf])


@NP.case(lambda r: (r.randn(4),))
def nan_to_num(x):
    return np.sum(np.sin(np.nan_to_num(x + NAN_Y)))


@NP.case(lambda r: (1.0,))
def max_equal_values(x):
    return np.max(np.array([x, x]))


@NP.case(lambda r: [(1.0,), (-1.0,)])
def max_equal_values_2d(x):
    return np.sum(np.sin(np.max(np.array([[x, x], [x, 0.5]]), axis=1)))


@NP.case(lambda r: [(1.0,), (-1.0,)])
def min_3_way_equality(x):
    return np.sum(np.sin(np.min(np.array([[x, x, x], [x, 0.5, 0.5], [0.5, 0.5, 0.5], [x, x, 0.5]]),
                                axis=0)))


@NP.case(lambda r: (1.0,))
def maximum_equal_values(x):
    return np.maximum(x, x)


@NP.case(lambda r: [(1.0,), (-1.0,), (2.0,)])
def maximum_equal_values_2d(x):
    return np.sum(np.sin(np.maximum(np.array([x, x, 0.5]), np.array([[x, 0.5, x], [x, x, 0.5]]))))


@NP.case(lambda r: [(1.2, 3.4), (1.2, -3.4), (1.2, 1.2)], (0, 1))
def linspace(x, y):
    return np.sum(np.sin(np.linspace(x, y, 5)))


@NP.case(lambda r: [(1.2, 3.4), (1.2, -3.4)], (0, 1), peer="test_linspace")
def linspace_num1(x, y):
    return np.sum(np.sin(np.linspace(x, y, 1))) + x + y


@NP.case(lambda r: (np.arange(3, dtype="float32"),))
def astype(x):
    return np.sum(np.sin(x.astype("float64")))


@NP.case(lambda r: (r.randn(10),), tag="1d")
@NP.case(lambda r: (r.randn(6, 6),), tag="2d")
def gradient(x):
    return np.sum(np.sin(np.gradient(x, axis=0)))


# ====================================================================== test_systematic.py
SY = Catalogue("systematic", "autograd:tests/test_systematic.py", ref=True)

# stat_check: a float, a vector, matrices (2, 3) and (1, 3); axis None / 0 / 1; keepdims.
_SCALAR = lambda r: (3.5,)
_VEC = lambda r: (r.randn(3),)
_MAT = lambda r: (r.randn(2, 3),)
_ROW = lambda r: (r.randn(1, 3),)


@SY.case(_SCALAR, tag="float", peer="test_max")
@SY.case(_VEC, tag="vec", peer="test_max")
@SY.case(_MAT, tag="mat", peer="test_max")
def stat_max_keepdims(x):
    return np.sum(np.sin(np.max(x, axis=None, keepdims=True)))


@SY.case(_MAT, tag="mat", peer="test_max")
@SY.case(_ROW, tag="row", peer="test_max")
def stat_max_axis0(x):
    return np.sum(np.sin(np.max(x, axis=0)))


@SY.case(_MAT, tag="mat", peer="test_max")
def stat_max_axis1_keepdims(x):
    return np.sum(np.sin(np.max(x, axis=1, keepdims=True)))


@SY.case(_SCALAR, tag="float", peer="test_min")
@SY.case(_VEC, tag="vec", peer="test_min")
@SY.case(_MAT, tag="mat", peer="test_min")
def stat_min_keepdims(x):
    return np.sum(np.sin(np.min(x, axis=None, keepdims=True)))


@SY.case(_MAT, tag="mat", peer="test_min")
@SY.case(_ROW, tag="row", peer="test_min")
def stat_min_axis0(x):
    return np.sum(np.sin(np.min(x, axis=0)))


@SY.case(_MAT, tag="mat", peer="test_min")
def stat_min_axis1_keepdims(x):
    return np.sum(np.sin(np.min(x, axis=1, keepdims=True)))


@SY.case(_SCALAR, tag="float", peer="test_mean")
@SY.case(_VEC, tag="vec", peer="test_mean")
@SY.case(_MAT, tag="mat", peer="test_mean")
def stat_mean_keepdims(x):
    return np.sum(np.sin(np.mean(x, axis=None, keepdims=True)))


@SY.case(_MAT, tag="mat", peer="test_mean")
@SY.case(_ROW, tag="row", peer="test_mean")
def stat_mean_axis0(x):
    return np.sum(np.sin(np.mean(x, axis=0)))


@SY.case(_MAT, tag="mat", peer="test_mean")
def stat_mean_axis1_keepdims(x):
    return np.sum(np.sin(np.mean(x, axis=1, keepdims=True)))


@SY.case(_SCALAR, tag="float", peer="test_sum")
@SY.case(_VEC, tag="vec", peer="test_sum")
@SY.case(_MAT, tag="mat", peer="test_sum")
def stat_sum_keepdims(x):
    return np.sum(np.sin(np.sum(x, axis=None, keepdims=True)))


@SY.case(_MAT, tag="mat", peer="test_sum")
@SY.case(_ROW, tag="row", peer="test_sum")
def stat_sum_axis0(x):
    return np.sum(np.sin(np.sum(x, axis=0)))


@SY.case(_MAT, tag="mat", peer="test_sum")
def stat_sum_axis1_keepdims(x):
    return np.sum(np.sin(np.sum(x, axis=1, keepdims=True)))


@SY.case(_SCALAR, tag="float", peer="test_prod")
@SY.case(_VEC, tag="vec", peer="test_prod")
@SY.case(_MAT, tag="mat", peer="test_prod")
def stat_prod_keepdims(x):
    return np.sum(np.sin(np.prod(x, axis=None, keepdims=True)))


@SY.case(_MAT, tag="mat", peer="test_prod")
@SY.case(_ROW, tag="row", peer="test_prod")
def stat_prod_axis0(x):
    return np.sum(np.sin(np.prod(x, axis=0)))


@SY.case(_MAT, tag="mat", peer="test_prod")
def stat_prod_axis1_keepdims(x):
    return np.sum(np.sin(np.prod(x, axis=1, keepdims=True)))


@SY.case(_SCALAR, tag="float", peer="test_var")
@SY.case(_VEC, tag="vec", peer="test_var")
@SY.case(_MAT, tag="mat", peer="test_var")
def stat_var_keepdims(x):
    return np.sum(np.sin(np.var(x, axis=None, keepdims=True)))


@SY.case(_MAT, tag="mat", peer="test_var")
@SY.case(_ROW, tag="row", peer="test_var")
def stat_var_axis0(x):
    return np.sum(np.sin(np.var(x, axis=0)))


@SY.case(_MAT, tag="mat", peer="test_var")
def stat_var_axis1_keepdims(x):
    return np.sum(np.sin(np.var(x, axis=1, keepdims=True)))


@SY.case(_SCALAR, tag="float", peer="test_std")
@SY.case(_VEC, tag="vec", peer="test_std")
@SY.case(_MAT, tag="mat", peer="test_std")
def stat_std_keepdims(x):
    return np.sum(np.sin(np.std(x, axis=None, keepdims=True)))


@SY.case(_MAT, tag="mat", peer="test_std")
@SY.case(_ROW, tag="row", peer="test_std")
def stat_std_axis0(x):
    return np.sum(np.sin(np.std(x, axis=0)))


@SY.case(_MAT, tag="mat", peer="test_std")
def stat_std_axis1_keepdims(x):
    return np.sum(np.sin(np.std(x, axis=1, keepdims=True)))


# unary_ufunc_check: a float and a (3, 2) matrix, both inside the peer's limits.
def _unary(lo=-2.0, hi=2.0):
    def make(r):
        return [(lo + (hi - lo) * 0.4,), (lo + (hi - lo) * r.rand(3, 2),)]
    return make


@SY.case(_unary())
def sin(x):
    return np.sum(np.sin(x))


@SY.case(_unary(0.1, 4.0))
def abs_(x):
    return np.sum(np.sin(np.abs(x)))


@SY.case(_unary(0.1, 4.0))
def absolute(x):
    return np.sum(np.sin(np.absolute(x)))


@SY.case(_unary(1.1, 4.0))
def arccosh(x):
    return np.sum(np.sin(np.arccosh(x)))


@SY.case(_unary(-0.9, 0.9))
def arcsinh(x):
    return np.sum(np.sin(np.arcsinh(x)))


@SY.case(_unary(-0.9, 0.9))
def arctanh(x):
    return np.sum(np.sin(np.arctanh(x)))


@SY.case(lambda r: [(0.3,), (np.array([[-1.3, -0.7], [-0.2, 0.4], [0.6, 1.3]]),)])
def ceil(x):
    return np.sum(np.sin(np.ceil(x)) + x)


@SY.case(_unary())
def cos(x):
    return np.sum(np.sin(np.cos(x)))


@SY.case(_unary())
def cosh(x):
    return np.sum(np.sin(np.cosh(x)))


@SY.case(_unary())
def deg2rad(x):
    return np.sum(np.sin(np.deg2rad(x)))


@SY.case(_unary())
def degrees(x):
    return np.sum(np.sin(np.degrees(x) / 50.0))


@SY.case(_unary())
def exp(x):
    return np.sum(np.sin(np.exp(x)))


@SY.case(_unary())
def exp2(x):
    return np.sum(np.sin(np.exp2(x)))


@SY.case(_unary())
def expm1(x):
    return np.sum(np.sin(np.expm1(x)))


@SY.case(lambda r: [(0.3,), (np.array([[-1.3, -0.7], [-0.2, 0.4], [0.6, 1.3]]),)])
def fabs(x):
    return np.sum(np.sin(np.fabs(x)))


@SY.case(lambda r: [(0.3,), (np.array([[-1.3, -0.7], [-0.2, 0.4], [0.6, 1.3]]),)])
def floor(x):
    return np.sum(np.sin(np.floor(x)) + x)


@SY.case(_unary(0.2, 2.0))
def log(x):
    return np.sum(np.sin(np.log(x)))


@SY.case(_unary(0.2, 2.0))
def log10(x):
    return np.sum(np.sin(np.log10(x)))


@SY.case(_unary(0.2, 2.0))
def log1p(x):
    return np.sum(np.sin(np.log1p(x)))


@SY.case(_unary(0.2, 2.0))
def log2(x):
    return np.sum(np.sin(np.log2(x)))


@SY.case(_unary())
def rad2deg(x):
    return np.sum(np.sin(np.rad2deg(x) / 50.0))


@SY.case(_unary())
def radians(x):
    return np.sum(np.sin(np.radians(x)))


@SY.case(lambda r: [(0.3,), (np.array([[-1.3, -0.7], [-0.2, 0.4], [0.6, 1.3]]),)])
def sign(x):
    return np.sum(np.sin(np.sign(x)) + x)


@SY.case(_unary())
def sinh(x):
    return np.sum(np.sin(np.sinh(x)))


@SY.case(_unary(1.0, 3.0))
def sqrt(x):
    return np.sum(np.sin(np.sqrt(x)))


@SY.case(_unary())
def square(x):
    return np.sum(np.sin(np.square(x)))


@SY.case(_unary(-1.1, 1.1))
def tan(x):
    return np.sum(np.sin(np.tan(x)))


@SY.case(_unary())
def tanh(x):
    return np.sum(np.sin(np.tanh(x)))


@SY.case(_unary())
def real(x):
    return np.sum(np.sin(np.real(x)))


@SY.case(_unary())
def real_if_close(x):
    return np.sum(np.sin(np.real_if_close(x)))


@SY.case(_unary())
def imag(x):
    return np.sum(np.sin(np.imag(x)) + x)


@SY.case(_unary())
def conj(x):
    return np.sum(np.sin(np.conj(x)))


@SY.case(_unary())
def conjugate(x):
    return np.sum(np.sin(np.conjugate(x)))


@SY.case(lambda r: [(0.8,), (np.array([[-1.3, -0.7], [0.2, 0.4], [0.6, 1.3]]),)])
def angle(x):
    return np.sum(np.sin(np.angle(x)) + x)


# binary_ufunc_check: (3, 2) with (3, 2), (3, 2) with a broadcast (1, 2), a float with (2,).
def _binary(a=(-2.0, 2.0), b=(-2.0, 2.0)):
    def t(lims, v):
        return lims[0] + (lims[1] - lims[0]) * v

    def make(r):
        return [(t(a, r.rand(3, 2)), t(b, r.rand(3, 2))),
                (t(a, r.rand(3, 2)), t(b, r.rand(1, 2))),
                (t(a, 0.6), t(b, r.rand(2)))]
    return make


@SY.case(_binary(), (0, 1))
def add(x, y):
    return np.sum(np.sin(np.add(x, y)))


@SY.case(_binary(), (0, 1))
def logaddexp(x, y):
    return np.sum(np.sin(np.logaddexp(x, y)))


@SY.case(_binary(), (0, 1))
def logaddexp2(x, y):
    return np.sum(np.sin(np.logaddexp2(x, y)))


@SY.case(_binary((-0.9, 0.9), (0.7, 1.9)), (0, 1))
def remainder(x, y):
    return np.sum(np.sin(np.remainder(x, y)))


@SY.case(_binary((-2.0, 2.0), (0.8, 1.2)), (0, 1))
def true_divide(x, y):
    return np.sum(np.sin(np.true_divide(x, y)))


@SY.case(_binary((-2.0, 2.0), (0.8, 2.1)), (0, 1))
def mod(x, y):
    return np.sum(np.sin(np.mod(x, y)))


@SY.case(_binary((-2.0, 2.0), (-0.3, -2.0)), (0, 1))
def true_divide_neg(x, y):
    return np.sum(np.sin(np.true_divide(x, y)))


@SY.case(_binary((-2.0, 2.0), (-0.3, -2.0)), (0, 1))
def mod_neg(x, y):
    return np.sum(np.sin(np.mod(x, y)))


@SY.case(_binary(), (0, 1))
def op_mul(x, y):
    return np.sum(np.sin(x * y))


@SY.case(_binary(), (0, 1))
def op_add(x, y):
    return np.sum(np.sin(x + y))


@SY.case(_binary(), (0, 1))
def op_sub(x, y):
    return np.sum(np.sin(x - y))


@SY.case(_binary((-2.0, 2.0), (0.3, 2.0)), (0, 1))
def op_mod(x, y):
    return np.sum(np.sin(x % y))


@SY.case(_binary((-2.0, 2.0), (-0.3, -2.0)), (0, 1))
def op_mod_neg(x, y):
    return np.sum(np.sin(x % y))


# Misc tests (combo_check over shapes and keyword arguments; a representative subset).
@SY.case(lambda r: (r.randn(2, 3, 4),), peer="test_transpose")
def transpose_default(x):
    return np.sum(np.sin(np.transpose(x)) * np.arange(24.0).reshape(4, 3, 2))


@SY.case(lambda r: (r.randn(2, 3, 4),), peer="test_transpose")
def transpose_axes(x):
    return np.sum(np.sin(np.transpose(x, [2, 0, 1])) * np.arange(24.0).reshape(4, 2, 3))


@SY.case(lambda r: (r.randn(2, 3, 4),))
def moveaxis(x):
    return np.sum(np.sin(np.moveaxis(x, 0, 2)) * np.arange(24.0).reshape(3, 4, 2))


@SY.case(lambda r: (r.randn(3, 1),), tag="none")
@SY.case(lambda r: (r.randn(2, 3, 4),), tag="3d")
def repeat_flat(x):
    return np.sum(np.sin(np.repeat(x, 2)))


@SY.case(lambda r: (r.randn(5, 5),), peer="test_diff")
def diff(x):
    return np.sum(np.sin(np.diff(x, n=2, axis=1)))


@SY.case(lambda r: (r.randn(5, 5),), peer="test_gradient")
def gradient_last_axis(x):
    return np.sum(np.sin(np.gradient(x, axis=-1)))


@SY.case(lambda r: (r.randn(1, 2),))
def tile(x):
    return np.sum(np.sin(np.tile(x, (2, 3))) * np.arange(12.0).reshape(2, 6))


@SY.case(lambda r: (r.randn(5, 5), r.randn(3, 3)), (0, 1), tag="mat_mat")
@SY.case(lambda r: (r.randn(5), r.randn(3)), (0, 1), tag="vec_vec")
def kron(x, y):
    return np.sum(np.sin(np.kron(x, y)))


@SY.case(lambda r: (r.randn(2, 3), r.randn(4, 3)), (0, 1), tag="mat_mat")
@SY.case(lambda r: (1.5, r.randn(3)), (0, 1), tag="float_vec")
@SY.case(lambda r: (r.randn(3), r.randn(3)), (0, 1), tag="vec_vec")
def inner(x, y):
    return np.sum(np.sin(np.inner(x, y)))


@SY.case(lambda r: (r.randn(2, 2, 3), r.randn(2, 3, 4)), (0, 1), tag="3d_3d", peer="test_dot")
@SY.case(lambda r: (r.randn(2, 3), r.randn(3)), (0, 1), tag="mat_vec", peer="test_dot")
@SY.case(lambda r: (1.5, r.randn(3, 4)), (0, 1), tag="float_mat", peer="test_dot")
def dot_systematic(x, y):
    return np.sum(np.sin(np.dot(x, y)))


@SY.case(lambda r: (r.randn(3), r.randn(3)), (0, 1))
def outer_systematic(x, y):
    return np.sum(np.sin(np.outer(x, y)))


@SY.case(lambda r: (r.randn(2, 2, 3), r.randn(2, 3, 4)), (0, 1), tag="3d_3d")
@SY.case(lambda r: (r.randn(3), r.randn(3, 4)), (0, 1), tag="vec_mat")
@SY.case(lambda r: (r.randn(2, 3), r.randn(3)), (0, 1), tag="mat_vec")
@SY.case(lambda r: (r.randn(3), r.randn(3)), (0, 1), tag="vec_vec")
@SY.case(lambda r: (r.randn(1, 2, 2), r.randn(3, 2, 1)), (0, 1), tag="broadcast",
         peer="test_matmul_broadcast")
def matmul(x, y):
    return np.sum(np.sin(np.matmul(x, y)))


@SY.case(lambda r: (r.randn(2, 3, 2), r.randn(3, 4, 2)), (0, 1), peer="test_tensordot_1")
def tensordot_axes_pairs(x, y):
    return np.sum(np.sin(np.tensordot(x, y, axes=[(1,), (0,)])))


@SY.case(lambda r: (r.randn(4, 2, 2), r.randn(2, 2, 4)), (0, 1), peer="test_tensordot_4")
def tensordot_axes_int(x, y):
    return np.sum(np.sin(np.tensordot(x, y, axes=2)))


_MAXMIN = lambda r: [(r.randn(3, 4), r.randn(3, 4)), (r.randn(1, 4), r.randn(3, 4)),
                     (r.randn(3, 4), r.randn(1))]


@SY.case(_MAXMIN, (0, 1))
def maximum(x, y):
    return np.sum(np.sin(np.maximum(x, y)))


@SY.case(_MAXMIN, (0, 1))
def fmax(x, y):
    return np.sum(np.sin(np.fmax(x, y)))


@SY.case(_MAXMIN, (0, 1))
def minimum(x, y):
    return np.sum(np.sin(np.minimum(x, y)))


@SY.case(_MAXMIN, (0, 1))
def fmin(x, y):
    return np.sum(np.sin(np.fmin(x, y)))


@SY.case(lambda r: (r.randn(7),))
def sort(x):
    return np.sum(np.sin(np.sort(x)) * np.arange(7.0))


@SY.case(lambda r: (r.randn(7),))
def partition(x):
    return np.sum(np.sin(np.partition(x, 3)) * np.arange(7.0))


@SY.case(lambda r: [(1.2,), (r.randn(7),), (r.randn(2, 4),)], peer="test_atleast_1d")
def atleast_1d(x):
    return np.sum(np.sin(np.atleast_1d(x)))


@SY.case(lambda r: [(1.2,), (r.randn(7),), (r.randn(2, 4),)], peer="test_atleast_2d")
def atleast_2d(x):
    return np.sum(np.sin(np.atleast_2d(x)))


@SY.case(lambda r: [(1.2,), (r.randn(7),), (r.randn(2, 4, 5),)], peer="test_atleast_3d")
def atleast_3d(x):
    return np.sum(np.sin(np.atleast_3d(x)))


@SY.case(lambda r: (r.randn(3, 4),))
def einsum_transpose(x):
    return np.sum(np.sin(np.einsum("ij->ji", x)) * np.arange(12.0).reshape(4, 3))


@SY.case(lambda r: (r.randn(2, 3), r.randn(3, 4)), (0, 1))
def einsum_matmult(x, y):
    return np.sum(np.sin(np.einsum("ij,jk->ik", x, y)))


@SY.case(lambda r: (r.randn(2, 2, 3), r.randn(3, 4)), (0, 1))
def einsum_matmult_broadcast(x, y):
    return np.sum(np.sin(np.einsum("...ij,...jk->...ik", x, y)))


@SY.case(lambda r: (r.randn(0, 2, 3), r.randn(0, 3, 4)), (0, 1))
def einsum_matmult_broadcast_leadzero(x, y):
    return np.sum(np.sin(np.einsum("...ij,...jk->...ik", x, y)))


@SY.case(lambda r: (r.randn(3, 4, 4), r.randn(4, 4, 3)), (0, 1))
def einsum_covsum(x, y):
    return np.sum(np.sin(np.einsum("ijk,lji->lki", x, y)))


@SY.case(lambda r: (r.randn(3, 4, 4), r.randn(4, 4)), (0, 1))
def einsum_ellipses(x, y):
    return np.sum(np.sin(np.einsum("...jk,...lj->...lk", x, y)))


@SY.case(lambda r: (r.randn(3, 4, 4), r.randn(3, 4, 4)), (0, 1))
def einsum_ellipses_elementwise(x, y):
    return np.sum(np.sin(np.einsum("...,...->...", x, y)))


@SY.case(lambda r: (r.randn(3, 2, 4), r.randn(2, 3, 4)), (0, 1))
def einsum_ellipses_tail(x, y):
    return np.sum(np.sin(np.einsum("jk...,lj...->lk...", x, y)))


@SY.case(lambda r: (r.randn(2, 2, 2), r.randn(2, 2, 2)), (0, 1))
def einsum_ellipses_center(x, y):
    return np.sum(np.sin(np.einsum("j...k,lj...->lk...", x, y)))


@SY.case(lambda r: (r.randn(3, 4, 4), r.randn(4, 4, 3), r.randn(4, 4, 3)), (0, 1, 2),
         ref=False)   # autograd's own einsum VJP fails here with NumPy 2 (repeated output index)
def einsum_three_args(x, y, z):
    return np.sum(np.sin(np.einsum("ijk,lji,lli->lki", x, y, z)))


@SY.case(lambda r: (r.randn(3, 4),))
def einsum2_transpose(x):
    return np.sum(np.sin(np.einsum(x, [0, 1], [1, 0])) * np.arange(12.0).reshape(4, 3))


@SY.case(lambda r: (r.randn(2, 3), r.randn(3, 4)), (0, 1))
def einsum2_matmult(x, y):
    return np.sum(np.sin(np.einsum(x, [0, 1], y, [1, 2], [0, 2])))


@SY.case(lambda r: (r.randn(2, 2, 3), r.randn(2, 3, 4)), (0, 1))
def einsum2_matmult_broadcast(x, y):
    return np.sum(np.sin(np.einsum(x, [Ellipsis, 0, 1], y, [Ellipsis, 1, 2], [Ellipsis, 0, 2])))


@SY.case(lambda r: (r.randn(3, 4, 4), r.randn(4, 4, 3), r.randn(4, 4, 3)), (0, 1, 2),
         ref=False)   # autograd's own einsum VJP fails here with NumPy 2 (repeated output index)
def einsum2_three_args(x, y, z):
    return np.sum(np.sin(np.einsum(x, [0, 1, 2], y, [3, 1, 0], z, [3, 3, 0], [3, 2, 0])))


@SY.case(lambda r: (r.randn(3, 4, 4), r.randn(4, 4, 3)), (0, 1))
def einsum2_covsum(x, y):
    return np.sum(np.sin(np.einsum(x, [0, 1, 2], y, [3, 1, 0], [3, 2, 0])))


@SY.case(lambda r: (r.randn(5), r.randn(10, 5)), (0, 1))
def einsum_naked_sum(x, y):
    return np.sin(np.einsum("k,nk->", x, y))


@SY.case(lambda r: (r.randn(3, 2, 3, 2),))
def einsum_naked_sum2(x):
    return np.sum(np.sin(np.einsum("abcd->bd", x)))


@SY.case(lambda r: (r.randn(3, 5), r.randn(3, 10, 5)), (0, 1))
def einsum_naked_sum_ellipsis(x, y):
    return np.sum(np.sin(np.einsum("...k,...nk->...", x, y)))


@SY.case(lambda r: (r.randn(3, 4), r.randn(3)), (0, 1))
def einsum_no_output_indices(x, y):
    return np.sum(np.sin(np.einsum("ij,k", x, y)))


@SY.case(lambda r: (r.randn(4, 5),), tag="4x5")
@SY.case(lambda r: (r.randn(3, 4, 5),), tag="3d")
def trace_offset1(x):
    return np.sum(np.sin(np.trace(x, offset=1)))


@SY.case(lambda r: (r.randn(5, 5),))
def diag_k1(x):
    return np.sum(np.sin(np.diag(x, k=1)))


@SY.case(lambda r: (r.randn(5),))
def diag_flat(x):
    return np.sum(np.sin(np.diag(x, k=-1)))


@SY.case(lambda r: (r.randn(5, 5),), tag="2d")
@SY.case(lambda r: (r.randn(5, 5, 4),), tag="3d")
def tril_km1(x):
    return np.sum(np.sin(np.tril(x, k=-1)))


@SY.case(lambda r: (r.randn(5, 5),), tag="2d")
@SY.case(lambda r: (r.randn(5, 5, 4),), tag="3d")
def triu_k1(x):
    return np.sum(np.sin(np.triu(x, k=1)))


@SY.case(lambda r: (r.randn(3, 4, 5),))
def swapaxes(x):
    return np.sum(np.sin(np.swapaxes(x, 0, 2)) * np.arange(60.0).reshape(5, 4, 3))


@SY.case(lambda r: (r.randn(2, 3, 4),))
def rollaxis(x):
    return np.sum(np.sin(np.rollaxis(x, 2, 0)) * np.arange(24.0).reshape(4, 2, 3))


@SY.case(lambda r: (r.randn(3, 3), r.randn(3, 3)), (0, 1))
def cross(x, y):
    return np.sum(np.sin(np.cross(x, y)))


@SY.case(lambda r: (r.randn(3, 3), r.randn(3, 3)), (0, 1))
def cross_axis0(x, y):
    return np.sum(np.sin(np.cross(x, y, axisa=0, axisb=0, axisc=0)))


@SY.case(lambda r: (r.randn(4, 8),))
def vsplit(x):
    a, b = np.vsplit(x, 2)
    return np.sum(np.sin(a)) + 2.0 * np.sum(np.sin(b))


@SY.case(lambda r: (r.randn(4, 8),))
def hsplit(x):
    a, b, c = np.hsplit(x, [1, 2])
    return np.sum(np.sin(a)) + 2.0 * np.sum(np.sin(b)) + 3.0 * np.sum(np.sin(c))


@SY.case(lambda r: (r.randn(4, 4, 4),))
def dsplit(x):
    a, b = np.dsplit(x, 2)
    return np.sum(np.sin(a)) + 2.0 * np.sum(np.sin(b))


@SY.case(lambda r: (r.randn(4, 8),))
def split(x):
    a, b, c, d = np.split(x, 4, axis=1)
    return np.sum(np.sin(a)) + 2.0 * np.sum(np.sin(b)) + 3.0 * np.sum(np.sin(c)) + np.sum(d)


@SY.case(lambda r: (r.randn(7),), peer="test_split_1d")
def split_1d(x):
    (a,) = np.split(x, 1, axis=0)
    return np.sum(np.sin(a))


@SY.case(lambda r: (r.randn(4, 4, 4),), peer="test_split_3d")
def split_3d_axis2(x):
    a, b, c = np.split(x, [1, 2], axis=2)
    return np.sum(np.sin(a)) + 2.0 * np.sum(np.sin(b)) + 3.0 * np.sum(np.sin(c))


@SY.case(lambda r: (r.randn(7, 7, 7),), peer="test_array_split_3d")
def array_split_3d(x):
    a, b, c, d = np.array_split(x, 4, axis=2)
    return np.sum(np.sin(a)) + 2.0 * np.sum(np.sin(b)) + 3.0 * np.sum(np.sin(c)) + np.sum(d)


@SY.case(lambda r: (r.randn(7, 7),))
def array_split(x):
    a, b, c = np.array_split(x, [3, 5], axis=0)
    return np.sum(np.sin(a)) + 2.0 * np.sum(np.sin(b)) + 3.0 * np.sum(np.sin(c))


@SY.case(lambda r: (r.randn(1), r.randn(3)), (0, 1), tag="1d")
@SY.case(lambda r: (r.randn(2, 2, 2), r.randn(2, 2, 2)), (0, 1), tag="3d")
def concatenate_tuple(x, y):
    return np.sum(np.sin(np.concatenate((x, y), axis=0)))


@SY.case(lambda r: (r.randn(2, 2), r.randn(2, 2)), (0, 1))
def concatenate_list_axis1(x, y):
    return np.sum(np.sin(np.concatenate([x, y], axis=1)) * np.arange(8.0).reshape(2, 4))


@SY.case(lambda r: (r.randn(2, 4), r.randn(1, 4)), (0, 1), tag="2d")
@SY.case(lambda r: (r.randn(2), r.randn(2)), (0, 1), tag="1d")
@SY.case(lambda r: (r.randn(2, 3, 4), r.randn(5, 3, 4)), (0, 1), tag="3d")
def vstack(x, y):
    return np.sum(np.sin(np.vstack((x, y))))


@SY.case(lambda r: (r.randn(3, 4), r.randn(3, 5)), (0, 1), tag="2d")
@SY.case(lambda r: (r.randn(2), r.randn(2)), (0, 1), tag="1d")
@SY.case(lambda r: (r.randn(2, 1, 4), r.randn(2, 5, 4)), (0, 1), tag="3d")
def hstack(x, y):
    return np.sum(np.sin(np.hstack((x, y))))


@SY.case(lambda r: (r.randn(2), r.randn(2)), (0, 1), peer="test_stack_1d")
def stack_axis0(x, y):
    return np.sum(np.sin(np.stack((x, y), axis=0)) * np.array([[1.0, 2.0], [3.0, 4.0]]))


@SY.case(lambda r: (r.randn(2), r.randn(2)), (0, 1), peer="test_stack_1d")
def stack_axis1(x, y):
    return np.sum(np.sin(np.stack((x, y), axis=1)) * np.array([[1.0, 2.0], [3.0, 4.0]]))


@SY.case(lambda r: (r.randn(2), r.randn(2)), (0, 1), tag="1d")
@SY.case(lambda r: (r.randn(2, 2), r.randn(2, 2)), (0, 1), tag="2d")
def column_stack(x, y):
    return np.sum(np.sin(np.column_stack((x, y))))


SELECT_C = [_R.randn(3, 4, 5) > 0, _R.randn(3, 4, 5) > 0, _R.randn(3, 4, 5) > 0]


@SY.case(lambda r: (r.randn(3, 4, 5), r.randn(3, 4, 5), r.randn(3, 4, 5)), (0, 1, 2))
def select(x, y, z):
    return np.sum(np.sin(np.select(SELECT_C, [x, y, z], default=1.1)))


@SY.case(lambda r: (r.randn(2, 2),), peer="test_pad")
def pad(x):
    return np.sum(np.sin(np.pad(x, 3, "constant")))


@SY.case(lambda r: (r.randn(2, 2),), peer="test_pad")
def pad_pairs(x):
    return np.sum(np.sin(np.pad(x, ((1, 2), (3, 4)), "constant")))


# ========================================================================= test_linalg.py
LA = Catalogue("linalg", "autograd:tests/test_linalg.py", ref=True)


def _inv_arg(r):
    m = r.randn(8, 8)
    return (m @ m + 1.0 * np.eye(8),)


@LA.case(_inv_arg, rtol=1e-5)
def inv(x):
    return np.sum(np.sin(np.linalg.inv(x)))


@LA.case(lambda r: (r.randn(4, 4, 4) + 5 * np.eye(4),), tag="3d")
@LA.case(lambda r: (r.randn(2, 3, 4, 4) + 5 * np.eye(4),), tag="4d")
def inv_3d(x):
    return np.sum(np.sin(np.linalg.inv(x)))


@LA.case(lambda r: (r.randn(5, 3),), tag="tall")
@LA.case(lambda r: (r.randn(2, 5, 3),), tag="stacked")
def pinv(x):
    return np.sum(np.sin(np.linalg.pinv(x)))


SOLVE_B = _R.randn(8, 7)
SOLVE_B1 = _R.randn(8)
SOLVE_A6 = _R.randn(6, 6) + 1.0 * np.eye(6)
SOLVE_B3 = _R.randn(5, 4)
SOLVE_B33 = _R.randn(5, 4, 6)


@LA.case(lambda r: (r.randn(8, 8) + 10.0 * np.eye(8),))
def solve_arg1(a):
    return np.sum(np.sin(np.linalg.solve(a, SOLVE_B)))


@LA.case(lambda r: (r.randn(8, 8) + 10.0 * np.eye(8),))
def solve_arg1_1d(a):
    return np.sum(np.sin(np.linalg.solve(a, SOLVE_B1)))


@LA.case(lambda r: (r.randn(6, 5),))
def solve_arg2(b):
    return np.sum(np.sin(np.linalg.solve(SOLVE_A6, b)))


@LA.case(lambda r: (r.randn(5, 4, 4) + 5 * np.eye(4),))
def solve_arg1_3d(a):
    return np.sum(np.sin(np.linalg.solve(a, SOLVE_B3[..., None])[..., 0]))


@LA.case(lambda r: (r.randn(5, 4, 4) + 5 * np.eye(4),))
def solve_arg1_3d_3d(a):
    return np.sum(np.sin(np.linalg.solve(a, SOLVE_B33)))


@LA.case(lambda r: (r.randn(6, 6),), rtol=1e-5)
def det(x):
    return np.linalg.det(x)


@LA.case(lambda r: (r.randn(3, 3, 3),))
def det_3d(x):
    return np.sum(np.sin(np.linalg.det(x)))


@LA.case(lambda r: [(r.randn(6, 6),), (-r.randn(6, 6),)], rtol=1e-5)
def slogdet(x):
    sign, logdet = np.linalg.slogdet(x)
    return logdet


def _psd_stack(d):
    def make(r):
        return (np.stack([_psd(r, d), _psd(r, d), _psd(r, d)]),)
    return make


@LA.case(_psd_stack(5))
def slogdet_3d(x):
    return np.sum(np.linalg.slogdet(x)[1])


@LA.case(lambda r: (r.randn(6),))
def vector_2norm(x):
    return np.linalg.norm(x)


@LA.case(lambda r: [(0.0,), (0.7,)])
def norm_list_of_boxes(x):
    return np.linalg.norm([x, x + 2]) + np.linalg.norm((x, 2 * x + 2))


@LA.case(lambda r: (r.randn(6, 5),))
def frobenius_norm(x):
    return np.linalg.norm(x)


@LA.case(lambda r: (r.randn(6, 5, 4),))
def frobenius_norm_axis(x):
    return np.sum(np.sin(np.linalg.norm(x, axis=(0, 1))))


@LA.case(lambda r: (r.randn(6),), peer="test_vector_norm_ord")
def vector_norm_ord2(x):
    return np.linalg.norm(x, ord=2)


@LA.case(lambda r: (r.randn(6),), peer="test_vector_norm_ord")
def vector_norm_ord3(x):
    return np.linalg.norm(x, ord=3)


@LA.case(lambda r: (r.randn(6),), peer="test_vector_norm_ord")
def vector_norm_ord4(x):
    return np.linalg.norm(x, ord=4)


@LA.case(lambda r: (r.randn(6, 5, 4),), peer="test_norm_axis")
def norm_axis0(x):
    return np.sum(np.sin(np.linalg.norm(x, axis=0)))


@LA.case(lambda r: (r.randn(6, 5, 4),), peer="test_norm_axis")
def norm_axis1(x):
    return np.sum(np.sin(np.linalg.norm(x, axis=1)))


@LA.case(lambda r: (r.randn(6, 5, 4),), peer="test_norm_axis")
def norm_axis2(x):
    return np.sum(np.sin(np.linalg.norm(x, axis=2)))


@LA.case(lambda r: (r.randn(6, 5),))
def norm_nuclear(x):
    return np.linalg.norm(x, ord="nuc")


@LA.case(lambda r: (r.randn(6, 5, 4),))
def norm_nuclear_axis(x):
    return np.sum(np.sin(np.linalg.norm(x, ord="nuc", axis=(0, 1))))


EIG_W = np.arange(36.0).reshape(6, 6) / 36.0


@LA.case(lambda r: (r.randn(6, 6),), peer="test_eigvalh_lower")
def eigh_lower(x):
    w, v = np.linalg.eigh(x)
    return np.sum(np.sin(w)) + np.sum(v ** 2 * EIG_W)


@LA.case(lambda r: (r.randn(6, 6),), peer="test_eigvalh_upper")
@LA.case(lambda r: (np.einsum("...ij,...kj->...ik", r.randn(2, 3, 6, 6) + 10 * np.eye(6),
                              r.randn(2, 3, 6, 6) + 10 * np.eye(6)),), tag="broadcasting",
         peer="test_eigvalh_upper_broadcasting")
def eigh_upper(x):
    w, v = np.linalg.eigh(x, "U")
    return np.sum(np.sin(w)) + np.sum(v ** 2 * EIG_W)


@LA.case(lambda r: (np.einsum("...ij,...kj->...ik", r.randn(2, 3, 6, 6) + 10 * np.eye(6),
                              r.randn(2, 3, 6, 6) + 10 * np.eye(6)),),
         peer="test_eigvalh_lower_broadcasting")
def eigh_broadcasting(x):
    w, v = np.linalg.eigh(x)
    return np.sum(np.sin(w)) + np.sum(v ** 2 * EIG_W)


@LA.case(lambda r: (r.randn(5, 5) + 4 * np.diag(np.arange(5.0)),), peer="test_eig_real")
def eig_real(x):
    w, v = np.linalg.eig(x)
    return np.sum(np.sin(np.abs(w))) + np.sum(np.abs(v) ** 2 * EIG_W[:5, :5])


@LA.case(lambda r: (_psd(r, 6),))
def cholesky(A):
    return np.sum(np.sin(np.linalg.cholesky(0.5 * (A + A.T))))


@LA.case(_psd_stack(6))
def cholesky_broadcast(A):
    return np.sum(np.sin(np.linalg.cholesky(0.5 * (A + np.swapaxes(A, -1, -2)))))


CHOL_Z = np.random.RandomState(0).randn(6)


@LA.case(lambda r: (_psd(r, 6),))
def cholesky_reparameterization_trick(A):
    z = np.dot(np.linalg.cholesky(0.5 * (A + A.T)), CHOL_Z)
    return np.linalg.norm(z)


SVD_W = np.arange(1.0, 31.0) / 30.0


@LA.case(lambda r: (r.randn(3, 5),), tag="wide")
@LA.case(lambda r: (r.randn(4, 4),), tag="square")
@LA.case(lambda r: (r.randn(5, 3),), tag="tall")
@LA.case(lambda r: (r.randn(4, 3, 5),), tag="wide_3d")
@LA.case(lambda r: (r.randn(3, 4, 4),), tag="square_3d")
@LA.case(lambda r: (r.randn(4, 5, 3),), tag="tall_3d")
def svd(x):
    u, s, v = np.linalg.svd(x, full_matrices=False)
    return (np.sum(u ** 2 * SVD_W[:u.shape[-1]]) + np.sum(np.sin(s))
            + np.sum(v ** 2 * SVD_W[:v.shape[-1]]))


@LA.case(lambda r: (r.randn(5, 3),), tag="2d")
@LA.case(lambda r: (r.randn(4, 5, 3),), tag="3d")
def svd_only_s(x):
    s = np.linalg.svd(x, full_matrices=False, compute_uv=False)
    return np.sum(np.sin(s))


# ===================================================================== test_scalar_ops.py
SC = Catalogue("scalar", "autograd:tests/test_scalar_ops.py", ref=True)


@SC.case(lambda r: [(1.1,), (-1.1,), (0.0,)])
def abs_scalar(x):
    return 3.0 * np.abs(x)


@SC.case(lambda r: [(1.1,), (-1.1,), (0.0,)])
def absolute_scalar(x):
    return 3.0 * np.absolute(x)


@SC.case(lambda r: (float(r.randn()),))
def sin_scalar(x):
    return 3.0 * np.sin(x)


@SC.case(lambda r: [(1.1,), (-1.1,)])
def sign_scalar(x):
    return 3.0 * np.sign(x) + x


@SC.case(lambda r: (float(r.randn()),))
def exp_scalar(x):
    return 3.0 * np.exp(x)


@SC.case(lambda r: (abs(float(r.randn())) + 0.1,))
def log_scalar(x):
    return 3.0 * np.log(x)


@SC.case(lambda r: (abs(float(r.randn())) + 0.1,))
def log2_scalar(x):
    return 3.0 * np.log2(x)


@SC.case(lambda r: (abs(float(r.randn())) + 0.1,))
def log10_scalar(x):
    return 3.0 * np.log10(x)


@SC.case(lambda r: (abs(float(r.randn())),))
def log1p_scalar(x):
    return 3.0 * np.log1p(x)


@SC.case(lambda r: (abs(float(r.randn())),))
def expm1_scalar(x):
    return 3.0 * np.expm1(x)


@SC.case(lambda r: (abs(float(r.randn())),))
def exp2_scalar(x):
    return 3.0 * np.exp2(x)


@SC.case(lambda r: (float(r.randn()),))
def neg(x):
    return 3.0 * -x


@SC.case(lambda r: (float(r.randn()),))
def cos_scalar(x):
    return 3.0 * np.cos(x)


@SC.case(lambda r: (float(r.randn()),))
def tan_scalar(x):
    return 3.0 * np.tan(x)


@SC.case(lambda r: (float(r.randn()),))
def cosh_scalar(x):
    return 3.0 * np.cosh(x)


@SC.case(lambda r: (float(r.randn()),))
def sinh_scalar(x):
    return 3.0 * np.sinh(x)


@SC.case(lambda r: (float(r.randn()),))
def tanh_scalar(x):
    return 3.0 * np.tanh(x)


@SC.case(lambda r: (0.1,))
def arccos(x):
    return 3.0 * np.arccos(x)


@SC.case(lambda r: (0.1,))
def arcsin(x):
    return 3.0 * np.arcsin(x)


@SC.case(lambda r: (0.2,))
def arctan(x):
    return 3.0 * np.arctan(x)


@SC.case(lambda r: (float(r.randn()) ** 2 + 1.2,))
def arccosh_scalar(x):
    return 3.0 * np.arccosh(x)


@SC.case(lambda r: (float(r.randn()),))
def arcsinh_scalar(x):
    return 3.0 * np.arcsinh(x)


@SC.case(lambda r: (0.2,))
def arctanh_scalar(x):
    return 3.0 * np.arctanh(x)


@SC.case(lambda r: (10.0 * float(r.rand()) + 0.1,))
def sqrt_scalar(x):
    return 3.0 * np.sqrt(x)


POWER_Y = float(_R.randn()) ** 2 + 1.0
POWER_X = float(_R.randn()) ** 2


@SC.case(lambda r: (float(r.rand()) ** 2 + 1.0,))
def power_arg0(x):
    return np.power(x, POWER_Y)


@SC.case(lambda r: (0.0,), peer="test_power_arg0")
def power_arg0_zero_exponent(x):
    return np.power(x, 0.0)


@SC.case(lambda r: (float(r.rand()) ** 2,))
def power_arg1(y):
    return np.power(POWER_X, y)


@SC.case(lambda r: (float(r.rand()) ** 2 + 0.1,))
def power_arg1_zero(y):
    return np.power(0.0, y)


@SC.case(lambda r: (0.83, 0.37), (0, 1), peer="test_mod_arg0")
def mod_scalar(x, y):
    return np.mod(x, y)


@SC.case(lambda r: (float(r.rand()), float(r.rand()) + 0.1), (0, 1), peer="test_divide_arg0")
def divide(x, y):
    return np.divide(x, y)


@SC.case(lambda r: (float(r.rand()), float(r.rand())), (0, 1), peer="test_multiply_arg0")
def multiply(x, y):
    return np.multiply(x, y)


@SC.case(lambda r: (float(r.rand()), float(r.rand()) + 0.1), (0, 1), peer="test_true_divide_arg0")
def true_divide_scalar(x, y):
    return np.true_divide(x, y)


@SC.case(lambda r: (float(r.rand()) + 0.1,))
def reciprocal(x):
    return np.reciprocal(x)


@SC.case(lambda r: (float(r.rand()),))
def negative(x):
    return np.negative(x)


@SC.case(lambda r: (10.0 * float(r.rand()),))
def rad2deg_scalar(x):
    return 3.0 * np.rad2deg(x)


@SC.case(lambda r: (10.0 * float(r.rand()),))
def deg2rad_scalar(x):
    return 3.0 * np.deg2rad(x)


@SC.case(lambda r: (10.0 * float(r.rand()),))
def radians_scalar(x):
    return 3.0 * np.radians(x)


@SC.case(lambda r: (10.0 * float(r.rand()),))
def degrees_scalar(x):
    return 3.0 * np.degrees(x)


@SC.case(lambda r: (10.0 * float(r.rand()),))
def sinc(x):
    return 3.0 * np.sinc(x)


# ===================================================================== test_binary_ops.py
BI = Catalogue("binary", "autograd:tests/test_binary_ops.py", ref=True)


def _arg_pairs(transform=None):
    """All 16 pairs of a float, a (4,) vector, a (3, 4) and a (1, 4) matrix."""
    def make(r):
        vals = [2.0, r.randn(4), r.randn(3, 4), r.randn(1, 4)]
        if transform is not None:
            vals = [transform(v) for v in vals]
        return [(a, b) for a in vals for b in vals]
    return make


def _distinct_pairs(r):
    """The arg pairs without the 4 pairs of an argument with itself (a tie on every entry,
    where the comparison jumps and finite differences are meaningless)."""
    vals = [2.0, r.randn(4), r.randn(3, 4), r.randn(1, 4)]
    return [(a, b) for i, a in enumerate(vals) for j, b in enumerate(vals) if i != j]


def _gap(v):
    return np.sqrt(v ** 2 + 0.5) if np.ndim(v) else float(np.sqrt(v ** 2 + 0.5))


@BI.case(_arg_pairs(), (0, 1))
def mul(x, y):
    return np.sum(np.sin(x * y))


@BI.case(_arg_pairs(), (0, 1))
def add_(x, y):
    return np.sum(np.sin(x + y))


@BI.case(_arg_pairs(), (0, 1))
def sub(x, y):
    return np.sum(np.sin(x - y))


@BI.case(_arg_pairs(_gap), (0, 1))
def div(x, y):
    return np.sum(np.sin(x / y))


def _mod_pairs(r):
    """The 16 shape pairs with x in [1.0, 1.3) and y in [0.7, 0.9): x / y stays inside
    (1.1, 1.9), away from the jumps of x % y (the peer relies on luck there)."""
    xs = [1.15, 1.0 + 0.3 * r.rand(4), 1.0 + 0.3 * r.rand(3, 4), 1.0 + 0.3 * r.rand(1, 4)]
    ys = [0.8, 0.7 + 0.2 * r.rand(4), 0.7 + 0.2 * r.rand(3, 4), 0.7 + 0.2 * r.rand(1, 4)]
    return [(a, b) for a in xs for b in ys]


@BI.case(_mod_pairs, (0, 1))
def mod_(x, y):
    return np.sum(np.sin(x % y))


def _pow_pairs(r):
    return [(np.abs(a) + 1.1 if np.ndim(a) else abs(a) + 1.1, b) for a, b in _arg_pairs()(r)]


@BI.case(_pow_pairs, (0, 1))
def pow_(x, y):
    return np.sum(np.sin(x ** y))


@BI.case(_arg_pairs(), (0, 1))
def arctan2(x, y):
    return np.sum(np.sin(np.arctan2(x, y)))


@BI.case(_arg_pairs(), (0, 1))
def hypot(x, y):
    return np.sum(np.sin(np.hypot(x, y)))


@BI.case(_distinct_pairs, (0, 1), peer="test_comparison_grads")
def compare_lt(x, y):
    return np.sum(x < y) + 0.0


@BI.case(_distinct_pairs, (0, 1), peer="test_comparison_grads")
def compare_le(x, y):
    return np.sum(x <= y) + 0.0


@BI.case(_distinct_pairs, (0, 1), peer="test_comparison_grads")
def compare_gt(x, y):
    return np.sum(x > y) + 0.0


@BI.case(_distinct_pairs, (0, 1), peer="test_comparison_grads")
def compare_ge(x, y):
    return np.sum(x >= y) + 0.0


@BI.case(_distinct_pairs, (0, 1), peer="test_comparison_grads")
def compare_eq(x, y):
    return np.sum(x == y) + 0.0


@BI.case(_distinct_pairs, (0, 1), peer="test_comparison_grads")
def compare_ne(x, y):
    return np.sum(x != y) + 0.0


CASES = NP.cases + SY.cases + LA.cases + SC.cases + BI.cases
