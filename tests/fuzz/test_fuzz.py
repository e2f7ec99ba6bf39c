"""Random programs from the grammar, checked on both backends.

By default (the CI profile) a fixed set of programs runs, drawn from a fixed
seed, with the constructs of features.KNOWN_BROKEN* switched off.  The test
fails on any wrong value or gradient, crash or mutated argument; Hypothesis
then shrinks the failing program and prints it.  See tests/fuzz/__init__.py for
the options and for a long run.
"""
from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, Phase, assume, given, seed, settings

from .features import BACKENDS
from .grammar import programs
from .oracle import check
from .tally import SUMMARY, Tally

CI_SEED = 10


@functools.cache
def failure_class(signature: str) -> type:
    """One exception class per kind of failure.  Hypothesis shrinks each class
    of exception separately, so a shrunk program keeps the failure it was
    found with instead of drifting to a simpler, different one."""
    return type("FuzzFailure", (AssertionError,), {"__doc__": signature})


def fuzz_settings(options, backend: str):
    """No example database and a fixed seed (``CI_SEED`` unless --fuzz-seed), so
    that a run checks the same programs every time, on every machine."""
    phases = [Phase.generate] if options.keep_going else [Phase.generate, Phase.shrink]
    return settings(max_examples=options.count(backend), database=None, deadline=None,
                    phases=phases, print_blob=False, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_programs(backend, fuzz_options, tmp_path_factory, record_property):
    """Every judged program is correct or refused (a PullbackError): no wrong
    value or gradient, no other exception, no argument changed."""
    features = fuzz_options.features_for(backend)
    directory = tmp_path_factory.mktemp(f"fuzz-{backend}")
    tally = Tally(backend, features, fuzz_options.save)

    @fuzz_settings(fuzz_options, backend)
    @given(program=programs(features))
    def one(program):
        outcome = check(program, jit=backend == "numba", directory=directory)
        tally.record(program, outcome)
        assume(outcome.kind != "discard")
        if outcome.failed and not fuzz_options.keep_going:
            tally.stopped = True
            raise failure_class(outcome.signature)(f"{outcome}\n{program!r}")

    try:
        seed(CI_SEED if fuzz_options.seed is None else fuzz_options.seed)(one)()
    finally:
        # The counts travel with the test's report (to the main process under
        # pytest-xdist too) for the end-of-run summary in conftest.py.
        record_property(SUMMARY, tally.summary())
    if tally.failures:
        pytest.fail(tally.summary(), pytrace=False)
