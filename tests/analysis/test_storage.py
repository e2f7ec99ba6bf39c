"""The storage plan: one decision per adjoint, with its reason."""
from __future__ import annotations

import dataclasses

import pytest

from pullback.analysis import storage
from pullback.core.kinds import FLOAT, OTHER, Kind

KINDS = {"_t1": FLOAT, "p": Kind(1, "f"), "A": Kind(2, "f"), "s": FLOAT, "pair": OTHER}


def _plan(fixed_types=False, buffers=("A",)):
    return storage.plan(set(KINDS), KINDS, local_temps={"_t1"}, list_buffers={"p"},
                        is_buffer=lambda n: n in buffers, fixed_types=fixed_types)


def test_each_adjoint_gets_one_storage():
    plan = _plan()
    assert plan["_t1"].how == storage.LOCAL
    assert plan["p"].how == storage.LIST
    assert plan["A"].how == storage.BUFFER
    assert plan["s"].how == storage.VALUE and not plan["s"].typed_reset
    assert plan["pair"].how == storage.VALUE and plan["pair"].items
    assert all(plan[n].why for n in KINDS)


def test_fixed_types_reset_non_scalars_to_a_zero_of_their_type():
    plan = _plan(fixed_types=True, buffers=())
    assert plan["A"].how == storage.VALUE and plan["A"].typed_reset
    assert not plan["s"].typed_reset


def test_names_by_storage_are_sorted():
    assert _plan().names(storage.VALUE) == ["pair", "s"]


def test_the_plan_cannot_be_changed():
    plan = _plan()
    with pytest.raises(TypeError):
        plan.storage["s"] = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan["s"].how = storage.BUFFER
