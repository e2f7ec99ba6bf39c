"""The backends' forms of what rule templates call, each registered beside its helper:
Numba twins (the Numba backend's implementation of a helper, or of a primal Numba
cannot compile), loop sums (a cotangent summed over a loop's iterations in one
call) and accumulating forms (a helper's result added into a buffer in place).
Nothing here imports Numba: a twin is only called by the Numba backend, while it
compiles.
"""
from __future__ import annotations

# ---------------------------------------------------------------------------
# Numba twins, registered beside the helpers (and primals) they stand for.

_TWINS: dict[int, tuple] = {}     # id(target) -> (target, twin)
_ALWAYS: set = set()              # ids of primals whose twin replaces every call, f(a) too
_ARRAYS: set = set()              # ids of primals whose twin replaces f(a) of an array
#: The twin of a helper that Numba compiles as it is (plain scalar code).
PLAIN = "plain"


def numba_twin(*targets, always: bool = False, arrays: bool = False):
    """Decorator: the function below is the Numba implementation of ``targets``.

    A target is a helper that rule templates call, or a primal (``np.max``) whose
    call Numba cannot compile with some arguments; the forward sweep then calls
    the twin instead.  The twin is written like ``numba.extending.overload``: it
    receives the Numba types of the arguments (same parameter names and
    defaults as the target) and returns a function over them in the NumPy
    subset Numba compiles, or None when it has none for those types.

    A primal's twin replaces only calls with more than one argument (Numba
    compiles ``np.max(a)`` itself) unless ``always``: Numba has no ``np.trace``
    or ``np.squeeze`` at all, nor ``np.atleast_1d`` of a number.  With ``arrays``
    it replaces ``f(a)`` when ``a`` is an array or of a kind not known before it
    runs (Numba's own ``np.exp`` of a number is best, of a large array slow).
    """
    def register(typer):
        for t in targets:
            _TWINS[id(t)] = (t, typer)
            if always:
                _ALWAYS.add(id(t))
            if arrays:
                _ARRAYS.add(id(t))
        return typer
    return register


def numba_plain(*helpers) -> None:
    """Mark ``helpers`` as compiling under Numba as they are (plain scalar code)."""
    for h in helpers:
        _TWINS[id(h)] = (h, PLAIN)


def twin(obj):
    """The Numba twin registered for ``obj`` (a typer, or :data:`PLAIN`), or None."""
    entry = _TWINS.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def twin_always(obj) -> bool:
    """Whether the twin of primal ``obj`` replaces its one-argument calls too."""
    return id(obj) in _ALWAYS and twin(obj) is not None


def twin_arrays(obj) -> bool:
    """Whether the twin of primal ``obj`` replaces its one-argument calls of an array."""
    return id(obj) in _ARRAYS and twin(obj) is not None


def all_twins() -> list:
    """Every (target, twin) pair registered so far."""
    return list(_TWINS.values())


# ---------------------------------------------------------------------------
# Loop sums: one call for a cotangent added up over the iterations of a loop.

_LOOP_SUMS: dict[int, tuple] = {}   # id(helper) -> (helper, summed, varying positions)


def loop_sum(helper, varying):
    """Decorator: the function below computes ``sum_k helper(*args_k)`` over a
    loop's iterations in one call (``W @ h`` in a loop: one matrix product for the
    sum of its outer-product cotangents).  It is called as ``summed(steps, *fixed)``,
    ``steps`` holding each iteration's arguments at the positions ``varying``
    (copies) and ``fixed`` the others, which must not change within the loop."""
    def register(summed):
        _LOOP_SUMS[id(helper)] = (helper, summed, tuple(varying))
        return summed
    return register


def summed_form(helper):
    """``(summed, varying)`` registered by :func:`loop_sum` for ``helper``, or None."""
    entry = _LOOP_SUMS.get(id(helper))
    return entry[1:] if entry is not None and entry[0] is helper else None


# ---------------------------------------------------------------------------
# Accumulating forms: a helper's result added into an adjoint buffer in place.

_ACCUMULATORS: dict[int, tuple] = {}   # id(helper) -> (helper, the function adding into)


def accumulates_into(*helpers):
    """Decorator: the function below, called ``into(out, *args)``, does
    ``out += helper(*args)`` for each of ``helpers`` without building the result
    first; a backend that updates adjoint buffers in place calls it instead."""
    def register(into):
        for h in helpers:
            _ACCUMULATORS[id(h)] = (h, into)
        return into
    return register


def accumulating_form(helper):
    """The function registered by :func:`accumulates_into` for ``helper``, or None."""
    entry = _ACCUMULATORS.get(id(helper))
    return entry[1] if entry is not None and entry[0] is helper else None
