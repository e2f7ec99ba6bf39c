"""The zero-safe derivative of ``np.prod``.

The cotangent of ``x`` in ``p = prod(x)`` is ``g`` times the product of the
*other* entries of each reduced slice.  The textbook formula ``g * p / x`` is
fast but gives ``0/0 = NaN`` wherever ``x`` has a zero (and ``inf/inf`` when
``p`` overflowed).  The exact answer, for a slice with

* no zero: ``p / x_i``;
* one zero, at ``k``: the product of the nonzero entries at ``k``, 0 elsewhere;
* two or more zeros: 0 everywhere (every "product of the others" keeps a zero).

Two formulations, both without Python loops over slices or elements and
without reading single elements (so they run on GPU arrays):

* **exact** (:func:`prod_vjp_exact`): move the reduced axes to the end,
  reshape to ``(..., n)`` and multiply the *exclusive* cumulative products
  from the left and from the right: ``others_i = prod(x[:i]) * prod(x[i+1:])``.
  No division, no test for zeros, no data-dependent branch: one formula for
  every slice, so no host round-trip on a device.  It is built only from
  differentiable operations (``cumulative_prod``, ``concat``, ``flip``,
  ``reshape``, ``multiply``), so a second pass can differentiate it again and
  the Hessian is exact even with zeros.  For instance with exactly two zeros
  in a slice, at ``k`` and ``l``: the gradient is 0 everywhere, yet the mixed
  second derivative ``d2 prod / dx_k dx_l`` is the product of the remaining
  entries, which is what differentiating ``left * right`` gives (a formula
  that special-cased "two zeros -> 0" would lose it).
* **fast**: ``g * p / x``, used where asking "are there zeros?" is free, i.e.
  on NumPy arrays and PyTorch CPU tensors.  The question is asked of ``p``,
  not of ``x`` (a reduced array, so cheaper): if every ``p`` is finite and
  nonzero then no entry of ``x`` is zero or infinite and ``p / x`` is exact.
  Otherwise the exact path runs.  A float64 C-contiguous NumPy array reduced
  along one axis (or all of it) goes through a compiled kernel instead, zeros
  or not (:func:`_prod_grad_kernel`: ``g * p / x`` in one pass reusing the
  primal's ``p``, or the zero-count algorithm in two).  Other NumPy arrays run
  the exact path as a short Python loop over the positions *along* the
  reduced axis (each step a vector operation over all slices at once),
  because NumPy's own ``cumprod`` is several times slower than that when the
  slices are short and many; long slices use the ``cumprod`` formulation.

Device arrays (PyTorch on a GPU, CuPy, JAX) and NumPy subclasses always take
the exact path.  ``exact=True`` forces it anywhere (a second-order pass must
differentiate the exact path, not the fast one, when ``x`` may hold zeros).

Conventions as in :mod:`pullback.rules.elementwise`: a helper takes ``g``,
``ans`` and the primal arguments and returns the cotangent of one argument with
that argument's shape (a scalar for a scalar).  Complex inputs get the
unconjugated product (the convention of JAX and autograd).

``cumprod`` (in :mod:`.cumulative`) is differentiated the same way, from the
building blocks here.
"""
from __future__ import annotations

import cmath
import functools
import math

import array_api_compat
import numpy as np

from ..core import numbacache
from . import results
from .elementwise import as_array, is_scalar, like_arg, mask_on, namespace, normalize_axes
from .registry import defrule

__all__ = ["prod_vjp", "prod_vjp_exact", "cumprod_last", "inverse_permutation", "host_array"]


# ---------------------------------------------------------------------------
# Building blocks of the exact path, along the last axis, for any namespace.

def cumprod_last(xp, y):
    """Inclusive cumulative product along the last axis.

    ``cumulative_prod`` is in the 2024 array API; older namespaces have
    ``cumprod``; failing both, a Hillis-Steele scan (``log2(n)`` multiplies of
    shifted copies), which is branch-free and differentiable too.
    """
    cumulative_prod = getattr(xp, "cumulative_prod", None)
    if cumulative_prod is not None:
        return cumulative_prod(y, axis=-1)
    cumprod = getattr(xp, "cumprod", None)
    if cumprod is not None:
        return cumprod(y, axis=-1)
    return _scan_prod_last(xp, y)


def _scan_prod_last(xp, y):
    """Inclusive cumulative product by doubling: after the step with shift d,
    ``y[i]`` is the product of ``x[i-2d+1 .. i]``."""
    n = y.shape[-1]
    d = 1
    while d < n:
        y = y * xp.concat([xp.ones_like(y[..., :d]), y[..., :-d]], axis=-1)
        d *= 2
    return y


def _others_product_last(xp, y):
    """``out[..., i] = prod_{j != i} y[..., j]``: exclusive products from both ends."""
    ones = xp.ones_like(y[..., :1])
    left = cumprod_last(xp, xp.concat([ones, y[..., :-1]], axis=-1))
    # [1, y[n-1], y[n-1] y[n-2], ...] reversed: right[i] = prod(y[i+1:]).
    right = cumprod_last(xp, xp.concat([ones, xp.flip(y[..., 1:], axis=-1)], axis=-1))
    return left * xp.flip(right, axis=-1)


def inverse_permutation(perm):
    """The permutation that undoes ``perm`` (a sequence of axes)."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _move_to_end(xp, x, axes):
    """``x`` with ``axes`` moved last and merged: shape ``kept_shape + (n,)``."""
    shape = tuple(x.shape)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    kept_shape = tuple(shape[d] for d in kept)
    n = math.prod(shape[d] for d in axes)
    y = xp.reshape(xp.permute_dims(x, kept + axes), kept_shape + (n,))
    return y, kept + axes, kept_shape


def _move_back(xp, y, shape, perm):
    """Undo :func:`_move_to_end` for an array of the moved shape."""
    y = xp.reshape(y, tuple(shape[d] for d in perm))
    return xp.permute_dims(y, inverse_permutation(perm))


# ---------------------------------------------------------------------------
# prod

def prod_vjp_exact(g, x, axis=None, keepdims=False, initial=None):
    """Cotangent of ``x`` in ``prod(x, axis)``, branch-free and division-free.

    ``g`` has the shape of the result (with or without the kept axes: both
    reshape the same way).  See the module docstring: this is the
    formulation to differentiate again for second derivatives.
    """
    xp = namespace(g, x)
    x = as_array(xp, x, g)
    g = as_array(xp, g, x)
    axes = normalize_axes(axis, x.ndim)
    y, perm, kept_shape = _move_to_end(xp, x, axes)
    gy = xp.reshape(g, kept_shape + (1,))
    if initial is not None:
        gy = gy * initial
    return _move_back(xp, _others_product_last(xp, y) * gy, x.shape, perm)


def prod_vjp(g, ans, x, axis=None, keepdims=False, *, initial=None, where=True, exact=None):
    """Cotangent of ``x`` in ``ans = prod(x, axis=axis, keepdims=keepdims)``.

    Exact for any number of zeros per reduced slice.  ``ans`` may be None (it
    is recomputed where needed).  ``initial`` and ``where`` are NumPy's: the
    product also includes ``initial``; entries masked out by ``where`` do not
    enter it (cotangent 0).  ``exact``: None chooses (fast path where the zero
    test is free and passes); True always takes the exact, branch-free path.
    """
    if exact is None and type(x) is np.ndarray and (where is True or where is None):
        return _prod_vjp_numpy(g, ans, x, axis, initial)
    if where is not None and where is not True:
        xp = namespace(g, x)
        xa = as_array(xp, x, g)
        mask = mask_on(xp, where, xa)
        # Masked-out entries act as 1 in the product, so the rule for the
        # filled array holds; they then get no cotangent.
        filled = xp.where(mask, xa, xp.ones_like(xa))
        ct = prod_vjp(g, ans, filled, axis, keepdims, initial=initial, exact=exact)
        return like_arg(xp.where(mask, ct, xp.zeros_like(ct)), x)
    if is_scalar(x):
        return like_arg(prod_vjp(g, ans, np.asarray(x), axis, keepdims,
                                 initial=initial, exact=exact), x)
    xp = namespace(g, x)
    if exact is None and host_array(x):
        axes = normalize_axes(axis, x.ndim)
        kshape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        if ans is None:
            ans = xp.prod(x, axis=axes, keepdims=True) * (1 if initial is None else initial)
        gk = xp.reshape(as_array(xp, g, x), kshape)
        ak = xp.reshape(as_array(xp, ans, x), kshape)
        if bool(xp.all(xp.isfinite(ak) & (ak != 0))):
            return gk * ak / x
    return prod_vjp_exact(g, x, axis, keepdims, initial)


def host_array(x) -> bool:
    """Whether ``bool(array)`` is cheap: a PyTorch CPU tensor (no device sync)."""
    return array_api_compat.is_torch_array(x) and x.device.type == "cpu"


def _prod_vjp_numpy(g, ans, x, axis, initial):
    """NumPy: ``g * ans / x`` when every product is finite and nonzero, else exact.

    Written for small arrays too, where Python overhead is most of the time.  A
    float64 C-contiguous array reduced along one axis goes through a compiled
    kernel (see _prod_grad_kernel), zeros or not; otherwise the NumPy paths
    below.
    """
    shape = x.shape
    if initial is None and x.dtype == np.float64 and x.ndim and x.flags.c_contiguous \
            and (axis is None or type(axis) is int and -x.ndim <= axis < x.ndim):
        out = _prod_vjp_kernel(g, ans, x, axis)
        if out is not None:
            return out
    if type(axis) is int and -len(shape) <= axis < len(shape):     # the common case, quickly
        axis %= len(shape)
        axes = (axis,)
        kshape = shape[:axis] + (1,) + shape[axis + 1:]
    else:
        axes = normalize_axes(axis, len(shape))
        kshape = tuple([1 if d in axes else s for d, s in enumerate(shape)])
    g = g.reshape(kshape) if type(g) is np.ndarray else np.reshape(g, kshape)
    if ans is None:
        ans = np.multiply.reduce(x, axis=axes, keepdims=True)
        if initial is not None:
            ans = ans * initial
    a = ans.reshape(kshape) if type(ans) is np.ndarray else np.reshape(ans, kshape)
    # Every product finite and nonzero?  Asked of the (small) reduced array: a
    # count of nonzeros, and <a, a>, which is inf or NaN if any product is (an
    # overflow of <a, a> only sends us to the exact path, which is also right).
    if np.count_nonzero(a) == a.size and cmath.isfinite(np.vdot(a, a)):
        return (g * a) / x
    if initial is not None:
        g = g * initial
    n = math.prod([shape[d] for d in axes])
    if _row_loop_pays(n, x.size // n if n else 0):
        return _others_product_rows(g, x, axes)
    return prod_vjp_exact(g, x, axes, True)


_NO_PRODUCTS = np.empty(0)


@functools.lru_cache(maxsize=256)
def _layout(shape: tuple, axis) -> tuple:
    """(pre, n, post) of an array of ``shape`` around ``axis`` (all of it for None)."""
    if axis is None:
        return 1, math.prod(shape), 1
    axis %= len(shape)
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _prod_vjp_kernel(g, ans, x, axis):
    """The compiled single-axis path for a float64 C-contiguous ``x``; None when a
    product over- or underflows (then the caller takes the NumPy paths).

    ``ans`` (the primal's products) is reused when it is a float64 array: no
    second product pass when every product is finite and nonzero.  ``g`` goes
    in as it is when it is float64 (a broadcast ``g``, as sum's cotangent is, as
    its one entry).  The arrays keep their shapes: the compiled code reshapes
    them (each NumPy call here costs more than the kernel on a small array).
    """
    pre, n, post = _layout(x.shape, axis)
    if type(g) is np.ndarray and g.dtype == np.float64 and g.size == pre * post:
        if not g.flags.c_contiguous:
            # A broadcast scalar (sum's cotangent) goes in as its one entry,
            # anything else as a copy: the kernel takes C-contiguous arrays only.
            g = g[(slice(0, 1),) * g.ndim] if not any(g.strides) else np.ascontiguousarray(g)
    else:
        g = np.ascontiguousarray(np.broadcast_to(g, (pre, post)) if np.ndim(g) == 0 else
                                 np.reshape(g, (pre, post)), dtype=np.float64)
    a = _NO_PRODUCTS
    if type(ans) is np.ndarray:
        if ans.dtype == np.float64 and ans.size == pre * post and ans.flags.c_contiguous:
            a = ans
    elif type(ans) is np.float64 and pre * post == 1:       # axis=None
        a = np.full(1, ans)
    out = np.empty(x.shape)
    if not (_KERNEL or _kernel())(x, g, out, a, pre, n, post):
        return None
    return out


_KERNEL = None
_GRAD3 = None     # _prod_grad_kernel compiled, which the compiled _prod_grad_shaped calls


def _kernel():
    """``_prod_grad_shaped`` compiled with Numba on first use (cached in pullback's
    cache directory, never beside this file)."""
    global _KERNEL, _GRAD3
    if _KERNEL is None:
        from numba import njit
        _GRAD3 = njit(nogil=True)(_prod_grad_kernel)
        _KERNEL = numbacache.njit(_prod_grad_shaped, nogil=True)
    return _KERNEL


def _prod_grad_shaped(x, g, out, a, pre, n, post):
    """_prod_grad_kernel of C-contiguous arrays of any shape: ``x`` and ``out`` of
    pre * n * post entries, ``g`` of pre * post or one, ``a`` of pre * post or none."""
    g2 = g.reshape((pre, post)) if g.size == pre * post else g.reshape((1, 1))
    a2 = a.reshape((pre, post)) if a.size == pre * post else a.reshape((0, 0))
    return _GRAD3(x.reshape((pre, n, post)), g2, out.reshape((pre, n, post)), a2)


def _prod_grad_kernel(x3, g2, out, a2):  # noqa: C901  (one loop nest, compiled by Numba as a whole)
    """Cotangent of prod over the middle axis of x3 (pre, n, post), cotangent g2.

    ``g2``: (pre, post), or (1, 1) for the same cotangent everywhere.  ``a2``:
    the products (pre, post) if known, else an empty array.  Where every
    known product of a row of slices is finite and nonzero, one pass:
    ``g * P / x``.  Otherwise a first pass takes each slice's product of the
    nonzero entries P' and counts its zeros, and a second pass writes: no zero
    -> g * P' / x; one zero -> g * P' at the zero and 0 elsewhere; two or more
    -> 0.  Every inner loop runs along the last (contiguous) axis without
    branches, so the compiler vectorises it.  Exact for any zeros; returns False
    if a zero-free product is 0 or infinite (underflow, overflow), where P / x
    would be wrong.
    """
    pre, n, post = x3.shape
    known = a2.shape[0] == pre and a2.shape[1] == post
    num = np.empty(post)        # g * P' for the entries that are not zero (0 if a zero)
    at0 = np.empty(post)        # g * P' at the zero of a one-zero slice, else 0
    div = np.empty(post)        # 1 where the slice has no zero, 0 where it has
    gs = np.empty(post)         # this row's cotangents
    inf = np.inf
    for a in range(pre):
        if g2.shape[0] == pre and g2.shape[1] == post:
            for b in range(post):
                gs[b] = g2[a, b]
        else:
            gs[:] = g2[0, 0]
        fast = known
        if known:
            for b in range(post):
                p = a2[a, b]
                fast &= (p != 0.0) & (abs(p) < inf)
        if fast:
            for b in range(post):
                num[b] = gs[b] * a2[a, b]
            for i in range(n):
                for b in range(post):
                    # v is never 0 here; the select tells the compiler so (else
                    # Numba guards each division for ZeroDivisionError, which
                    # keeps the loop from vectorising: 6x slower).
                    v = x3[a, i, b]
                    out[a, i, b] = num[b] / (v if v != 0.0 else 1.0)
            continue
        num[:] = 1.0
        at0[:] = 0.0
        for i in range(n):
            for b in range(post):
                v = x3[a, i, b]
                z = v == 0.0
                num[b] *= 1.0 if z else v
                at0[b] += 1.0 if z else 0.0
        ok = True
        for b in range(post):
            p = num[b]
            c = at0[b]
            s = gs[b] * p
            ok &= (c != 0.0) | ((p != 0.0) & (abs(p) < inf))
            num[b] = s if c == 0.0 else 0.0
            at0[b] = s if c == 1.0 else 0.0
            div[b] = 1.0 if c == 0.0 else 0.0
        if not ok:
            return False
        for i in range(n):
            for b in range(post):
                v = x3[a, i, b]
                out[a, i, b] = at0[b] if v == 0.0 else num[b] / (v if div[b] != 0.0 else 1.0)
    return True


def _row_loop_pays(n: int, m: int) -> bool:
    """Whether a loop over the n positions of the reduced axis beats cumprod.

    Each step of the loop is one vector operation over the m slices: about a
    microsecond of call overhead plus m cheap multiplies.  NumPy's accumulate
    (cumprod) costs some 4 ns per element whatever the layout, so for the
    seed's 10 x 1000 matrix it is 45 us against 20 us for the loop.  The loop
    loses only when the slices are few (m small) and long.
    """
    return n <= 8 or m >= 128


def _others_product_rows(g, x, axes):
    """NumPy exact path: ``g * prod_{j != i} x_j`` per slice, by a loop over
    the n positions along the reduced axes, each step one vector operation over
    all slices at once (the loop never visits a slice or an element alone)."""
    k = len(axes)
    leading = axes == tuple(range(k))
    front = x if leading else np.moveaxis(x, axes, tuple(range(k)))
    n = math.prod(front.shape[:k])
    m = math.prod(front.shape[k:])
    y = front.reshape(n, m)      # rows stay arrays (views), even for a full reduction
    out = np.empty((n, m), dtype=np.result_type(x, g))
    if n:
        left = np.empty_like(out)
        # Each step is overhead-bound (one call on m elements), so the row views
        # are made once and np.multiply is a local name.
        o, lo, rows, mul = list(out), list(left), list(y), np.multiply
        o[n - 1][...] = g.reshape(m)
        lo[0][...] = 1
        for i in range(1, n):
            mul(lo[i - 1], rows[i - 1], lo[i])          # left[i] = prod(y[:i])
            mul(o[n - i], rows[n - i], o[n - i - 1])    # out[i] = g * prod(y[i+1:])
        out *= left
    out = out.reshape(front.shape)
    return out if leading else np.moveaxis(out, tuple(range(k)), axes)


# ---------------------------------------------------------------------------
# Registration

defrule(np.prod, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
        a="prod_vjp(g, ans, a, axis, keepdims, initial=initial, where=where)",
        result=results.reduction, methods=("prod",))
