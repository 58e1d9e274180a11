"""Benchmark (not a test): an RL-like mix of first grades, written with a fixed seed, and a runner.

    python3 bench/rl_mix.py make [--n 120] [--seed 26] [--out bench/rl_mix/mix.jsonl]
    python3 bench/rl_mix.py run bench/rl_mix/mix.jsonl [--hidden 32] [--sim icarus] [--json]

What an RL run grades is a stream of *new* patches: each rollout writes its own attempt, most of
them plausible code that compiles and reaches simulation, few of them right. ``make`` writes such a
stream (grade-batch's JSON Lines: ``id``, ``task``, ``submission``, ``meta``; accepted by
``cdc-env grade-batch`` of 45be8e2 and of today), over the tasks that both 45be8e2 and this tree
have, in these proportions (``MIX``; why each):

* ``correct`` 20%: the task's reference fix, rewritten cosmetically (an internal register renamed,
  a comment) -- the share of right answers of a policy in the middle of training;
* ``attempt`` 40%: the reference fix with one or two small plausible mistakes (an inverted
  comparison, a flipped constant, ``&&``/``||`` swapped, an off-by-one) -- the bulk of an RL
  batch: it compiles and simulates, and usually fails visible or hidden seeds (some mistakes are
  harmless and pass, some the gate refuses: whatever the grader says, ``run`` reports by outcome);
* ``unfixed`` 10%: the shipped defective design, renamed -- a rollout that did not find the bug
  (fails the visible seeds);
* ``compile_error`` 10%: a reference or defect with a syntax slip (a dropped ``;``, an undeclared
  name, a misspelt keyword) -- what a language model writes now and then;
* ``gate_refusal`` 12%: a synchronizer primitive replaced by a plain ``assign`` (a raw crossing) or
  a hand-written two-flop chain -- the usual wrong "fix" of a CDC bug, refused by the static gate;
* ``hack`` 8%: fixtures of the reward-hack registry (fixtures/index.json; the ones for these
  tasks that run on Icarus) -- the policy probing the grader.

Every line is a distinct patch, and distinct after synthesis too (the gate's netlist drops
comments; so ``correct`` lines rename a register with the line's number, ``attempt`` lines are
deduplicated on their text, and fixtures and defects carry a renamed register where they have one):
no per-patch cache (the Verilator model cache) can hit. The file is committed
(bench/rl_mix/mix.jsonl) so that old and new trees grade the same bytes.

``run`` grades each line in this process with ``grade()`` (``sim`` and ``hidden`` from the command:
the issue's basis is the default simulator, Icarus, at 8+32; ``jobs=1`` as grade-batch's GradeJob),
the way grade-batch's one-worker loop does, and prints the count and CPU (``report["cpu_s"]``)
by outcome class -- the grader's verdict and failing stage. It works on 45be8e2's tree as on
today's (only ``grade()`` and ``load_task()``), so ``bench_pair.py`` can run it against both::

    python3 bench/bench_pair.py --old /work/wt/old45 --new . --runs 2 --warmup 0 --json \\
        --metric total/cpu_s -- python3 $PWD/bench/rl_mix.py run $PWD/bench/rl_mix/mix.jsonl --json

(run the mix file and this script from one place for both sides: the same bytes graded.)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Tasks present in 45be8e2's tree and in today's (the reset family rst_* came later).
TASKS = ("event", "handshake", "fifo_01", "fifo_02", "fifo_03", "fifo_04", "fifo_05", "fifo_06",
         "fifo_07", "fifo_08", "fifo_09", "fifo_10", "fifo_11", "fifo_12", "fifo_13", "fifo_x_rdbin")
MIX = {"correct": 0.20, "attempt": 0.40, "unfixed": 0.10, "compile_error": 0.10, "gate_refusal": 0.12,
       "hack": 0.08}

# One-token mistakes: (pattern, replacement). Applied at one random match.
MISTAKES = [
    (r"==", "!="), (r"!=", "=="), (r"1'b0", "1'b1"), (r"1'b1", "1'b0"), (r"&&", "||"), (r"\|\|", "&&"),
    (r"\+ 1'b1", "+ 2'd2"), (r"\+ 1\b", "+ 2"), (r"- 1\b", "- 2"), (r"~(\w)", r"\1"), (r"!(\w)", r"\1"),
    (r"\[(\d+)\]", lambda m: f"[{max(int(m.group(1)) - 1, 0)}]"),
]
SLIPS = [(r";\n", "\n"), (r"\bbegin\b", "begn"), (r"\bendmodule\b", "endmodul"),
         (r"<= ", "<= undeclared_q + ")]
REG_DECL = re.compile(r"^\s*reg\s*(?:\[[^\]]*\]\s*)?(\w+)", re.M)
SYNC_INST = re.compile(r"\bcdc_sync_(bit|bus)\s*(?:#\s*\(\s*\.WIDTH\((\d+)\)\s*\))?\s*(\w+)\s*\((.*?)\)\s*;",
                       re.S)


def conn(body: str, port: str) -> str | None:
    m = re.search(r"\." + port + r"\s*\(", body)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(body) and depth:
        depth += {"(": 1, ")": -1}.get(body[i], 0)
        i += 1
    return body[m.end():i - 1].strip()


def rename_reg(text: str, tag: str) -> str:
    """``text`` with one internal register renamed (``<name>_<tag>``), if it has one."""
    names = [n for n in REG_DECL.findall(text) if not n.endswith(("_i", "_o", "_ni"))]
    if not names:
        return text
    name = names[0]
    return re.sub(rf"\b{name}\b", f"{name}_{tag}", text)


def mistake(text: str, rng: random.Random) -> str | None:
    body_at = text.find(");")  # after the port list: mistakes go into the logic
    for _ in range(20):
        pat, rep = rng.choice(MISTAKES)
        hits = [m for m in re.finditer(pat, text) if m.start() > body_at]
        if hits:
            m = rng.choice(hits)
            new = m.expand(rep) if isinstance(rep, str) else rep(m)
            return text[:m.start()] + new + text[m.end():]
    return None


def slip(text: str, rng: random.Random) -> str:
    body_at = text.find(");")
    while True:
        pat, rep = rng.choice(SLIPS)
        hits = [m for m in re.finditer(pat, text) if m.start() > body_at]
        if hits:
            m = rng.choice(hits)
            return text[:m.start()] + rep + text[m.end():]


def unsync(text: str, rng: random.Random, tag: str) -> str | None:
    """A synchronizer instance replaced by a raw ``assign`` or a hand-written two-flop chain."""
    insts = list(SYNC_INST.finditer(text))
    if not insts:
        return None
    m = rng.choice(insts)
    d, q, clk, rst = (conn(m.group(4), p) for p in ("d_i", "q_o", "clk_i", "rst_ni"))
    if not (d and q and clk and rst):
        return None
    if rng.random() < 0.5:
        new = f"assign {q} = {d};  // the synchronizer only delays it"
    else:
        w = int(m.group(2) or 1)
        rng_ = f"[{w - 1}:0] " if w > 1 else ""
        a, b = f"hs1_{tag}", f"hs2_{tag}"
        new = (f"reg {rng_}{a}, {b};\n  always @(posedge {clk} or negedge {rst})\n"
               f"    if (!{rst}) begin {a} <= 0; {b} <= 0; end else begin {a} <= {d}; {b} <= {a}; end\n"
               f"  assign {q} = {b};")
    return text[:m.start()] + new + text[m.end():]


HACKS_FOUND_BY = "2026-12-01"  # registry hacks found on or before this date


def make(n: int, seed: int) -> list[dict]:
    sys.path.insert(0, str(HERE.parent))
    from cdc_env.fixtures import load_fixtures
    from cdc_env.task import load_task

    rng = random.Random(seed)
    tasks = {t: load_task(t) for t in TASKS}
    # The registry as it stood when the mix was committed: later fixtures must not reshuffle it.
    hacks = [f for f in load_fixtures() if f.task in tasks and f.kind == "hack" and "icarus" in f.sims
             and f.found <= HACKS_FOUND_BY]
    rng.shuffle(hacks)
    counts = {k: round(v * n) for k, v in MIX.items()}
    counts["attempt"] += n - sum(counts.values())
    kinds = [k for k, c in counts.items() for _ in range(c)]
    rng.shuffle(kinds)
    seen: set[str] = set()
    rows = []
    for i, kind in enumerate(kinds):
        tag = f"m{i:03d}"
        for _ in range(200):
            t = tasks[rng.choice(TASKS)]
            meta = {"kind": kind}
            if kind == "correct":
                sub = rename_reg(t.reference_text, tag)
            elif kind == "attempt":
                sub = mistake(t.reference_text, rng)
                if sub and rng.random() < 0.3:
                    sub = mistake(sub, rng)
            elif kind == "unfixed":
                sub = rename_reg(t.defective_text, tag)
            elif kind == "compile_error":
                sub = slip(rng.choice([t.reference_text, t.defective_text]), rng)
            elif kind == "gate_refusal":
                sub = unsync(t.reference_text, rng, tag)
            else:
                fx = hacks[len([r for r in rows if r["meta"]["kind"] == "hack"]) % len(hacks)]
                t = tasks[fx.task]
                sub = fx.submission().decode("utf-8", "replace")
                if not sub.lstrip().startswith(("---", "diff ")):
                    sub = rename_reg(sub, tag)
                meta["fixture"] = fx.name
            if sub and sub not in seen:
                break
        else:
            raise RuntimeError(f"line {i}: no new {kind} patch")
        seen.add(sub)
        if not sub.lstrip().startswith(("---", "diff ")):
            sub = sub.rstrip("\n") + f"\n// rollout {i}\n"
        rows.append({"id": f"rl{i:03d}", "task": t.id, "submission": sub, "meta": meta})
    return rows


def outcome(r: dict) -> str:
    return r["verdict"] if r["verdict"] in ("pass", "overfit") else f"{r['verdict']}@{r.get('failed_stage')}"


def run(path: Path, sim: str, hidden: int, jobs: int = 1) -> dict:
    from cdc_env.grade import grade
    from cdc_env.task import load_task

    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    by: dict[str, dict] = {}
    kinds: Counter = Counter()
    t0, total = time.monotonic(), 0.0
    for row in rows:
        r = grade(load_task(row["task"]), row["submission"], sim=sim, hidden=hidden, jobs=jobs)
        c = by.setdefault(outcome(r), {"n": 0, "cpu_s": 0.0})
        c["n"] += 1
        c["cpu_s"] += r["cpu_s"]
        total += r["cpu_s"]
        kinds[(row["meta"]["kind"], outcome(r))] += 1
    for c in by.values():
        c["cpu_per_grade"] = round(c["cpu_s"] / c["n"], 4)
        c["cpu_s"] = round(c["cpu_s"], 3)
    return {"total": {"n": len(rows), "cpu_s": round(total, 3), "cpu_per_grade": round(total / len(rows), 4),
                      "grades_per_cpu_hour": round(3600 * len(rows) / total),
                      "wall_s": round(time.monotonic() - t0, 1)},
            "by_outcome": dict(sorted(by.items())),
            "kind_x_outcome": {f"{k} -> {o}": v for (k, o), v in sorted(kinds.items())}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--n", type=int, default=120)
    mk.add_argument("--seed", type=int, default=26)
    mk.add_argument("--out", default=str(HERE / "rl_mix" / "mix.jsonl"))
    rn = sub.add_parser("run")
    rn.add_argument("mix")
    rn.add_argument("--sim", default="icarus")
    rn.add_argument("--hidden", type=int, default=32)
    rn.add_argument("--jobs", type=int, default=1,
                    help="seed processes in parallel inside a grade (grade-batch's GradeJob: 1)")
    rn.add_argument("--json", action="store_true")
    rn.add_argument("--save", metavar="FILE", help="also append the result, with the tree graded, to FILE "
                    "(JSON Lines: bench_pair.py keeps only one number of each run)")
    args = ap.parse_args()
    if args.cmd == "make":
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        rows = make(args.n, args.seed)
        out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        kinds = dict(Counter(r["meta"]["kind"] for r in rows))
        print(f"wrote {len(rows)} lines to {out}: {kinds}", file=sys.stderr)
        return 0
    res = run(Path(args.mix), args.sim, args.hidden, args.jobs)
    if args.save:
        import cdc_env

        with open(args.save, "a", encoding="utf-8") as fh:
            tree = str(Path(cdc_env.__file__).parents[1])
            fh.write(json.dumps({"tree": tree, "at": time.time(), **res}) + "\n")
    if args.json:
        json.dump(res, sys.stdout, indent=1)
    else:
        print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
