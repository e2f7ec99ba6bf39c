"""Fixtures of the fuzz tests.  Their end-of-run summary is in tests/conftest.py, which
the main process of pytest-xdist loads too."""
from __future__ import annotations

import pytest

from .options import FuzzOptions


@pytest.fixture(scope="session")
def fuzz_options(request) -> FuzzOptions:
    return FuzzOptions.from_config(request.config)
