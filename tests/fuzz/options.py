"""Command-line options of the fuzz tests, and the settings they resolve to.

The options are registered by ``tests/conftest.py`` (pytest only reads
``pytest_addoption`` from the conftest files it meets before collection), so
they work both in ``pytest tests/fuzz ...`` and in a run of the whole suite.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .features import FEATURES, ci_features, parse_features

PYTHON_COUNT = 100     # default programs per run (a Numba one is one compile: its
NUMBA_COUNT = 2        # reference derivative is the Python backend's)


def add_options(parser) -> None:
    group = parser.getgroup("fuzz", "random-program tests (tests/fuzz)")
    group.addoption("--fuzz-count", type=int, default=None, metavar="N",
                    help=f"programs to check on the Python backend (default {PYTHON_COUNT}); "
                         f"the Numba backend gets {NUMBA_COUNT}/{PYTHON_COUNT} of it unless "
                         "--fuzz-count-numba is given")
    group.addoption("--fuzz-count-numba", type=int, default=None, metavar="N",
                    help=f"programs to check on the Numba backend (default {NUMBA_COUNT})")
    group.addoption("--fuzz-all", action="store_true",
                    help="every construct of the grammar, including those with known open causes")
    group.addoption("--fuzz-features", default=None, metavar="LIST",
                    help="comma list of constructs ('all', 'name', '-name'); overrides the profile. "
                         f"Known: {', '.join(FEATURES)}")
    group.addoption("--fuzz-seed", type=int, default=None, metavar="S",
                    help="draw programs from this seed (default: a fixed seed, the same programs every run)")
    group.addoption("--fuzz-keep-going", action="store_true",
                    help="check every program and report counts, instead of stopping (and "
                         "shrinking) at the first failure")
    group.addoption("--fuzz-save", default=None, metavar="DIR",
                    help="write every failing or refused program to DIR, one file each")


@dataclass(frozen=True)
class FuzzOptions:
    python_count: int
    numba_count: int
    all_features: bool
    features: frozenset[str] | None
    seed: int | None
    keep_going: bool
    save: Path | None

    @classmethod
    def from_config(cls, config) -> FuzzOptions:
        get = lambda name, default=None: config.getoption(name, default=default)
        count = get("fuzz_count")
        numba = get("fuzz_count_numba")
        if numba is None:
            numba = NUMBA_COUNT if count is None else max(1, count * NUMBA_COUNT // PYTHON_COUNT)
        features = get("fuzz_features")
        save = get("fuzz_save")
        return cls(PYTHON_COUNT if count is None else count, numba, bool(get("fuzz_all", False)),
                   None if features is None else parse_features(features), get("fuzz_seed"),
                   bool(get("fuzz_keep_going", False)), None if save is None else Path(save))

    def count(self, backend: str) -> int:
        return self.numba_count if backend == "numba" else self.python_count

    def features_for(self, backend: str) -> frozenset[str]:
        if self.features is not None:
            return self.features
        if self.all_features:
            return frozenset(FEATURES)
        return ci_features(backend)

    @property
    def profile(self) -> str:
        if self.features is not None:
            return "custom features"
        return "all features" if self.all_features else "CI profile (known broken constructs off)"
