"""PNG plots with matplotlib (Agg): the Horner sweep, and gradient ÷ primal as bars."""
from __future__ import annotations

import pathlib

import numpy as np


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


def sweep(rows, workload: str, path: pathlib.Path) -> bool:
    """Log-log gradient time against N, one line per tool (and the primal, dashed)."""
    mine = [r for r in rows if r["workload"] == workload and r["status"] == "ok"]
    if not mine:
        return False
    colors = _colors(rows)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    primal = {}
    for tool in _tools(mine):
        pts = sorted((r["n"], r["grad_s"]) for r in mine if r["tool"] == tool)
        ax.plot(*zip(*pts), marker="o", label=tool, color=colors[tool])
        for r in mine:
            if r["tool"] == tool:
                primal.setdefault(r["n"], r["primal_s"])
    ax.plot(*zip(*sorted(primal.items())), "k--", label="primal (NumPy/Python)")
    ax.set(xscale="log", yscale="log", xlabel="N", ylabel="gradient time (s, median)",
           title=f"{workload}: gradient time against N")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def ratios(rows, path: pathlib.Path, sweep_case: dict) -> bool:
    """Bars of gradient ÷ primal per (workload, case) and tool, log scale.

    ``sweep_case``: for sweep workloads, the one case (label) shown here.
    """
    ok = [r for r in rows if r["status"] == "ok" and sweep_case.get(r["workload"], r["case"]) == r["case"]]
    if not ok:
        return False
    groups = list(dict.fromkeys((r["workload"], r["case"]) for r in ok))
    tools, colors = _tools(ok), _colors(rows)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(groups)), 4.5))
    width = 0.8 / len(tools)
    for k, tool in enumerate(tools):
        by_group = {(r["workload"], r["case"]): r["ratio"] for r in ok if r["tool"] == tool}
        heights = [by_group.get(g, np.nan) for g in groups]
        ax.bar(np.arange(len(groups)) + (k - (len(tools) - 1) / 2) * width, heights, width, label=tool,
               color=colors[tool])
    ax.set_xticks(np.arange(len(groups)), [f"{w}\n{c}" for w, c in groups], fontsize=8)
    ax.set(yscale="log", ylabel="gradient ÷ primal (median)",
           title="gradient time ÷ NumPy/Python primal time")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
