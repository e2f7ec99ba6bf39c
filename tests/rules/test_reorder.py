"""rules/reorder.py: flip, fliplr, flipud, rot90, roll, rollaxis, sort and partition against
finite differences (distinct values, so sorting has no ties)."""
import numpy as np
import pytest

from pullback.rules.reorder import partition_jvp, sort_jvp

from .checks import check_rule, values


@pytest.mark.parametrize("shape, axis", [((5,), None), ((3, 4), None), ((3, 4), 1), ((2, 3, 2), (0, 2))])
def test_flip(shape, axis):
    check_rule(np.flip, [values(1, shape)], kwargs={"axis": axis})


@pytest.mark.parametrize("fn", [np.fliplr, np.flipud], ids=lambda f: f.__name__)
def test_fliplr_flipud(fn):
    check_rule(fn, [values(1, (3, 4))])
    check_rule(fn, [values(2, (2, 3, 2))])


@pytest.mark.parametrize("k, axes", [(1, (0, 1)), (2, (0, 1)), (-1, (0, 1)), (3, (1, 2)), (1, (2, 0))])
def test_rot90(k, axes):
    check_rule(np.rot90, [values(1, (2, 3, 4))], kwargs={"k": k, "axes": axes})


@pytest.mark.parametrize("shape, shift, axis", [((5,), 2, None), ((3, 4), -1, None), ((3, 4), 3, 1),
                                                ((2, 3, 2), (1, -2), (0, 1))])
def test_roll(shape, shift, axis):
    check_rule(np.roll, [values(1, shape)], kwargs={"shift": shift, "axis": axis})


@pytest.mark.parametrize("axis, start", [(2, 0), (0, 3), (1, 1), (-1, 1)])
def test_rollaxis(axis, start):
    check_rule(np.rollaxis, [values(1, (2, 3, 4))], kwargs={"axis": axis, "start": start})


@pytest.mark.parametrize("shape, axis", [((6,), -1), ((3, 4), 0), ((3, 4), -1), ((3, 4), None),
                                         ((2, 3, 2), 1)])
def test_sort(shape, axis):
    check_rule(np.sort, [values(1, shape)], kwargs={"axis": axis})


@pytest.mark.parametrize("shape, kth, axis", [((6,), 2, -1), ((6,), (1, 4), -1), ((3, 4), 1, 0),
                                              ((3, 4), -1, -1)])
def test_partition(shape, kth, axis):
    check_rule(np.partition, [values(1, shape)], kwargs={"kth": kth, "axis": axis})


# ---------------------------------------------------------------------------
# sort's and partition's tangent helpers, differentiated again (Hessians)

@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_and_partition_tangent_helpers_rules(axis):
    a = values(43, (3, 4))
    v = values(44, (3, 4))
    # linear in v; the order is constant in a near distinct values (zero cotangent)
    check_rule(sort_jvp, (v, a), kwargs={"axis": axis})
    r = np.partition(a, 1, axis=axis)
    check_rule(partition_jvp, (v, r, a, 1), kwargs={"axis": axis}, only=("v", "a"))
