"""pullback: reverse-mode automatic differentiation of plain Python by source transformation."""
from .api import grad, value_and_grad, vjp, show, rule
from .check import check_grad, GradCheck
from .core.errors import (PullbackError, UnsupportedSyntaxError, MissingRuleError,
                              SourceUnavailableError, NumbaCompileError)
from . import rules as _rules  # registers the derivative rules  # noqa: F401

__all__ = ["grad", "value_and_grad", "vjp", "show", "rule", "check_grad", "GradCheck", "PullbackError", "UnsupportedSyntaxError",
           "MissingRuleError", "SourceUnavailableError", "NumbaCompileError"]
