"""Benchmark (not a test): mint the held-out sets of every family with fresh random keys.

For each of ``--keys`` fresh keys (16 random bytes from the OS, written to a scratch file and
deleted afterwards; never printed) it runs the real ``cdc_env.families.heldout.mint`` -- for each
family's 4 variants: visible seeds, the 200-seed defect count and the full variant gate, with the
family's deterministic search (and fresh draws) when a step misses the band -- into a scratch
folder that is deleted too. One line per variant: its family, the search step kept (parameter
draw, search index), the parameters that matter, the defect's hidden-seed count and the gate
verdict; or, when a search is exhausted, the error (minting writes nothing then). Wall time per
key; the simulators' CPU is charged to the per-run cgroups the grader makes under this process's
own cgroup, so for a CPU figure run it in a cgroup of its own and read that cgroup's usage (README,
"Task families").

    nice -n 10 python bench/bench_heldout_mint.py --keys 3 [--family NAME]

It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cdc_env.errors import CdcError
from cdc_env.families.heldout import mint


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=3)
    ap.add_argument("--family", action="append", help="a family (repeatable; default: every family)")
    args = ap.parse_args()
    failed = 0
    for n in range(args.keys):
        work = Path(tempfile.mkdtemp(prefix="cdc-bench-mint-"))
        key_file = work / "key"
        key_file.write_bytes(os.urandom(16).hex().encode())
        t0 = time.time()
        try:
            m = mint(key_file, work / "set", args.family,
                     progress=lambda msg, n=n: print(f"  key {n + 1}: {msg}", flush=True))
        except CdcError as exc:
            failed += 1
            print(f"key {n + 1}: MINT FAILED: {exc}", flush=True)
            continue
        finally:
            wall = time.time() - t0
        for v in m["variants"]:
            g = v["gate"]
            toml = (work / "set" / v["id"] / "task.toml").read_text()
            params = json.loads(next(ln for ln in toml.splitlines() if ln.startswith("# Parameters: "))
                                .removeprefix("# Parameters: "))
            shown = ("style", "machine_a", "machine_b", "width", "aw", "burst", "shape", "dom", "pulses",
                     "wr_pct", "run_slow_cycles", "sends", "steps", "encoding")
            keep = {k: params[k] for k in shown if k in params}
            verdict = "gate ok" if g["ok"] else "GATE FAILED: " + "; ".join(g["problems"])
            print(f"key {n + 1}  {v['family']:6} step {v['search_step']}  {keep}  "
                  f"defect {g['defect_hidden_fail_settle']}/200  visible {g['defect_visible_fail']}/8  "
                  f"clean {g['clean_fail']} ref {g['reference_fail']} nosettle "
                  f"{g['defect_hidden_fail_nosettle']}  {verdict}", flush=True)
        print(f"key {n + 1}: {len(m['variants'])} variants ({', '.join(m['families'])}), {wall:.0f} s wall",
              flush=True)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
