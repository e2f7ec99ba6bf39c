"""pullback's array rule helpers on device arrays, against the same helpers on NumPy.

One table, one line per case: a helper and its arguments as NumPy values.  Each
case runs on NumPy (the reference: the NumPy paths are checked against finite
differences and torch autograd in tests/rules) and on device arrays, and the
device result, moved to the host, must agree.  A result must stay a device
array (no helper may hand back a NumPy array for device input).

Backends:

* ``cupy`` (skips unless CuPy is importable and sees a CUDA device).  CuPy
  refuses an implicit conversion to NumPy (``TypeError``), and where
  ``cupyx.allow_synchronize`` still exists (deprecated since CuPy 10) the helper
  runs under ``allow_synchronize(False)``, which raises
  ``cupyx.DeviceSynchronized`` on a device synchronisation (``.get()``,
  ``float()``, ``.item()``, a stream synchronisation).
* ``torch`` on ``--torch-device`` (skips without torch): on ``cpu`` this checks
  the table and the torch paths; on ``cuda`` each helper runs under
  tests/device_guard.py's host-synchronisation guard (the test fails naming the
  helper and the line).

A synchronisation that ``device_guard.INHERENT`` explains (a linalg call's error
check, indexing with a host-held index array or a boolean mask) is no failure:
the case then runs again unguarded and its values are compared.

Index arrays, masks, repeat counts and NumPy scalars (``ans`` of a full
reduction) are converted to device arrays too (what device code hands a rule);
Python numbers, and a Python list index, stay as they are.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from pullback.rules.cumulative import cumprod_jvp, cumprod_vjp, cumsum_vjp
from pullback.rules.decomposition_tangents import cholesky_jvp, eigh_jvp, pinv_jvp, svd_jvp
from pullback.rules.decompositions import cholesky_vjp, eigh_vjp, pinv_vjp
from pullback.rules.diagonals import diag_vjp, diagonal_vjp, trace_vjp, tril_vjp, triu_vjp
from pullback.rules.einsum import einsum_vjp
from pullback.rules.elementwise import unbroadcast
from pullback.rules.extrema import max_vjp
from pullback.rules.indexing import getitem_vjp, setitem_vjp_v, setitem_vjp_x
from pullback.rules.interpolation import interp_vjp_fp, interp_vjp_left, interp_vjp_x, linspace_vjp
from pullback.rules.joining import column_stack_vjp, split_vjp
from pullback.rules.linalg import (
    dot_vjp_a,
    dot_vjp_b,
    inner_vjp_a,
    matmul_vjp_a,
    matmul_vjp_b,
    outer_vjp_a,
    outer_vjp_b,
)
from pullback.rules.manipulation import diff_vjp, repeat_vjp, tile_vjp
from pullback.rules.norm import norm_vjp, norm_vjp_vjp_x
from pullback.rules.piecewise import clip_vjp_a, clip_vjp_max, clip_vjp_min
from pullback.rules.polynomial import polyval_vjp_p, polyval_vjp_x
from pullback.rules.prod import prod_vjp
from pullback.rules.reductions import mean_vjp, std_vjp, sum_vjp, var_vjp
from pullback.rules.reductions_second import slice_sum, std_vjp_vjp_ans, var_vjp_vjp_a
from pullback.rules.reorder import flip_vjp, partition_jvp, roll_vjp, rot90_vjp, sort_jvp, sort_vjp
from pullback.rules.scipy_linalg import solve_triangular_vjp_a, solve_triangular_vjp_b
from pullback.rules.scipy_special import (
    log_softmax_jvp,
    log_softmax_vjp,
    logsumexp_vjp,
    softmax_vjp,
    softmax_vjp_vjp_s,
)
from pullback.rules.shapes import (
    broadcast_to_vjp,
    concatenate_vjp,
    moveaxis_vjp,
    reshape_vjp,
    stack_vjp,
    transpose_vjp,
)
from pullback.rules.solve import det_vjp, inv_vjp, slogdet_vjp, solve_vjp_a, solve_vjp_b
from pullback.rules.tensordot import tensordot_vjp_a, tensordot_vjp_b

pytestmark = pytest.mark.device

rng = np.random.default_rng(2024)


def r(*shape):
    return rng.standard_normal(shape)


def spd(n):
    b = r(n, n)
    return b @ b.T + n * np.eye(n)


def well(*shape):
    return r(*shape) + 3 * np.eye(shape[-1])


class Case:
    def __init__(self, label, fn, *args, **kwargs):
        self.label, self.fn, self.args, self.kwargs = label, fn, args, kwargs


C = Case

# --- values shared by several lines ---------------------------------------
A345 = r(3, 4, 5)
A34 = r(3, 4)
TIES = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
MASK3 = np.array([True, False, True])
MASK34 = A34 > 0
IDX = np.array([1, 1, 3])
ZEROS = np.array([[0.0, 1.5, 0.0, 2.0], [1.2, 0.0, 0.0, -0.7], [0.9, 2.0, 0.0, 1.1],
                  [1.3, -0.8, 1.0, 0.5]])      # columns with 1, 2, 3 and no zeros
SPD = spd(3)
L = np.linalg.cholesky(SPD)
W, V = np.linalg.eigh(SPD)
M43 = r(4, 3)
WELL = well(2, 3, 3)
B32 = r(3, 2)
SOLVED = np.linalg.solve(WELL, B32)
TRI = np.tril(r(3, 3)) + 3 * np.eye(3)
TRI_X = np.linalg.solve(TRI, B32)
KNOTS, FP = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 1.0])
XI = np.array([-0.5, 0.5, 0.7, 2.0, 4.0])
LSE = np.log(np.sum(np.exp(A34), axis=1))
SOFT = np.exp(A34) / np.sum(np.exp(A34), axis=0)
PARTS = np.split(r(3, 5), [2], axis=1)


CASES = [
    # elementwise
    C("unbroadcast (2,3,4) -> (3,1)", unbroadcast, r(2, 3, 4), r(3, 1)),
    C("unbroadcast (2,3) -> Python float", unbroadcast, r(2, 3), 2.0),
    C("unbroadcast (3,) up to (2,3)", unbroadcast, r(3), r(2, 3)),
    C("clip_vjp_a array/scalar bounds", clip_vjp_a, r(3, 4), A34, r(4) - 0.5, 0.5),
    C("clip_vjp_min array bound", clip_vjp_min, r(3, 4), A34, r(4) - 0.5, 0.5),
    C("clip_vjp_max scalar bound", clip_vjp_max, r(3, 4), A34, r(4) - 0.5, 0.5),
    C("polyval_vjp_p", polyval_vjp_p, r(5), r(4), r(5)),
    C("polyval_vjp_x", polyval_vjp_x, r(5), r(4), r(5)),
    # reductions
    C("sum_vjp axis=(0,2)", sum_vjp, r(4), A345, axis=(0, 2)),
    C("sum_vjp axis=1 keepdims", sum_vjp, r(3, 1, 5), A345, axis=1, keepdims=True),
    C("sum_vjp where=mask", sum_vjp, r(4), A34, axis=0, where=MASK34),
    C("mean_vjp axis=-1 keepdims", mean_vjp, r(3, 4, 1), A345, axis=-1, keepdims=True),
    C("mean_vjp axis=None", mean_vjp, 0.7, A345),
    C("var_vjp axis=0 ddof=1", var_vjp, r(4, 5), A345, axis=0, ddof=1),
    C("std_vjp axis=(1,2)", std_vjp, r(3), np.std(A345, axis=(1, 2)), A345, axis=(1, 2)),
    C("max_vjp axis=1 with ties", max_vjp, r(3), np.max(TIES, axis=1), TIES, axis=1),
    C("max_vjp axis=None keepdims", max_vjp, r(1, 1), np.max(TIES, keepdims=True), TIES,
      keepdims=True),
    C("cumsum_vjp axis=1", cumsum_vjp, r(3, 4, 5), A345, axis=1),
    C("norm_vjp 2-norm axis=-1", norm_vjp, r(3, 4), np.linalg.norm(A345, axis=-1), A345, None, -1),
    C("norm_vjp fro axis=None", norm_vjp, 0.3, np.linalg.norm(A34), A34),
    # prod / cumprod with zeros
    C("prod_vjp axis=0, 0-3 zeros", prod_vjp, r(4), np.prod(ZEROS, axis=0), ZEROS, 0),
    C("prod_vjp ans=None axis=None", prod_vjp, 1.3, None, ZEROS),
    C("prod_vjp axis=1 keepdims", prod_vjp, r(4, 1), np.prod(ZEROS, 1, keepdims=True), ZEROS, 1,
      True),
    C("prod_vjp exact=True axis=(0,1)", prod_vjp, 0.4, np.prod(ZEROS), ZEROS, (0, 1), exact=True),
    C("cumprod_vjp axis=0 with zeros", cumprod_vjp, r(4, 4), np.cumprod(ZEROS, 0), ZEROS, 0),
    C("cumprod_vjp ans=None flat", cumprod_vjp, r(16), None, ZEROS),
    C("cumprod_vjp exact=True axis=1", cumprod_vjp, r(4, 4), None, ZEROS, 1, exact=True),
    # indexing
    C("getitem_vjp slice/None/int", getitem_vjp, r(2, 1), A34, (slice(1, None), None, 0)),
    C("getitem_vjp int", getitem_vjp, r(4), A34, 1),
    C("getitem_vjp bool mask", getitem_vjp, r(2, 4), A34, MASK3),
    C("getitem_vjp 2-d bool mask", getitem_vjp, r(int(MASK34.sum())), A34, MASK34),
    C("getitem_vjp fancy, repeated", getitem_vjp, r(3, 3), A34, (slice(None), IDX)),
    C("getitem_vjp fancy 2-d + int", getitem_vjp, r(2, 2), A34, (np.array([[0, 2], [2, 2]]), 1)),
    C("getitem_vjp list index", getitem_vjp, r(3, 4), A34, [0, 0, 2]),
    C("setitem_vjp_x slice", setitem_vjp_x, r(3, 4), A34, (slice(None), slice(1, 3))),
    C("setitem_vjp_x int", setitem_vjp_x, r(3, 4), A34, 1),
    C("setitem_vjp_x bool mask", setitem_vjp_x, r(3, 4), A34, MASK34),
    C("setitem_vjp_x fancy", setitem_vjp_x, r(3, 4), A34, (slice(None), np.array([0, 2]))),
    C("setitem_vjp_v slice, broadcast v", setitem_vjp_v, r(3, 4), A34, (slice(None), slice(1, 3)),
      r(2)),
    C("setitem_vjp_v int", setitem_vjp_v, r(3, 4), A34, 1, r(4)),
    C("setitem_vjp_v bool mask", setitem_vjp_v, r(3, 4), A34, MASK3, r(2, 4)),
    C("setitem_vjp_v fancy", setitem_vjp_v, r(3, 4), A34, (slice(None), np.array([0, 2])),
      r(3, 2)),
    # shapes and joining
    C("reshape_vjp", reshape_vjp, r(12, 5), A345),
    C("reshape_vjp order=F", reshape_vjp, r(12, 5), A345, "F"),
    C("transpose_vjp axes=(2,0,1)", transpose_vjp, r(5, 3, 4), A345, (2, 0, 1)),
    C("transpose_vjp axes=None", transpose_vjp, r(5, 4, 3), A345),
    C("moveaxis_vjp", moveaxis_vjp, r(4, 5, 3), A345, 0, -1),
    C("broadcast_to_vjp", broadcast_to_vjp, r(2, 3, 4), r(1, 4)),
    C("concatenate_vjp axis=1", concatenate_vjp, r(3, 7), [A34, r(3, 3)], 1),
    C("concatenate_vjp axis=None", concatenate_vjp, r(15), [A34, r(3)], None),
    C("stack_vjp axis=1", stack_vjp, r(3, 2, 4), [A34, A34], 1),
    C("split_vjp, one piece unused", split_vjp, [r(3, 2), None], PARTS, r(3, 5), 1),
    C("column_stack_vjp", column_stack_vjp, r(4, 3), [r(4), r(4, 2)]),
    # products
    C("dot_vjp_a matrix.vector", dot_vjp_a, r(3), A34, r(4)),
    C("dot_vjp_b matrix.vector", dot_vjp_b, r(3), A34, r(4)),
    C("matmul_vjp_a batched broadcast", matmul_vjp_a, r(2, 5, 3, 2), r(2, 1, 3, 4), r(5, 4, 2)),
    C("matmul_vjp_b batched broadcast", matmul_vjp_b, r(2, 5, 3, 2), r(2, 1, 3, 4), r(5, 4, 2)),
    C("matmul_vjp_a vector @ matrix", matmul_vjp_a, r(3, 2), r(4), r(3, 4, 2)),
    C("outer_vjp_a", outer_vjp_a, r(3, 4), r(3), r(2, 2)),
    C("outer_vjp_b", outer_vjp_b, r(3, 4), r(3), r(2, 2)),
    C("inner_vjp_a", inner_vjp_a, r(3, 2), A34, r(2, 4)),
    C("tensordot_vjp_a axes pairs", tensordot_vjp_a, r(3), A345, r(5, 4), [(2, 1), (0, 1)]),
    C("tensordot_vjp_b axes=1", tensordot_vjp_b, r(3, 4, 2), A345, r(5, 2), 1),
    C("einsum_vjp bij,bjk->bik", einsum_vjp, r(2, 3, 5), 2, "bij,bjk->bik", r(2, 3, 4),
      r(2, 4, 5)),
    C("einsum_vjp ii->i", einsum_vjp, r(3), 1, "ii->i", r(3, 3)),
    C("trace_vjp offset=1", trace_vjp, 0.8, A34, 1),
    C("diagonal_vjp axes (0,2)", diagonal_vjp, r(4, 3), A345, 1, 0, 2),
    # linalg
    C("solve_vjp_a batched", solve_vjp_a, r(2, 3, 2), SOLVED, WELL, B32),
    C("solve_vjp_b batched, b broadcast", solve_vjp_b, r(2, 3, 2), SOLVED, WELL, B32),
    C("inv_vjp", inv_vjp, r(2, 3, 3), np.linalg.inv(WELL), WELL),
    C("det_vjp", det_vjp, r(2), np.linalg.det(WELL), WELL),
    C("det_vjp singular", det_vjp, 1.0, 0.0, np.ones((3, 3))),
    C("slogdet_vjp", slogdet_vjp, r(2), tuple(np.linalg.slogdet(WELL)), WELL),
    C("cholesky_vjp", cholesky_vjp, r(3, 3), L, SPD),
    C("eigh_vjp", eigh_vjp, [r(3), r(3, 3)], (W, V), SPD),
    C("pinv_vjp", pinv_vjp, r(3, 4), np.linalg.pinv(M43), M43),
    C("solve_triangular_vjp_a lower", solve_triangular_vjp_a, r(3, 2), TRI_X, TRI, B32, 0, True),
    C("solve_triangular_vjp_b lower", solve_triangular_vjp_b, r(3, 2), TRI_X, TRI, B32, 0, True),
    # reorder and manipulation
    C("sort_vjp axis=0", sort_vjp, r(3, 4), A34, 0),
    C("sort_vjp axis=None", sort_vjp, r(12), A34, None),
    C("flip_vjp axis=1", flip_vjp, r(3, 4), A34, 1),
    C("flip_vjp axis=None", flip_vjp, r(3, 4), A34),
    C("roll_vjp shift=2 axis=1", roll_vjp, r(3, 4), A34, 2, 1),
    C("roll_vjp shifts (1,2) axes (0,1)", roll_vjp, r(3, 4), A34, (1, 2), (0, 1)),
    C("roll_vjp axis=None", roll_vjp, r(3, 4), A34, 5),
    C("rot90_vjp k=3 axes (0,2)", rot90_vjp, r(5, 4, 3), A345, 3, (0, 2)),
    C("repeat_vjp 2 axis=1", repeat_vjp, r(3, 8), A34, 2, 1),
    C("repeat_vjp counts array axis=0", repeat_vjp, r(4, 4), A34, np.array([1, 0, 3]), 0),
    C("tile_vjp", tile_vjp, r(2, 3, 12), A34, (2, 1, 3)),
    C("diff_vjp n=2 axis=0", diff_vjp, r(1, 4), A34, 2, 0),
    C("diag_vjp vector k=-1", diag_vjp, r(4, 4), r(3), -1),
    C("diag_vjp matrix k=1", diag_vjp, r(3), A34, 1),
    C("tril_vjp k=0", tril_vjp, r(3, 4), A34),
    C("triu_vjp k=1 batched", triu_vjp, r(2, 3, 3), r(2, 3, 3), 1),
    # interpolation
    C("linspace_vjp start, array ends", linspace_vjp, r(5, 3), r(3), r(3), 5),
    C("linspace_vjp stop, endpoint=False", linspace_vjp, r(5, 3), r(3), r(3), 5, False,
      which="stop"),
    C("linspace_vjp scalar start", linspace_vjp, r(4), 0.5, 2.0, 4),
    C("interp_vjp_x", interp_vjp_x, r(5), XI, KNOTS, FP),
    C("interp_vjp_fp", interp_vjp_fp, r(5), XI, KNOTS, FP),
    C("interp_vjp_left", interp_vjp_left, r(5), XI, KNOTS, FP, -1.0),
    # scipy.special helpers (SciPy-free)
    C("logsumexp_vjp axis=1", logsumexp_vjp, r(3), LSE, A34, 1),
    C("softmax_vjp axis=0", softmax_vjp, r(3, 4), SOFT, A34, 0),
    C("log_softmax_vjp axis=0", log_softmax_vjp, r(3, 4), np.log(SOFT), A34, 0),
    # derivatives of derivative helpers (Hessians), and tangent helpers (forward mode)
    C("slice_sum axis=1", slice_sum, A34, r(3), 1, False),
    C("slice_sum axis=None keepdims", slice_sum, A34, r(1, 1), None, True),
    C("var_vjp_vjp_a axis=0", var_vjp_vjp_a, r(4, 5), r(4, 5), A345, axis=0, ddof=1),
    C("std_vjp_vjp_ans axis=1", std_vjp_vjp_ans, A34, r(3), np.std(A34, axis=1), A34, axis=1),
    C("norm_vjp_vjp_x ord=3 axis=1", norm_vjp_vjp_x, A34, r(3),
      np.linalg.norm(A34, 3, axis=1), A34, 3, 1),
    C("sort_jvp axis=0", sort_jvp, r(3, 4), A34, 0),
    C("partition_jvp axis=1", partition_jvp, r(3, 4), np.partition(A34, 1, axis=1), A34, 1, 1),
    C("cumprod_jvp axis=1 zeros", cumprod_jvp, r(4, 4), ZEROS, 1),
    C("log_softmax_jvp axis=0", log_softmax_jvp, r(3, 4), np.log(SOFT), A34, 0),
    C("softmax_vjp_vjp_s axis=0", softmax_vjp_vjp_s, r(3, 4), r(3, 4), SOFT, A34, 0),
    C("cholesky_jvp", cholesky_jvp, r(3, 3), L, SPD),
    C("eigh_jvp", eigh_jvp, r(3, 3), (W, V), SPD),
    C("pinv_jvp (4, 3)", pinv_jvp, r(4, 3), np.linalg.pinv(M43), M43),
    C("svd_jvp (4, 3) thin", svd_jvp, r(4, 3), tuple(np.linalg.svd(M43, full_matrices=False)), M43,
      full_matrices=False),
]


# ---------------------------------------------------------------------------
# backends: (to_device, to_host, is_device_array, run)

def _cupy_backend():
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy sees no CUDA device")
    except Exception as e:                        # no driver, no device
        pytest.skip(f"CuPy has no CUDA device: {e}")
    import cupyx
    from device_guard import inherent, locate

    def run(fn, args, kwargs):
        allow = getattr(cupyx, "allow_synchronize", None)
        if allow is None:
            return fn(*args, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
            guard = allow(False)
        try:
            with guard:
                return fn(*args, **kwargs)
        except cupyx.DeviceSynchronized as e:
            where, code, in_linalg = locate(e)
            if not inherent(where, in_linalg):
                pytest.fail(f"device synchronisation in pullback code at {where}: {code}",
                            pytrace=False)
        return fn(*args, **kwargs)          # an inherent one: check the values unguarded

    return cp.asarray, lambda a: a.get(), lambda a: isinstance(a, cp.ndarray), run


def _torch_backend(device):
    torch = pytest.importorskip("torch")
    if device.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip(f"--torch-device={device} but torch sees no CUDA device")
    from device_guard import default_device_cpu, helper_context, inherent, is_sync_error, locate

    def run(fn, args, kwargs):
        try:
            with helper_context(device):
                return fn(*args, **kwargs)
        except RuntimeError as e:
            if not is_sync_error(e):
                raise
            where, code, in_linalg = locate(e)
            if not inherent(where, in_linalg):
                pytest.fail(f"host synchronisation in pullback code at {where}: {code}",
                            pytrace=False)
        with default_device_cpu():          # an inherent one: check the values unguarded
            return fn(*args, **kwargs)

    where = torch.empty(0, device=device).device       # "cuda" -> cuda:0, "cpu:0" -> cpu
    return (lambda a: torch.asarray(a, device=device), lambda a: a.cpu().numpy(),
            lambda a: isinstance(a, torch.Tensor) and a.device == where, run)


@pytest.fixture(params=["cupy", "torch"])
def backend(request):
    if request.param == "cupy":
        return _cupy_backend()
    return _torch_backend(request.config.getoption("--torch-device"))


def _map(value, fn):
    if isinstance(value, (np.ndarray, np.generic)):    # a NumPy scalar: a 0-d device array
        return fn(np.asarray(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def _compare(label, got, want, to_host, is_device):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), f"{label}: {got!r}"
        for k, (g, w) in enumerate(zip(got, want)):
            _compare(f"{label}[{k}]", g, w, to_host, is_device)
        return
    if want is None:
        assert got is None, label
        return
    if hasattr(got, "shape") and not isinstance(got, (np.ndarray, np.generic)):
        assert is_device(got), f"{label}: result {type(got)} is not on the device"
        got = to_host(got)
    else:
        # a Python or NumPy scalar is a result only where NumPy's is one as well
        assert np.ndim(want) == 0 and not isinstance(want, np.ndarray), \
            f"{label}: a host value {type(got).__name__} for device input"
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=1e-10, atol=1e-12, err_msg=label)


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_helper_on_device_arrays(case, backend):
    to_device, to_host, is_device, run = backend
    want = case.fn(*case.args, **case.kwargs)
    args, kwargs = _map(case.args, to_device), _map(case.kwargs, to_device)
    got = run(case.fn, args, kwargs)
    _compare(case.label, got, want, to_host, is_device)


def test_table_covers_distinct_cases():
    labels = [c.label for c in CASES]
    assert len(labels) == len(set(labels)), "two cases share a label (pytest ids must differ)"


def test_gradient_of_numpy_code_on_cupy_arrays():
    """The whole gradient of a function written with NumPy, called with CuPy arrays
    (NumPy hands the calls to CuPy), against the analytic gradient."""
    _cupy_backend()                             # skips without CuPy or a CUDA device
    import cupy as cp

    import pullback

    def f(x, w):
        h = np.tanh(x * w)
        return np.sum(h * h) + np.sum(np.exp(-x) * w)

    x, w = np.linspace(0.1, 1.0, 5), np.linspace(1.0, 2.0, 5)
    h = np.tanh(x * w)
    want = (2 * h * (1 - h * h) * w - np.exp(-x) * w, 2 * h * (1 - h * h) * x + np.exp(-x))
    got = pullback.grad(f, argnums=(0, 1))(cp.asarray(x), cp.asarray(w))
    for g, expected in zip(got, want):
        assert isinstance(g, cp.ndarray)
        np.testing.assert_allclose(g.get(), expected, rtol=1e-12)
