"""PNG plots with matplotlib (Agg): the Horner sweep, and gradient ÷ primal as bars.

A tool that was not timed because it was too slow (a row with status "skipped":
over the time cap, or projected to be) is marked "slow" where its point or bar
would be, so that slow never looks like missing; each ``*_figure`` function returns
the figure, for the tests to read what is drawn.
"""
from __future__ import annotations

import pathlib

import numpy as np

#: The label of the marks of tools skipped as too slow.
SLOW = "slow"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _tools(rows):
    return list(dict.fromkeys(r["tool"] for r in rows))


def _colors(rows):
    """One colour per tool, the same in every plot."""
    return {tool: f"C{k}" for k, tool in enumerate(_tools(rows))}


def _slow(r) -> bool:
    return r["status"] == "skipped"


def _save(fig, path, plt):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def sweep(rows, workload: str, path: pathlib.Path, cap_s: float = 5.0) -> bool:
    """Log-log gradient time against N, one line per tool (and the primal, dashed);
    a size skipped as too slow is a hollow triangle marked "slow" at ``cap_s``, the
    time cap of a warm call."""
    fig = sweep_figure(rows, workload, cap_s)
    return fig is not None and _save(fig, path, _pyplot())


def sweep_figure(rows, workload: str, cap_s: float = 5.0):
    """The figure :func:`sweep` writes, or None when the workload has no timed row."""
    mine = [r for r in rows if r["workload"] == workload and r["status"] == "ok"]
    if not mine:
        return None
    slow = [r for r in rows if r["workload"] == workload and _slow(r)]
    colors = _colors(rows)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    primal = {}
    for tool in _tools(mine + slow):
        pts = sorted((r["n"], r["grad_s"]) for r in mine if r["tool"] == tool)
        if pts:
            ax.plot(*zip(*pts), marker="o", label=tool, color=colors[tool])
        capped = sorted(r["n"] for r in slow if r["tool"] == tool)
        if capped:
            ax.plot(capped, [cap_s] * len(capped), linestyle="none", marker="^", mfc="none",
                    color=colors[tool], label=f"{tool}: {SLOW}" if pts else f"{tool} ({SLOW})")
            for n in capped:
                ax.annotate(SLOW, (n, cap_s), textcoords="offset points", xytext=(0, 6),
                            ha="center", fontsize=7, color=colors[tool])
        for r in mine:
            if r["tool"] == tool:
                primal.setdefault(r["n"], r["primal_s"])
    ax.plot(*zip(*sorted(primal.items())), "k--", label="primal (NumPy/Python)")
    if slow:
        ax.axhline(cap_s, color="0.5", lw=0.8, ls=":", label=f"time cap ({cap_s:g} s): not timed")
    ax.set(xscale="log", yscale="log", xlabel="N", ylabel="gradient time (s, median)",
           title=f"{workload}: gradient time against N")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def ratios(rows, path: pathlib.Path, sweep_case: dict) -> bool:
    """Bars of gradient ÷ primal per (workload, case) and tool, log scale; a tool
    skipped there as too slow has the word "slow" in its bar's place.

    ``sweep_case``: for sweep workloads, the one case (label) shown here.
    """
    fig = ratios_figure(rows, sweep_case)
    return fig is not None and _save(fig, path, _pyplot())


def ratios_figure(rows, sweep_case: dict):
    """The figure :func:`ratios` writes, or None when no row was timed."""
    def shown(r):
        return sweep_case.get(r["workload"], r["case"]) == r["case"]
    ok = [r for r in rows if r["status"] == "ok" and shown(r)]
    if not ok:
        return None
    groups = list(dict.fromkeys((r["workload"], r["case"]) for r in ok))
    slow = [r for r in rows if _slow(r) and shown(r) and (r["workload"], r["case"]) in groups]
    tools, colors = _tools(ok + slow), _colors(rows)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(groups)), 4.5))
    width = 0.8 / len(tools)
    bottom = ax.get_xaxis_transform()       # x in data, y in axes coordinates
    for k, tool in enumerate(tools):
        by_group = {(r["workload"], r["case"]): r["ratio"] for r in ok if r["tool"] == tool}
        heights = [by_group.get(g, np.nan) for g in groups]
        x = np.arange(len(groups)) + (k - (len(tools) - 1) / 2) * width
        ax.bar(x, heights, width, label=tool, color=colors[tool])
        for r in slow:
            if r["tool"] == tool:
                ax.text(x[groups.index((r["workload"], r["case"]))], 0.03, SLOW,
                        transform=bottom, rotation=90, ha="center", va="bottom", fontsize=7,
                        color=colors[tool])
    if slow:            # (a legend entry with no mark of its own)
        ax.plot([], [], " ", label=f"{SLOW}: over the time cap, not timed")
    ax.set_xticks(np.arange(len(groups)), [f"{w}\n{c}" for w, c in groups], fontsize=8)
    ax.set_xlim(-0.5, len(groups) - 0.5)    # a bar only "slow" marks still has its place
    ax.set(yscale="log", ylabel="gradient ÷ primal (median)",
           title="gradient time ÷ NumPy/Python primal time")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
