"""Derivative rules, grouped by domain; importing this package registers them all."""
from . import elementwise, indexing, linalg, nondiff, prod, reductions, registry, results, scalar, shapes  # noqa: F401  # noqa: F401
