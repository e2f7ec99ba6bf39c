"""Derivatives of NumPy's elementwise functions (ufuncs, ``where``, ``sinc``,
``nan_to_num``, ``real``/``imag``/``conj`` of real inputs), and the helpers every
array rule module shares (``namespace``, ``as_array``, ``unbroadcast``, ...).
``select`` and ``clip`` are in ``piecewise``, ``polyval`` in ``polynomial``.

Conventions shared by every array rule module (``elementwise``, ``reductions``,
``linalg``, ``shapes``, ``indexing``):

* A VJP helper takes the cotangent ``g`` of the result first, then ``ans`` (the
  result) when it needs it, then the primal arguments, and returns the
  cotangent of ONE argument, with exactly that argument's shape.  For a Python
  or NumPy scalar argument it returns a scalar (a NumPy scalar on NumPy).
* Helpers are written against the array API namespace of their inputs
  (``array_api_compat``), without scalar indexing or loops over elements, so
  they also run on PyTorch, CuPy or JAX arrays.  Real (not complex) inputs.
* A helper may return ``g`` itself or a broadcast (read-only) view of it: the
  transform must not update a returned cotangent in place; it adds it.

Elementwise rules are templates written like the maths (``g * np.cos(x)``) so
that they inline into generated code and compile under Numba for scalars.  The
templates do NOT reduce broadcast dimensions: the transform wraps every
elementwise contribution in :func:`unbroadcast` (``unbroadcast(contrib, x)``)
when the shapes may differ.

Choices at points where a derivative is not defined:

* ``abs``/``fabs`` at 0: 0 (``sign``), as JAX, PyTorch and autograd.
* ``maximum``/``minimum`` at ties (``x1 == x2``): half of ``g`` to each, as JAX,
  so that ``maximum(x, x)`` has derivative 1.
* ``fmax``/``fmin``: as ``maximum``/``minimum``; against a NaN the number gets ``g``.
* ``remainder``/``fmod`` at a jump (``x1 / x2`` an integer): the derivative of
  the piece the result comes from (``d/dx1 = 1``, ``d/dx2 = -floor(x1/x2)``).
* ``logaddexp``/``logaddexp2`` at infinite inputs: the limit, ``(1, 0)`` at
  ``(inf, x)`` and ``(inf, -inf)``, ``(0, 1)`` at ``(-inf, x)``, and ``(1/2, 1/2)``
  at ``(inf, inf)`` and ``(-inf, -inf)``, as at every tie.
* ``hypot`` at (0, 0) and ``sinc`` at 0: 0.  ``hypot`` at an infinite input: the
  limit, ``sign(x1)`` against a finite ``x2`` and ``sign(x1) / sqrt(2)`` against an
  infinite one.  ``nan_to_num``: 0 at non-finite entries.
* ``power`` is zero-safe: d/dy x**y is 0 at x == 0 (not 0*log 0 = NaN) and
  d/dx x**y is 0 when y == 0 (not 0 * x**-1 = NaN at x == 0).  ``sqrt`` and
  ``log`` at 0 give inf legitimately, and 0 for a zero cotangent (``strong_zero``).
"""
from __future__ import annotations

import numbers

import array_api_compat
import numpy as np

from . import results, twins
from .forms import numba_twin
from .registry import defnondiff, defrule
from .strong_zero import divided, powered, scaled  # noqa: F401  (named by the templates below)
from .tangents import deftangent

_AxisError = getattr(getattr(np, "exceptions", np), "AxisError")

__all__ = ["unbroadcast", "unbroadcast_product", "namespace", "as_array"]


# ---------------------------------------------------------------------------
# Helpers shared by the array rule modules.

def namespace(*xs):
    """The array API namespace of the array arguments (NumPy's if none is an array).

    Python scalars, lists and None are ignored; NumPy scalars count as NumPy.
    """
    arrays = [x for x in xs if hasattr(x, "shape")]
    # Plain NumPy (the common case) skips array_api_compat's dispatch, which costs
    # microseconds per call: as much as a small rule itself.
    if all(type(x) is np.ndarray or isinstance(x, np.generic) for x in arrays):
        return _NUMPY
    return array_api_compat.array_namespace(*arrays)


_NUMPY = array_api_compat.array_namespace(np.empty(0))


def is_scalar(x) -> bool:
    """True for a Python number or a NumPy scalar (whose cotangent is a scalar)."""
    return isinstance(x, (numbers.Number, np.generic))


def shape_of(x) -> tuple:
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


def device_of(x):
    """The device of an array; None for anything else (a Python number or list)."""
    return array_api_compat.device(x) if hasattr(x, "shape") else None


def as_scalar(r):
    """A 0-d NumPy array becomes a NumPy scalar; anything else is returned unchanged.

    Only NumPy: a 0-d device array stays on its device (no host round-trip).
    """
    if isinstance(r, np.ndarray) and r.ndim == 0:
        return r[()]
    return r


def like_arg(ct, x):
    """Return cotangent ``ct`` in the form of argument ``x`` (scalar for a scalar)."""
    if is_scalar(x):
        return as_scalar(ct)
    return ct


def as_array(xp, x, *like):
    """``x`` as an array of namespace ``xp``.

    A Python number or list takes the device of the first array in ``like``; a
    Python float also its floating dtype (float64 when there is none), so that a
    cotangent given as a Python float keeps its precision on torch (whose
    default dtype is float32).  A number is filled in on the device (``full``),
    not copied from the host: on a GPU such a copy waits for the device.
    """
    if hasattr(x, "shape"):
        return x
    refs = [r for r in like if hasattr(r, "shape")]
    kwargs = {}
    if refs:
        kwargs["device"] = array_api_compat.device(refs[0])
    if isinstance(x, float):
        kwargs["dtype"] = float_dtype(xp, *refs)
    if isinstance(x, (bool, int, float)) and refs:
        return xp.full((), x, **kwargs)
    return xp.asarray(x, **kwargs)


def mask_on(xp, where, ref):
    """A ``where=`` mask as an array of ``xp`` on the device of ``ref`` (a mask given
    as a NumPy array or a list is copied there)."""
    return xp.asarray(where, device=array_api_compat.device(ref))


def float_dtype(xp, *xs):
    """A floating dtype for a cotangent: the first floating input's, else float64."""
    for x in xs:
        dt = getattr(x, "dtype", None)
        if dt is not None and xp.isdtype(dt, "real floating"):
            return dt
    return xp.float64


def normalize_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, int, negative int or tuple) as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = [int(a) for a in axis]
    else:
        axes = [int(axis)]
    for a in axes:
        if not -ndim <= a < ndim:
            raise _AxisError(a, ndim)
    return tuple(sorted(a % ndim for a in axes))


def expand_reduced(g, shape, axes, keepdims, xp=None, like=None):
    """Broadcast the cotangent of a reduction over ``axes`` back to ``shape``.

    ``g`` has the reduced shape (axes removed, or kept as 1 with keepdims);
    the result is a broadcast view of shape ``shape``.  ``like``: the reduced
    array, whose device and dtype a Python-number ``g`` takes.
    """
    xp = xp or namespace(g, like)
    g = as_array(xp, g, like)
    if not keepdims:
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        g = xp.reshape(g, kept)
    return xp.broadcast_to(g, tuple(shape))


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (the inverse of broadcasting).

    ``x`` may be an array with fewer or size-1 dimensions, or a Python/NumPy
    scalar (then the result is a scalar).  When the shapes already agree ``g``
    itself is returned, not a copy.  A ``g`` smaller than ``x`` (a scalar
    cotangent for an array argument) is broadcast up to ``x``'s shape.
    """
    if type(g) is np.ndarray and type(x) is np.ndarray and g.shape == x.shape:
        return g         # the common cases first: they run once per operand per step
    if type(g) is np.ndarray and (type(x) is float or isinstance(x, np.generic)):
        return g.sum()   # a scalar operand broadcast over an array: a NumPy scalar
    shape = shape_of(x)
    gshape = shape_of(g)
    if gshape == shape:
        return like_arg(g, x)
    xp = namespace(g, x)
    g = as_array(xp, g, x)
    extra = len(gshape) - len(shape)
    if extra > 0:
        g = xp.sum(g, axis=tuple(range(extra)))
        gshape = gshape[extra:]
    # Dimensions x has as 1 and g has larger were broadcast: sum them, keeping them.
    ones = tuple(i for i, n in enumerate(shape)
                 if n == 1 and i >= len(shape) - len(gshape)
                 and gshape[i - (len(shape) - len(gshape))] != 1)
    if ones:
        offset = len(shape) - len(gshape)
        g = xp.sum(g, axis=tuple(i - offset for i in ones), keepdims=True)
    if shape_of(g) != shape:
        g = xp.broadcast_to(g, shape)
    return like_arg(g, x)


def unbroadcast_product(a, b, x):
    """``unbroadcast(a * b, x)``: for a scalar ``x`` (``c`` in ``c * u``) and two
    float64 arrays of one shape, their dot product: one pass, no temporary."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.shape == b.shape \
            and a.dtype == np.float64 and b.dtype == np.float64 \
            and (type(x) is float or isinstance(x, np.floating)):
        return np.vdot(a, b)
    return unbroadcast(a * b, x)


@numba_twin(unbroadcast_product)
def _unbroadcast_product_numba(a, b, x):
    if not twins.is_number(x):
        return lambda a, b, x: unbroadcast(a * b, x)   # x's kind was not known
    if twins.is_float_array(a) and twins.is_float_array(b) and a.ndim == b.ndim:
        dot = twins.jitted(_sum_of_products)
        return lambda a, b, x: dot(a, b)
    if twins.is_array(a) or twins.is_array(b):
        return lambda a, b, x: np.sum(a * b)
    return lambda a, b, x: a * b


def _sum_of_products(a, b):
    """Numba: ``np.sum(a * b)`` in one pass without the product array when the
    shapes agree (views when contiguous), else through it."""
    if a.shape != b.shape:
        return np.sum(a * b)
    fa, fb = np.ascontiguousarray(a).ravel(), np.ascontiguousarray(b).ravel()
    total = 0.0
    for i in range(fa.size):
        total += fa[i] * fb[i]
    return total


def _sum_onto(g, x):
    """Numba: ``g`` summed onto ``x``'s shape (any ranks), each entry of the result
    the sum of its terms in the order of ``g``'s entries (C order).  The index into
    the result is carried from one entry to the next (no division per entry), and
    a run along g's last axis that x does not have is summed in a register."""
    gc = np.ascontiguousarray(g).ravel()
    out = np.zeros(x.size, gc.dtype)    # g's dtype: the twin also returns g itself
    gshape, xshape = g.shape, x.shape
    nd = len(gshape)
    off = nd - len(xshape)
    # step[d]: how far the result's index moves along g's axis d (0: summed there).
    step = np.zeros(nd, np.int64)
    stride = 1
    for d in range(nd - 1, off - 1, -1):
        n = xshape[d - off]
        if n != 1:
            step[d] = stride
        stride *= n
    if gc.size == 0:
        return out.reshape(x.shape)
    inner = gshape[nd - 1]
    last = step[nd - 1]
    idx = np.zeros(nd, np.int64)
    at = 0
    for base in range(0, gc.size, inner):
        if last == 0:
            acc = out[at]
            for k in range(inner):
                acc += gc[base + k]
            out[at] = acc
        else:
            for k in range(inner):
                out[at + k * last] += gc[base + k]
        d = nd - 2              # the next entry's index: an odometer over axes nd-2..0
        while d >= 0:
            idx[d] += 1
            at += step[d]
            if idx[d] < gshape[d]:
                break
            at -= step[d] * gshape[d]
            idx[d] = 0
            d -= 1
    return out.reshape(x.shape)


@numba_twin(unbroadcast)
def _unbroadcast_numba(g, x):
    if twins.is_number(x):
        if twins.is_array(g):
            return lambda g, x: np.sum(g)
        return lambda g, x: g
    if not twins.is_array(x):
        return None
    if twins.is_number(g):
        return lambda g, x: np.full(x.shape, g)
    if g.ndim < x.ndim:
        return lambda g, x: np.zeros(x.shape) + g
    if g.ndim > x.ndim:
        off = g.ndim - x.ndim     # known when typing: a static tuple slice below
        general, rows = twins.jitted(_sum_onto), twins.jitted(twins.sum_rows)

        def leading(g, x):
            if g.shape[off:] != x.shape:
                return general(g, x)
            return rows(np.ascontiguousarray(g).reshape((-1, x.size))).reshape(x.shape)
        return leading
    onto = twins.jitted(_sum_onto)

    def same_rank(g, x):
        if g.shape == x.shape:
            return g
        return onto(g, x)
    return same_rank


# ---------------------------------------------------------------------------
# Unary ufuncs.  Written with ans where it saves a transcendental call.

defrule(np.sin, "x, /", x="g * np.cos(x)")
defrule(np.cos, "x, /", x="-g * np.sin(x)")
defrule(np.tan, "x, /", x="g * (1.0 + ans * ans)")
defrule(np.exp, "x, /", x="g * ans")
defrule(np.log, "x, /", x="divided(g, x)")
defrule(np.log1p, "x, /", x="divided(g, 1.0 + x)")
defrule(np.expm1, "x, /", x="g * (ans + 1.0)")
defrule(np.sqrt, "x, /", x="divided(g, 2.0 * ans)")
defrule(np.tanh, "x, /", x="g * (1.0 - ans * ans)")
defrule(np.sinh, "x, /", x="g * np.cosh(x)")
defrule(np.cosh, "x, /", x="g * np.sinh(x)")
defrule(np.arctan, "x, /", x="g / (1.0 + x * x)")
defrule(np.arcsin, "x, /", x="divided(g, np.sqrt(1.0 - x * x))")
defrule(np.arccos, "x, /", x="-divided(g, np.sqrt(1.0 - x * x))")
defrule(np.absolute, "x, /", x="g * np.sign(x)")   # np.abs is np.absolute
defrule(np.fabs, "x, /", x="g * np.sign(x)")
defrule(np.negative, "x, /", x="-g")
defrule(np.square, "x, /", x="g * 2.0 * x")
defrule(np.reciprocal, "x, /", x="-scaled(g, ans * ans)")

defrule(np.log2, "x, /", x="divided(g, x * 0.6931471805599453)")
defrule(np.log10, "x, /", x="divided(g, x * 2.302585092994046)")
defrule(np.exp2, "x, /", x="g * ans * 0.6931471805599453")
defrule(np.arcsinh, "x, /", x="g / np.sqrt(x * x + 1.0)")
defrule(np.arccosh, "x, /", x="divided(g, np.sqrt(x * x - 1.0))")
defrule(np.arctanh, "x, /", x="divided(g, 1.0 - x * x)")
for _f in (np.deg2rad, np.radians):
    defrule(_f, "x, /", x="g * 0.017453292519943295")
for _f in (np.rad2deg, np.degrees):
    defrule(_f, "x, /", x="g * 57.29577951308232")
# sinc(x) = sin(pi x) / (pi x): derivative (cos(pi x) - sinc(x)) / x, 0 at x == 0.
defrule(np.sinc, "x", x="g * (np.cos(np.pi * x) - ans) / (x + (x == 0))")
# Infinities and NaN become finite constants: no derivative flows there.
defrule(np.nan_to_num, "x, copy=True, nan=0.0, posinf=None, neginf=None",
        x="g * np.isfinite(x)")

# Complex parts, for real inputs (complex values are refused by the API): real
# parts and conjugates are the identity, imaginary parts and angles constants.
defrule(np.conjugate, "x, /", methods=("conj", "conjugate"), x="g")   # np.conj is np.conjugate
defrule(np.real, "val", val="g")
defrule(np.real_if_close, "a, tol=100", a="g")
for _elementwise in (np.sinc, np.nan_to_num, np.real, np.real_if_close):
    deftangent(_elementwise, elementwise=True)
defnondiff(np.imag, result=results.like)
defnondiff(np.angle, result=results.like)

# ---------------------------------------------------------------------------
# Numba twins of the transcendental unary ufuncs, for large float64 arrays.
#
# Numba computes np.exp, np.tanh, ... of an array with one libm call per entry
# (without Intel's SVML, which it uses only when installed).  NumPy's loops for
# these are SIMD (AVX2, AVX-512) and 3 to 11 times as fast on a large array
# (np.tanh of 32768 float64: 55 µs against Numba's 340).  Entering object mode
# costs about 3 µs, so from SIMD_MIN_SIZE entries the twin has NumPy write the
# result into an array Numba made: NumPy's numbers, bit for bit, as on the
# Python backend.  Smaller arrays, other dtypes and numbers keep Numba's loop.
# (sin, cos, sqrt and the like are as fast in Numba: no twin.)

SIMD_UFUNCS = (np.exp, np.log, np.tanh, np.tan, np.expm1, np.log1p, np.arctan, np.sinh,
               np.cosh, np.arcsin, np.arccos, np.arctanh, np.arcsinh, np.arccosh, np.exp2,
               np.log2, np.log10)
SIMD_MIN_SIZE = 2048


def _simd_ufunc_twin(uf):
    name = uf.__name__
    made: dict = {}

    def impl(kind):
        """The implementation for ``kind``: 'simd' (a float64 array), 'plain' (any
        other argument), 'out' (an out= array given)."""
        if kind not in made:
            made[kind] = _simd_impls(uf)[kind]
        return made[kind]

    def twin(x, out=None):
        if not twins.is_none(out):
            return impl("out")
        if twins.is_float_array(x) and x.dtype.bitwidth == 64:
            return impl("simd")
        return impl("plain")
    twin.__name__ = f"_{name}_numba"
    return twin


def _simd_impls(uf):
    """The implementations of ``uf``'s twin, by kind (see :func:`_simd_ufunc_twin`)."""
    from numba import objmode
    name = uf.__name__

    def with_out(x, out=None):
        return uf(x, out)

    def plain(x, out=None):
        return uf(x)

    def simd(x, out=None):
        if x.size < SIMD_MIN_SIZE:
            return uf(x)
        y = np.empty(x.shape)
        named = name                # the object-mode block gets a local, not a free variable
        with objmode():
            # Only this module's globals and the block's locals: Numba rebuilds the
            # block's environment from this module when it loads the derivative from
            # the disk cache.
            getattr(np, named)(x, out=y)
        return y
    return {"out": with_out, "plain": plain, "simd": simd}


for _f in SIMD_UFUNCS:
    numba_twin(_f, arrays=True)(_simd_ufunc_twin(_f))

# ---------------------------------------------------------------------------
# Binary ufuncs (positional x1, x2 as NumPy names them).

defrule(np.add, "x1, x2, /", x1="g", x2="g")
defrule(np.subtract, "x1, x2, /", x1="g", x2="-g")
defrule(np.multiply, "x1, x2, /", x1="g * x2", x2="g * x1")
# (np.true_divide is np.divide)
defrule(np.divide, "x1, x2, /", x1="divided(g, x2)", x2="-scaled(g, ans / x2)")
# Zero-safe power, written with arithmetic on comparisons (no np.where) so that
# it stays valid for scalars under Numba:
#   d/dx1: x1 ** (x2 - 1) with exponent 0 when x2 == 0, so 0 * x1**-1 never happens
#   (powered: np.power without the RuntimeWarning where x1 == 0 and x2 < 1);
#   d/dx2: log of x1, with x1 == 0 replaced by 1, where ans == 0 anyway (x2 > 0).
defrule(np.power, "x1, x2, /",
        x1="scaled(g, x2 * powered(x1, x2 - 1 + (x2 == 0)))",
        x2="scaled(g, ans * np.log(x1 + (x1 == 0)))")
# Ties split evenly, as JAX.
defrule(np.maximum, "x1, x2, /",
        x1="scaled((x1 > x2) + 0.5 * (x1 == x2), g)",
        x2="scaled((x2 > x1) + 0.5 * (x1 == x2), g)")
defrule(np.minimum, "x1, x2, /",
        x1="scaled((x1 < x2) + 0.5 * (x1 == x2), g)",
        x2="scaled((x2 < x1) + 0.5 * (x1 == x2), g)")

# remainder (np.mod, and x % y on arrays) takes the sign of x2, fmod that of x1:
# x1 - x2 * floor(x1 / x2) and x1 - x2 * trunc(x1 / x2), piecewise linear.
defrule(np.remainder, "x1, x2, /", x1="g", x2="-g * np.floor(x1 / x2)")   # np.mod is np.remainder
defrule(np.fmod, "x1, x2, /", x1="g", x2="-g * np.trunc(x1 / x2)")
# logaddexp: d/dx1 = exp(x1 - ans), a weight in [0, 1].  Where x1 - ans is inf - inf
# (x1 infinite) fmin takes the limit instead: 0 in the exponent (weight 1) against a
# smaller x2, log(1/2) (weight 1/2, as at every tie, so that logaddexp(x, x) = x + log 2
# has derivative 1) against an equal x2, NaN for a NaN input (0 * sign(NaN)).
defrule(np.logaddexp, "x1, x2, /",
        x1="g * np.exp(np.fmin(x1 - ans, 0.0 * np.sign(ans) - 0.6931471805599453 * (x1 == x2)))",
        x2="g * np.exp(np.fmin(x2 - ans, 0.0 * np.sign(ans) - 0.6931471805599453 * (x1 == x2)))")
defrule(np.logaddexp2, "x1, x2, /",
        x1="g * np.exp2(np.fmin(x1 - ans, 0.0 * np.sign(ans) - 1.0 * (x1 == x2)))",
        x2="g * np.exp2(np.fmin(x2 - ans, 0.0 * np.sign(ans) - 1.0 * (x1 == x2)))")
# hypot at (0, 0): 0, as the 2-norm of a zero vector (x1 == 0 there, so 0 / 1).  Where
# x1 / ans is inf / inf (x1 infinite) fmax takes the limit instead, the lower bound it
# gets there: sign(x1) against a finite x2, sign(x1) / sqrt(2) against an infinite one
# (the value along |x1| == |x2|, as at every such finite point); elsewhere the bound is
# -1 <= x1 / ans, so fmax keeps the quotient; NaN where ans is (0 * sign(NaN)).
defrule(np.hypot, "x1, x2, /",
        x1="g * np.fmax(x1 / (ans + (ans == 0)), np.isinf(x1) * (np.sign(x1) * "
           "(1.0 - 0.2928932188134524 * np.isinf(x2)) + 1.0) - 1.0 + 0.0 * np.sign(ans))",
        x2="g * np.fmax(x2 / (ans + (ans == 0)), np.isinf(x2) * (np.sign(x2) * "
           "(1.0 - 0.2928932188134524 * np.isinf(x1)) + 1.0) - 1.0 + 0.0 * np.sign(ans))")
defrule(np.arctan2, "x1, x2, /", x1="g * x2 / (x1 * x1 + x2 * x2)",
        x2="-g * x1 / (x1 * x1 + x2 * x2)")
# fmax/fmin: as maximum/minimum, and a NaN loses to a number.
defrule(np.fmax, "x1, x2, /",
        x1="scaled((x1 > x2) + 0.5 * (x1 == x2) + np.isnan(x2), g)",
        x2="scaled((x2 > x1) + 0.5 * (x1 == x2) + np.isnan(x1) * (x2 == x2), g)")
defrule(np.fmin, "x1, x2, /",
        x1="scaled((x1 < x2) + 0.5 * (x1 == x2) + np.isnan(x2), g)",
        x2="scaled((x2 < x1) + 0.5 * (x1 == x2) + np.isnan(x1) * (x2 == x2), g)")

# The one-argument form np.where(condition) returns indices: nothing to differentiate.
defrule(np.where, "condition, x=None, y=None, /",
        x="np.where(condition, g, 0.0)",
        y="np.where(condition, 0.0, g)")
deftangent(np.where, linear="x, y")
