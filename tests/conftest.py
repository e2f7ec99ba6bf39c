import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(params=[False, True], ids=["python", "numba"])
def jit(request):
    """Run a test on both backends: plain Python and Numba."""
    return request.param
