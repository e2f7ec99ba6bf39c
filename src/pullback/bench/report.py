"""The results as a table on the terminal, and as DIR/bench.json and DIR/bench.csv."""
from __future__ import annotations

import csv
import json
import math
import pathlib

FIELDS = ["workload", "case", "n", "tool", "tool_key", "status", "primal_s", "grad_s", "ratio",
          "own_primal_s", "ratio_own", "first_call_s", "rounds", "spread", "check", "max_rel_err", "note"]


def fmt_time(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_ratio(r) -> str:
    if r is None:
        return "-"
    return f"{r:.3g}" if r < 1000 else f"{r:,.0f}"


def _check(row) -> str:
    if row["check"] == "DIFFERS":
        err = row["max_rel_err"]
        return f"**DIFFERS** (max err {err:.1e})" if err is not None and math.isfinite(err) \
            else "**DIFFERS** (NaN/inf)"
    return row["check"] or "-"


def _short(note: str, width: int = 80) -> str:
    return note if len(note) <= width else note[:width - 1] + "…"


def table(rows) -> str:
    """A Markdown table: one row per (workload, case, tool)."""
    head = ["workload", "case", "tool", "primal", "gradient", "÷ primal", "÷ own primal",
            "first call", "gradient check", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        grad = fmt_time(r["grad_s"]) if r["status"] == "ok" else r["status"]
        ratio = f"**{fmt_ratio(r['ratio'])}**" if r["ratio"] is not None else "-"
        cells = [r["workload"], r["case"], r["tool"], fmt_time(r["primal_s"]), grad, ratio,
                 fmt_ratio(r["ratio_own"]), fmt_time(r["first_call_s"]), _check(r), _short(r["note"])]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def write_json(path: pathlib.Path, meta: dict, rows: list, notes: list):
    path.write_text(json.dumps({"meta": meta, "notes": notes, "rows": rows}, indent=1,
                               allow_nan=False, default=str) + "\n")


def write_csv(path: pathlib.Path, rows: list):
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: ("" if r.get(k) is None else r[k]) for k in FIELDS})


def _cell(r) -> str:
    if r is None:
        return ""
    if r["status"] != "ok":
        return {"not supported": "n/s", "skipped": "slow", "error": "error"}[r["status"]]
    cell = fmt_ratio(r["ratio"])
    return cell + (" ✗" if r["check"] == "DIFFERS" else "")


def summary(rows) -> str:
    """Gradient ÷ primal at a glance: one line per (workload, case), one column per tool."""
    tools = list(dict.fromkeys(r["tool"] for r in rows))
    cases = list(dict.fromkeys((r["workload"], r["case"]) for r in rows))
    at = {(r["workload"], r["case"], r["tool"]): r for r in rows}
    lines = ["| workload | case | " + " | ".join(tools) + " |", "|" + "---|" * (len(tools) + 2)]
    for w, c in cases:
        lines.append(f"| {w} | {c} | " + " | ".join(_cell(at.get((w, c, t))) for t in tools) + " |")
    return "\n".join(lines) + ("\n\nn/s: not supported by that backend; slow: not timed (over the time cap, "
                               "see the note); ✗: gradient differs from pullback's.")
