"""pullback.torch.function: a pullback-differentiated function as a torch.autograd
node, checked against the same function written in PyTorch (its autograd is the
reference), torch's gradcheck / gradgradcheck (finite differences), on both backends
and in background-compile mode."""
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
from layer_models import damped, damped_in  # noqa: E402

import pullback.torch as pt  # noqa: E402
from pullback.examples import lotka_volterra, lotka_volterra_step  # noqa: E402

damped_torch = damped_in(torch.sin, torch.stack)


def cube_sin(x):
    return np.sum(x ** 3 * np.sin(x))


def scales_in_place(x, s):
    """Writes into its argument: the caller's tensor must not see it."""
    x *= s
    return np.sum(x * x)


def pair(x):
    return x * 2.0, np.sum(x ** 2)


class Pair(NamedTuple):
    scaled: np.ndarray
    norm: float


def named_pair(x):
    return Pair(x * 2.0, np.sum(x ** 2))


@pytest.mark.parametrize("f", [pair, named_pair])
def test_tuple_and_named_tuple_values(f, jit):
    F = pt.function(f, jit=jit)
    for _ in range(2):      # the second call through what the first one cached
        x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
        a, b = F(x)
        (a * torch.tensor([1.0, 3.0], dtype=torch.float64)).sum().add(b).backward()
        np.testing.assert_allclose(x.grad, [2.0 + 2.0, 6.0 - 4.0])


def tree_loss(d, s):
    return np.sum(d["w"] * d["x"]) + s[0] * d["x"][0]


def with_int(x, k, n):
    return x[k] ** 2 * n


def _inputs(dtype=torch.float64, grad=True):
    p = torch.tensor([1.0, 2.0, 3.0], dtype=dtype, requires_grad=grad)
    y0 = torch.tensor([0.5, 0.2], dtype=dtype, requires_grad=grad)
    return p, y0


def test_value_and_gradient_match_torch_autograd(jit_mode):
    F = pt.function(damped, jit=jit_mode != "python")
    for _ in range(3):      # background mode: the first calls run as Python
        p, y0 = _inputs()
        out = F(p, y0, 7)
        (out ** 2).sum().backward()
        q, z0 = _inputs()
        ref = damped_torch(q, z0, 7)
        (ref ** 2).sum().backward()
        np.testing.assert_allclose(out.detach(), ref.detach(), rtol=1e-13, atol=0)
        np.testing.assert_allclose(p.grad, q.grad, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(y0.grad, z0.grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
def test_gradcheck_and_gradgradcheck(jit):
    F = pt.function(damped, jit=jit)
    p, y0 = _inputs()
    assert torch.autograd.gradcheck(lambda p, y0: F(p, y0, 5), (p, y0))
    assert torch.autograd.gradgradcheck(lambda p, y0: F(p, y0, 5), (p, y0))


def test_double_backward_is_the_hessian(jit):
    x = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)
    F = pt.function(cube_sin, jit=jit)
    H = torch.autograd.functional.hessian(F, x)
    ref = torch.autograd.functional.hessian(lambda x: (x ** 3 * torch.sin(x)).sum(), x)
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-14)


def test_third_derivative_is_refused():
    x = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
    F = pt.function(cube_sin)
    (g,) = torch.autograd.grad(F(x), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="second order"):
        torch.autograd.grad(h.sum(), x)


def test_float32_gradients_keep_the_tensor_dtype(jit):
    F = pt.function(cube_sin, jit=jit)
    x = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float32, requires_grad=True)
    F(x).backward()
    assert x.grad.dtype == torch.float32
    x64 = x.detach().double()
    ref = 3 * x64 ** 2 * torch.sin(x64) + x64 ** 3 * torch.cos(x64)
    np.testing.assert_allclose(x.grad, ref, rtol=1e-5)


def test_pytrees_of_tensors(jit):
    d = {"w": torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True),
         "x": torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64, requires_grad=True)}
    s = (torch.tensor(2.0, dtype=torch.float64, requires_grad=True),)
    v = pt.function(tree_loss, jit=jit)(d, s)
    v.backward()
    assert v.item() == pytest.approx(0.5 + 3.0 + 7.5 + 1.0)
    np.testing.assert_allclose(d["w"].grad, [0.5, 1.5, 2.5])
    np.testing.assert_allclose(d["x"].grad, [3.0, 2.0, 3.0])
    assert float(s[0].grad) == pytest.approx(0.5)


def test_only_tensors_that_require_grad_get_one(jit):
    p, _ = _inputs()
    y0 = torch.tensor([0.5, 0.2], dtype=torch.float64)
    pt.function(damped, jit=jit)(p, y0, 4).sum().backward()
    assert p.grad is not None and y0.grad is None


def test_ints_are_constants(jit):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    k = torch.tensor(1)
    pt.function(with_int, jit=jit)(x, k, 3).backward()
    np.testing.assert_allclose(x.grad, [0.0, 12.0, 0.0])


def test_caller_tensors_untouched(jit):
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    before = x.detach().clone()
    v = pt.function(scales_in_place, jit=jit)(x, 3.0)
    v.backward()
    assert torch.equal(x.detach(), before)
    np.testing.assert_allclose(x.grad, 18.0 * before)
    assert v.item() == pytest.approx(45.0)


def first_two(x):
    return x[:2]


def test_a_value_that_is_a_view_of_an_argument_is_a_tensor_of_its_own(jit):
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y = pt.function(first_two, jit=jit)(x)
    with torch.no_grad():
        y += 10.0
    assert torch.equal(x.detach(), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))


SCALE = 2.0


def scaled(x):
    return np.sum(SCALE * x ** 2)


def test_a_global_changed_between_calls_is_read_at_call_time(jit_mode, monkeypatch):
    F = pt.function(scaled, jit=jit_mode != "python")
    for scale in (2.0, 3.0, 2.0, 5.0):
        monkeypatch.setitem(globals(), "SCALE", scale)
        x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
        v = F(x)
        v.backward()
        assert v.item() == pytest.approx(5.0 * scale)
        np.testing.assert_allclose(x.grad, [2.0 * scale, -4.0 * scale])


def test_an_argument_changed_in_place_before_backward_is_refused_by_torch():
    x = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
    y = x * 1.0
    v = pt.function(cube_sin)(y)
    with torch.no_grad():
        y += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        v.backward()


def test_strided_and_broadcast_tensors(jit):
    base = torch.arange(6, dtype=torch.float64).reshape(2, 3).T      # not contiguous
    x = base.clone().T.T.requires_grad_()
    F = pt.function(cube_sin, jit=jit)
    v = F(x.T.T[:, 1])
    v.backward()
    x64 = x.detach()[:, 1]
    expected = 3 * x64 ** 2 * torch.sin(x64) + x64 ** 3 * torch.cos(x64)
    np.testing.assert_allclose(x.grad[:, 1], expected, rtol=1e-13)
    assert torch.all(x.grad[:, 0] == 0)


def test_torch_func_transforms(jit):
    F = pt.function(damped, jit=jit)
    p, y0 = _inputs(grad=False)
    tw = lambda q: damped_torch(q, y0, 5)  # noqa: E731
    mine = lambda q: F(q, y0, 5)  # noqa: E731
    f = torch.func
    np.testing.assert_allclose(f.grad(lambda q: mine(q).sum())(p),
                               f.grad(lambda q: tw(q).sum())(p), rtol=1e-12)
    np.testing.assert_allclose(f.jacrev(mine)(p), f.jacrev(tw)(p), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(f.jacfwd(mine)(p), f.jacrev(tw)(p), rtol=1e-12, atol=1e-15)
    P = torch.stack([p, p + 0.5, p - 0.25])
    np.testing.assert_allclose(f.vmap(mine)(P), torch.stack([tw(q) for q in P]), rtol=1e-13)
    np.testing.assert_allclose(f.vmap(f.grad(lambda q: mine(q).sum()))(P),
                               f.vmap(f.grad(lambda q: tw(q).sum()))(P), rtol=1e-12)
    np.testing.assert_allclose(f.jacrev(f.jacrev(lambda q: mine(q).sum()))(p),
                               f.hessian(lambda q: tw(q).sum())(p), rtol=1e-11, atol=1e-14)


def two_arguments(x, y):
    return np.sum(x ** 2 * y[0]) + np.sin(y[1]) * x[0]


def test_torch_func_hessian_is_forward_over_reverse(jit):
    x = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64)
    y = torch.tensor([0.5, 0.9], dtype=torch.float64)
    H = torch.func.hessian(pt.function(cube_sin, jit=jit))(x)
    ref = torch.func.hessian(lambda x: (x ** 3 * torch.sin(x)).sum())(x)
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-14)
    H = torch.func.hessian(pt.function(two_arguments, jit=jit), argnums=(0, 1))(x, y)
    ref = torch.func.hessian(lambda x, y: (x ** 2 * y[0]).sum() + torch.sin(y[1]) * x[0],
                             argnums=(0, 1))(x, y)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j], ref[i][j], rtol=1e-12, atol=1e-14)


def test_a_third_derivative_through_hessian_is_refused_clearly():
    F = pt.function(cube_sin)
    x = torch.tensor([0.3, 0.7], dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="second order"):
        torch.func.jacfwd(torch.func.hessian(F))(x)


def test_outputs_and_gradients_on_the_argument_device(torch_device):
    x = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
    v = pt.function(cube_sin)(x)
    v.backward()
    assert v.device == x.device and x.grad.device == x.device


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       st.lists(st.floats(-1, 1), min_size=2, max_size=2), st.integers(0, 6))
def test_random_points_against_torch(p, y0, n):
    P, Y = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (p, y0))
    Q, Z = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (p, y0))
    w = torch.linspace(-1, 1, n, dtype=torch.float64)
    out = pt.function(damped)(P, Y, n)
    assert out.shape == (n,)
    if n:
        (out * w).sum().backward()
        (damped_torch(Q, Z, n) * w).sum().backward()
        for a, b in ((P, Q), (Y, Z)):
            np.testing.assert_allclose(a.grad, b.grad, rtol=1e-11, atol=1e-13)


def lotka_volterra_torch(theta, y0, h, n):
    params, x, y, out = tuple(theta), y0[0], y0[1], []   # theta unbound once
    for _ in range(n):
        x, y = lotka_volterra_step(params, x, y, h)
        out.append(torch.stack([x, y]))
    return torch.stack(out)


def test_training_loop_with_adam(jit):
    """An RK4 Lotka-Volterra layer fitted with torch.optim.Adam: the loss goes down,
    and every step's gradient is the one torch's autograd gives the same model."""
    y0 = torch.tensor([1.0, 0.5], dtype=torch.float64)
    truth = torch.tensor([1.1, 0.4, 0.1, 0.4], dtype=torch.float64)
    observed = lotka_volterra_torch(truth, y0, 0.1, 30).detach()
    layer = pt.function(lotka_volterra, jit=jit)
    theta = torch.tensor([1.0, 0.5, 0.2, 0.5], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([theta], lr=0.01)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = ((layer(theta, y0, 0.1, 30) - observed) ** 2).mean()
        loss.backward()
        ref = theta.detach().clone().requires_grad_()
        ((lotka_volterra_torch(ref, y0, 0.1, 30) - observed) ** 2).mean().backward()
        np.testing.assert_allclose(theta.grad, ref.grad, rtol=1e-10, atol=1e-14)
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
