"""A helper module for tests that inline a function defined in another file."""
import numpy as np


def spread(x):
    # Several lines, so that this file's line numbers differ from the caller's.
    y = np.ones(3) * x
    return np.sum(y.view(np.float64))
