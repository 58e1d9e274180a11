"""Does ``sim="auto"`` pick the cheaper simulator? One task per family, the reference fix at
8 visible + N hidden seeds, graded on Icarus, on Verilator and with ``auto``, in interleaved rounds
(the three grades of a round run back to back, so load drifts hit them alike); medians of the
grades' ``cpu_s`` (sandboxed, cgroup-measured). Every grade builds its Verilator model, as
``cdc-env cost`` measures (the per-patch model cache is off): the figures are a first grade's.

    python bench/bench_auto.py [--tasks handshake event fifo_01 rst_01] [--hidden 200] [--rounds 3]

Prints one row per task: median CPU-s of each, what auto chose (and why), the chosen simulator's
median over the cheaper one's (the choice: within 1.05 is the target; exit 1 otherwise) and auto's
own grades over the cheaper (the choice plus the noise of its own runs). ``--json`` prints the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cdc_env.grade import grade  # noqa: E402
from cdc_env.sim import verilator  # noqa: E402
from cdc_env.task import load_task  # noqa: E402

SIMS = ("icarus", "verilator", "auto")


def measure(task_id: str, hidden: int, rounds: int) -> dict:
    task = load_task(task_id)
    cpu: dict[str, list[float]] = {s: [] for s in SIMS}
    chose: list[str] = []
    for r in range(rounds):
        order = SIMS if r % 2 == 0 else SIMS[::-1]  # alternate the order inside a round
        for sim in order:
            rep = grade(task, task.reference_text, sim=sim, hidden=hidden)
            if rep["verdict"] != "pass":
                raise SystemExit(f"{task_id} {sim}: the reference fix did not pass: {rep['reason']}")
            cpu[sim].append(rep["cpu_s"])
            if sim == "auto":
                chose.append(rep["simulator"]["name"] + " -- " + str(rep["simulator"].get("choice", "")))
    med = {s: statistics.median(v) for s, v in cpu.items()}
    cheaper = min(med["icarus"], med["verilator"])
    picked = chose[-1].split(" -- ")[0]
    return {"choice_over_cheaper": round(med[picked] / cheaper, 3),
            "task": task_id, "family": task.family, "hidden": hidden, "rounds": rounds,
            "median_cpu_s": {s: round(v, 3) for s, v in med.items()},
            "runs_cpu_s": {s: [round(x, 3) for x in v] for s, v in cpu.items()},
            "auto_chose": chose[-1], "auto_over_cheaper": round(med["auto"] / cheaper, 3),
            "cheaper": "icarus" if med["icarus"] <= med["verilator"] else "verilator"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["handshake", "event", "fifo_01", "rst_01"])
    ap.add_argument("--hidden", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ[verilator.MODEL_CACHE_ENV] = "0"  # every grade builds its model (a first grade)
    rows = [measure(t, args.hidden, args.rounds) for t in args.tasks]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| task | Icarus CPU-s | Verilator CPU-s | auto chose | chosen / cheaper | auto CPU-s | "
          "auto / cheaper |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        m = r["median_cpu_s"]
        print(f"| {r['task']} | {m['icarus']} | {m['verilator']} | {r['auto_chose'].split(' -- ')[0]} | "
              f"{r['choice_over_cheaper']} | {m['auto']} | {r['auto_over_cheaper']} |")
    return 0 if all(r["choice_over_cheaper"] <= 1.05 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
