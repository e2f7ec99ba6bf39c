import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# The tests (and the processes they start) keep pullback's compile cache in a
# directory of their own, removed at exit: never the user's.
_CACHE = tempfile.mkdtemp(prefix="pullback-test-cache-")
os.environ["PULLBACK_CACHE_DIR"] = _CACHE
os.environ.pop("PULLBACK_CACHE", None)
atexit.register(shutil.rmtree, _CACHE, True)


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
