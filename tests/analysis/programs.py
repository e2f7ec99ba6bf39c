"""Small programs for the analysis tests, and a way to lower them to the IR."""
from __future__ import annotations

import math

import numpy as np

from pullback.analysis.activity import KindInference, activity
from pullback.core import ir
from pullback.core.kinds import FLOAT, INT, Kind
from pullback.frontend.normalize import normalize
from pullback.frontend.parse import parse_function
from pullback.frontend.resolve import value_lookup


def lower(f, **arg_kinds):
    """(IR function, kinds, active set) of ``f`` for arguments of these kinds,
    differentiated with respect to every float argument."""
    parsed = parse_function(f)
    fn_ir, norm = normalize(parsed)
    kinds = KindInference(fn_ir, arg_kinds, value_lookup(parsed, norm.externals)).run()
    wrt = {p for p, k in arg_kinds.items() if k.dtype == "f"}
    return fn_ir, kinds, activity(fn_ir, kinds, wrt)


def assign_to(fn_ir, name):
    """The statements that assign ``name``, in program order."""
    return [s for s in ir.walk(fn_ir.body) if isinstance(s, ir.Assign) and s.target == name]


def mixed(x, p, n):
    k = n * 2                      # an int: never active
    m = len(p)                     # a length
    y = x * x
    z = np.sin(p) * y
    unused = np.cos(x)             # depends on x but does not reach the result
    flag = x > 0.5                 # a bool
    idx = np.argmax(p)             # an index of a float array
    return np.sum(z) + float(k + m + idx) + (1.0 if flag else 0.0) + 0.0 * unused * 0.0


def through_nondifferentiable(x):
    s = np.sign(x)                 # piecewise constant: no derivative flows
    f = math.floor(x)
    return s * 2.0 + f


ARGS_MIXED = dict(x=FLOAT, p=Kind(1, "f"), n=INT)
