"""google/tangent's catalogue of test functions (tests/functions.py), as data for pullback.

Tangent's conftest runs every function of its catalogue on arguments chosen by
parameter name: scalars ``a``, ``b``, ``c`` in [-2, 2], an integer ``n`` in 1..3,
vectors ``x`` of length 3, 5 and 10, square matrices ``sqm``. Each case below is
one of those functions, written here again as plain NumPy Python, with a few of
those points (away from the branch boundaries of the function) and the argument
numbers tangent differentiates. Functions that tangent's own conftest blacklists
are ported too when they are ordinary Python.

Not ported: the TensorFlow-eager functions (``tfe_*``, ``_trace_mul``), the
functions that exercise tangent's own runtime (``stack_pushing``,
``useless_stack_ops``, ``tangent.insert_grad_of`` in ``inlining_contextmanager``, which
is ported with a plain context manager instead), functions returning a tuple
(``fn_multiple_return``, ``cart2polar``: not scalar), and the dict-argument
functions ``dict_saxpy`` / ``nested_dict`` (pullback differentiates floats and
arrays, not dicts).
"""
from __future__ import annotations

import contextlib

import numpy as np

from peers.cases import Catalogue

TG = Catalogue("tangent", "tangent:tests/functions.py", ref=True, test_prefix="")


def _a(*values):
    return lambda r: [(v,) for v in values]


A = _a(-1.5, -0.5, 0.5, 1.5, 2.0)   # a in tangent's scalar range, away from 0 and +-0.1
AB = lambda r: [(-1.5, 0.5), (0.5, -1.0), (1.5, 2.0), (-0.5, -2.0), (2.0, 1.5)]
ABC = lambda r: [(-1.5, 0.5, 2.0), (0.5, -1.0, -0.5), (1.5, 2.0, 1.0)]
AN = lambda r: [(a, n) for a in (-1.5, 0.5, 1.5) for n in (1, 2, 3)]
X = lambda r: [(r.randn(3),), (r.randn(5),), (r.randn(10),)]


# ------------------------------------------------------------------------ scalar basics
@TG.case(A)
def id_(a):
    return a


@TG.case(A)
def unary_sub(a):
    return -a


@TG.case(X)
def sum_(x):
    return np.sum(x)


@TG.case(X)
def cast_sum_(x):
    return np.sum(np.array(x))


@TG.case(X)
def overwrite_call(x):
    x = np.sum(x)
    x = x * x
    return x


@TG.case(A)
def tanh(a):
    return np.tanh(a)


@TG.case(A)
def identity_assign(a):
    b = a
    return b


@TG.case(A)
def increment(a):
    return a + 1


@TG.case(ABC, (0, 1, 2))
def saxpy(a, b, c):
    return a * b + c


@TG.case(AB, (0, 1))
def mul(a, b):
    return a * b


@TG.case(AB, (0, 1))
def add(a, b):
    return a + b


@TG.case(ABC, (0, 1, 2), numba=True)
def saxpy_call(a, b, c):
    return add(mul(a, b), c)


@TG.case(ABC, (0, 1, 2))
def saxpy_anf(a, b, c):
    t1 = a * b
    t2 = t1 + c
    return t2


@TG.case(ABC, (0, 1, 2))
def saxpy_overwrite(a, b, c):
    t = a * b
    t = t + c
    return t


@TG.case(A)
def gradname_aliasing(a):
    da = a * a
    return da


@TG.case(A, numba=True)
def overwrite_if(a):
    if a > 0:
        a = a * 3.0
    else:
        a = a * 2.0
    return a


@TG.case(A)
def binop_mul1(a):
    return a * 3.0


@TG.case(A)
def binop_mul2(a):
    return 3.0 * a


@TG.case(A)
def binop_mul3(a):
    return a * a


@TG.case(A)
def binop_div1(a):
    return a / 3.0


@TG.case(A)
def binop_div2(a):
    return 3.0 / a


@TG.case(A)
def binop_div3(a):
    return a / a


@TG.case(A)
def binop_sub1(a):
    return a - 3.0


@TG.case(A)
def binop_sub2(a):
    return 3.0 - a


@TG.case(A)
def binop_sub3(a):
    return a - a


@TG.case(A)
def binop_add1(a):
    return a + 3.0


@TG.case(A)
def binop_add2(a):
    return 3.0 + a


@TG.case(A)
def binop_add3(a):
    return a + a


# ----------------------------------------------------------------------- control flow
@TG.case(A, numba=True)
def nested_if(a):
    if a > 0:
        if a < 10:
            a = a * a
    else:
        a = 3.0 * a
    return a


@TG.case(_a(-1.5, -0.5, -0.1, 0.1, 0.5, 1.5, 2.0), numba=True)
def multiarg_if(a):
    # tangent: "a bunch of spammy nonsense to try to break our system"
    if a * a / 3.0 > 0:
        b = 3.0
    else:
        b = 4.0
    a = a * b
    if a < b - a * b:
        a = a * a
    elif a > b + 3.0 * a:
        if a / 2.0 < 0:
            a = a / b
        else:
            a = a * b
    else:
        a = -a
    return a


@TG.case(A)
def fn_multiply(a):
    return np.multiply(a, 3.0)


@TG.case(A)
def anf_list(a):
    b = [1, a * a, 2]
    return np.sum(b)


@TG.case(X)
def deep_anf_list(x):
    b = [1, x[0] * x[1] * x[2], 3]
    return np.sum(b)


@TG.case(X)
def subscript1(x):
    a = x[0]
    b = x[1]
    return a * b


@TG.case(X, ref=False)
def subscript2(x):
    a = x[0]
    b = x[1]
    x[0] = a * b
    return np.sum(x)


@TG.case(X, ref=False)
def subscript3(x):
    y = x ** 2.0
    x[0] = y[1] * y[2]
    return np.sum(x * y)


@TG.case(A)
def list_and_subscript(a):
    x = [1.0, a, 3.0]
    return x[0] * x[1]


@TG.case(X, numba=True)
def implicit_indexing(x):
    res = 0.0
    for a in x:
        res += a
    return res


@TG.case(A)
def serial_if(a):
    if a > 0:
        a = a * a
    a = a + a
    if a < 0:
        a = 3.0 * a
    return a


@TG.case(AB, (0, 1))
def multivar_if(a, b):
    if a > b:
        a = a * a
    else:
        a = a * b
    return a


@TG.case(AN, numba=True)
def serial_for(a, n):
    for i in range(n):
        a = a * a
    a = 2.0 * a
    for i in range(n + 1):
        a = a * 3.0
    return a


@TG.case(AN)
def serial_ifthenfor(a, n):
    if a > 0:
        a = a * a
    a = 2.0 * a
    for i in range(n):
        a = a * a
    return a


@TG.case(AN)
def serial_forthenif(a, n):
    for i in range(n):
        a = a * a
    a = 2.0 * a
    if a > 0:
        a = a * a
    return a


@TG.case(A)
def devilish_nested_if(a):
    if a > 0:
        a = a * 3.0
        if a < 10:
            a = a * a
        else:
            a = a * 2.0
    return a


@TG.case(A)
def overwrite_ifelse(a):
    if a > 0:
        a = a * 3.0
    elif 0 > a:
        a = a * 2.0
    else:
        a = 1.0 * a
    return a


@TG.case(A)
def overwrite_arg(a):
    a = a * 3.0
    return a


@TG.case(A)
def overwrite_non_arg(a):
    b = a
    b = b * 3.0
    return b


@TG.case(A)
def third_pow(a):
    return a * a * a


@TG.case(A)
def direct_third_pow(a):
    return a ** 3


@TG.case(A, numba=True)
def iter_third_pow1(a):
    out = 1
    for i in range(3):
        out = out * a
    return out


@TG.case(A)
def iter_third_pow2(a):
    out = a
    for i in range(3 - 1):
        out = out * a
    return out


@TG.case(A)
def iterpower_static(a):
    for i in range(3):
        a = a * a
    return a


@TG.case(AN)
def iterpower(a, n):
    for i in range(n):
        a = a * a
    return a


@TG.case(A, numba=True)
def cond_iterpower1(a):
    for i in range(3):
        if a < 20:
            a = a * a
    return a


@TG.case(A)
def cond_iterpower2(a):
    if a < 20:
        for i in range(3):
            a = a * a
    return a


@TG.case(_a(-1.1, -0.9, 0.5, 1.02), numba=True)
def superfor_iterpower(a):
    for i in range(2):
        for j in range(3):
            a = a * a
    return a


@TG.case(_a(-1.1, -0.9, 0.5, 1.05))
def super_iterpower(a):
    for i in range(3):
        a = a * a * a
    return a


# ------------------------------------------------------------------------- NumPy calls
@TG.case(X)
def numpy_sum(x):
    return np.sum(x)


@TG.case(X)
def numpy_mean(x):
    return np.mean(x)


@TG.case(A)
def numpy_exp(a):
    return np.exp(a)


@TG.case(A)
def numpy_exp2(a):
    return np.exp(np.exp(a))


@TG.case(A, numba=True)
def numpy_sqrt(a):
    if a >= 0:
        r = np.sqrt(a)
    else:
        r = np.sqrt(-a)
    return r


@TG.case(A)
def numpy_cos(a):
    return np.cos(a)


@TG.case(A)
def numpy_sin(a):
    return np.sin(a)


@TG.case(_a(-1.5, -0.5, 0.5, 1.5))
def numpy_tan(a):
    return np.tan(a)


@TG.case(A)
def numpy_cosh(a):
    return np.cosh(a)


@TG.case(A)
def numpy_sinh(a):
    return np.sinh(a)


@TG.case(A)
def numpy_tanh(a):
    return np.tanh(a)


@TG.case(_a(-0.5, 0.1, 0.5))
def numpy_arccos(a):
    return np.arccos(a)


@TG.case(_a(-0.5, 0.1, 0.5))
def numpy_arcsin(a):
    return np.arcsin(a)


@TG.case(A)
def numpy_arctan(a):
    return np.arctan(a)


@TG.case(X)
def numpy_atleast_1d(x):
    return np.sum(np.atleast_1d(x))


@TG.case(X)
def numpy_atleast_2d(x):
    return np.sum(np.atleast_2d(x))


@TG.case(X)
def numpy_atleast_3d(x):
    return np.sum(np.atleast_3d(x))


def _logistic_args(r):
    label = np.zeros(5)
    label[1] = 1.0
    return (r.rand(3), label, r.randn(3, 5), r.randn(5))


@TG.case(_logistic_args, (2, 3),
         peer="logistic_regression, as in tests/test_reverse_mode.py::test_logistic_regression")
def logistic_regression(input, label, W, b):
    h1 = np.dot(input, W) + b
    prediction = 0.5 * (np.tanh(h1) + 1)
    label_probabilities = prediction * label + (1 - prediction) * (1 - label)
    loss = -np.sum(np.log(label_probabilities))
    return loss


@TG.case(lambda r: [(r.randn(1, 1),), (r.randn(5, 5),)])
def det(sqm):
    return np.linalg.det(sqm)


# ---------------------------------------------------------------------- function calls
def _inner_fn(a, b):
    return a * b


@TG.case(AB, (0, 1))
def mul_with_call(a, b):
    return _inner_fn(a, b)


@TG.case(AB, (0, 1))
def if_mul_with_call(a, b):
    if a > b:
        o = _inner_fn(a, b)
    else:
        o = _inner_fn(b, a)
    return o


@TG.case(AN, numba=True)
def iterpower_with_call(a, n):
    for i in range(n):
        a = _inner_fn(a, a)
    return a


@TG.case(AB, (0, 1))
def nested_call(a, b):
    return mul_with_call(a, b)


@TG.case(AN, numba=True)
def iterpower_with_nested_def(a, n):
    def _fn(a, n):
        return a * n

    for i in range(n):
        a = _fn(a, a)
    return a


# -------------------------------------------------------------------------- subscripts
_ABC_PACKED = lambda r: [(np.array(t),) for t in ABC(r)]


@TG.case(_ABC_PACKED, peer="test_unpacking_args_saxpy")
def unpacking_args_saxpy(abc_packed_in_tuple):
    a, b, c = abc_packed_in_tuple
    return a * b + c


def _dict_saxpy(val):
    return val['a'] * val['b'] + val['c']


@TG.case(_ABC_PACKED, ref=False)
def dict_wrapper(abc_packed_in_tuple):
    a, b, c = abc_packed_in_tuple
    return _dict_saxpy(dict(a=a, b=b, c=c))


def _abc_i(r):
    return [t + (i,) for t in ABC(r) for i in (0, 1, 2)]


@TG.case(_abc_i, (0, 1, 2))
def passthru_pack(a, b, c, i):
    x = a, b, c
    return x[i]


@TG.case(_ABC_PACKED)
def passthru_unpack(abc_packed_in_tuple):
    a, b, c = abc_packed_in_tuple
    return a


# -------------------------------------------------------------------------------- misc
@TG.case(A, ref=False)
def inlining_contextmanager(a):
    b = a * a
    with contextlib.nullcontext():
        c = b * a
    return c


@TG.case(X)
def listcomp(a):
    return np.sum([i * 3 for i in a])


@TG.case(A, numba=True)
def while_big(a):
    while np.abs(a) > 0.1:
        a = a * 0.5
    return a


@TG.case(X, ref=False, numba=True)
def active_subscript(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i]
    return np.sum(y)


@TG.case(X, ref=False)
def init_array_grad_maybe_active(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t]
    return np.sum(h)


@TG.case(X)
def slicing(x):
    return np.sum(x[1:])


@TG.case(lambda r: (r.randn(3, 2), r.randn(2, 3)), (0, 1), ref=False,
         peer="rnn, as in tests/test_reverse_mode.py::test_rnn")
def rnn(inputs, W):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.dot(inputs[t], W) + h[t]
    return np.sum(h[1:])


@TG.case(A)
def augassign(a):
    x = a * a
    x *= x
    return x


@TG.case(lambda r: (r.randn(1, 3), r.randn(1, 3), r.randn(3, 3), r.randn(3, 3), r.randn(1, 3)),
         peer="bilinear, as in tests/test_reverse_mode.py::test_bilinear")
def bilinear(x, h, U, W, b):
    y = np.dot(x, W)
    y = y + np.dot(h, U)
    y = y + b
    y = np.tanh(y)
    return np.sum(y)


@TG.case(A)
def redefining_var_as_list(a):
    x = a
    x = [a]
    x = a
    return a


def _pow_points(r):
    return [(a, b) for a in (-1.5, 0.5, 1.5) for b in (0.5, 2.0, 3.0)]


@TG.case(_pow_points, (0, 1), numba=True)
def gradgrad_pow(a, b):
    if a >= 0:
        a = a ** b
    else:
        a = (-a) ** b
    return a


@TG.case(A)
def gradgrad_pow_twice(a):
    a = a * a
    y = a * a
    return y


@TG.case(_a(-1.1, -0.9, 0.5, 1.05))
def gradgrad_chain_of_mults(a):
    b = a  # this line forces overwrite protection
    b = a * a
    c = b * b
    d = c * c
    return d


@TG.case(_a(-1.1, -0.9, 0.5, 1.05))
def gradgrad_chain_of_multcalls(a):
    b = mul(a, a)
    c = mul(b, b)
    d = mul(c, c)
    return d


@TG.case(lambda r: (r.randn(10),))
def extended_slice(x):
    return np.sum(x[::2, np.newaxis])


CASES = TG.cases
