import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .checks import SETTINGS, axes_for, check_rule, check_vjp, rule_vjp, seeds, shapes, values

special = pytest.importorskip("scipy.special")
from pullback.rules.scipy_special import log_softmax_jvp, softmax_vjp  # noqa: E402

# (function, domain): away from poles and kinks; None = standard normal.
UNARY = [(special.gammaln, (0.2, 4.0)), (special.digamma, (0.2, 4.0)), (special.erf, None),
         (special.erfc, None), (special.expit, None), (special.logit, (0.05, 0.95)),
         (special.gamma, (0.2, 4.0)), (special.erfcx, (-1.0, 3.0)), (special.ndtr, None),
         (special.log_ndtr, (-6.0, 3.0)), (special.ndtri, (0.05, 0.95))]
BINARY = [(special.xlogy, (0.2, 2.0)), (special.xlog1py, (-0.8, 2.0))]


def _kw(fn, param, **kw):
    r = rule_vjp(fn, param)
    return lambda g, ans, *args: r(g, ans, *args, **kw)


@pytest.mark.parametrize("fn, dom", UNARY, ids=[f.__name__ for f, _ in UNARY])
@SETTINGS
@given(shape=shapes, seed=seeds)
def test_unary(fn, dom, shape, seed):
    x = values(seed, shape) if dom is None else values(seed, shape, *dom)
    check_vjp(fn, rule_vjp(fn, "x"), [x], 0)


@pytest.mark.parametrize("fn, dom", BINARY, ids=[f.__name__ for f, _ in BINARY])
@SETTINGS
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       seed=seeds)
def test_binary(fn, dom, shapes_, seed):
    s1, s2 = shapes_.input_shapes
    args = [values(seed, s1), values(seed + 1, s2, *dom)]
    check_vjp(fn, rule_vjp(fn, "x"), args, 0)
    check_vjp(fn, rule_vjp(fn, "y"), args, 1)


def test_xlogy_at_x_zero():
    with np.errstate(all="raise"):
        for fn in (special.xlogy, special.xlog1py):
            x, y = np.zeros(2), np.array([0.0, -1.0])
            assert np.all(rule_vjp(fn, "y")(np.ones(2), fn(x, y), x, y) == 0.0)


@SETTINGS
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       keepdims=st.booleans(), with_b=st.booleans(), data=st.data(), seed=seeds)
def test_logsumexp(shapes_, keepdims, with_b, data, seed):
    s1, s2 = shapes_.input_shapes
    axis = data.draw(axes_for(len(shapes_.result_shape)))
    a = values(seed, s1)
    if not with_b:
        kw = dict(axis=axis, keepdims=keepdims)
        check_vjp(lambda a: special.logsumexp(a, **kw), _kw(special.logsumexp, "a", **kw),
                  [np.broadcast_to(a, shapes_.result_shape).copy()], 0)
        return
    b = values(seed + 1, s2, 0.5, 2.0)
    kw = dict(axis=axis, keepdims=keepdims)
    f = lambda a, b: special.logsumexp(a, b=b, **kw)     # noqa: E731
    for k, p in enumerate(["a", "b"]):
        r = rule_vjp(special.logsumexp, p)
        check_vjp(f, lambda g, ans, a, b, r=r: r(g, ans, a, b=b, **kw), [a, b], k)
    with pytest.raises(NotImplementedError, match="return_sign"):
        rule_vjp(special.logsumexp, "a")(1.0, None, a, return_sign=True)


@pytest.mark.parametrize("fn", [special.softmax, special.log_softmax], ids=lambda f: f.__name__)
@SETTINGS
@given(shape=shapes, data=st.data(), seed=seeds)
def test_softmax(fn, shape, data, seed):
    axis = data.draw(axes_for(len(shape)))
    check_vjp(lambda x: fn(x, axis=axis), _kw(fn, "x", axis=axis), [values(seed, shape)], 0)


def test_torch_against_autograd(torch_device):
    torch = pytest.importorskip("torch")
    from pullback.rules.scipy_special import log_softmax_vjp, logsumexp_vjp, softmax_vjp

    rng = np.random.default_rng(8)
    x = torch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    g = torch.tensor(rng.standard_normal(3))
    out = torch.logsumexp(x, dim=1)
    out.backward(g)
    torch.testing.assert_close(logsumexp_vjp(g, out.detach(), x.detach(), 1), x.grad)
    for fwd, vjp in ((torch.softmax, softmax_vjp), (torch.log_softmax, log_softmax_vjp)):
        x.grad = None
        out = fwd(x, dim=0)
        gg = torch.tensor(rng.standard_normal((3, 4)))
        out.backward(gg)
        torch.testing.assert_close(vjp(gg, out.detach(), x.detach(), 0), x.grad)


def test_log_ndtr_far_in_the_left_tail_is_finite():
    """exp(-x²/2) / ndtr(x) underflows to 0/0 near x = -40; the rule's one exponential
    gives the tail's slope, about -x."""
    x = np.array([-40.0, -200.0])
    d = rule_vjp(special.log_ndtr, "x")(np.ones(2), special.log_ndtr(x), x)
    np.testing.assert_allclose(d, -x, rtol=1e-3)


# ---------------------------------------------------------------------------
# The softmaxes' tangent helpers, differentiated again (Hessians reverse over forward)

@pytest.mark.parametrize("axis", [None, 1])
def test_softmax_tangent_helpers_rules(axis):
    x = values(41, (3, 4))
    s, c = special.softmax(x, axis=axis), values(42, (3, 4))
    # a function of c and of s alone (x only passes through)
    check_rule(softmax_vjp, (c, s, x), kwargs={"axis": axis}, only=("c", "s"))
    r = special.log_softmax(x, axis=axis)
    check_rule(log_softmax_jvp, (c, r, x), kwargs={"axis": axis}, only=("v", "r"))
