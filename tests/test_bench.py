"""``pullback bench``: a tiny in-process run, its files, the gradient check, failures and deadlines."""
from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import subprocess
import sys
import time

import numpy as np
import pytest

from helpers import assert_fd_close, fd_estimate
from pullback.__main__ import main
from pullback.bench import cli, report, runner, threads
from pullback.bench.tools import TOOLS, Prepared
from pullback.bench.workloads import WORKLOADS

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None


def test_help_lists_workloads_and_options():
    out = subprocess.run([sys.executable, "-m", "pullback", "bench", "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for word in ["--quick", "--only", "--out", *WORKLOADS, "jax-jit", "autograd"]:
        assert word in out.stdout, word
    assert "--sizes" not in out.stdout                 # the tests' option stays hidden
    top = subprocess.run([sys.executable, "-m", "pullback", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert "bench" in top.stdout


def test_tiny_horner_run_writes_agreeing_results(tmp_path, capsys):
    out = tmp_path / "res"
    # Not JAX eager: its first call compiles each operation of the loop (seconds even at N=30).
    keys = ["python", "numba", "jax-jit", "torch", "autograd"]
    assert main(["bench", "--quick", "--only", "horner", "--sizes", "30,300", "--rounds", "3",
                 "--tools", ",".join(keys), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "| horner | N=30 | pullback Python |" in printed
    assert "Gradient ÷ primal at a glance" in printed

    data = json.loads((out / "bench.json").read_text())
    assert data["meta"]["quick"] is True and data["meta"]["elapsed_s"] > 0
    assert any("BLAS" in note for note in data["notes"])
    rows = data["rows"]
    installed = [TOOLS[k] for k in keys if TOOLS[k].missing() is None]
    assert [(r["tool"], r["case"]) for r in rows] == [(t.name, c) for t in installed
                                                      for c in ("N=30", "N=300")]
    by_tool = {(r["tool_key"], r["n"]): r for r in rows}
    for key in ("python", "numba"):
        for n in (30, 300):
            r = by_tool[(key, n)]
            assert r["status"] == "ok", r
            assert r["grad_s"] > 0 and r["primal_s"] > 0 and r["rounds"] >= 3
            assert r["ratio"] == pytest.approx(r["grad_s"] / r["primal_s"])
    assert by_tool[("python", 30)]["check"] == "reference"
    assert by_tool[("numba", 300)]["ratio_own"] > 0          # against numba.njit(horner)
    timed = [r for r in rows if r["tool_key"] != "python" and r["check"]]
    assert timed, "no tool's gradient was compared"
    assert all(r["check"] == "ok" for r in timed), [(r["tool"], r["max_rel_err"]) for r in timed]

    with (out / "bench.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == report.FIELDS and len(table) == len(rows)
    assert {r["tool"] for r in table} == {t.name for t in installed}
    if HAVE_MPL:
        for png in ("horner_sweep.png", "ratios.png"):
            assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_matplotlib_skips_plots_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)            # import matplotlib fails
    paths, notes = cli._plots([], list(WORKLOADS.values()), tmp_path)
    assert paths == [] and "matplotlib" in notes[0]


def test_compare_marks_disagreement_and_nan():
    same = [np.array([1.0, 2.0]), np.array(3.0)]
    assert runner.compare(same, same, 1e-6) == (True, 0.0)
    agree, err = runner.compare([np.array([1.0, 2.001]), np.array(3.0)], same, 1e-6)
    assert not agree and err == pytest.approx(0.0005)
    assert not runner.compare([np.array([np.nan, 2.0]), np.array(3.0)], same, 1e-6)[0]
    assert not runner.compare([np.zeros(3)], [np.zeros(2)], 1e-6)[0]


def _raise(workload, case):
    raise NotImplementedError("cannot compile this")


def test_a_backend_that_fails_is_recorded_not_raised():
    settings = runner.Settings.make(True)
    w = WORKLOADS["horner"]
    case = w.cases(True, (20,))[0]
    numba_tool = dataclasses.replace(TOOLS["numba"], prepare=_raise)
    row = runner.measure(numba_tool, w, case, settings, {}, {})
    assert row["status"] == "not supported" and row["note"].startswith("NotImplementedError")
    peer = dataclasses.replace(TOOLS["autograd"], prepare=_raise)
    assert runner.measure(peer, w, case, settings, {}, {})["status"] == "error"
    assert "not supported" in report.table([row]) and "| n/s |" in report.summary([row])


def test_a_slow_first_call_is_interrupted_and_larger_sizes_skipped():
    def slow(workload, case):
        return Prepared(lambda: time.sleep(30))
    tool = dataclasses.replace(TOOLS["autograd"], prepare=slow)
    settings = runner.Settings.make(True, first_cap_s=0.2)
    w = WORKLOADS["horner"]
    small, large = w.cases(True, (20, 200))
    last = {}
    t0 = time.perf_counter()
    row = runner.measure(tool, w, small, settings, {}, last)
    assert time.perf_counter() - t0 < 5
    assert row["status"] == "skipped" and "first call" in row["note"]
    assert "projected" in runner.measure(tool, w, large, settings, {}, last)["note"]


def test_blas_on_one_thread_during_the_run_and_restored_after():
    handles = threads.openblas_handles()
    before = [get() for get, _ in handles]
    with threads.one_blas_thread() as pinned:
        assert pinned == len(handles)
        assert all(get() == 1 for get, _ in handles)
    assert [get() for get, _ in handles] == before


def test_rnn_workload_agrees_with_finite_differences_and_the_peers():
    w = WORKLOADS["rnn"]
    case = w.cases(True, (6,))[0]
    W, U, h0, X = case.args
    assert W.shape == (6, 6) and U.shape[0] == 6 and h0.shape == (6,) and X.shape[0] == 20
    grads = TOOLS["python"].prepare(w, case).grad()
    for k, g in zip(w.argnums, grads):
        assert_fd_close(g, fd_estimate(w.primal, case.args, k), rtol=1e-6, atol=1e-9)
    settings = runner.Settings.make(True, rounds=1, budget_s=0.05)
    refs = {}
    rows = [runner.measure(TOOLS[key], w, case, settings, refs, {})
            for key in ("python", "numba", "jax", "jax-jit", "torch", "autograd")
            if TOOLS[key].missing() is None]
    assert rows[0]["check"] == "reference"
    assert all(r["status"] == "ok" and r["check"] in ("reference", "ok") for r in rows), rows

def test_only_takes_a_list_of_workloads():
    assert cli._workloads("heat, rnn,mlp") == ["heat", "rnn", "mlp"]
    with pytest.raises(Exception, match="unknown workload nope"):
        cli._workloads("heat,nope")


def _row(tool, n, status="ok", grad_s=None, workload="horner"):
    primal_s = 1e-4 * n
    return dict(workload=workload, case=f"N={n}", n=n, tool=tool, status=status,
                primal_s=primal_s if status == "ok" else None, grad_s=grad_s,
                ratio=grad_s / primal_s if status == "ok" else None)


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib is not installed")
def test_a_tool_skipped_as_too_slow_is_marked_slow_on_the_plots(tmp_path):
    """A slow tool must not look like a missing one: its skipped sizes are marked at the
    time cap on the sweep, and its bar's place says "slow"."""
    from pullback.bench import plots
    rows = [_row("fast", 10, grad_s=1e-3), _row("fast", 100, grad_s=1e-2),
            _row("sometimes", 10, grad_s=2.0), _row("sometimes", 100, "skipped"),
            _row("never", 10, "skipped"), _row("never", 100, "skipped"),
            _row("broken", 10, "error"), _row("broken", 100, "not supported")]
    fig = plots.sweep_figure(rows, "horner", cap_s=5.0)
    ax = fig.axes[0]
    marks = {line.get_label(): list(zip(*line.get_data())) for line in ax.lines}
    assert marks["sometimes: slow"] == [(100, 5.0)]
    assert marks["never (slow)"] == [(10, 5.0), (100, 5.0)]
    assert [t.get_text() for t in ax.texts] == ["slow"] * 3
    assert not [label for label in marks if label.startswith("broken")]   # missing, not slow
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "never (slow)" in legend and any("time cap (5 s)" in t for t in legend)

    fig = plots.ratios_figure(rows, {"horner": "N=100"})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["slow", "slow"]      # sometimes and never
    assert {t.get_color() for t in ax.texts} == {"C1", "C2"}         # in their tools' colours
    assert "never" in [t.get_text() for t in ax.get_legend().get_texts()]
    # with nothing slow, no mark and no cap line
    fig = plots.sweep_figure(rows[:2], "horner")
    assert not fig.axes[0].texts and len(fig.axes[0].lines) == 2
    assert plots.sweep(rows, "horner", tmp_path / "s.png") and plots.ratios(
        rows, tmp_path / "r.png", {"horner": "N=100"})
