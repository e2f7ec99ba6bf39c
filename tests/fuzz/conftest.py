"""Fixtures of the fuzz tests and the end-of-run summary of their outcome counts."""
from __future__ import annotations

import pytest

from .options import FuzzOptions

_TALLIES: dict = {}


@pytest.fixture(scope="session")
def fuzz_options(request) -> FuzzOptions:
    return FuzzOptions.from_config(request.config)


@pytest.fixture(scope="session")
def fuzz_tallies() -> dict:
    """One Tally per backend, shared with the terminal summary."""
    return _TALLIES


def pytest_terminal_summary(terminalreporter):
    if not _TALLIES:
        return
    terminalreporter.section("random programs")
    for tally in _TALLIES.values():
        terminalreporter.write_line(tally.summary())
