"""Derivative rules, grouped by domain; importing this package registers them all."""
from . import registry, scalar  # noqa: F401
from . import elementwise, reductions, linalg, shapes, indexing, prod  # noqa: F401
from . import methods  # noqa: F401
