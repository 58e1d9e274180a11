"""Write a predictions file for ``cdc-env grade-batch`` with the verdict each line must get.

Lines mix, in a fixed (seeded) order:
  * reference fixes of every public task (must pass),
  * the shipped defective designs (must fail on the visible seeds),
  * every fixture of the reward-hack registry that runs on the simulator (hacks must be caught at
    their stage with their verdict, correct-but-unusual fixes must pass); hacks caught only on
    hidden seeds carry the fixture's own ``hidden`` count.

Full-file submissions get a trailing comment with the line's number so that no two lines are the
same text. Each line's ``meta`` holds what it is and its expected verdict and stage; the grader
ignores ``meta``. ``--check DIR`` compares a finished grade-batch folder against the file.

    python3 bench/make_predictions.py -n 200 --out /tmp/pred.jsonl
    python3 -m cdc_env.cli grade-batch /tmp/pred.jsonl --out /tmp/b --hidden 8
    python3 bench/make_predictions.py --check /tmp/b --out /tmp/pred.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cdc_env.fixtures import load_fixtures  # noqa: E402
from cdc_env.task import list_tasks  # noqa: E402


def candidates(sim: str, with_hidden_hacks: bool) -> list[dict]:
    out = []
    for t in list_tasks():
        out.append({"task": t.id, "submission": t.reference_text, "full": True,
                    "meta": {"kind": "reference", "expect": "pass", "stage": "pass"}})
        out.append({"task": t.id, "submission": t.defective_text, "full": True,
                    "meta": {"kind": "defect", "expect": "fail", "stage": "visible"}})
    for fx in load_fixtures():
        if sim not in fx.sims or (fx.stage == "hidden" and not with_hidden_hacks):
            continue
        sub = fx.submission().decode("utf-8", "replace")
        item = {"task": fx.task, "submission": sub, "full": not sub.lstrip().startswith(("---", "diff ")),
                "meta": {"kind": f"fixture:{fx.kind}", "fixture": fx.name, "expect": fx.expect,
                         "stage": fx.stage}}
        if fx.stage == "hidden":
            item["hidden"] = fx.hidden
        out.append(item)
    return out


def make(n: int, seed: int, sim: str, with_hidden_hacks: bool, bad: int) -> list[str]:
    pool = candidates(sim, with_hidden_hacks)
    rng = random.Random(seed)
    order = list(range(len(pool)))
    rng.shuffle(order)
    lines = []
    for i in range(n):
        c = dict(pool[order[i % len(pool)]])
        full = c.pop("full")
        if full and i >= len(pool):
            c["submission"] = c["submission"].rstrip("\n") + f"\n// prediction {i}\n"
        lines.append(json.dumps({"id": f"p{i:05d}", **c}))
    for k in range(bad):  # malformed lines, to show they are reported and skipped
        lines.insert(rng.randrange(len(lines) + 1),
                     ['{"id": "bad-json", "task": ', json.dumps({"id": f"bad{k}", "task": "no_such_task",
                                                                  "submission": ""}),
                      json.dumps({"task": "handshake", "submission": "x"})][k % 3])
    return lines


def check(pred: Path, out: Path) -> int:
    want = {}
    for raw in pred.read_text().splitlines():
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "meta" in obj and "id" in obj:
            want[obj["id"]] = obj["meta"]
    got = {}
    for raw in (out / "results.jsonl").read_text().splitlines():
        row = json.loads(raw)
        if row["id"] in got:
            print(f"{row['id']}: recorded twice")
            return 1
        got[row["id"]] = row
    wrong = 0
    for pid, meta in want.items():
        row = got.get(pid)
        if row is None:
            print(f"{pid}: no result")
            wrong += 1
            continue
        stage = row["failed_stage"] or "pass"
        if row["verdict"] != meta["expect"] or stage != meta["stage"]:
            wrong += 1
            print(f"{pid} ({meta.get('fixture') or meta['kind']} on {row['task']}): expected "
                  f"{meta['expect']} at {meta['stage']}, got {row['verdict']} at {stage}: "
                  f"{row['reason'][:120]}")
    print(f"{len(want) - wrong}/{len(want)} lines got the expected verdict and stage")
    return 0 if wrong == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="number of predictions (default 200)")
    ap.add_argument("--out", required=True, help="the predictions file")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--sim", default="icarus")
    ap.add_argument("--no-hidden-hacks", action="store_true",
                    help="leave out hacks caught only on hidden seeds (they need many seeds)")
    ap.add_argument("--bad", type=int, default=0, help="also insert this many malformed lines")
    ap.add_argument("--check", metavar="DIR", help="check a grade-batch folder against --out instead")
    args = ap.parse_args()
    if args.check:
        return check(Path(args.out), Path(args.check))
    lines = make(args.n, args.seed, args.sim, not args.no_hidden_hacks, args.bad)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} lines to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
