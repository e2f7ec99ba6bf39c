"""Every registered Numba twin computes what its target computes.

A twin (``forms.numba_twin``) stands for its target (a rule helper, a runtime
helper, or a primal such as ``np.max`` with an axis) in the code ``jit=True``
compiles.  For each one, the examples of ``twin_examples`` give argument sets in
float64 and float32; the target is called as plain Python and the twin through
the path the Numba backend uses (an overload of the helper, the forward sweep's
stub of a primal, Numba itself for a plain helper), inside a small ``@njit``
function, and the two results (and the arrays the call writes into) must agree,
dtype included.

Each Numba compile costs about a second, and the walk of every twin about seven
minutes of CPU: more than the test suite's budget.  So the default run checks that
every twin has an example, and compiles, with the first call of its example in each
dtype, every twin that is new or changed since it last passed, and a fixed eighth of
the others (those whose name hashes to 0 modulo 8).  "Changed" is read from
``twin_examples/passed.txt``: one line per twin and dtype that passed, with a
fingerprint of the twin's source, its target's and its example's (:func:`fingerprint`).
``PULLBACK_TWINS=record`` walks every twin and writes that file anew (run it after
changing a twin, and commit the file); ``PULLBACK_TWINS=all`` walks every twin
without writing; ``PULLBACK_TWINS=thorough`` checks every call of every example, at
several random shapes (each call with a new layout of arguments is one more compile).
"""
from __future__ import annotations

import hashlib
import inspect
import os
import pathlib
import zlib

import numpy as np
import pytest

import pullback  # noqa: F401  (registers every rule and its twins)

numba = pytest.importorskip("numba")

from twin_examples import EXAMPLES, NO_EXAMPLE_YET, Call, Xfail  # noqa: E402

from pullback.backends import numba as numba_backend  # noqa: E402
from pullback.backends import numba_twins  # noqa: E402
from pullback.rules import forms, registry  # noqa: E402

WALK = os.environ.get("PULLBACK_TWINS", "sample")
if WALK not in ("sample", "all", "thorough", "record"):
    raise ValueError(f"PULLBACK_TWINS={WALK!r}: expected sample, all, thorough or record")
THOROUGH = WALK == "thorough"
SEEDS = range(4) if THOROUGH else range(1)
RTOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5}


def _registered():
    """(name, target) of every registered twin, but the forward sweep's stubs (made
    from a primal's twin while compiling; the primal itself is walked)."""
    stubs = {id(stub) for _, stub in numba_backend._STUBS.values()}
    return sorted(((registry.describe(t), t) for t, _ in forms.all_twins() if id(t) not in stubs),
                  key=lambda pair: pair[0])


TARGETS = dict(_registered())


def test_no_example_yet_lists_only_registered_twins_without_examples():
    assert NO_EXAMPLE_YET <= set(TARGETS)
    assert not (NO_EXAMPLE_YET & set(EXAMPLES))
    assert set(EXAMPLES) <= set(TARGETS), "examples for targets no twin is registered for"


def test_every_twin_has_an_example():
    missing = set(TARGETS) - set(EXAMPLES) - NO_EXAMPLE_YET
    assert not missing, (f"{sorted(missing)} have a Numba twin but no example in "
                         "tests/twin_examples: add one (or, with a reason, list it in NO_EXAMPLE_YET)")


PASSED_FILE = pathlib.Path(__file__).parent / "twin_examples" / "passed.txt"


def _source(obj) -> str:
    """``obj``'s source, and the names of what its closure holds (a twin made by a
    factory differs from its siblings there); its repr where it has no source."""
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        return repr(obj) if not callable(obj) else getattr(obj, "__qualname__", repr(obj))
    cells = getattr(obj, "__closure__", None) or ()
    return text + "".join(f"\n{getattr(c.cell_contents, '__qualname__', type(c.cell_contents).__name__)}"
                          for c in cells if _has_contents(c))


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def fingerprint(name: str) -> str:
    """A digest of what decides ``name``'s twin check: the twin's source, its
    target's, and its example's (a change in a function they call is not seen)."""
    target = TARGETS[name]
    twin = forms.twin(target)
    make = EXAMPLES.get(name)
    make = make.make if isinstance(make, Xfail) else make
    parts = ["plain" if twin is forms.PLAIN else _source(twin), _source(target), _source(make)]
    return hashlib.sha1("\n\0".join(parts).encode()).hexdigest()[:16]


PASSED = frozenset(PASSED_FILE.read_text().splitlines()) if PASSED_FILE.exists() else frozenset()


def _line(name: str, dtype) -> str:
    return f"{name} {np.dtype(dtype).name} {fingerprint(name)}"


def _walked(name, dtype) -> bool:
    """Whether this run compiles ``name``'s twin in ``dtype`` (see the docstring)."""
    return WALK != "sample" or zlib.crc32(name.encode()) % 8 == 0 \
        or _line(name, dtype) not in PASSED


def _record(name, dtype) -> None:
    """Under ``PULLBACK_TWINS=record``: this twin passed in this dtype (one short
    line appended, which concurrent test processes may do at once)."""
    if WALK == "record":
        with open(PASSED_FILE, "a") as fh:
            fh.write(_line(name, dtype) + "\n")


# ---------------------------------------------------------------------------
# The twin as generated code reaches it

def _compiled_callee(target):
    """What generated ``jit=True`` code calls for ``target``."""
    numba_twins.install()
    twin = forms.twin(target)
    if twin is forms.PLAIN:
        return numba_backend._jit_helper(target)
    if registry.lookup(target) is not None:
        stub = numba_backend._primal_stub(target, twin)
        numba_twins.install()           # overloads the new stub with the primal's twin
        return stub
    return target


def _literal(v) -> str:
    """``v`` as source: NumPy by its name (an ``xp=`` namespace argument), else repr."""
    return "np" if v is np else repr(v)


def _is_constant(v) -> bool:
    """Written into the calling source as a literal, as generated code writes an
    axis, a flag, a mode or a namespace (the twins read such arguments as literal
    types)."""
    if v is np:
        return True
    if isinstance(v, tuple):
        return all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v) \
            or all(isinstance(x, tuple) and _is_constant(x) for x in v) and len(v) > 0
    return v is None or isinstance(v, (bool, int, str)) and not isinstance(v, np.generic)


_WRAPPERS: dict = {}


def _wrapper(target, call: Call):
    """An ``@njit`` function calling the twin with ``call``'s arguments: the constant
    ones written in its source, the others its parameters (one compile per layout)."""
    params, args, kwargs = [], [], []
    for i, v in enumerate(call.args):
        args.append(_literal(v) if _is_constant(v) else f"p{i}")
        params += [] if _is_constant(v) else [f"p{i}"]
    for k, v in call.kwargs.items():
        kwargs.append(f"{k}={_literal(v)}" if _is_constant(v) else f"{k}=k_{k}")
        params += [] if _is_constant(v) else [f"k_{k}"]
    src = (f"def call({', '.join(params)}):\n"
           f"    return callee({', '.join(args + kwargs)})\n")
    key = (id(target), src)
    if key not in _WRAPPERS:
        ns = {"callee": _compiled_callee(target), "np": np}
        exec(src, ns)
        _WRAPPERS[key] = (numba.njit(ns["call"]), params)
    fn, params = _WRAPPERS[key]
    values = [v for v in call.args if not _is_constant(v)]
    values += [v for v in call.kwargs.values() if not _is_constant(v)]
    return fn, values


# ---------------------------------------------------------------------------
# Comparison

def _copy(v):
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, (tuple, list)):
        return type(v)(_copy(x) for x in v)
    return v


def _agree(got, want, rtol, where):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), \
            f"{where}: {type(got).__name__} of {len(got)} for {type(want).__name__} of {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _agree(g, w, rtol, f"{where}[{i}]")
        return
    if want is None:
        assert got is None, f"{where}: {got!r} for None"
        return
    want_a, got_a = np.asarray(want), np.asarray(got)
    assert got_a.shape == want_a.shape, f"{where}: shape {got_a.shape} for {want_a.shape}"
    if isinstance(got, np.ndarray) and isinstance(want, (np.ndarray, np.generic)):
        # (a number Numba returns is a Python number: its dtype is not seen)
        assert got_a.dtype == want_a.dtype, f"{where}: dtype {got_a.dtype} for {want_a.dtype}"
    if want_a.dtype.kind in "fc":
        # The scale of the finite entries: an infinite (or NaN) one must not make the
        # absolute tolerance infinite, which would pass any finite entry.
        finite = np.abs(want_a[np.isfinite(want_a)])
        scale = float(np.max(finite, initial=0.0))
        np.testing.assert_allclose(got_a, want_a, rtol=rtol, atol=rtol * scale, err_msg=where)
    else:
        np.testing.assert_array_equal(got_a, want_a, err_msg=where)


def _cases():
    for name, target in TARGETS.items():
        if name in NO_EXAMPLE_YET:
            continue
        for dtype in (np.float64, np.float32):
            if not _walked(name, dtype):
                continue
            marks = []
            make = EXAMPLES.get(name)
            if isinstance(make, Xfail) and np.dtype(dtype) in make.dtypes:
                marks = [pytest.mark.xfail(strict=True, reason=make.reason)]
            yield pytest.param(name, dtype, id=f"{name}-{np.dtype(dtype).name}", marks=marks)


@pytest.mark.parametrize("name, dtype", list(_cases()))
def test_twin_computes_what_its_target_computes(name, dtype):
    make = EXAMPLES.get(name)
    assert make is not None, (f"{name} has a Numba twin but no example in tests/twin_examples: "
                              "add one (or, with a reason, list it in NO_EXAMPLE_YET)")
    if isinstance(make, Xfail):
        if np.dtype(dtype) in make.dtypes:
            _record(name, dtype)        # a known disagreement: walked again when it changes
        make = make.make
    target = TARGETS[name]
    rtol = RTOL[np.dtype(dtype)]
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        calls = make(rng, dtype)
        for n, call in enumerate(calls if THOROUGH else calls[:1]):
            where = f"{name} example {n} (seed {seed})"
            if call.known_bug:
                with pytest.raises(Exception):      # still wrong: a fix removes the mark
                    _check(target, call, rtol, where)
                continue
            _check(target, call, rtol, where)
    _record(name, dtype)


def _check(target, call, rtol, where):
    expected_args = _copy(call.args), _copy(call.kwargs)
    want = target(*expected_args[0], **expected_args[1])
    fn, values = _wrapper(target, call)
    values = _copy(values)
    got = fn(*values)
    _agree(got, want, rtol, where)
    # what the call wrote into its array arguments (an in-place helper)
    written = [v for v in list(expected_args[0]) + list(expected_args[1].values())
               if not _is_constant(v)]
    for i, (g, w) in enumerate(zip(values, written)):
        _agree(g, w, rtol, f"{where}, argument {i} after the call")


def test_a_twin_changed_since_it_passed_is_compiled_by_the_default_run(monkeypatch):
    import test_every_twin as here
    name = next(n for n in sorted(EXAMPLES) if zlib.crc32(n.encode()) % 8 != 0
                and _line(n, np.float64) in PASSED)
    monkeypatch.setattr(here, "WALK", "sample")
    assert not _walked(name, np.float64)        # unchanged and not in the sampled eighth
    monkeypatch.setattr(here, "PASSED", PASSED - {_line(name, np.float64)})
    assert _walked(name, np.float64)            # its fingerprint is not the one that passed
