"""How much of the ported peer suites (tests/peers) the Numba backend covers.

Every case that passes on the Python backend (every case not listed in
tests/peers' PYTHON table, which the suite runs as strict xfails) is checked
with ``jit=True`` by the suite's own ``check_case`` and classified:

* ``pass``: value and gradients match the function and finite differences;
* ``refused``: a located pullback error (``NumbaCompileError`` and friends);
  grouped by cause: the helper without a twin, the construct a twin refuses, or
  the first line of what Numba reported;
* ``wrong``: a value or gradient that does not match (AssertionError);
* ``crash``: any other exception.

Usage (from the repository root; the compile cache in ``$PULLBACK_CACHE_DIR``
makes reruns faster)::

    PYTHONPATH=src python benchmarks/peer_coverage.py [--sample N] [--seed S]
        [--only PATTERN] [--jobs J] [--verbose] [--json FILE]

``--only`` keeps the case ids containing PATTERN (a regular expression);
``--sample`` draws N of them at random (``--seed``).  ``--jobs`` runs the cases
in that many worker processes (each case in a fresh interpreter would cost
Numba's start-up every time, so each worker takes many cases).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import time
import traceback

# Each case's compiled code, and a compile failure as the error it raises: Numba
# compiles in the first call, not in the background (inherited by the workers).
os.environ.setdefault("PULLBACK_BACKGROUND_COMPILE", "0")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "src"))


def _python_passing():
    from peers import test_peers
    return [c.id for c in test_peers.ALL if c.id not in test_peers.PYTHON]


def _cause(exc) -> str:
    """A short name for why a case was refused."""
    text = str(exc)
    m = re.search(r"the derivative of (\S+) \(with respect to .*?its helper (\w+) has no", text,
                  re.S)
    if m:
        return f"no twin: {m.group(2)} ({m.group(1)})"
    m = re.search(r"pullback \(Numba backend\): (.*?) is not supported under jit=True", text, re.S)
    if m:
        return "twin refuses: " + " ".join(m.group(1).split())
    if "could not be compiled with Numba" in text:
        body = text.split("Numba reported:\n", 1)[-1]
        m = re.search(r">>> (\S+?)\((.*?)\)\s*$", body, re.M)
        if m:
            # "No implementation of function ... found for signature: >>> f(types)"
            return f"numba: no implementation of {m.group(1)}({m.group(2)[:80]})"
        lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
        skip = ("During:", "File", "TypingError: Failed in", "<source", "^")
        first = next((ln for ln in lines if not ln.startswith(skip)), "")
        first = re.sub(r"\s+", " ", re.sub(r"0x[0-9a-f]+", "0x", first))
        return f"numba: {first[:120]}"
    first = " ".join(text.split("\n", 1)[0].split())
    return f"{type(exc).__name__}: {first[:110]}"


def run_one(case_id: str) -> dict:
    from peers import test_peers

    import pullback
    case = test_peers.BY_ID[case_id]
    t0 = time.perf_counter()
    try:
        test_peers.check_case(case, True)
        out = {"kind": "pass"}
    except pullback.PullbackError as exc:
        out = {"kind": "refused", "exc": type(exc).__name__, "cause": _cause(exc),
               "message": str(exc)[:2000]}
    except AssertionError as exc:
        out = {"kind": "wrong", "message": str(exc)[:2000]}
    except Exception as exc:        # noqa: BLE001 - every other failure is a crash
        out = {"kind": "crash", "exc": type(exc).__name__,
               "cause": f"{type(exc).__name__}: {' '.join(str(exc).split())[:110]}",
               "message": traceback.format_exc()[-3000:]}
    out["id"] = case_id
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def _worker(ids, conn):
    for cid in ids:
        conn.send(run_one(cid))
    conn.send(None)


def run_all(ids, jobs, on_result):
    if jobs <= 1:
        for cid in ids:
            on_result(run_one(cid))
        return
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    chunks = [ids[k::jobs] for k in range(jobs)]
    pipes, procs = [], []
    for chunk in chunks:
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=(chunk, send))
        p.start()
        pipes.append(recv)
        procs.append(p)
    live = list(pipes)
    from multiprocessing.connection import wait
    while live:
        for r in wait(live):
            try:
                msg = r.recv()
            except EOFError:
                msg = None
            if msg is None:
                live.remove(r)
            else:
                on_result(msg)
    for p in procs:
        p.join()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, default=0, help="check N random cases only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="keep case ids matching this regular expression")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--verbose", "-v", action="store_true", help="print each case as it ends")
    ap.add_argument("--json", default="", help="write every result to this file")
    args = ap.parse_args(argv)

    ids = _python_passing()
    total_python = len(ids)
    if args.only:
        ids = [i for i in ids if re.search(args.only, i)]
    if args.sample and args.sample < len(ids):
        ids = sorted(random.Random(args.seed).sample(ids, args.sample))
    results = []
    t0 = time.perf_counter()

    def on_result(r):
        results.append(r)
        if args.verbose:
            extra = r.get("cause", r.get("message", "")[:100].replace("\n", " "))
            print(f"{r['kind']:8s} {r['seconds']:6.1f}s {r['id']}  {extra if r['kind'] != 'pass' else ''}",
                  flush=True)
    run_all(ids, args.jobs, on_result)

    kinds = collections.Counter(r["kind"] for r in results)
    n = len(results)
    print(f"\npeer cases passing on the Python backend: {total_python}; checked under jit=True: "
          f"{n} ({time.perf_counter() - t0:.0f} s)")
    for k in ("pass", "refused", "wrong", "crash"):
        print(f"  {k:8s} {kinds.get(k, 0):4d}  ({100.0 * kinds.get(k, 0) / max(n, 1):.1f}%)")
    causes = collections.Counter(r["cause"] for r in results if r["kind"] in ("refused", "crash"))
    if causes:
        print("\nrefusals and crashes by cause (most cases first):")
        for cause, c in causes.most_common():
            print(f"  {c:4d}  {cause}")
            cases = [r["id"] for r in results if r.get("cause") == cause]
            print("        " + ", ".join(cases[:6]) + (" ..." if len(cases) > 6 else ""))
    bad = [r for r in results if r["kind"] == "wrong"]
    if bad:
        print("\nwrong:")
        for r in bad:
            print(f"  {r['id']}: {r['message'][:300]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(sorted(results, key=lambda r: r["id"]), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
