"""Throughput of grade-batch's backends on this machine, in grades per core-hour, and their CPU
overhead against grading the same predictions one by one in a single process.

    python3 bench/bench_batch.py -n 200 --hidden 8 --workers 2 --ray-cpus 2 --out /tmp/bench-batch
    python3 bench/bench_batch.py -n 60 --hidden 32 --skip pool --skip ray --sim auto  # one worker, RL-like

Steps: (1) write the predictions (bench/make_predictions.py): an RL-like mix of first grades --
every line a different patch (reference fixes, defects, the reward-hack registry); (2) the
single-grade cost: every prediction graded in this process, one after another (one worker: its
grades per core-hour is the throughput figure of the README); (3) grade-batch on the local pool; (4)
grade-batch on a local Ray cluster started here (``ray.init(num_cpus=...)``).

CPU is measured with a cgroup (v1 cpuacct, or v2 cpu.stat) that this process moves into first:
everything it starts -- pool workers, every Ray process (GCS, raylet, workers), the simulators
inside bubblewrap's PID namespace, which getrusage cannot see -- is counted. Without a cgroup it
falls back to the /proc process tree plus the reports' own CPU figures for the sandboxed
simulators (an estimate, said so in the output). CPU time is what a core-hour price pays for and
is robust to other load on a shared machine; wall time is printed too but depends on that load.

It also checks every line's verdict against the expected one and that the two results folders are
identical apart from timing fields; the exit status is 1 if either check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cdc_env.backends import Backend, GradeJob, LocalPool, RayBackend, run_job  # noqa: E402
from cdc_env.batch import BatchRun, compare_results, read_predictions, run_batch  # noqa: E402
from cdc_env.task import list_tasks  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and all its live descendants, each with its reaped children."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parent[int(d.name)] = int(fields[1])
        cpu[int(d.name)] = sum(int(x) for x in fields[11:15]) / CLK  # utime stime cutime cstime
    keep = {root}
    changed = True
    while changed:
        changed = False
        for pid, pp in parent.items():
            if pp in keep and pid not in keep:
                keep.add(pid)
                changed = True
    return sum(cpu.get(p, 0.0) for p in keep)


class CpuMeter:
    """CPU seconds used by this process and everything it starts, from a cgroup of its own."""

    def __init__(self) -> None:
        self.path: Path | None = None
        for base, name in ((Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"),
                           (Path("/sys/fs/cgroup/unified"), "cpu.stat"),
                           (Path("/sys/fs/cgroup"), "cpu.stat")):
            group = base / f"cdc-bench-{os.getpid()}"
            try:
                group.mkdir()
                (group / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                try:
                    group.rmdir()
                except OSError:
                    pass
                continue
            self.path, self.base, self.file = group, base, name
            break

    @property
    def exact(self) -> bool:
        return self.path is not None

    def read(self) -> float:
        if self.path is None:
            return tree_cpu(os.getpid())
        text = (self.path / self.file).read_text()
        if self.file == "cpuacct.usage":
            return int(text) / 1e9
        return int(next(ln.split()[1] for ln in text.splitlines() if ln.startswith("usage_usec"))) / 1e6

    def close(self) -> None:
        if self.path is None:
            return
        try:
            (self.base / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            return
        for _ in range(120):  # Ray's processes can take a minute to exit
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(1)


METER: CpuMeter | None = None


def by_process() -> dict[str, float]:
    """CPU seconds so far of each live process of the meter's cgroup (with its reaped children),
    grouped by what it is: the driver (this process), Ray's grading workers, Ray's own services."""
    if METER is None or METER.path is None:
        return {}
    out: dict[str, float] = {}
    for pid in (METER.path / "cgroup.procs").read_text().split():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        name = (b" ".join(cmd)).decode("utf-8", "replace")
        key = ("driver (this process)" if int(pid) == os.getpid() else
               "Ray grading workers (their grades included)" if name.startswith("ray::") else
               "gcs_server" if "gcs_server" in name else "raylet" if "raylet" in name else
               "Ray's Python agents (dashboard, runtime env, log monitor)" if "ray" in name else
               "pool workers and forkserver" if "python" in name else "tools in flight")
        out[key] = out.get(key, 0.0) + sum(int(x) for x in fields[11:15]) / CLK
    return out


def measured(backend: Backend) -> dict:
    """Wrap ``start`` and ``close``: the CPU when the backend is ready and just before it shuts down."""
    box: dict = {"cpu0": METER.read(), "procs0": by_process()}
    start, close = backend.start, backend.close

    def start_and_measure() -> list[dict]:
        rows = start()
        box["cpu_started"] = METER.read()
        return rows

    def close_and_measure() -> None:
        if "cpu1" not in box:
            box["cpu1"] = METER.read()
            box["procs1"] = by_process()
        close()

    backend.start = start_and_measure  # type: ignore[method-assign]
    backend.close = close_and_measure  # type: ignore[method-assign]
    return box


def serial_cost(jobs: list[GradeJob]) -> tuple[float, float, float]:
    """(CPU-s, wall-s, sum of the reports' cpu_s) of grading ``jobs`` one by one in this process."""
    c0, t0 = METER.read(), time.monotonic()
    reported = sum(run_job(j).get("cpu_s", 0.0) for j in jobs)
    return METER.read() - c0, time.monotonic() - t0, reported


def run_backend(name: str, backend: Backend, pred: Path, out: Path, hidden: int) -> dict:
    box = measured(backend)
    t0 = time.monotonic()
    s = run_batch(BatchRun(pred, out, hidden=hidden, progress=True, progress_tty=False), backend)
    wall = time.monotonic() - t0
    cpu = box["cpu1"] - box["cpu0"]
    if not METER.exact:  # the tree misses the sandboxed simulators: add the reports' figures
        cpu += s["cpu_s"]["total"]
    p0, p1 = box["procs0"], box.get("procs1", {})
    procs = {k: round(v - p0.get(k, 0.0), 1) for k, v in sorted(p1.items()) if v - p0.get(k, 0.0) >= 0.05}
    if procs:  # tool runs inside bubblewrap's PID namespace reach no process's counters, only the cgroup
        procs["tool runs in the sandbox (cgroup only)"] = round(cpu - sum(procs.values()), 1)
    return {"backend": name, "graded": s["graded"], "not_graded": s["not_graded"], "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "grade_cpu_s": round(s["cpu_s"]["total"], 1),
            "start_cpu_s": round(box.get("cpu_started", box["cpu0"]) - box["cpu0"], 1),
            "grades_per_core_hour": round(3600 * s["graded"] / cpu) if cpu else None,
            "by_process_cpu_s": procs, "summary": s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--hidden", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ray-cpus", type=int, default=2)
    ap.add_argument("--out", default="/tmp/bench-batch")
    ap.add_argument("--predictions", help="use this file instead of generating one")
    ap.add_argument("--skip", choices=["serial", "pool", "ray"], action="append", default=[])
    ap.add_argument("--sim", default="icarus", choices=["icarus", "verilator", "auto"],
                    help="simulator of every line (default icarus, the grader's default); the lines "
                         "are the Icarus registry's either way")
    args = ap.parse_args()
    global METER
    METER = CpuMeter()
    print("CPU measured " + ("exactly, from a cgroup" if METER.exact else
                             "from the process tree plus the reports' simulator CPU "
                             "(no cgroup: an estimate)"))
    try:
        return run(args)
    finally:
        METER.close()


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import make_predictions

    pred = Path(args.predictions) if args.predictions else out / "predictions.jsonl"
    if not args.predictions:
        pred.write_text("\n".join(make_predictions.make(args.n, 17, "icarus", True, 0)) + "\n")
    known = {t.id for t in list_tasks()}
    jobs, bad = read_predictions(pred, sim=args.sim, hidden=args.hidden, known_tasks=known)
    print(f"{len(jobs)} predictions ({len(bad)} bad lines), sim={args.sim}, hidden={args.hidden}, "
          f"on {os.cpu_count()} CPUs", flush=True)
    rows = []
    base_cpu = None
    if "serial" not in args.skip:
        base_cpu, base_wall, reported = serial_cost(jobs)
        if not METER.exact:
            base_cpu += reported
        rows.append({"backend": "one by one, in-process", "graded": len(jobs), "wall_s": round(base_wall, 1),
                     "cpu_s": round(base_cpu, 1), "grade_cpu_s": round(reported, 1), "start_cpu_s": 0.0,
                     "grades_per_core_hour": round(3600 * len(jobs) / base_cpu)})
        print(f"single-grade cost: {base_cpu:.1f} CPU-s for {len(jobs)} grades", flush=True)
    for name in ("pool", "ray"):
        if name in args.skip:
            continue
        folder = out / name
        for f in ("results.jsonl", "run.json"):
            (folder / f).unlink(missing_ok=True)
        backend = (LocalPool(args.workers) if name == "pool" else
                   RayBackend("local", init_kwargs={"num_cpus": args.ray_cpus,
                                                    "object_store_memory": 100 << 20}))
        rows.append(run_backend(f"{name} ({args.workers if name == 'pool' else args.ray_cpus} CPUs)",
                                backend, pred, folder, args.hidden))
        rc = make_predictions.check(pred, folder)
        rows[-1]["expected_verdicts"] = rc == 0
    print("\n| backend | grades | wall s | CPU s (all processes) | of it the grades' own | start-up | "
          "grades per core-hour | CPU vs the grades' own | CPU vs one by one |\n" + "|---" * 9 + "|")
    for r in rows:
        over = f"{r['cpu_s'] / base_cpu:.3f}x" if base_cpu else "-"
        own = f"{r['cpu_s'] / r['grade_cpu_s']:.3f}x" if r.get("grade_cpu_s") else "-"
        print(f"| {r['backend']} | {r['graded']} | {r['wall_s']} | {r['cpu_s']} | {r['grade_cpu_s']} "
              f"| {r['start_cpu_s']} | {r['grades_per_core_hour']} | {own} | {over} |")
    for r in rows:
        if r.get("by_process_cpu_s"):
            print(f"\n{r['backend']}, CPU-s by process: " + ", ".join(f"{k} {v}" for k, v in
                                                                    r["by_process_cpu_s"].items()))
    ok = all(r.get("expected_verdicts", True) for r in rows)
    if "pool" not in args.skip and "ray" not in args.skip:
        diffs = compare_results(out / "pool", out / "ray")
        print(f"\npool vs Ray results, timing fields aside: {'identical' if not diffs else diffs[:5]}")
        ok = ok and not diffs
    (out / "bench.json").write_text(json.dumps([{k: v for k, v in r.items() if k != "summary"}
                                                for r in rows], indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
