import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(params=[False, True], ids=["python", "numba"])
def jit(request):
    """Run a test on both backends: plain Python and Numba."""
    return request.param


def pytest_addoption(parser):
    """The fuzz tests' options (--fuzz-count, ...), registered here so that pytest
    knows them however it is started; see tests/fuzz/options.py."""
    from fuzz.options import add_options
    add_options(parser)
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/expected from the current generated source")
