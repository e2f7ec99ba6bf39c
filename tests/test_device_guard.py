"""tests/device_guard.py on the CPU: a torch function mode that raises torch's
sync-debug error on chosen torch functions stands in for CUDA's sync debug mode,
so the recording, naming, classification and restoring can be checked anywhere."""
from __future__ import annotations

import contextlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import device_guard  # noqa: E402

from pullback.rules import elementwise, solve  # noqa: E402
from pullback.rules.elementwise import unbroadcast  # noqa: E402


class FakeSync(torch.overrides.TorchFunctionMode):
    """Raise what torch raises under set_sync_debug_mode("error") when ``funcs`` run."""

    def __init__(self, funcs):
        super().__init__()
        self.funcs = funcs

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self.funcs:
            raise RuntimeError("called a synchronizing CUDA operation")
        return func(*args, **(kwargs or {}))


def fake(funcs):
    @contextlib.contextmanager
    def enter():
        with device_guard.default_device_cpu(), FakeSync(funcs):
            yield
    return enter


def test_a_sync_is_recorded_with_the_helper_and_line_and_the_values_still_come():
    module = sys.modules[__name__]
    g = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    x = torch.ones(1, 3, dtype=torch.float64)
    original = elementwise.unbroadcast
    with device_guard.guarded_helpers(module, "cuda", "t", enter=fake({torch.sum})) as log:
        # the test module's name and the rule module's attribute are both wrapped
        assert module.unbroadcast.__wrapped_helper__ is original
        assert elementwise.unbroadcast.__wrapped_helper__ is original
        ct = unbroadcast(g, x)
    assert module.unbroadcast is original and elementwise.unbroadcast is original
    torch.testing.assert_close(ct, torch.tensor([[3.0, 5.0, 7.0]], dtype=torch.float64))
    (rec,) = log
    assert rec.helper == "elementwise.unbroadcast" and rec.kind == "sync"
    assert rec.where.startswith("pullback/rules/elementwise.py:") and "xp.sum" in rec.code


def test_a_sync_inside_a_linalg_call_is_told_apart():
    rng = np.random.default_rng(0)
    a = torch.tensor(rng.standard_normal((3, 3)) + 3 * np.eye(3))
    b = torch.tensor(rng.standard_normal((3, 2)))
    g = torch.tensor(rng.standard_normal((3, 2)))
    want = solve.solve_vjp_b(g, torch.linalg.solve(a, b), a, b)
    with device_guard.guarded_helpers(sys.modules[__name__], "cuda", "t",
                                      enter=fake({torch.linalg.solve})) as log:
        got = solve.solve_vjp_b(g, torch.linalg.solve(a, b), a, b)   # the module attribute
    torch.testing.assert_close(got, want)
    (rec,) = log
    assert rec.helper == "solve.solve_vjp_b" and rec.kind == "inherent sync"
    assert "error status" in rec.detail
    assert "linalg.solve" in rec.code
    lines = device_guard.summary_lines(log + log)
    assert len(lines) == 1 and "inherent sync" in lines[0] and "(1 test: t)" in lines[0]


def test_other_errors_propagate_with_a_note_naming_the_helper():
    with device_guard.guarded_helpers(sys.modules[__name__], "cuda", "t",
                                      enter=fake(set())) as log:
        with pytest.raises(RuntimeError) as info:      # (3,) cannot broadcast to (4,)
            elementwise.unbroadcast(torch.ones(2, 3), torch.ones(4))
    assert any("elementwise.unbroadcast" in n for n in getattr(info.value, "__notes__", [])) \
        or sys.version_info < (3, 11)
    assert [r.kind for r in log] == ["error"]


def test_no_record_without_a_sync():
    g = torch.ones(2, 3, dtype=torch.float64)
    with device_guard.guarded_helpers(sys.modules[__name__], "cuda", "t",
                                      enter=fake(set())) as log:
        elementwise.unbroadcast(g, torch.ones(3, dtype=torch.float64))
    assert log == []
