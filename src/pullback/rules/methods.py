"""Array methods (``x.sum(axis=0)``) mapped to the NumPy function whose rule applies."""
from __future__ import annotations

import numpy as np

METHODS: dict[str, object] = {"copy": np.copy}


def _collect():
    from . import reductions, shapes
    for module in (reductions, shapes):
        METHODS.update(getattr(module, "METHODS", {}))


_collect()
