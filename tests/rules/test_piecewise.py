"""rules/piecewise.py: select and clip against finite differences, with broadcast
conditions, choices and bounds (values away from the bounds, where clip has a kink)."""
import numpy as np
import pytest

from pullback.rules import piecewise

from .checks import check_rule, check_vjp, rule_vjp, values


@pytest.mark.parametrize("shape, cshape", [((4,), (4,)), ((3, 4), (3, 4)), ((3, 4), (4,)),
                                           ((3, 1), (3, 4))])
def test_select(shape, cshape):
    x = values(1, shape)
    conds = [values(2, cshape) > 0.3, values(3, cshape) < -0.2]
    choices = [x * 1.5, values(4, shape)]
    f = lambda c0, c1, d: np.select(conds, [c0, c1], d)      # noqa: E731
    args = [choices[0], choices[1], values(5, shape)]
    for k in range(2):
        r = rule_vjp(np.select, "choicelist")     # a list: one cotangent per choice
        check_vjp(f, lambda g, ans, c0, c1, d, k=k, r=r: r(g, ans, conds, [c0, c1], d)[k], args, k)
    r = rule_vjp(np.select, "default")
    check_vjp(f, lambda g, ans, c0, c1, d: r(g, ans, conds, [c0, c1], d), args, 2)


@pytest.mark.parametrize("sa, slo, shi", [((5,), (), ()), ((3, 4), (4,), (3, 1)), ((3, 1), (1, 4), ())])
def test_clip(sa, slo, shi):
    a = np.asarray(values(1, sa) * 2)
    lo, hi = values(2, slo, -0.6, -0.4), values(3, shi, 0.4, 0.6)
    a = np.where(np.abs(np.abs(a) - 0.5) < 0.15, 0.0, a)      # no entry near a bound
    check_rule(np.clip, [a, lo, hi])
    check_rule(np.clip, [a], kwargs={"a_min": -0.5, "a_max": None})


@pytest.mark.parametrize("mask", [piecewise.clip_vjp_a, piecewise.clip_vjp_min,
                                  piecewise.clip_vjp_max])
def test_clip_masks_are_linear_in_the_cotangent(mask):
    # Forward mode's tangent of clip calls these; reverse mode over it differentiates them.
    a = values(3, (5,))
    check_rule(mask, (values(4, (5,)), a, -0.3, 0.4))
