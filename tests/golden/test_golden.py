"""Golden files of the generated derivative source, one per case and backend.

Every change to the transform shows up here as a diff of the code it
generates.  A mechanical change must leave these files byte-identical; a
semantic one commits its diff.  Regenerate after an intended change with::

    python -m pytest tests/golden --update-golden

and review ``git diff tests/golden/expected``.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
from reference import assert_matches_reference

import pullback
from golden.cases import CASES
from helpers import assert_fd_close, fd_estimate

EXPECTED = pathlib.Path(__file__).parent / "expected"


def generated_source(name, jit):
    """The derivative source, or, where the transform fails, its error: a fix
    then shows up as a golden diff too."""
    f, args, argnums = CASES[name]
    g = pullback.grad(f, argnums=argnums, jit=jit)
    try:
        g.compiled(*args)
    except Exception as exc:       # recorded, not hidden: the golden file says it
        return f"# the transform raised {type(exc).__name__}:\n# {exc}\n"
    return g.source


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden_file(name, backend, request):
    text = generated_source(name, jit=backend == "numba")
    path = EXPECTED / f"{name}.{backend}.py"
    if request.config.getoption("--update-golden"):
        path.write_text(text)
        return
    assert path.exists(), f"no golden file {path}; run pytest tests/golden --update-golden"
    assert text == path.read_text(), (
        f"the generated source of {name} ({backend}) changed; if intended, run "
        "`python -m pytest tests/golden --update-golden` and commit the diff")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_cases_have_right_gradients(name):
    """The golden code is also right: each case against finite differences."""
    f, args, argnums = CASES[name]
    nums = (argnums,) if isinstance(argnums, int) else argnums
    got = pullback.grad(f, argnums=nums, jit=False)(*args)
    for g, i in zip(got, nums):
        assert_fd_close(g, fd_estimate(f, args, i), rtol=1e-5, atol=1e-6)
    assert np.all(np.isfinite(np.concatenate([np.ravel(g) for g in got])))


@pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_cases_match_the_reference_derivative(name, jit):
    # Every optimisation off (core/optimise.py) gives the same gradient to 1e-12, on
    # the same backend: here the Numba backend's reference derivative is compiled too.
    f, args, argnums = CASES[name]
    assert_matches_reference(f, args, argnums, jit, reference_jit=jit)
