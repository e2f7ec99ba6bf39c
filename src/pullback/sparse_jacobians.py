"""Sparse Jacobians: the pattern read from the program, its columns coloured,
one derivative sweep per colour.

A residual of a discretised PDE or a chain of ODE steps has a few nonzeros per
row of its Jacobian.  :func:`sparsity` traces them from the program: it runs
the function's tangent program on index sets (:mod:`pullback.core.index_sets`)
at the given point, so each entry of the result's tangent names the inputs it
depends on.  :class:`SparseJacobian` colours the columns so that no two of one
colour share a row (greedy, in column order: a banded pattern of bandwidth b
gets 2b + 1 colours), and runs one tangent sweep per colour, its tangent 1 on
the colour's columns: each nonzero ``J[i, j]`` is entry ``i`` of the sweep of
``j``'s colour.  ``jacrev`` colours rows and runs one cotangent sweep each.

The pattern is traced at the first call and kept for later calls with
arguments of the same kinds and shapes.  A branch on the values can make the
pattern depend on the point (``if u[i] > 0`` reads another neighbour), so every
call checks its Jacobian with one more sweep, along a random direction ``r``:
where ``J r`` from the program differs from the assembled matrix times ``r``
(beyond rounding), the pattern is traced again at this point, joined to the
old one, recoloured, and the Jacobian computed again.  Invariant: the
returned matrix holds every entry the program's Jacobian has at this point (a
pattern traced here, or one that passed the check); a call costs its colours
plus one sweeps.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np

from . import api
from .arguments import _check_argnums, _check_differentiable, _name
from .core import index_sets
from .core.errors import MissingRuleError, PullbackError
from .core.kinds import kind_of_value
from .pipeline import choose_backend, derivative, still_valid
from .user_errors import cut_for_user, for_user, locate


def sparsity(f, argnums=0):
    """A function returning the sparsity pattern of the Jacobian of ``f`` in its
    argument ``argnums`` at the given arguments: a ``scipy.sparse.csr_array`` of
    bools, shape ``(result size, argument size)``, for ``least_squares(jac_sparsity=…)``.

    The pattern is structural: an entry is there when the program reads that input
    for that output, even where the derivative is zero at this point.  Branches go
    the way they go at these arguments."""
    def pattern(*args):
        try:
            i = _argument(f, argnums, args)
            return _trace(f, args, i).astype(bool)
        except Exception as exc:
            cut_for_user(exc)
            raise
    pattern.__name__ = f"sparsity({_name(f)})"
    return pattern


def sparse_jacobian(f, argnums, jit, has_aux, reverse):
    """``jacfwd(f, sparse=True)`` (``jacrev``'s with ``reverse``)."""
    if has_aux:
        raise TypeError("sparse=True takes no has_aux: return the residual alone")
    return SparseJacobian(f, argnums, jit, reverse)


class SparseJacobian:
    """``jacfwd(f, sparse=True)`` (columns coloured, tangent sweeps) or
    ``jacrev(f, sparse=True)`` (rows coloured, cotangent sweeps): call it like
    ``f``; it returns a ``scipy.sparse.csr_array``."""

    def __init__(self, f, argnums, jit, reverse=False):
        self.f, self.argnums, self.jit, self.reverse = f, argnums, jit, reverse
        self.__name__ = f"{'jacrev' if reverse else 'jacfwd'}({_name(f)}, sparse=True)"
        self._plans: dict = {}          # argument kinds and shapes -> _Plan
        self._programs: dict = {}       # argument kinds -> the tangent program
        self.sweeps = 0                 # derivative sweeps run, the check's included

    def __call__(self, *args):
        try:
            i = _argument(self.f, self.argnums, args)
            key = tuple([(a.dtype, a.shape) if type(a) is np.ndarray else type(a)
                         for a in args])
            plan = self._plans.get(key)
            if plan is None:
                plan = _Plan.of(_trace(self.f, args, i), self.reverse)
            sweep = self._sweeper(args, i)
            data = plan.entries(sweep)
            if not plan.checks(data, sweep(plan.probe)):
                # The pattern changed with the point: trace it here, joined to the old.
                plan = _Plan.of(plan.pattern + _trace(self.f, args, i), self.reverse)
                data = plan.entries(sweep)
            self._plans[key] = plan
            return plan.matrix(data)
        except Exception as exc:
            cut_for_user(exc)
            raise

    def _sweeper(self, args, i):
        """``seed -> J seed`` (``seed J`` for jacrev), flattened, one sweep each."""
        shape = np.shape(args[i])
        if self.reverse:
            value, back = api.vjp(self.f, *args, jit=self.jit)
            out_shape = np.shape(value)

            def sweep(seed):
                self.sweeps += 1
                g = seed.reshape(out_shape) if out_shape else float(seed[0])
                return np.ravel(back(g)[i]).astype(float)
            return sweep
        program = self._program(args, i)

        def sweep(seed):
            self.sweeps += 1
            dot = seed.reshape(shape) if shape else float(seed[0])
            try:
                _, tangent = program.fn(*args, dot)
            except PullbackError as exc:
                raise for_user(exc) from None
            if type(program.fn) is not types.FunctionType and getattr(program.fn, "ok", False):
                program.fn = program.fn.dispatcher     # compiled: call Numba directly
            return np.ravel(np.asarray(tangent, dtype=float))
        return sweep

    def _program(self, args, i):
        kinds = tuple(kind_of_value(a) for a in args)
        program = self._programs.get(kinds)
        if program is None or program.stale or (program.dependencies
                                                 and not still_valid(program)):
            try:
                program = self._programs[kinds] = derivative(
                    self.f, (i,), kinds, choose_backend(self.f, self.jit), mode="forward")
            except PullbackError as exc:
                raise for_user(exc) from None
        return program

    def __repr__(self):
        return f"<pullback {self.__name__}>"


@dataclass(frozen=True)
class _Plan:
    """A pattern and how to fill it: ``colours`` per column (jacrev: per row), the
    ``seeds`` of the sweeps (one row per colour), and for each nonzero its row and
    column and the sweep that holds it; ``probe`` the check's direction."""

    pattern: object     # scipy.sparse.csr_array, shape (result size, argument size)
    reverse: bool
    seeds: np.ndarray
    rows: np.ndarray
    sweep_of: np.ndarray
    probe: np.ndarray

    @classmethod
    def of(cls, pattern, reverse):
        pattern = pattern.astype(bool).tocsr()
        pattern.sort_indices()
        colours = colour_columns(pattern.T.tocsr() if reverse else pattern)
        k = int(colours.max()) + 1 if colours.size else 0
        seeds = (colours[None, :] == np.arange(k)[:, None]).astype(float)
        rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
        sweep_of = colours[rows] if reverse else colours[pattern.indices]
        probe = np.random.default_rng(0).standard_normal(pattern.shape[0 if reverse else 1])
        return cls(pattern, reverse, seeds, rows, sweep_of, probe)

    def entries(self, sweep) -> np.ndarray:
        """The nonzeros, in the pattern's order, from one sweep per colour."""
        compressed = np.array([sweep(seed) for seed in self.seeds]) if len(self.seeds) \
            else np.zeros((0, self.pattern.shape[1 if self.reverse else 0]))
        at = self.pattern.indices if self.reverse else self.rows
        return compressed[self.sweep_of, at]

    def checks(self, data, direct) -> bool:
        """Whether ``direct``, the sweep along ``probe``, is the matrix's product
        with it (``J r``, jacrev ``r J``), to rounding: within 1e-10 of each
        entry's ``|J| |r|`` and 1e-13 of the largest."""
        by, at = (self.pattern.indices, self.rows) if self.reverse else \
            (self.rows, self.pattern.indices)
        terms = data * self.probe[at]
        size = len(direct)
        product = np.bincount(by, weights=terms, minlength=size)
        scale = np.bincount(by, weights=np.abs(terms), minlength=size)
        tol = 1e-10 * scale + 1e-13 * (float(scale.max()) if size else 0.0)
        return bool(np.all(np.abs(direct - product) <= tol))

    def matrix(self, data):
        import scipy.sparse
        p = self.pattern
        return scipy.sparse.csr_array((data, p.indices.copy(), p.indptr.copy()), shape=p.shape)


def _argument(f, argnums, args) -> int:
    """The one argument differentiated: a float array or number, checked."""
    fname = _name(f)
    if not isinstance(argnums, int) or isinstance(argnums, bool):
        raise TypeError(f"sparse Jacobian of {fname}: argnums must be one int (a sparse "
                        f"Jacobian is one matrix), got {argnums!r}")
    (i,), _ = _check_argnums(argnums, len(args), fname)
    _check_differentiable(args, (i,), fname)
    if np.ndim(args[i]) > 1:
        raise ValueError(f"sparse Jacobian of {fname}: argument {i} has shape "
                         f"{np.shape(args[i])}; a sparse Jacobian is a matrix, so pass a 1-D "
                         "array (reshape it inside the function)")
    return i


def _trace(f, args, i):
    """The pattern at ``args``: the tangent program run on index sets (a csr_array
    of ones, shape (result size, argument size))."""
    import scipy.sparse
    kinds = tuple(kind_of_value(a) for a in args)
    fname = _name(f)
    try:
        program = derivative(f, (i,), kinds, choose_backend(f, False), mode="pattern")
    except PullbackError as exc:
        raise for_user(exc) from None
    try:
        value, tangent = program.fn(*args, index_sets.seeds(np.shape(args[i])))
        if isinstance(value, tuple) or np.ndim(value) > 1:
            raise ValueError(f"sparse Jacobian of {fname}: it returns "
                             f"{'a tuple' if isinstance(value, tuple) else 'shape ' + str(np.shape(value))}; "
                             "a sparse Jacobian is a matrix, so return a 1-D array")
        entries = [index_sets.bits_of(e) for e in np.ravel(np.asarray(tangent, dtype=object))]
    except TypeError as exc:
        if isinstance(exc, PullbackError):
            raise for_user(exc) from None
        locate(exc, program.lines)
        where = "".join(f"; {n}" for n in getattr(exc, "__notes__", ()))
        raise MissingRuleError(
            f"sparse Jacobian of {fname}: pullback traces the sparsity pattern by running its "
            f"tangent program on index sets, and a step takes none ({exc}){where}. Use the "
            "dense jacfwd, or write the step with NumPy arithmetic") from None
    per_row = [index_sets.indices(b) for b in entries]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in per_row])]).astype(np.int64)
    indices = np.array([j for r in per_row for j in r], dtype=np.int64)
    n = max(int(np.size(args[i])), 1)
    return scipy.sparse.csr_array((np.ones(len(indices)), indices, indptr),
                                  shape=(len(per_row), n))


def colour_columns(pattern) -> np.ndarray:
    """A colour per column of ``pattern`` (csr), no two columns of one colour
    sharing a row: greedy in column order, each column the least colour none of
    its neighbours (columns sharing a row with it) has yet."""
    p = pattern.astype(bool).astype(np.int8)
    graph = (p.T @ p).tocsr()
    colours = np.full(p.shape[1], -1, dtype=np.int64)
    for j in range(p.shape[1]):
        taken = colours[graph.indices[graph.indptr[j]:graph.indptr[j + 1]]]
        free = np.ones(len(taken) + 1, dtype=bool)
        free[taken[(taken >= 0) & (taken <= len(taken))]] = False
        colours[j] = int(np.argmax(free))
    return colours


