"""Examples for the twins of rules/piecewise, interpolation and polynomial."""
from __future__ import annotations

import numpy as np

from ._base import arr, call, like, num, sizes

R = "pullback.rules."
EXAMPLES: dict = {}


# ---- select and clip
def _select_args(rng, dt):
    m, n = sizes(rng, 2)
    x = arr(rng, dt, (m, n))
    conds = (x < -0.5, x > 0.5)
    # (one shape: the twin refuses to broadcast, which NumPy's np.select does)
    choices = (arr(rng, dt, (m, n)), arr(rng, dt, (m, n)))
    return x, conds, choices


def _select(rng, dt):
    x, conds, choices = _select_args(rng, dt)
    return [call(conds, choices), call(conds, choices, num(rng, dt)), call(conds, choices, x)]


def _select_vjp(rng, dt):
    x, conds, choices = _select_args(rng, dt)
    g = like(rng, np.select(conds, choices))
    # (the rule's template passes the default, 0 when the call omits it)
    return [call(g, conds, choices, 0), call(g, conds, choices, num(rng, dt)), call(g, conds, choices, x)]


def _clip_vjp(without):
    """Calls of a clip cotangent; ``without``: the bounds that may be None (the rule's
    template passes all four bound parameters, None where the call gives none)."""
    def make(rng, dt):
        m, n = sizes(rng, 2)
        a, g = arr(rng, dt, (m, n)), arr(rng, dt, (m, n))
        lo, hi = arr(rng, dt, (n,), -1.0, 0.0), arr(rng, dt, (m, 1), 0.0, 1.0)
        # (min=/max=, NumPy 2's names, the twins refuse)
        out = [call(g, a, num(rng, dt, -1, 0), num(rng, dt, 0, 1), None, None),
               call(g, a, lo, hi, None, None)]
        out += [call(g, a, None, hi, None, None)] if "min" in without else []
        out += [call(g, a, lo, None, None, None)] if "max" in without else []
        return out
    return make


EXAMPLES["numpy.select"] = _select
EXAMPLES[R + "piecewise.select_vjp_choices"] = _select_vjp
EXAMPLES[R + "piecewise.select_vjp_default"] = _select_vjp
EXAMPLES[R + "piecewise.clip_vjp_a"] = _clip_vjp(("min", "max"))
EXAMPLES[R + "piecewise.clip_vjp_min"] = _clip_vjp(("max",))
EXAMPLES[R + "piecewise.clip_vjp_max"] = _clip_vjp(("min",))


# ---- interpolation
def _interp_args(rng, dt):
    xp = np.sort(arr(rng, dt, (6,), 0.0, 1.0))
    fp = arr(rng, dt, (6,))
    x = arr(rng, dt, sizes(rng, 1), -0.2, 1.2)
    return x, xp, fp


def _interp(rng, dt):
    x, xp, fp = _interp_args(rng, dt)
    return [call(x, xp, fp), call(x, xp, fp, left=num(rng, dt)),
            call(x, xp, fp, num(rng, dt), num(rng, dt)), call(x, xp, fp, right=num(rng, dt))]


def _interp_vjp(rng, dt):
    return [call(like(rng, np.interp(*c.args, **c.kwargs)), *c.args, **c.kwargs) for c in _interp(rng, dt)]


def _linspace_vjp(rng, dt):
    out = []
    # (array start or stop the twin refuses)
    for start, stop, kw in ((num(rng, dt), num(rng, dt), dict(num=5)),
                            (num(rng, dt), num(rng, dt), dict(num=7, endpoint=False))):
        g = like(rng, np.linspace(start, stop, **kw))
        out += [call(g, start, stop, **kw, which=w) for w in ("start", "stop")]
    return out


EXAMPLES["numpy.interp"] = _interp
for _which in ("x", "fp", "left", "right"):
    EXAMPLES[R + f"interpolation.interp_vjp_{_which}"] = _interp_vjp
EXAMPLES[R + "interpolation.linspace_vjp"] = _linspace_vjp


# ---- polynomials
def _polyval(rng, dt):
    p = arr(rng, dt, (4,))
    return [call(p, arr(rng, dt, sizes(rng, 1))), call(p, arr(rng, dt, sizes(rng, 2))), call(p, num(rng, dt))]


def _polyval_vjp(rng, dt):
    return [call(like(rng, np.polyval(*c.args)), *c.args) for c in _polyval(rng, dt)]


EXAMPLES["numpy.polyval"] = _polyval
EXAMPLES[R + "polynomial.polyval_vjp_x"] = _polyval_vjp
EXAMPLES[R + "polynomial.polyval_vjp_p"] = _polyval_vjp
