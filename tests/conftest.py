import atexit
import os
import shutil
import sys
import tempfile
import zlib

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# The tests (and the processes they start) keep pullback's compile cache in a
# directory of their own, removed at exit: never the user's.
_CACHE = tempfile.mkdtemp(prefix="pullback-test-cache-")
os.environ["PULLBACK_CACHE_DIR"] = _CACHE
os.environ.pop("PULLBACK_CACHE", None)
atexit.register(shutil.rmtree, _CACHE, True)
# Generated Numba derivatives check their indices: a wrong tape index is an
# IndexError in a test, never a write outside an array (or a crash).
os.environ["PULLBACK_BOUNDSCHECK"] = "1"
# Numba compiles in the call, so that a test sees the compiled code (and a compile
# failure as the error it raises); tests/test_background_compile.py tests the default.
os.environ["PULLBACK_BACKGROUND_COMPILE"] = "0"


@pytest.fixture(params=[False, True], ids=["python", "numba"])
def jit(request):
    """Run a test on both backends: plain Python and Numba."""
    return request.param


@pytest.fixture(autouse=True)
def _object_mode_warnings_per_test(monkeypatch):
    """pullback warns once per process of each callable run through object mode: each
    test starts afresh, so that a test expecting the warning does not depend on
    which tests its process ran before."""
    from pullback.backends import object_mode
    monkeypatch.setattr(object_mode, "_WARNED", set())


@pytest.fixture(params=["python", "numba", "numba-background"])
def jit_mode(request, monkeypatch):
    """Run a test on the Python backend, on Numba compiling in the call, and on
    Numba's default mode, where the first calls run the Numba-flavoured code as
    Python while Numba compiles in the background (a path of its own).  Use
    ``jit=jit_mode != "python"``."""
    if request.param == "numba-background":
        monkeypatch.setenv("PULLBACK_BACKGROUND_COMPILE", "1")
    return request.param


def pytest_addoption(parser):
    """The fuzz tests' options (--fuzz-count, ...), registered here so that pytest
    knows them however it is started; see tests/fuzz/options.py."""
    from fuzz.options import add_options
    add_options(parser)
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/expected from the current generated source")
    parser.addoption("--torch-device", default="cpu", metavar="DEVICE",
                     help="device of the tensors of the torch rule tests (tests asking for the "
                          "torch_device fixture): cpu (default) or cuda, cuda:1, ...; on CUDA "
                          "the pullback helpers they call run under a host-synchronisation guard "
                          "(tests/device_guard.py)")


_PASSED_TWINS = os.path.join(os.path.dirname(__file__), "twin_examples", "passed.txt")


def pytest_sessionstart(session):
    """``PULLBACK_TWINS=record`` writes tests/twin_examples/passed.txt anew (see
    tests/test_every_twin.py): emptied once, by the process that runs the session."""
    if os.environ.get("PULLBACK_TWINS") == "record" and not hasattr(session.config, "workerinput"):
        open(_PASSED_TWINS, "w").close()


def pytest_sessionfinish(session, exitstatus):
    """... and sorted at the end, so that a new recording's diff shows what changed."""
    if os.environ.get("PULLBACK_TWINS") == "record" and not hasattr(session.config, "workerinput"):
        with open(_PASSED_TWINS) as fh:
            lines = sorted(set(fh.read().splitlines()))
        with open(_PASSED_TWINS, "w") as fh:
            fh.write("".join(line + "\n" for line in lines))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "device: runs pullback's array helpers on device arrays (torch on "
        "--torch-device, JAX, CuPy); selected by benchmarks/device_check.sh with -m device")


#: The files of Numba integration tests (each compiles whole gradients through many
#: twins, 10 to 120 s of CPU a test): the suite runs a fixed sixth of their
#: tests; ``PULLBACK_NUMBA_TESTS=all`` runs every one (see CONTRIBUTING.md).
NUMBA_SAMPLED = ("test_numba_twins.py", "test_numba_axes.py", "test_numba_stacks.py",
                 "test_numba_float32.py", "test_numba_arrays.py")
NUMBA_TESTS = os.environ.get("PULLBACK_NUMBA_TESTS", "sample")
if NUMBA_TESTS not in ("sample", "all"):
    raise ValueError(f"PULLBACK_NUMBA_TESTS={NUMBA_TESTS!r}: expected sample or all")


#: Tests of that sixth whose one compile takes 40 to 80 s of CPU (a whole gradient
#: through a dozen twins): PULLBACK_NUMBA_TESTS=all runs them, the suite does not.
#: tests/test_every_twin.py checks the twins they compile one by one.
LONG_COMPILES = frozenset({"test_cross_of_vectors_stacks_and_axes", "test_joins_of_mixed_tuples",
                           "test_rot90_of_matrices_and_3d_arrays", "test_svd",
                           "test_product_and_linalg_twins_in_float32[products]"})


def _sampled_out(item) -> bool:
    """Five sixths of the tests of NUMBA_SAMPLED, by a hash of the test's name (the
    same sixth runs on every run and machine), and LONG_COMPILES."""
    if NUMBA_TESTS == "all" or os.path.basename(str(item.fspath)) not in NUMBA_SAMPLED:
        return False
    long = item.name in LONG_COMPILES or getattr(item, "originalname", None) in LONG_COMPILES
    return zlib.crc32(item.nodeid.encode()) % 6 != 1 or long


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="a Numba test the suite samples out: "
                            "PULLBACK_NUMBA_TESTS=all runs it")
    for item in items:
        if "torch_device" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.device)
        if _sampled_out(item):
            item.add_marker(skip)


@pytest.fixture
def torch_device(request):
    """The device of --torch-device, for a test of pullback helpers on torch tensors.

    Skips without torch.  On cpu it changes nothing.  Otherwise the test body runs
    with that device as torch's default device (its tensors are created there),
    and the pullback helpers it calls run under tests/device_guard.py's guard: a
    host synchronisation inside a helper fails the test at teardown, naming the
    helper and the line.
    """
    torch = pytest.importorskip("torch")
    name = request.config.getoption("--torch-device")
    if name == "cpu":
        yield name
        return
    if name.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip(f"--torch-device={name} but torch sees no CUDA device")
    from device_guard import guarded_helpers, summary_lines
    with torch.device(name), guarded_helpers(request.module, name, request.node.nodeid) as log:
        yield name
    syncs = [r for r in log if r.kind == "sync"]
    if syncs:
        pytest.fail("host synchronisation inside pullback helpers on " + name + ":\n  "
                    + "\n  ".join(summary_lines(syncs)), pytrace=False)


_FUZZ_SUMMARIES: list[str] = []


def pytest_runtest_logreport(report):
    """Collect the random programs' counts from their tests' reports: under pytest-xdist
    the tests run in worker processes, and only their reports reach this one."""
    if report.when == "call" and report.user_properties:
        from fuzz.tally import SUMMARY
        _FUZZ_SUMMARIES.extend(value for name, value in report.user_properties if name == SUMMARY)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _FUZZ_SUMMARIES:
        terminalreporter.section("random programs")
        for summary in _FUZZ_SUMMARIES:
            terminalreporter.write_line(summary)
    if config.getoption("--torch-device", "cpu") == "cpu" or "device_guard" not in sys.modules:
        return
    from device_guard import RECORDS, summary_lines
    tr = terminalreporter
    for kinds, title in ((("sync",), "host synchronisation inside pullback helpers"),
                         (("inherent sync",), "inherent host synchronisation (not failures)"),
                         (("error",), "exceptions raised inside pullback helpers on the device")):
        lines = summary_lines([r for r in RECORDS if r.kind in kinds])
        tr.write_sep("=", f"{title}: {len(lines)}")
        for line in lines:
            tr.write_line(line)
