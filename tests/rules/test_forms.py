"""The backends' forms of rule helpers (rules/forms.py): each registration form is a
decorator beside its helper, and reads back only for the object it was given."""
from __future__ import annotations

import numpy as np
import pytest

from pullback.rules import forms


@pytest.fixture(autouse=True)
def _own_tables(monkeypatch):
    """Registrations made here stay here (the twin walk reads the real tables)."""
    for table in ("_TWINS", "_ALWAYS", "_ARRAYS", "_LOOP_SUMS", "_ACCUMULATORS"):
        monkeypatch.setattr(forms, table, type(getattr(forms, table))(getattr(forms, table)))


def _helper(g, x):
    return g * x


def _other(g, x):
    return g * x


def test_a_numba_twin_reads_back_for_its_target_only():
    @forms.numba_twin(_helper, always=True)
    def _twin(g, x):
        return None
    assert forms.twin(_helper) is _twin and forms.twin_always(_helper)
    assert forms.twin(_other) is None and not forms.twin_arrays(_helper)
    assert (_helper, _twin) in forms.all_twins()


def test_plain_helpers_compile_as_they_are():
    forms.numba_plain(_other)
    assert forms.twin(_other) is forms.PLAIN


def test_loop_sums_and_accumulating_forms():
    @forms.loop_sum(_helper, varying=(0,))
    def _summed(steps, x):
        return np.sum(steps, axis=0) * x

    @forms.accumulates_into(_helper)
    def _into(out, g, x):
        out += g * x
    assert forms.summed_form(_helper) == (_summed, (0,))
    assert forms.accumulating_form(_helper) is _into
    assert forms.summed_form(np.add) is None and forms.accumulating_form(np.add) is None
