"""The host-synchronisation guard of the torch rule tests under ``--torch-device=cuda``.

While a test that asks for the ``torch_device`` fixture runs on a CUDA device,
every public helper of ``pullback.rules.*`` (as the test module and the rule
modules see it) is replaced by a wrapper that runs the helper

* under ``torch.cuda.set_sync_debug_mode("error")``: any synchronising CUDA
  operation (a device-to-host copy, ``.item()``, ``nonzero``, a blocking
  host-to-device copy) raises inside the helper;
* with torch's default device back at ``"cpu"`` (the test bodies create their
  tensors on the device through a default-device context; a user's helpers run
  with the default device ``cpu``, so a tensor a helper makes without
  ``device=`` must not land on the GPU by luck).

A synchronisation is recorded (helper, file:line of the innermost
``pullback`` frame, the source line, and whether it happened inside a
``linalg`` call, whose own error checking reads its ``info`` back) and the
helper is run again without the guard, so the test still checks its values
and the other helpers it calls; the fixture then fails the test at teardown
with the list.  Any other exception from a helper gets a note naming it.
Only the helpers are guarded, never the reference (torch autograd) code.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading
import traceback
from dataclasses import dataclass

SYNC_MESSAGE = "synchronizing CUDA operation"     # torch's message in sync debug mode "error"
_SKIP_MODULES = {"registry", "templates", "results", "twins", "nondiff"}
_state = threading.local()

# Everything recorded in this process, for the summary at the end of the run.
RECORDS: list = []

# Synchronisations a GPU array library cannot avoid, by where they happen: torch's
# linalg functions read their error status (info) back to the host, and indexing
# with an index array held on the host copies it to the device, or with a boolean
# mask reads back how many entries it selects (the result's size).  These are
# recorded as "inherent sync" and do not fail a test; any other sync does.
INHERENT = {
    "linalg": "the array library's linalg call reads its error status back",
    "pullback/rules/indexing.py": "a host-held index array is copied to the device, or a "
                                  "boolean mask's count is read back (the result's size)",
}


def inherent(where: str, in_linalg: bool) -> str:
    """Why a synchronisation at ``where`` cannot be avoided, or "" for a defect."""
    if in_linalg:
        return INHERENT["linalg"]
    return next((why for place, why in INHERENT.items() if where.startswith(place)), "")


@dataclass(frozen=True)
class Record:
    test: str
    helper: str
    kind: str         # "sync" (a defect), "inherent sync" (see INHERENT) or "error"
    where: str        # file:line of the innermost pullback frame
    code: str         # that line's source
    detail: str = ""

    def line(self) -> str:
        text = f"{self.helper} [{self.kind}] at {self.where}: {self.code}"
        return text + (f" -- {self.detail}" if self.detail else "")


def _pullback_dir() -> str:
    import pullback
    return os.path.dirname(os.path.abspath(pullback.__file__))


def locate(exc: BaseException) -> tuple[str, str, bool]:
    """(file:line, source line, inside a linalg call) of the innermost pullback frame
    of ``exc``'s traceback; the linalg flag is set when that line calls ``linalg``
    or a frame below it is in a ``linalg`` module (array_api_compat's wrappers)."""
    frames = traceback.extract_tb(exc.__traceback__)
    root = _pullback_dir()
    ours = [i for i, f in enumerate(frames) if os.path.abspath(f.filename).startswith(root)]
    if not ours:
        last = frames[-1] if frames else None
        return (f"{last.filename}:{last.lineno}" if last else "?"), (last.line if last else ""), False
    i = ours[-1]
    f = frames[i]
    code = (f.line or "").strip()
    below = frames[i + 1:]
    in_linalg = "linalg" in code or any("linalg" in os.path.basename(b.filename) for b in below)
    where = f"{os.path.relpath(f.filename, os.path.dirname(root))}:{f.lineno}"
    return where, code, in_linalg


def is_sync_error(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and SYNC_MESSAGE in str(exc)


def guard(fn, name: str, device: str, log: list, test: str = "", enter=None):
    """``fn`` wrapped as described in the module docstring.  ``enter()`` gives the
    context a helper runs in (the sync-debug mode and the CPU default device);
    ``log`` collects the Records.  Nested calls of wrapped helpers pass through:
    the helper the test called is the one named."""
    enter = enter or (lambda: helper_context(device))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_state, "depth", 0):
            return fn(*args, **kwargs)
        _state.depth = 1
        try:
            try:
                with enter():
                    return fn(*args, **kwargs)
            except RuntimeError as e:
                if not is_sync_error(e):
                    raise
                where, code, in_linalg = locate(e)
                why = inherent(where, in_linalg)
                log.append(Record(test, name, "inherent sync" if why else "sync", where, code, why))
            with default_device_cpu():       # once more, unguarded, so the values are checked
                return fn(*args, **kwargs)
        except Exception as e:
            where, code, _ = locate(e)
            log.append(Record(test, name, "error", where, code, f"{type(e).__name__}: {e}"))
            if hasattr(e, "add_note"):
                e.add_note(f"raised in pullback helper {name} on {device} arrays, at {where}: {code}")
            raise
        finally:
            _state.depth = 0
    wrapper.__wrapped_helper__ = fn
    return wrapper


@contextlib.contextmanager
def default_device_cpu():
    import torch
    with torch.device("cpu"):
        yield


@contextlib.contextmanager
def helper_context(device: str):
    import torch
    with default_device_cpu():
        if not device.startswith("cuda"):
            yield
            return
        before = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(before)


def helpers_of(module) -> dict:
    """Public functions of ``pullback.rules`` modules that ``module`` holds, by attribute name."""
    out = {}
    for attr, value in vars(module).items():
        if attr.startswith("_") or not inspect.isfunction(value):
            continue
        owner = getattr(value, "__module__", "") or ""
        if owner.startswith("pullback.rules.") and owner.rsplit(".", 1)[1] not in _SKIP_MODULES:
            out[attr] = value
    return out


@contextlib.contextmanager
def guarded_helpers(test_module, device: str, test: str = "", enter=None):
    """Replace the helpers in ``test_module`` and in every loaded ``pullback.rules``
    module by guarded wrappers for the duration; yields the list of Records."""
    log: list = []
    modules = [test_module] + [m for n, m in list(sys.modules.items())
                               if n.startswith("pullback.rules.") and m is not None]
    saved = []
    try:
        for mod in modules:
            for attr, fn in helpers_of(mod).items():
                if hasattr(fn, "__wrapped_helper__"):
                    continue
                saved.append((mod, attr, fn))
                setattr(mod, attr, guard(fn, f"{fn.__module__.rsplit('.', 1)[1]}.{fn.__name__}",
                                         device, log, test, enter))
        yield log
    finally:
        for mod, attr, fn in reversed(saved):
            setattr(mod, attr, fn)
        RECORDS.extend(log)


def summary_lines(records) -> list[str]:
    """One line per (helper, kind, place), with the tests it happened in."""
    seen: dict = {}
    for r in records:
        seen.setdefault(r.line(), []).append(r.test)
    lines = []
    for text, tests in sorted(seen.items()):
        names = sorted(set(tests))
        lines.append(f"{text}  ({len(names)} test{'s' if len(names) > 1 else ''}: {', '.join(names)})")
    return lines
