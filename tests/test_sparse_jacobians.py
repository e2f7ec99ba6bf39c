"""Sparse Jacobians: the pattern traced on index sets, the columns coloured, one
sweep per colour.  References: the dense Jacobian from single-direction sweeps
(``jacfwd``), its nonzeros, central finite differences, JAX's ``jacfwd`` in
float64 where installed, and scipy's ``least_squares``."""
import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

import pullback
from helpers import fd_grad
from pullback.core.index_sets import IndexSet, indices, seeds
from pullback.examples import bratu
from pullback.sparse_jacobians import colour_columns

RNG = np.random.default_rng(5)




def bratu_slices(u, lam):
    """The same residual with slices."""
    h = 1.0 / (u.shape[0] + 1)
    up = np.concatenate((np.zeros(1), u, np.zeros(1)))
    return (up[:-2] - 2.0 * u + up[2:]) / h ** 2 + lam * np.exp(u)


def reaction_diffusion(z):
    """Two species interleaved (u0, v0, u1, v1, ...), periodic diffusion and a
    reaction between the species at one point."""
    u, v = z[0::2], z[1::2]
    lap_u = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
    lap_v = np.roll(v, 1) - 2.0 * v + np.roll(v, -1)
    out = np.empty_like(z)
    out[0::2] = 0.1 * lap_u + u * u * v - 0.5 * u
    out[1::2] = 0.05 * lap_v - u * u * v + 0.3 * (1.0 - v)
    return out


def euler_steps(x):
    """Three explicit Euler steps of a nonlinear chain: the band widens by one per step."""
    y = x.copy()
    for _ in range(3):
        z = y.copy()
        for i in range(1, y.shape[0] - 1):
            z[i] = y[i] + 0.1 * (y[i - 1] * y[i + 1] - np.sin(y[i]))
        y = z
    return y


def products(u):
    """``u[i] * u[i + 1]``: entries zero at u = 0, in the pattern all the same."""
    return u[:-1] * u[1:] + u[:-1] ** 3


def upwind(u):
    """A branch on the values: the neighbour read depends on the sign."""
    n = u.shape[0]
    r = np.empty(n)
    for i in range(n):
        if u[i] > 0.0:
            r[i] = u[i] * (u[i] - (u[i - 1] if i > 0 else 0.0))
        else:
            r[i] = u[i] * ((u[i + 1] if i < n - 1 else 0.0) - u[i])
    return r


PROGRAMS = [
    ("bratu", bratu, lambda n: (RNG.normal(size=n), 1.3)),
    ("bratu_slices", bratu_slices, lambda n: (RNG.normal(size=n), 1.3)),
    ("reaction_diffusion", reaction_diffusion, lambda n: (RNG.uniform(0.5, 1.5, 2 * n),)),
    ("euler_steps", euler_steps, lambda n: (RNG.normal(size=n),)),
    ("products", products, lambda n: (RNG.normal(size=n),)),
    ("upwind", upwind, lambda n: (RNG.normal(size=n),)),
]


# --------------------------------------------------------------- the index sets
def test_index_sets_are_linear():
    a, b = IndexSet(0b011), IndexSet(0b110)
    assert (a + b).bits == (a - b).bits == 0b111
    assert (2.5 * a).bits == (a * 0.0).bits == (a / 3.0).bits == (-a).bits == 0b011
    assert (a + 1.0).bits == 0b011
    with pytest.raises(TypeError, match="product of two tangents"):
        a * b
    with pytest.raises(TypeError):
        float(a)
    with pytest.raises(TypeError):
        np.zeros(2)[0] = a
    assert indices(0b10110) == [1, 2, 4]
    assert [s.bits for s in seeds((3,))] == [1, 2, 4]


# ------------------------------------------------------------------ the pattern
@pytest.mark.parametrize("name, f, make", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_pattern_holds_every_nonzero_of_the_dense_jacobian(name, f, make):
    args = make(12)
    pattern = pullback.sparsity(f)(*args)
    dense = pullback.jacfwd(f)(*args)
    assert pattern.shape == dense.shape and pattern.dtype == bool
    nonzero = dense != 0
    assert not np.any(nonzero & ~pattern.toarray()), "an entry missing from the pattern"
    # At a random point, no more than the nonzeros (products and sums do not cancel):
    assert np.array_equal(pattern.toarray(), nonzero)


def test_pattern_is_structural_where_the_derivative_vanishes():
    u = np.zeros(5)
    assert np.all(pullback.jacfwd(products)(u) == 0)
    expected = np.eye(4, 5, dtype=bool) | np.eye(4, 5, k=1, dtype=bool)
    assert np.array_equal(pullback.sparsity(products)(u).toarray(), expected)


def test_pattern_of_a_wider_band():
    pattern = pullback.sparsity(euler_steps)(RNG.normal(size=20)).toarray()
    rows, cols = np.nonzero(pattern)
    assert np.max(np.abs(rows - cols)) == 3


# ----------------------------------------------------------------- the Jacobian
# Compiled: the loops (Numba's compile of the array programs' derivatives costs
# seconds each and adds nothing the loops do not test).
COMPILED = {"bratu", "euler_steps", "upwind"}


@pytest.mark.parametrize("name, f, make, jit",
                         [p + (False,) for p in PROGRAMS]
                         + [p + (True,) for p in PROGRAMS if p[0] in COMPILED],
                         ids=[p[0] for p in PROGRAMS]
                         + [p[0] + "-numba" for p in PROGRAMS if p[0] in COMPILED])
def test_sparse_jacobian_is_the_dense_one(name, f, make, jit):
    args = make(15)
    dense = pullback.jacfwd(f, jit=jit)(*args)
    for reverse in (False, True):
        J = (pullback.jacrev if reverse else pullback.jacfwd)(f, sparse=True, jit=jit)(*args)
        assert isinstance(J, scipy.sparse.csr_array)
        np.testing.assert_allclose(J.toarray(), dense, rtol=1e-12, atol=1e-12)


def test_against_finite_differences_and_jax():
    u, lam = RNG.normal(size=9), 0.7
    J = pullback.jacfwd(bratu, sparse=True)(u, lam).toarray()
    for i in (0, 4, 8):
        np.testing.assert_allclose(J[i], fd_grad(lambda u: bratu(u, lam)[i], (u,)),
                                   rtol=1e-6, atol=1e-4)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    want = jax.jacfwd(lambda u: bratu_slices_jax(jax.numpy, u, lam))(u)
    np.testing.assert_allclose(J, np.asarray(want), rtol=1e-12, atol=1e-9)


def bratu_slices_jax(jnp, u, lam):
    h = 1.0 / (u.shape[0] + 1)
    up = jnp.concatenate((jnp.zeros(1), u, jnp.zeros(1)))
    return (up[:-2] - 2.0 * u + up[2:]) / h ** 2 + lam * jnp.exp(u)


def test_tridiagonal_takes_three_sweeps_and_the_check(jit_mode):
    J = pullback.jacfwd(bratu, sparse=True, jit=jit_mode != "python")
    u = RNG.normal(size=50)
    for _ in range(2):
        before = J.sweeps
        got = J(u, 1.0)
        pullback.finish_compiling()
        assert J.sweeps - before == 4
    np.testing.assert_allclose(got.toarray(), pullback.jacfwd(bratu)(u, 1.0), rtol=1e-12)


def test_a_pattern_that_changes_with_the_point_is_traced_again(jit):
    J = pullback.jacfwd(upwind, sparse=True, jit=jit)
    up, down = np.abs(RNG.normal(size=10)) + 0.1, -np.abs(RNG.normal(size=10)) - 0.1
    for u in (up, down, up, down):
        np.testing.assert_allclose(J(u, ).toarray(), pullback.jacfwd(upwind)(u), rtol=1e-12,
                                   atol=1e-14)
    # After both points the pattern is their union: later calls need no new trace.
    before = J.sweeps
    J(down)
    assert J.sweeps - before == len(next(iter(J._plans.values())).seeds) + 1


def test_the_callers_arrays_are_untouched(jit):
    u = RNG.normal(size=8)
    before = u.copy()
    pullback.jacfwd(bratu, sparse=True, jit=jit)(u, 1.0)
    pullback.sparsity(bratu)(u, 1.0)
    assert np.array_equal(u, before)


def test_least_squares_with_the_sparse_jacobian():
    n = 30
    target = np.sin(np.linspace(0.0, np.pi, n))
    h2 = 1.0 / (n + 1) ** 2

    def residual(u):
        return h2 * (bratu_slices(u, 1.0) - bratu_slices(target, 1.0))
    u0 = np.zeros(n)
    jac = pullback.jacfwd(residual, sparse=True)
    sparse = scipy.optimize.least_squares(residual, u0, jac=jac, tr_solver="lsmr",
                                          xtol=1e-14, ftol=1e-14, gtol=1e-14)
    assert sparse.success
    np.testing.assert_allclose(sparse.x, target, atol=1e-8)
    pattern = pullback.sparsity(residual)(u0)
    by_differences = scipy.optimize.least_squares(residual, u0, jac_sparsity=pattern,
                                                  tr_solver="lsmr")
    assert by_differences.success       # the pattern as scipy's finite differences take it
    np.testing.assert_allclose(by_differences.x, target, atol=1e-3)


# ------------------------------------------------------------------- colouring
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 30), st.floats(0.0, 0.5), st.integers(0, 2 ** 31))
def test_colouring_never_puts_two_columns_of_one_row_in_one_colour(m, n, density, seed):
    p = scipy.sparse.random_array((m, n), density=density, rng=seed, format="csr") != 0
    colours = colour_columns(scipy.sparse.csr_array(p))
    dense = p.toarray()
    for row in dense:
        cols = np.nonzero(row)[0]
        assert len(set(colours[cols])) == len(cols)
    shares = (dense.T.astype(int) @ dense.astype(int)) > 0      # columns sharing a row
    most_neighbours = (shares.sum(axis=1) - shares.diagonal()).max(initial=0)
    assert colours.max(initial=0) <= most_neighbours           # greedy's bound


# --------------------------------------------------------------------- refusals
def two_d(x):
    return x * 2.0


def solves(b):
    return np.linalg.solve(np.eye(3) * 2.0 + 0.1, b)


@pytest.mark.parametrize("call, error, words", [
    (lambda: pullback.jacfwd(bratu, argnums=(0, 1), sparse=True)(np.ones(3), 1.0), TypeError,
     "argnums must be one int"),
    (lambda: pullback.jacfwd(two_d, sparse=True)(np.ones((2, 2))), ValueError, "1-D array"),
    (lambda: pullback.jacfwd(lambda x: (x, x), sparse=True)(np.ones(2)), ValueError,
     "returns a tuple"),
    (lambda: pullback.jacfwd(bratu, sparse=True, has_aux=True), TypeError, "no has_aux"),
])
def test_refusals(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_step_the_index_sets_cannot_take_names_the_users_line():
    with pytest.raises(pullback.MissingRuleError,
                       match=r"(?s)takes none.*test_sparse_jacobians.py.*Use the dense jacfwd"):
        pullback.sparsity(solves)(np.ones(3))
