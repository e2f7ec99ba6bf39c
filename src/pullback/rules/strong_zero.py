"""Strong zeros: a cotangent of exactly zero contributes zero.

The chain rule multiplies a cotangent by a partial derivative.  Where that
partial is infinite or undefined (``sqrt`` and ``log`` at 0, ``1 / x`` at 0,
``x ** 0.5`` at 0) while the cotangent is 0 because the value never reaches the
result (the branch ``np.where`` or ``np.maximum`` did not take), floating point
makes the product NaN though the derivative is 0:
``np.where(x > 0, np.sqrt(x), 0.0)`` at ``x <= 0``, or a Coulomb matrix
``np.where(D > 0, 1.0 / D, 0.0)`` on its diagonal ``D == 0``.  The rules whose
partials can be infinite write ``scaled(g, d)`` for ``g * d`` and
``divided(g, d)`` for ``g / d``: the same values, but 0 wherever ``g`` is 0 (a
selection's 0/1 weight takes the place of ``g`` where the cotangent itself may
be infinite).  A nonzero cotangent through an infinite partial stays infinite:
that is the derivative.

Invariant: equal to ``u * d`` (``u / d``) wherever that is finite or ``u`` is
nonzero.  Cost: on NumPy arrays one dot product more than the product (the check
that every entry is finite), and a selection only where one is not; compiled,
one loop.
"""
from __future__ import annotations

import math

import array_api_compat
import numpy as np

from . import twins
from .forms import numba_twin
from .registry import defrule
from .tangents import deftangent
from .twins import is_array, is_number


def _floats(u, d) -> bool:
    """Whether ``u`` and ``d`` are both Python floats or NumPy float64 numbers."""
    tu, td = type(u), type(d)
    return (tu is float or tu is np.float64) and (td is float or td is np.float64)


def scaled(u, d):
    """``u * d``, 0 wherever ``u`` is 0 (``d`` may be infinite or NaN there).

    Raises no RuntimeWarning: the product that is NaN where ``u`` is 0 is the
    derivative's business, not the user's (numbers are multiplied as Python floats,
    the same IEEE product, and anything else under ``np.errstate``)."""
    if _floats(u, d):
        r = float(u) * float(d)
        if not (r - r == 0 or u != 0):
            r = 0.0
        return r if type(u) is float and type(d) is float else np.float64(r)
    with np.errstate(all="ignore"):
        r = u * d
        t = type(r)
        if t is np.float64 or t is float:
            return r if r - r == 0 or u != 0 else t(0.0)
        return _zero_where_zero(u, r)


def divided(u, d):
    """``u / d``, 0 wherever ``u`` is 0 (``d`` may be 0 or NaN there).

    Raises no RuntimeWarning (as :func:`scaled`); a number divided by 0 is NumPy's
    inf or NaN, a NumPy float64 as NumPy's division gives it."""
    if _floats(u, d):
        fu, fd = float(u), float(d)
        if fd != 0.0:
            r = fu / fd
        elif fu == 0.0 or fu != fu:
            r = math.nan
        else:
            r = math.copysign(math.inf, fu) * math.copysign(1.0, fd)
        if not (r - r == 0 or u != 0):
            r = 0.0
        return r if type(u) is float and type(d) is float and fd != 0.0 else np.float64(r)
    with np.errstate(all="ignore"):
        try:
            r = u / d
        except ZeroDivisionError:       # Python numbers: NumPy's inf or NaN instead
            r = np.float64(u) / d
        t = type(r)
        if t is np.float64 or t is float:
            return r if r - r == 0 or u != 0 else t(0.0)
        return _zero_where_zero(u, r)


def _zero_where_zero(u, r):
    """``r``, with 0 wherever ``u`` is 0 and ``r`` is not finite."""
    if type(r) is np.ndarray:
        # <r, r> is finite when every entry is (BLAS's dot: the cheapest full pass);
        # an overflow of it only costs the select below.
        if math.isfinite(np.vdot(r, r)):
            return r
        return np.where(u == 0, np.zeros((), r.dtype), r)
    if isinstance(r, np.floating):
        return r if r - r == 0 or u != 0 else type(r)(0.0)
    zero = u == 0                   # another namespace's arrays (PyTorch, CuPy)
    xp = array_api_compat.array_namespace(r)
    if isinstance(zero, (bool, np.bool_)):
        return xp.zeros_like(r) if zero else r
    return xp.where(zero, xp.zeros_like(r), r)


def powered(x, e):
    """``np.power(x, e)``, raising no RuntimeWarning: a power rule's partial
    ``x ** (e - 1)`` is infinite at ``x == 0`` for ``e < 1``, and :func:`scaled`
    makes it 0 where the cotangent is 0 (``np.where(x > 0, x ** 0.5, 0)``)."""
    with np.errstate(all="ignore"):
        return np.power(x, e)


@numba_twin(powered)
def _powered_twin(x, e):
    return lambda x, e: np.power(x, e)      # (compiled code raises no warnings)


@numba_twin(scaled)
def _scaled_twin(u, d):
    return _twin(u, d, lambda u, d: np.multiply(u, d))


@numba_twin(divided)
def _divided_twin(u, d):
    # (np.divide: IEEE's inf for x / 0, where Numba's / raises ZeroDivisionError)
    return _twin(u, d, lambda u, d: np.divide(u, d))


def _twin(u, d, op):
    """The compiled form: a number's strong zero by a branch; an array's in one loop
    when ``u`` and ``d`` are arrays of one shape (the common case), else by a select
    where an entry is not finite."""
    op = twins.jitted(op)
    if is_number(u) and is_number(d):
        return lambda u, d: u - u if u == 0 else op(u, d)
    if is_number(u):
        return lambda u, d: np.zeros_like(op(u, d)) if u == 0 else op(u, d)
    if not is_array(u):
        return None
    select = twins.jitted(_zero_where_zero_array)
    if not (is_array(d) and d.ndim == u.ndim):
        return lambda u, d: select(u, op(u, d))

    dtype = np.result_type(str(u.dtype), str(d.dtype)).type

    def on_arrays(u, d):
        if u.shape != d.shape:
            return select(u, op(u, d))
        out = np.empty(u.shape, dtype)
        flat, uf, df = out.reshape(-1), np.ravel(u), np.ravel(d)
        for k in range(flat.size):
            flat[k] = 0.0 if uf[k] == 0 else op(uf[k], df[k])
        return out
    return on_arrays


def _zero_where_zero_array(u, r):
    """Compiled: ``r`` (a new array) with 0 where the array ``u``, broadcast to it,
    is 0 and ``r`` is not finite.  A first pass asks whether any entry is not
    finite (an and-reduction, which vectorises)."""
    flat = np.ravel(r)
    finite = True
    for k in range(flat.size):
        finite &= flat[k] - flat[k] == 0.0
    if finite:
        return r
    return np.where(np.broadcast_to(u == 0, r.shape), np.zeros(1, r.dtype)[0], r)


# Differentiated again (reverse mode over forward mode's tangents), with the same
# strong zero: where u is 0 the product is 0 whatever d is.
defrule(scaled, "u, d", u="scaled(g, d)", d="scaled(u, g)")
defrule(divided, "u, d", u="divided(g, d)", d="-divided(scaled(u, g), d * d)")
defrule(powered, "x, e",
        x="scaled(g, e * powered(x, e - 1 + (e == 0)))",
        e="scaled(g, ans * np.log(x + (x == 0)))")
for _helper in (scaled, divided, powered):
    deftangent(_helper, elementwise=True)
