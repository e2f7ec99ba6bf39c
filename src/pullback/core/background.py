"""Compiles that run in a background thread while the caller goes on.

Under ``jit=True`` a derivative's first call would wait for Numba: about a second
for a scalar loop, ten or more for array code (Numba takes about 5 s to compile a
hand-written MLP gradient, before any twin of pullback's).  So the first call with
new argument types starts the compile in a thread and runs the same
generated code as plain Python; the calls after it switch to the machine code once
it is ready (:class:`pullback.backends.lazy_numba.LazyNumba`).  The numbers do not
change at the switch, beyond rounding: both run one derivative, line for line.

``PULLBACK_BACKGROUND_COMPILE=0`` compiles in the call instead, as the tests do (a
compile failure then raises there); :func:`finish_compiling` waits for the compiles
under way (a benchmark that times compiled code calls it after its first call).
"""
from __future__ import annotations

import os
import threading
import time

_OFF = {"0", "false", "no", "off"}
_JOBS: set = set()          # the compiles under way
_LOCK = threading.Lock()


def enabled() -> bool:
    """Whether a first call compiles in the background (the default) or in the call."""
    return os.environ.get("PULLBACK_BACKGROUND_COMPILE", "").strip().lower() not in _OFF


class Job:
    """``work()`` running in a thread: ``done`` once it has ended, ``error`` what it
    raised (None if nothing).  The interpreter waits for the thread at exit: one
    left running in Numba's compiler while Python shuts down can crash the process
    (and the compile it finishes goes to the cache, for the next process)."""

    def __init__(self, work, name: str):
        self.error: BaseException | None = None
        self._ended = threading.Event()
        with _LOCK:
            _JOBS.add(self)
        threading.Thread(target=self._run, args=(work,), name=f"pullback: compiling {name}",
                         daemon=False).start()

    def _run(self, work):
        try:
            work()
        except BaseException as exc:    # noqa: BLE001 - handed to the caller's thread
            self.error = exc
        finally:
            self._ended.set()
            with _LOCK:
                _JOBS.discard(self)

    @property
    def done(self) -> bool:
        return self._ended.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._ended.wait(timeout)


def finish_compiling(timeout: float | None = None) -> bool:
    """Wait until the derivatives being compiled in the background (``jit=True``) are
    compiled; True when none is left, False if ``timeout`` seconds passed first.

    A gradient runs as Python until its compiled code is ready; call this before
    timing the compiled code."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        with _LOCK:
            jobs = list(_JOBS)
        if not jobs:
            return True
        left = None if end is None else end - time.monotonic()
        if left is not None and left <= 0:
            return False
        jobs[0].wait(left)
