"""pullback: automatic differentiation of plain Python by source transformation (reverse
mode, forward mode, Hessians)."""
from . import rules as _rules  # registers the derivative rules  # noqa: F401
from .api import show, vjp
from .check import GradCheck, check_grad
from .core.background import finish_compiling
from .core.checkpointing import checkpointed
from .core.diskcache import cache_dir, set_cache_dir
from .core.errors import (
                          MissingRuleError,
                          NumbaCompileError,
                          PerformanceWarning,
                          PullbackError,
                          SourceUnavailableError,
                          UnsupportedSyntaxError,
)
from .core.folds import accumulate, foldl, foldr, scan
from .custom import custom_jvp, custom_vjp, rule, stop_gradient, unregister
from .hessians import hessian, hvp
from .jacobians import jacfwd, jacobian, jacrev, jvp
from .nesting import grad, value_and_grad
from .sparse_jacobians import sparsity
from .trees import tree_flatten, tree_map, tree_unflatten
from .vmap import vmap

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "jacobian", "hvp",
           "hessian", "show", "rule", "tree_flatten", "tree_unflatten", "tree_map",
           "unregister", "custom_vjp", "custom_jvp", "stop_gradient", "check_grad", "GradCheck",
           "PullbackError", "UnsupportedSyntaxError", "MissingRuleError", "SourceUnavailableError",
           "NumbaCompileError", "PerformanceWarning", "cache_dir", "set_cache_dir",
           "finish_compiling",
           "scan", "foldl", "foldr", "accumulate", "checkpointed", "vmap", "sparsity"]
