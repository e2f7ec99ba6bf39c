"""Array methods (``x.sum(axis=0)``) mapped to the NumPy function whose rule applies."""
from __future__ import annotations

import numpy as np

from . import reductions, shapes

METHODS: dict[str, object] = {"copy": np.copy}
for _module in (reductions, shapes):
    METHODS.update(_module.METHODS)
