"""Derivative rules of the run-time helpers forward mode's code calls, so that
reverse mode differentiates that code again (a Hessian is reverse over forward)."""
from __future__ import annotations

from ..core.runtime import fit, zeros_tangent
from .elementwise import unbroadcast  # noqa: F401 - named by the template below
from .registry import defnondiff, defrule
from .tangents import deftangent

# Fitting a tangent to its result's shape is a broadcast: its cotangent is summed back.
# ``like`` gives only its shape (its cotangent is zero, of its shape: ``g``'s).
defrule(fit, "tangent, like", tangent="unbroadcast(g, tangent)", like="0.0 * g")
deftangent(fit, linear="tangent", constant="like")
defnondiff(zeros_tangent)
