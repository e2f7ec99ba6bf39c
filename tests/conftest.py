import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/expected from the current generated source")


@pytest.fixture(params=[False, True], ids=["python", "numba"])
def jit(request):
    """Run a test on both backends: plain Python and Numba."""
    return request.param
