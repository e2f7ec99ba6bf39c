import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pullback.core.kinds import FLOAT, Kind
from pullback.rules.interpolation import interp_vjp_fp, interp_vjp_x
from pullback.rules.registry import lookup

from .checks import SETTINGS, check_vjp, rule_vjp, seeds, shapes, values

pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)


# ---------------------------------------------------------------------------
# linspace

@SETTINGS
@given(endpoints=pairs, num=st.integers(0, 6), endpoint=st.booleans(), data=st.data(),
       seed=seeds)
def test_linspace(endpoints, num, endpoint, data, seed):
    s1, s2 = endpoints.input_shapes
    axis = data.draw(st.integers(-len(endpoints.result_shape) - 1, len(endpoints.result_shape)))
    args = [values(seed, s1), values(seed + 1, s2)]
    kw = dict(num=num, endpoint=endpoint, axis=axis)
    f = lambda a, b: np.linspace(a, b, **kw)      # noqa: E731
    for k, p in enumerate(["start", "stop"]):
        r = rule_vjp(np.linspace, p)
        check_vjp(f, lambda g, ans, a, b, r=r: r(g, ans, a, b, **kw), args, k)


def test_linspace_is_differentiable_in_its_endpoints_only():
    rule = lookup(np.linspace)
    assert rule.differentiable and set(rule.adjoints) == {"start", "stop"}
    assert rule.result(np.linspace, [FLOAT, FLOAT], {}, None) == Kind(1, "f")
    assert rule.result(np.linspace, [Kind(1, "f"), FLOAT], {}, None) == Kind(-1, "f")
    with pytest.raises(NotImplementedError, match="retstep"):
        rule_vjp(np.linspace, "start")(np.ones(3), None, 0.0, 1.0, 3, True, True)


# ---------------------------------------------------------------------------
# interp

@SETTINGS
@given(xshape=shapes, n=st.integers(1, 5), bounds=st.sampled_from(["default", "given"]),
       seed=seeds)
def test_interp(xshape, n, bounds, seed):
    rng = np.random.default_rng(seed)
    knots = np.cumsum(rng.uniform(0.5, 1.5, n))
    x = values(seed + 1, xshape, knots[0] - 1.0, knots[-1] + 1.0)
    fp = values(seed + 2, (n,))
    extra = [-3.0, 4.0] if bounds == "given" else []
    params = ["x", "fp"] + (["left", "right"] if extra else [])
    args = [x, fp] + extra

    def f(x, fp, *lr):
        return np.interp(x, knots, fp, *lr)
    for k, p in enumerate(params):
        r = rule_vjp(np.interp, p)
        check_vjp(f, lambda g, ans, x, fp, *lr, r=r: r(g, ans, x, knots, fp, *lr), args, k)


def test_interp_at_knots_and_outside():
    knots, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 1.0])
    x = np.array([-1.0, 0.0, 1.0, 3.0, 4.0])
    g = np.ones(5)
    # The segment to the right at an inner knot, the last one at the end, 0 outside.
    np.testing.assert_allclose(interp_vjp_x(g, x, knots, fp), [0.0, 2.0, -0.5, -0.5, 0.0])
    # Outside the knots the end values carry the result, unless left/right are given.
    np.testing.assert_allclose(interp_vjp_fp(g, x, knots, fp), [2.0, 1.0, 2.0])
    np.testing.assert_allclose(interp_vjp_fp(g, x, knots, fp, -1.0, 5.0), [1.0, 1.0, 1.0])
    with pytest.raises(NotImplementedError, match="period"):
        interp_vjp_x(g, x, knots, fp, period=2.0)


# ---------------------------------------------------------------------------
# torch

def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    from pullback.rules.interpolation import linspace_vjp

    rng = np.random.default_rng(6)
    a = torch.tensor(rng.standard_normal(3), requires_grad=True)
    b = torch.tensor(rng.standard_normal(3), requires_grad=True)
    t = torch.linspace(0, 1, 4, dtype=torch.float64)[:, None]
    out = a + t * (b - a)
    g = torch.tensor(rng.standard_normal((4, 3)))
    out.backward(g)
    torch.testing.assert_close(linspace_vjp(g, a.detach(), b.detach(), 4), a.grad)
    torch.testing.assert_close(linspace_vjp(g, a.detach(), b.detach(), 4, which="stop"), b.grad)
    knots = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64)
    fp = torch.tensor([0.0, 2.0, 1.0], dtype=torch.float64)
    x = torch.tensor([0.5, 0.7, 2.0], dtype=torch.float64)
    ct = interp_vjp_fp(torch.ones(3, dtype=torch.float64), x, knots, fp)
    assert isinstance(ct, torch.Tensor)
    torch.testing.assert_close(ct, torch.tensor([0.8, 1.7, 0.5], dtype=torch.float64))
