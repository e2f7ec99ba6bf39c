"""``pullback bench``: its arguments, and the run from workloads to table, files and plots."""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import pathlib
import platform
import sys
import time

from . import plots, report
from .runner import Settings, run
from .threads import one_blas_thread
from .tools import TOOLS
from .workloads import WORKLOADS

DESCRIPTION = """\
Time the gradients of the seed workloads with pullback's backends and with the
installed peers (JAX eager and jit, PyTorch eager, HIPS autograd), check that
every peer's gradient agrees with pullback's, and write DIR/bench.json,
DIR/bench.csv and PNG plots.  Every ratio is a median of interleaved runs in
this one process (primal, gradient, primal, ...), warm-up calls excluded.

workloads (--only NAME,...):
""" + "\n".join(f"  {w.name:<8} {w.summary}" for w in WORKLOADS.values()) + """

tools (--tools KEY,...):
""" + "\n".join(f"  {t.key:<8} {t.name}" for t in TOOLS.values())


def _ints(text):
    try:
        return tuple(int(float(t)) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") \
            from None


def _keys(text):
    keys = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [k for k in keys if k not in TOOLS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown tool {', '.join(unknown)}; choose from {', '.join(TOOLS)}")
    return keys


def _workloads(text):
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown workload {', '.join(unknown)}; choose from "
                                         f"{', '.join(WORKLOADS)}")
    return names


def add_arguments(p: argparse.ArgumentParser):
    p.add_argument("--quick", action="store_true",
                   help="fewer and smaller sizes and fewer rounds (about a minute)")
    p.add_argument("--only", type=_workloads, metavar="NAME,...",
                   help="run these workloads: " + ", ".join(WORKLOADS))
    p.add_argument("--out", default="bench-results", metavar="DIR",
                   help="where bench.json, bench.csv and the plots go (default: bench-results)")
    p.add_argument("--tools", type=_keys, default=list(TOOLS), metavar="KEY,...",
                   help="which tools (default: all that are installed)")
    # For the tests: the sizes of the cases (Horner's N), the most rounds, no progress bar.
    p.add_argument("--sizes", type=_ints, default=None, help=argparse.SUPPRESS)
    p.add_argument("--rounds", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--no-progress", action="store_true", help=argparse.SUPPRESS)


def _versions():
    out = {}
    for name in ["pullback", "numpy", "numba", "jax", "jaxlib", "torch", "autograd", "matplotlib"]:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def _shown_case(rows, workload):
    """The sweep's case shown in the bar chart: the one most tools timed (the larger N on ties)."""
    ok = [r for r in rows if r["workload"] == workload and r["status"] == "ok"]
    if not ok:
        return None
    return max(ok, key=lambda r: (sum(s["case"] == r["case"] for s in ok), r["n"]))["case"]


def _plots(rows, workloads, out, cap_s=5.0):
    """Write the PNGs; returns (paths, notes).  ``cap_s``: the time cap of a warm
    gradient call, where a tool skipped as too slow is marked."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return [], ["matplotlib is not installed: no plots (pip install matplotlib)"]
    paths = []
    for w in workloads:
        if w.sweep and plots.sweep(rows, w.name, out / f"{w.name}_sweep.png", cap_s):
            paths.append(out / f"{w.name}_sweep.png")
    shown = {w.name: _shown_case(rows, w.name) for w in workloads if w.sweep}
    if plots.ratios(rows, out / "ratios.png", shown):
        paths.append(out / "ratios.png")
    return paths, []


def main(args) -> int:
    """Run the benchmark for parsed ``args``; print the table; write the files."""
    start = time.perf_counter()
    # Timings of compiled code, and a first call's compile: under jit=True Numba
    # compiles in the call, not in the background (pullback.core.background).
    os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")
    workloads = [WORKLOADS[n] for n in args.only] if args.only else list(WORKLOADS.values())
    tools, notes = [], []
    for key in args.tools:
        why = TOOLS[key].missing()
        if why:
            notes.append(f"{TOOLS[key].name} skipped: {why}")
        else:
            tools.append(TOOLS[key])
    notes += [t.note for t in tools if t.note]
    for note in notes:
        if "skipped" in note:
            print(f"note: {note}", file=sys.stderr)
    out = pathlib.Path(args.out)
    try:        # before the run: a folder that cannot be made fails in a second, not at the end
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"pullback bench: cannot write the results to {str(out)!r} "
              f"({exc.strerror or exc}); pass --out DIR, a folder that can be created",
              file=sys.stderr)
        return 1
    settings = Settings.make(args.quick, sizes=args.sizes, rounds=args.rounds)
    with one_blas_thread() as pinned:
        rows = run(workloads, tools, settings, show_progress=not args.no_progress)
    notes.append("NumPy's BLAS ran on one thread (OpenBLAS)" if pinned else
                 "NumPy's BLAS threads were left as they are (no OpenBLAS found to set)")
    pngs, plot_notes = _plots(rows, workloads, out, settings.cap_s)
    notes += plot_notes
    noisy = sum(1 for r in rows if (r.get("spread") or 0) > 0.25)
    if noisy:
        notes.append(f"{noisy} rows had samples spread over more than 25% of their median "
                     "(interquartile range, the 'spread' field): the machine is busy, rerun to compare")
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                command=" ".join(sys.argv), quick=args.quick, settings=settings.__dict__,
                python=platform.python_version(), platform=platform.platform(), cpus=os.cpu_count(),
                versions=_versions(), tools=[t.name for t in tools],
                elapsed_s=round(time.perf_counter() - start, 2))
    report.write_json(out / "bench.json", meta, rows, notes)
    report.write_csv(out / "bench.csv", rows)
    print("Gradient time ÷ primal time (the plain NumPy/Python function), medians of interleaved "
          "runs in this process, warm-up excluded; 'own primal' is the tool's compiled primal "
          "(numba.njit, jax.jit).  Gradients are checked against pullback's Python backend "
          f"(rtol {settings.rtol:g}).\n")
    print(report.table(rows))
    print("\nGradient ÷ primal at a glance:\n")
    print(report.summary(rows))
    for note in notes:
        print(f"\nnote: {note}")
    written = [out / "bench.json", out / "bench.csv", *pngs]
    print(f"\n{meta['elapsed_s']:.1f} s; wrote " + ", ".join(str(p) for p in written))
    return 0
