"""Derivative rules, grouped by domain; importing this package registers them all."""
from . import (  # noqa: F401
    decompositions,
    einsum,
    elementwise,
    indexing,
    interpolation,
    joining,
    linalg,
    manipulation,
    nondiff,
    prod,
    reductions,
    registry,
    results,
    scalar,
    scipy_lib,
    scipy_linalg,
    scipy_special,
    shapes,
    solve,
    tensor_products,
)

