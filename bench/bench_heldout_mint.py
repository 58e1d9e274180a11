"""Benchmark (not a test): mint the held-out set with fresh random keys and report the result.

For each of ``--keys`` fresh keys (16 random bytes from the OS, written to a scratch file and
deleted afterwards; never printed) it runs the real ``heldout.mint`` -- visible seeds, the
200-seed defect count and the full variant gate for every variant, with the deterministic
search of heldout.py when a step misses the band -- into a scratch folder that is deleted too.
One line per variant: the search step kept (parameter draw, run length in slow cycles, traffic
range), the defect's hidden-seed count and the gate verdict; or, when a search is exhausted,
the error (minting writes nothing then).

    python bench/bench_heldout_mint.py --keys 3

It measures; it asserts nothing. A key's mint takes minutes of CPU (four gates of 808 seeds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cdc_env.errors import CdcError
from cdc_env.fifo.heldout import WR_PCT_TRIES, mint


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=3)
    args = ap.parse_args()
    failed = 0
    for n in range(args.keys):
        work = Path(tempfile.mkdtemp(prefix="cdc-bench-mint-"))
        key_file = work / "key"
        key_file.write_bytes(os.urandom(16).hex().encode())
        t0, c0 = time.time(), time.process_time()
        try:
            m = mint(key_file, work / "set", progress=lambda msg, n=n: print(f"  key {n + 1}: {msg}",
                                                                              flush=True))
        except CdcError as exc:
            failed += 1
            print(f"key {n + 1}: MINT FAILED: {exc}", flush=True)
            continue
        finally:
            wall = time.time() - t0
        for v in m["variants"]:
            k, run, w = v["search_step"]
            g = v["gate"]
            verdict = "gate ok" if g["ok"] else "GATE FAILED: " + "; ".join(g["problems"])
            print(f"key {n + 1}  {v['id'][:16]}  draw {k}  {run} slow cycles  wr_pct {WR_PCT_TRIES[w]}  "
                  f"defect {g['defect_hidden_fail_settle']}/200  visible {g['defect_visible_fail']}/8  "
                  f"{verdict}", flush=True)
        own = time.process_time() - c0
        print(f"key {n + 1}: 4 variants, {wall:.0f} s wall (this process {own:.0f} CPU-s; "
              "simulators not counted)", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
