"""Run every (tool, workload, case): warm up, check the gradient, time it against the primal.

Tools run one after the other (tool-major), so a peer's thread pools are busy
only while that peer is measured.  Each row compares the tool's gradient with
pullback's Python backend (the reference) and times it interleaved with the
plain NumPy/Python primal; ratios are medians of those same-process runs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .progress import Progress
from .timing import TooSlow, deadline, interleaved, once
from .tools import TOOLS


@dataclass(frozen=True)
class Settings:
    quick: bool = False
    sizes: tuple | None = None   # overrides the case sizes (Horner's N; the size of the others)
    rounds: int = 21             # interleaved rounds at most
    batch_s: float = 0.02        # calls shorter than this are timed in batches
    budget_s: float = 5.0        # rounds are cut to about this many seconds per row
    cap_s: float = 5.0           # a warm gradient call slower than this is not timed
    first_cap_s: float = 30.0    # a first call slower than this is interrupted (tools that do not compile)
    rtol: float = 1e-6

    @classmethod
    def make(cls, quick: bool, **overrides):
        base = cls(quick=True, rounds=7, batch_s=0.005, budget_s=0.6, cap_s=1.0,
                   first_cap_s=4.0) if quick else cls()
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})


def compare(got: list, want: list, rtol: float):
    """(agree?, worst error relative to the largest reference entry) over the gradient's parts."""
    if len(got) != len(want) or any(np.shape(a) != np.shape(b) for a, b in zip(got, want)):
        return False, float("inf")
    agree, worst = True, 0.0
    for a, b in zip(got, want):
        scale = float(np.max(np.abs(b))) if np.size(b) else 0.0
        agree &= bool(np.allclose(a, b, rtol=rtol, atol=1e-9 * scale))
        err = float(np.max(np.abs(a - b))) / (scale or 1.0) if np.size(b) else 0.0
        worst = max(worst, err if np.isfinite(err) else float("inf"))
    return agree, worst


def _reference(workload, case, refs):
    key = (workload.name, case.label)
    if key not in refs:
        prep = TOOLS["python"].prepare(workload, case)
        refs[key] = prep.to_numpy(prep.grad())
    return refs[key]


def _error_text(exc) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:160]


def _first_call(tool, workload, case, settings, row):
    """Prepare the tool and call its gradient once (compiling or tracing where the tool does).

    Returns (prepared, gradient as NumPy arrays), or None with the row's status set.
    """
    try:
        with deadline(None if tool.compiles else settings.first_cap_s):
            prep = tool.prepare(workload, case)
            t0 = time.perf_counter()
            value = prep.grad()
            row["first_call_s"] = time.perf_counter() - t0
        return prep, prep.to_numpy(value)
    except TooSlow:
        row.update(status="skipped", note=f"first call still running after {settings.first_cap_s:g} s: "
                   "not timed")
    except Exception as exc:              # a tool that cannot run this workload: say why, go on
        row.update(status=tool.on_failure, note=_error_text(exc))
    return None


def _check(tool, workload, case, grads, settings, refs, row):
    if tool.key == "python":
        refs[(workload.name, case.label)] = grads
        row["check"] = "reference"
        return
    agree, worst = compare(grads, _reference(workload, case, refs), settings.rtol)
    row["check"] = "ok" if agree else "DIFFERS"
    row["max_rel_err"] = worst if np.isfinite(worst) else None     # None: NaN or inf entries


def _warm_calls(funcs, settings):
    """One warm call each (seconds), or None when the gradient's runs past cap_s."""
    try:
        with deadline(settings.cap_s):
            return {k: once(f) for k, f in funcs.items()}
    except TooSlow:
        return None


def measure(tool, workload, case, settings, refs, last) -> dict:
    """One row of the table.  ``last``: this tool's (N, gradient seconds) per sweep workload."""
    row = dict(workload=workload.name, case=case.label, n=case.n, tool=tool.name, tool_key=tool.key,
               status="ok", primal_s=None, grad_s=None, ratio=None, own_primal_s=None, ratio_own=None,
               first_call_s=None, rounds=0, spread=None, check="", max_rel_err=None, note="")
    seen = last.get(workload.name)
    if workload.sweep and seen and seen[1] * case.n / seen[0] > settings.cap_s:
        return dict(row, status="skipped", note=f"projected from N={seen[0]} to take over "
                    f"{settings.cap_s:g} s per call: not run")
    first = _first_call(tool, workload, case, settings, row)
    if first is None:
        last[workload.name] = (case.n, settings.cap_s + 1)      # larger sizes are skipped
        return row
    prep, grads = first
    row["note"] = prep.note
    _check(tool, workload, case, grads, settings, refs, row)
    funcs = {"grad": prep.grad, "primal": lambda: workload.primal(*case.args)}
    if prep.primal is not None:
        funcs["own"] = prep.primal
    single = _warm_calls(funcs, settings)
    if single is None or single["grad"] > settings.cap_s:
        last[workload.name] = (case.n, settings.cap_s + 1)
        return dict(row, status="skipped", note=f"a warm gradient call takes over {settings.cap_s:g} s: "
                    "not timed")
    t, spread, row["rounds"] = interleaved(funcs, single, settings.rounds, settings.batch_s,
                                           settings.budget_s)
    row.update(primal_s=t["primal"], grad_s=t["grad"], ratio=t["grad"] / t["primal"],
               spread=round(max(spread["grad"], spread["primal"]), 3))
    if "own" in t:
        row.update(own_primal_s=t["own"], ratio_own=t["grad"] / t["own"])
    last[workload.name] = (case.n, t["grad"])
    return row


def run(workloads, tools, settings: Settings, show_progress: bool = True) -> list[dict]:
    """All rows, tool by tool."""
    cases = {w.name: w.cases(settings.quick, settings.sizes) for w in workloads}
    progress = Progress(len(tools) * sum(len(c) for c in cases.values()), show_progress)
    rows, refs = [], {}
    try:
        for tool in tools:
            last = {}
            with tool.context():
                for w in workloads:
                    for case in cases[w.name]:
                        progress.step(f"{tool.name}: {w.name} {case.label}")
                        rows.append(measure(tool, w, case, settings, refs, last))
    finally:
        progress.close()
    return rows
