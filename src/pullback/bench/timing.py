"""Interleaved timing: medians of alternating runs within one process.

The candidates (the NumPy primal, a tool's gradient, and the tool's own
compiled primal when it has one) run in turn, round after round, so that load
on a shared machine affects numerators and denominators alike.  Calls shorter
than ``batch_s`` are repeated in batches, timeit-style.  Warm-up calls happen
before and are never among the samples.
"""
from __future__ import annotations

import contextlib
import signal
import statistics
import threading
import time


def once(fn) -> float:
    """Seconds one call takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(funcs: dict, single: dict, rounds: int, batch_s: float, budget_s: float,
                min_rounds: int = 3):
    """Median seconds per call of each of ``funcs`` (name -> callable), timed in turn.

    ``single``: one warm call's seconds per name (to size the batches); the
    number of rounds is cut to fit ``budget_s`` but never below ``min_rounds``.
    Returns ({name: median seconds}, {name: interquartile range ÷ median}, rounds run).
    """
    numbers = {k: max(1, int(batch_s / max(single[k], 1e-9))) for k in funcs}
    per_round = sum(numbers[k] * max(single[k], 1e-9) for k in funcs)
    rounds = max(min_rounds, min(rounds, int(budget_s / per_round)))
    samples = {k: [] for k in funcs}
    clock = time.perf_counter
    for _ in range(rounds):
        for k, fn in funcs.items():
            n = numbers[k]
            t0 = clock()
            for _ in range(n):
                fn()
            samples[k].append((clock() - t0) / n)
    medians = {k: statistics.median(v) for k, v in samples.items()}
    spread = {}
    for k, v in samples.items():
        q1, _, q3 = statistics.quantiles(v, n=4)
        spread[k] = (q3 - q1) / medians[k]
    return medians, spread, rounds


class TooSlow(Exception):
    """A call ran past its deadline."""


@contextlib.contextmanager
def deadline(seconds):
    """Interrupt the Python code in the block after ``seconds`` (SIGALRM; a no-op off the
    main thread, where signals cannot be used, or when ``seconds`` is None).

    The alarm repeats every 0.2 s until the block is left: a library may swallow one
    exception raised in a callback of its own, and then its call would run on.
    """
    if not seconds or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise TooSlow(f"still running after {seconds:g} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.2)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
