"""Benchmark (not a test): one command against two source trees, old vs new, paired and interleaved.

    python bench/bench_pair.py --old /work/wt/base --new . --runs 5 -- \\
        python3 bench/bench_seeds.py fifo_01 --hidden 200 --runs 1
    python bench/bench_pair.py --old /work/wt/base --new . --runs 5 --warmup 1 --json -- \\
        python3 {tree}/bench/bench_fifo.py --tasks fifo_01 --sim verilator --hidden 32 --runs 1

Runs the command ``--runs`` times per tree, alternating old, new, old, new, ... (so slow drift
of the machine's load falls on both sides alike); the only difference between the two sides is
``PYTHONPATH`` (the tree; with ``PYTHONSAFEPATH=1`` so that ``python3 -m cdc_env`` run from a
checkout does not import the checkout in the working directory instead) -- and ``{tree}`` in the
command, replaced by that side's tree, when a side's own script should run (needed for a script
that puts its own checkout first on ``sys.path``, as ``bench_batch.py`` does).

Each run is measured as the CPU-seconds (user + system) of its
whole process tree:

* **cgroup** (``cdc_env.sim.proc.accounting()``: v2 where delegated, else writable v1): each run
  starts inside a fresh child cgroup and its usage is read after it exits. Everything the run
  starts is counted, bubblewrap sandboxes and their PID namespaces included (the grader's own
  per-tool cgroups nest below it, and a cgroup's usage includes its children's);
* **rusage** fallback: ``RUSAGE_CHILDREN`` of this process -- only descendants that were waited
  for. Processes inside a bubblewrap PID namespace are reaped by the sandbox's init and may be
  missed, so the figures are lower bounds (the output says so).

Caches: ``--cache separate`` (the default) gives each side its own ``CDC_ENV_CACHE``, kept across
that side's runs (what a long-running grader sees: per-task products warm, every patch new);
``fresh`` gives every run an empty cache (cold: trusted runtimes are rebuilt too); ``shared``
leaves the environment's cache alone. ``--warmup K`` runs each side K times unmeasured first (default 1: the
side's cache is warm, as for a grader that has been running).

Prints per side the median, min, max and every run, and new/old as the ratio of medians.
``--metric PATH`` also reads a figure the command itself reports: its stdout must be JSON, and
PATH (``/``-separated keys and list indices, e.g. ``0/cpu_s/verilator_first@200`` for
``bench_seeds.py --json``) names a number in it -- e.g. the grade's own ``cpu_s``, which leaves
out the Python start-up and imports that the cgroup figure includes.
A run that exits non-zero stops the benchmark (its output is shown).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cdc_env.sim.proc import Accounting, Limits, RunCgroup, accounting

# The benchmark's tree gets no bounds beyond the host's: the grader inside sets its own.
UNBOUNDED = Limits(mem_bytes=1 << 40, pids=1 << 16)


@dataclass
class Side:
    name: str  # "old" / "new"
    tree: Path
    cache: Path | None  # CDC_ENV_CACHE for this side (None: leave the environment's)
    cpu_s: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    metric: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        more = {}
        if self.metric:
            more = {"metric_median": round(statistics.median(self.metric), 4), "metric": self.metric}
        return more | {
            "tree": str(self.tree),
            "runs": len(self.cpu_s),
            "cpu_s_median": round(statistics.median(self.cpu_s), 4),
            "cpu_s_min": round(min(self.cpu_s), 4),
            "cpu_s_max": round(max(self.cpu_s), 4),
            "cpu_s": [round(c, 4) for c in self.cpu_s],
            "wall_s_median": round(statistics.median(self.wall_s), 3),
        }


def run_once(argv: list[str], env: dict[str, str], acc: Accounting, quiet: bool) -> tuple[float, float, str]:
    """(CPU-s of the whole process tree, wall-s, stdout) of one run of ``argv``; exits on a failure."""
    cg: RunCgroup | None = None
    if acc.method != "rusage":
        try:
            cg = RunCgroup(acc, UNBOUNDED)
        except OSError as exc:
            sys.exit(
                f"bench_pair: cannot create a cgroup ({exc}); rerun on a host where {acc.method} is writable"
            )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            preexec_fn=cg.join if cg is not None else None,
            check=False,
        )
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if cg is not None:
            cpu = cg.cpu_s()
        else:
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    except OSError as exc:
        sys.exit(f"bench_pair: cannot start {argv[0]}: {exc}")
    finally:
        if cg is not None:
            cg.kill()
            cg.remove()
    out = proc.stdout.decode(errors="replace")
    if not quiet:
        sys.stdout.write(out)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace")[-4000:])
        sys.exit(f"bench_pair: the command exited {proc.returncode}: {' '.join(argv)}")
    return cpu, wall, out


def read_metric(stdout: str, path: str) -> float:
    """The number at ``path`` (``/``-separated keys and list indices) in the JSON ``stdout``."""
    try:
        node = json.loads(stdout)
    except ValueError:
        sys.exit("bench_pair: --metric needs the command to print JSON on stdout (e.g. its --json)")
    for key in path.split("/"):
        try:
            node = node[int(key)] if isinstance(node, list) else node[key]
        except (KeyError, IndexError, ValueError, TypeError):
            sys.exit(f"bench_pair: --metric {path}: no {key!r} in the command's JSON")
    if not isinstance(node, int | float):
        sys.exit(f"bench_pair: --metric {path} is not a number: {node!r}")
    return float(node)


def side_env(side: Side) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONSAFEPATH"] = "1"  # neither the working directory nor the script's shadows the tree
    env["PYTHONPATH"] = str(side.tree) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if side.cache is not None:
        env["CDC_ENV_CACHE"] = str(side.cache)
    return env


def side_argv(command: list[str], side: Side) -> list[str]:
    return [a.replace("{tree}", str(side.tree)) for a in command]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], usage="%(prog)s --old TREE --new TREE [options] -- COMMAND ..."
    )
    ap.add_argument("--old", type=Path, required=True, help="the source tree before (PYTHONPATH)")
    ap.add_argument("--new", type=Path, required=True, help="the source tree after (PYTHONPATH)")
    ap.add_argument("--runs", type=int, default=3, help="measured runs per side (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured runs per side first (default 1)")
    ap.add_argument("--cache", choices=["separate", "fresh", "shared"], default="separate")
    ap.add_argument("--show-output", action="store_true", help="let the command's stdout through")
    ap.add_argument("--metric", help="also a number from the command's JSON stdout (PATH: keys/indices)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command to measure")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command given (put it after --)")
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be at least 1 and --warmup at least 0")
    for t in (args.old, args.new):
        if not (t / "cdc_env" / "__init__.py").is_file():
            ap.error(f"{t} is not a source tree (no cdc_env/__init__.py)")
    acc = accounting()
    scratch = Path(tempfile.mkdtemp(prefix="cdc-bench-pair-"))
    try:
        sides = [
            Side(name, tree.resolve(), scratch / name if args.cache == "separate" else None)
            for name, tree in (("old", args.old), ("new", args.new))
        ]

        def one(side: Side) -> tuple[float, float, str]:
            if args.cache == "fresh":
                side.cache = Path(tempfile.mkdtemp(prefix=f"{side.name}-", dir=scratch))
            try:
                return run_once(side_argv(command, side), side_env(side), acc, not args.show_output)
            finally:
                if args.cache == "fresh" and side.cache is not None:
                    shutil.rmtree(side.cache, ignore_errors=True)

        for _ in range(args.warmup):
            for s in sides:
                one(s)
        for i in range(args.runs):
            for s in sides:
                cpu, wall, out = one(s)
                s.cpu_s.append(cpu)
                s.wall_s.append(wall)
                if args.metric:
                    s.metric.append(read_metric(out, args.metric))
                if not args.json:
                    print(
                        f"run {i + 1} {s.name}: {cpu:.3f} CPU-s ({wall:.2f} s wall)",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    old, new = (s.summary() for s in sides)
    result = {
        "command": command,
        "cache": args.cache,
        "warmup": args.warmup,
        "accounting": acc.as_report(),
        "old": old,
        "new": new,
        "metric": args.metric,
        "metric_ratio_new_over_old": round(new["metric_median"] / old["metric_median"], 4)
        if args.metric and old["metric_median"]
        else None,
        "ratio_new_over_old": round(new["cpu_s_median"] / old["cpu_s_median"], 4)
        if old["cpu_s_median"]
        else None,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"command: {' '.join(command)}   (cache {args.cache}, warmup {args.warmup}, "
        f"{args.runs} paired runs, interleaved)"
    )
    for name, s in (("old", old), ("new", new)):
        print(
            f"{name} {s['tree']}: median {s['cpu_s_median']:.3f} CPU-s "
            f"(min {s['cpu_s_min']:.3f}, max {s['cpu_s_max']:.3f}; runs {s['cpu_s']})"
        )
    print(f"new/old (medians): {result['ratio_new_over_old']}")
    if args.metric:
        print(
            f"{args.metric}: old median {old['metric_median']}, new median {new['metric_median']} "
            f"(runs {old['metric']} / {new['metric']}), new/old {result['metric_ratio_new_over_old']}"
        )
    note = " -- LOWER BOUNDS: " + acc.reason if acc.lower_bound else ""
    print(f"accounting: {acc.method}{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
