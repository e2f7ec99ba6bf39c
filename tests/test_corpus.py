"""The corpus (tests/corpus/scientific.py) on both backends.

Each entry is checked against two independent references:

* central finite differences of the function itself (tests/helpers.py), and
* PyTorch float64 eager autograd of the *same* function: its code object is rebound
  to globals in which ``math`` / ``np`` / ``float`` map to torch operations, and its
  array arguments are tensors of a subclass that behaves like NumPy where Python
  code can tell (``.copy()``, and scalar reads that are copies rather than views).

Known failures are listed below with a reason and marked ``xfail(strict=True)``, so
each one turns into a failure (XPASS) the day it is fixed and must then be removed.
"""
from __future__ import annotations

import math
import os
import types

import numpy as np
import pytest
from corpus import scientific as S
from corpus.scientific import CORPUS
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from reference import assert_matches_reference

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate, fd_grad

BY_NAME = {e.name: e for e in CORPUS}

# ------------------------------------------------------------------ known failures
# Bugs of the transform on the Python backend: none known.
PYTHON_XFAIL: dict = {}

# The Numba backend: entries whose derivative does not compile under Numba.
NUMBA_XFAIL = {
    "empty_like_and_array_copy": "Numba itself does not compile np.array(an array) (the primal "
                                 "fails the same way)",
}


def expect_failure(request, name, jit):
    """Mark this run xfail(strict) when the entry is a known failure on this backend."""
    reason = (NUMBA_XFAIL if jit else PYTHON_XFAIL).get(name)
    if reason is not None:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40
    assert set(PYTHON_XFAIL) <= set(BY_NAME) and set(NUMBA_XFAIL) <= set(BY_NAME)


# ------------------------------------------------------------- finite differences
@pytest.mark.parametrize("name", list(BY_NAME))
def test_corpus_points_are_away_from_kinks(name):
    """The reference is sound: finite differences with steps 1e-6 and 1e-4 agree, so no
    tie in min/max, branch boundary or change of trip count lies within 1e-4."""
    e = BY_NAME[name]
    args = e.make_args()
    for k in e.argnums:
        assert_fd_close(fd_grad(e.fn, args, k, eps=1e-6), fd_estimate(e.fn, args, k, eps=1e-4),
                     rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_corpus_matches_finite_differences_and_the_reference(name, jit, request):
    expect_failure(request, name, jit)
    e = BY_NAME[name]
    args = e.make_args()
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    value, grads = pullback.value_and_grad(e.fn, argnums=e.argnums, jit=jit)(*args)
    assert value == pytest.approx(e.fn(*args), rel=1e-10, abs=1e-12)
    for k, g in zip(e.argnums, grads):
        assert np.shape(g) == np.shape(args[k])
        assert_fd_close(g, fd_estimate(e.fn, args, k), rtol=e.rtol, atol=e.atol)
    for a, b in zip(args, before):      # the caller's arrays are never mutated
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
    # Every optimisation off (core/optimise.py) gives the same gradient to 1e-12
    # (here, where the optimised derivative is compiled already).
    assert_matches_reference(e.fn, args, e.argnums, jit)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_corpus_forward_mode_is_the_gradients_oracle(name, jit, request):
    """<grad f, v> from the gradient equals the tangent jvp gives along v, to 1e-12 of
    the terms' size: two transforms that share no rule code agree (forward mode's
    tangents and reverse mode's cotangents), which a wrong term too small for finite
    differences does not survive.  Under Numba every other entry (each is two more
    compiles; ``PULLBACK_CORPUS_JVP=all`` checks them all)."""
    if jit and list(BY_NAME).index(name) % 2 and os.environ.get("PULLBACK_CORPUS_JVP") != "all":
        pytest.skip("every other corpus entry under Numba (PULLBACK_CORPUS_JVP=all: every one)")
    expect_failure(request, name, jit)
    e = BY_NAME[name]
    args = e.make_args()
    rng = np.random.default_rng(len(name))
    v = [rng.normal(size=np.shape(a)) if i in e.argnums else None for i, a in enumerate(args)]
    v = [float(t) if t is not None and np.ndim(t) == 0 else t for t in v]
    _, tangent = pullback.jvp(e.fn, tuple(args), tuple(v), jit=jit)
    grads = pullback.grad(e.fn, argnums=e.argnums, jit=jit)(*args)
    terms = [np.asarray(g, dtype=float) * v[i] for g, i in zip(grads, e.argnums)]
    expected = sum(float(np.sum(t)) for t in terms)
    assert tangent == pytest.approx(expected, rel=0,
                                    abs=1e-12 * sum(float(np.sum(np.abs(t))) for t in terms))


# ----------------------------------------------------------- PyTorch, same code
def _np_tensor_class(torch):
    class NpTensor(torch.Tensor):
        """A tensor that copies like a NumPy array: ``.copy()``, and scalar reads
        are values (a NumPy scalar), not views that a later write would change."""

        def copy(self):
            return self.clone()

        def __getitem__(self, idx):
            r = super().__getitem__(idx)
            return r.clone() if r.dim() == 0 else r

        # `x += v` on a NumPy scalar rebinds x; on an array it writes in place.
        def __iadd__(self, o):
            return self + o if self.dim() == 0 else super().__iadd__(o)

        def __isub__(self, o):
            return self - o if self.dim() == 0 else super().__isub__(o)

        def __imul__(self, o):
            return self * o if self.dim() == 0 else super().__imul__(o)

        def __itruediv__(self, o):
            return self / o if self.dim() == 0 else super().__itruediv__(o)
    return NpTensor


def _shim_class(torch, wrap):
    def has_tensor(a):
        return any(isinstance(x, torch.Tensor) for x in a)

    class Shim:
        """``math`` or ``np`` seen by the rebound function."""

        def __init__(self, module, extra):
            self._module = module
            self.__dict__.update(extra)

        def __getattr__(self, name):
            tf = getattr(torch, name)
            mf = getattr(self._module, name)
            if not callable(mf):
                return mf

            def call(*a):
                return tf(*[wrap(x) for x in a]) if has_tensor(a) else mf(*a)
            return call
    return Shim


def _torch_namespace(torch, NpTensor):
    """The corpus module's namespace, with np and math answering with torch."""
    f64 = torch.float64

    def wrap(v):
        return torch.as_tensor(v, dtype=f64)

    def alloc(make):
        return lambda shape, *a: make(shape, *a).as_subclass(NpTensor)

    Shim = _shim_class(torch, wrap)
    np_shim = Shim(np, dict(
        pi=math.pi, inf=math.inf, e=math.e,
        zeros=alloc(lambda s: torch.zeros(s, dtype=f64)),
        ones=alloc(lambda s: torch.ones(s, dtype=f64)),
        empty=alloc(lambda s: torch.zeros(s, dtype=f64)),
        full=alloc(lambda s, v: torch.full(s if isinstance(s, tuple) else (s,), v, dtype=f64)),
        empty_like=lambda p: torch.zeros_like(p),
        array=lambda p: p.clone() if isinstance(p, torch.Tensor) else wrap(p).as_subclass(NpTensor),
    ))
    math_shim = Shim(math, dict(pi=math.pi, inf=math.inf, e=math.e))

    namespace = dict(vars(S))
    namespace.update(math=math_shim, np=np_shim,
                     float=lambda v: v if isinstance(v, torch.Tensor) else float(v))
    for key, obj in vars(S).items():
        if isinstance(obj, types.FunctionType) and obj.__module__ == S.__name__:
            namespace[key] = types.FunctionType(obj.__code__, namespace, obj.__name__,
                                                obj.__defaults__, obj.__closure__)
    return namespace


def _torch_runner():
    torch = pytest.importorskip("torch")
    f64 = torch.float64
    NpTensor = _np_tensor_class(torch)
    namespace = _torch_namespace(torch, NpTensor)

    def run(fn, args, argnums):
        """Value and gradients of the torch version of fn (float64, eager)."""
        leaves, call = {}, []
        for i, a in enumerate(args):
            floaty = isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")
            if i in argnums:
                leaves[i] = torch.tensor(a, dtype=f64, requires_grad=True)
                call.append(leaves[i].clone().as_subclass(NpTensor))
            elif isinstance(a, np.ndarray) and floaty:
                call.append(torch.tensor(a, dtype=f64).as_subclass(NpTensor))
            else:
                call.append(a)
        out = namespace[fn.__name__](*call)
        out.backward()
        grads = [leaves[i].grad if leaves[i].grad is not None else torch.zeros_like(leaves[i])
                 for i in argnums]
        return out.detach().item(), [g.detach().numpy() for g in grads]

    return run


@pytest.fixture(scope="module")
def torch_grad():
    return _torch_runner()


@pytest.mark.parametrize("name", list(BY_NAME))
def test_torch_reference_agrees_with_finite_differences(name, torch_grad):
    """The reference itself: torch autograd of the rebound code equals FD."""
    e = BY_NAME[name]
    args = e.make_args()
    value, grads = torch_grad(e.fn, args, e.argnums)
    assert value == pytest.approx(e.fn(*args), rel=1e-10, abs=1e-12)
    for k, g in zip(e.argnums, grads):
        assert_fd_close(g, fd_estimate(e.fn, args, k), rtol=e.rtol, atol=e.atol)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_corpus_matches_torch(name, jit, torch_grad, request):
    expect_failure(request, name, jit)
    e = BY_NAME[name]
    args = e.make_args()
    value, grads = pullback.value_and_grad(e.fn, argnums=e.argnums, jit=jit)(*args)
    t_value, t_grads = torch_grad(e.fn, args, e.argnums)
    assert value == pytest.approx(t_value, rel=1e-10, abs=1e-12)
    for g, tg in zip(grads, t_grads):
        assert_close(g, tg, rtol=1e-9, atol=1e-11)


# ------------------------------------------------------------ varied inputs
BACKENDS = pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
SETTINGS = settings(max_examples=15, deadline=None)


def _check(fn, args, argnums, jit, rtol=1e-5, atol=1e-6):
    value, grads = pullback.value_and_grad(fn, argnums=argnums, jit=jit)(*args)
    assert value == pytest.approx(fn(*args), rel=1e-10, abs=1e-12)
    for k, g in zip(argnums, grads):
        assert_fd_close(g, fd_estimate(fn, args, k), rtol=rtol, atol=atol)


def _arrays(lo, hi, min_size=2, max_size=8, min_gap=0.0):
    """Float arrays; with min_gap, distinct elements on a grid of that spacing (no ties)."""
    if not min_gap:
        return st.lists(st.floats(lo, hi), min_size=min_size, max_size=max_size).map(np.array)
    grid = st.integers(math.ceil(lo / min_gap), math.floor(hi / min_gap))
    return st.lists(grid, min_size=min_size, max_size=max_size, unique=True).map(
        lambda v: np.array(v, dtype=float) * min_gap)


@BACKENDS
@SETTINGS
@given(c=_arrays(-2, 2, 1, 10), x=st.floats(-1, 1))
def test_clenshaw_varied(jit, c, x):
    _check(S.clenshaw_chebyshev, (c, x), (0, 1), jit)


@BACKENDS
@SETTINGS
@given(p=_arrays(-3, 3, 2, 9))
def test_logsumexp_varied(jit, p):
    # (smooth even at a tie for the max: m only shifts the sum.  One element: see
    # test_control_flow's loop_variable_reused_after_empty_loop)
    _check(S.logsumexp_loop, (p,), (0,), jit)


def _weighted_pair():
    return st.integers(2, 8).flatmap(lambda n: st.tuples(
        _arrays(-3, 3, n, n, min_gap=1e-3), _arrays(-2, 2, n, n)))


@BACKENDS
@SETTINGS
@given(pw=_weighted_pair())
def test_cumsum_varied(jit, pw):
    _check(S.cumsum_weighted, pw, (0, 1), jit)


@BACKENDS
@SETTINGS
@given(pw=_weighted_pair())
def test_bubble_sort_varied(jit, pw):
    _check(S.bubble_sort_weighted, pw, (0, 1), jit)


@BACKENDS
@SETTINGS
@given(r=_arrays(-3, 3, 1, 8), delta=st.floats(0.3, 2.0))
def test_huber_varied(jit, r, delta):
    assume(np.all(np.abs(np.abs(r) - delta) > 1e-3))       # away from the branch boundary
    _check(S.huber_loss, (r, delta), (0, 1), jit)


@BACKENDS
@SETTINGS
@given(theta=st.lists(st.floats(0.2, 1.5), min_size=4, max_size=4).map(np.array),
       h=st.floats(0.01, 0.2), n=st.integers(1, 20))
def test_rk4_lotka_volterra_varied(jit, theta, h, n):
    _check(S.rk4_lotka_volterra, (theta, h, n), (0, 1), jit, rtol=1e-4)
