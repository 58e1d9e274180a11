"""Benchmark: the gate's work counts and CPU cost, against its work bounds and its CPU backstop.

For every task's defective, clean and reference design and every fixture that passes the
allowlist, runs ``run_gate`` as the grader does and records the work counts (gate/work.py) and the
analysis CPU-s; then the same for the near-bound designs of tests/gate_cases
(gate_limit_*.near/.trips.v). Prints, per bound, the largest count among the tasks and fixtures
and its margin to the bound; the largest CPU-s and its margin to the backstop; and the CPU-s of
the near-bound designs (what a design at a bound costs). With ``--load`` every design runs twice,
interleaved: as the machine is, and with every core saturated by busy processes; it prints the
median and maximum ratio of CPU-s loaded / as-is (how CPU time is counted under load) and whether
every verdict was the same.

    python bench/bench_gate_work.py [--load] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from cdc_env.fixtures import load_fixtures
from cdc_env.gate import CPU_BACKSTOP_S, run_gate, work
from cdc_env.submission import allowlist
from cdc_env.task import load_task, task_ids

CASES = Path(__file__).resolve().parent.parent / "tests" / "gate_cases"


def designs() -> list[tuple[str, str, str]]:
    """(label, task id, editable text) for every task design and allowlisted fixture."""
    out = []
    for tid in task_ids():
        task = load_task(tid)
        for kind in ("defective_text", "clean_text", "reference_text"):
            out.append((f"{tid}:{kind.split('_')[0]}", tid, getattr(task, kind)))
    for fx in load_fixtures():
        res = allowlist(load_task(fx.task), fx.submission())
        if res.ok:
            out.append((f"fixture:{fx.name}", fx.task, res.text))
    return out


def near_bounds() -> list[tuple[str, str, str]]:
    return [(f"case:{p.stem}", "handshake", p.read_text()) for p in sorted(CASES.glob("gate_limit_*.*.v"))]


def run(label: str, tid: str, text: str) -> dict:
    task = load_task(tid)
    g = run_gate(task, task.files(text))
    return {"label": label, "status": g.status, "rules": sorted({f["rule"] for f in g.findings}),
            "sha": (g.netlist or {}).get("sha256"), "cpu_s": round(g.cpu_s, 4),
            "work": (g.netlist or {}).get("work")}


class Load:
    """Every core saturated by busy processes while in use."""

    def __enter__(self) -> Load:
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(os.cpu_count() or 2)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--load", action="store_true", help="also run each design with every core saturated")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for label, tid, _text in designs()[:1]:  # warm-up: imports and the task profile
        run(label, tid, _text)
    rows, loaded = [], []
    for item in designs() + near_bounds():
        rows.append(run(*item))
        if args.load:
            with Load():
                loaded.append(run(*item))
    plain = [r for r in rows if not r["label"].startswith("case:")]
    counted = [r for r in plain if r["work"]]
    summary: dict = {"designs": len(plain), "load_avg": os.getloadavg(), "bounds": {}}
    for name, (limit, _what) in work.BOUNDS.items():
        top = max(counted, key=lambda r, name=name: r["work"][name])
        summary["bounds"][name] = {"limit": limit, "largest": top["work"][name], "design": top["label"],
                                   "margin": round(limit / max(1, top["work"][name]), 1)}
    worst = max(plain, key=lambda r: r["cpu_s"])
    summary["cpu"] = {"largest_s": worst["cpu_s"], "design": worst["label"], "backstop_s": CPU_BACKSTOP_S,
                      "margin": round(CPU_BACKSTOP_S / worst["cpu_s"], 1)}
    summary["near_bounds"] = {r["label"]: {"status": r["status"], "cpu_s": r["cpu_s"]}
                              for r in rows if r["label"].startswith("case:")}
    if args.load:
        ratios = [b["cpu_s"] / a["cpu_s"] for a, b in zip(rows, loaded, strict=True) if a["cpu_s"] > 0]
        same = [a["label"] for a, b in zip(rows, loaded, strict=True)
                if (a["status"], a["rules"], a["sha"]) != (b["status"], b["rules"], b["sha"])]
        summary["load"] = {"cpu_ratio_median": round(statistics.median(ratios), 3),
                           "cpu_ratio_max": round(max(ratios), 3), "verdicts_differ": same,
                           "largest_loaded_cpu_s": max(b["cpu_s"] for b in loaded)}
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows, "loaded": loaded}, indent=1))
    else:
        print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
