"""Arguments for every registered Numba twin, keyed by its target's qualified name
(``registry.describe``): a function ``(rng, dtype) -> [Call, ...]`` drawing random
shapes from ``rng``, with floating arrays of ``dtype`` (float64 or float32).
``tests/test_every_twin.py`` calls each target and its twin with them."""
from __future__ import annotations

import numpy as np

from . import elementwise, linalg, piecewise, runtime, scipy_rules, shapes
from ._base import Call, Xfail, call  # noqa: F401

EXAMPLES: dict = {}
for _module in (elementwise, shapes, piecewise, linalg, runtime, scipy_rules):
    assert not (set(_module.EXAMPLES) & set(EXAMPLES)), "an example is given twice"
    EXAMPLES.update(_module.EXAMPLES)

#: Twins without an example yet, each with the reason.
NO_EXAMPLE_YET: set = set()

#: Twins that return float64 where their target keeps float32 (found by
#: test_every_twin; the float32 case of each is a strict xfail until its twin
#: keeps the dtype).
FLOAT32_UPCASTS: set = set()
for _name in FLOAT32_UPCASTS:
    EXAMPLES[_name] = Xfail(EXAMPLES[_name], "the twin returns float64 for float32 arguments",
                            (np.dtype(np.float32),))
