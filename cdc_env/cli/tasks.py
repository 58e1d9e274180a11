"""``cdc-env tasks | show | grade | demo | gate-tasks``: the task commands and the grade itself."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import CdcError
from ..rungs import RUNGS
from .common import (
    EXIT_NOT_PASS,
    EXIT_OK,
    parse_hidden,
    print_report,
    progress_printer,
    read_submission,
    sim_choices,
    verdict_exit,
)


def cmd_tasks(args) -> int:
    from ..families import get, mint
    from ..task import list_controls, list_tasks

    tasks = list_tasks() + list_controls()
    cats = [c for c in mint.summary() if c["entries"]]
    if args.json:
        rows = [{"id": t.id, "family": t.family, "title": t.title, "editable": t.editable,
                 "control": t.control, **({"base": t.base} if t.control else {})} for t in tasks]
        # A catalogue: its entries are served as <family>@<index> (the row's id is that pattern).
        rows += [{"id": f"{c['family']}@*", "family": c["family"], "title": get(c["family"]).title,
                  "editable": None, "control": False, "catalogue": True, "entries": c["entries"],
                  "stale": c["stale"], "rejected": c["rejected"], "file": c["file"]} for c in cats]
        print(json.dumps(rows, indent=2))
    else:
        for t in tasks:
            print(f"{t.id:24} {t.family:12} {'[control] ' if t.control else ''}{t.title}")
        for c in cats:
            stale = f", {c['stale']} stale (re-mint)" if c["stale"] else ""
            print(f"{c['family'] + '@*':24} {c['family']:12} [catalogue] {c['entries']} gated variants "
                  f"({c['family']}@<index>; {c['file']}{stale})")
    return EXIT_OK


def cmd_show(args) -> int:
    from ..rungs import report
    from ..sim.seeds import hidden_seeds
    from ..task import load_task

    t = load_task(args.task)
    bug_report = report(t, args.rung)
    path = t.path(t.editable)
    info = {"id": t.id, "family": t.family, "title": t.title, "editable": t.editable,
            "editable_path": str(path), "top": t.top,
            "domains": {d.name: {"clock": d.clock, "reset": d.reset} for d in t.domains},
            "ratio": [t.seeds.ratio_min, t.seeds.ratio_max], "fast": t.seeds.fast,
            "visible_seeds": list(t.seeds.visible), "hidden_seeds": len(hidden_seeds(t)),
            "control": t.control, "rung": args.rung, "bug_report": bug_report}
    if args.file:
        info["file"] = t.given_text
    if args.reference:
        info["reference"] = t.reference_text
    if args.json:
        print(json.dumps(info, indent=2))
    elif args.file or args.reference:  # the text alone: `cdc-env show TASK --file > fix.v` starts a fix
        print(t.reference_text if args.reference else t.given_text, end="")
    else:
        # Never the path itself: after a pip install it is inside site-packages, and editing it
        # would change the task. The user edits a copy.
        mark = "[no-bug control] " if t.control else ""
        print(f"{t.id} ({t.family}): {mark}{t.title}\neditable file: {t.editable}   top: {t.top}")
        print(f"  edit a copy: cdc-env show {t.id} --file > {t.editable.rsplit('/', 1)[-1]}")
        print(f"clock ratio {t.seeds.ratio_min}:1 to {t.seeds.ratio_max}:1, fast side: {t.seeds.fast}")
        print(f"seeds: {len(t.seeds.visible)} visible, {info['hidden_seeds']} hidden\n")
        print(bug_report)
    return EXIT_OK


def cmd_grade(args) -> int:
    from ..grade import GradeOptions, grade
    from ..sim.certs import batch_policy
    from ..task import load_task

    task = load_task(args.task)
    hidden = parse_hidden(args.hidden, at_most=task.seeds.hidden_count, task_id=task.id)  # as the server does
    data = read_submission(args.file)
    try:
        policy = batch_policy(args.batch_policy)
    except ValueError as exc:  # an unknown name in $CDC_ENV_BATCH_POLICY
        raise CdcError(str(exc)) from None
    options = GradeOptions(sim=args.sim, hidden=hidden, settle=not args.no_settle, batch_policy=policy)
    report = grade(task, data, options,
                   progress=progress_printer(not args.json and sys.stderr.isatty() or args.progress))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return verdict_exit(report)


def cmd_gate_tasks(args) -> int:
    from ..task import list_tasks, load_task
    from ..taskgate import gate_task

    names = list(args.tasks)
    if args.catalogue_sample:
        from ..families.catalogue import sample_ids

        names += sample_ids(args.catalogue_sample)
    tasks = [load_task(t) for t in names] if names else list_tasks()
    if args.suggest_visible:
        from ..taskgate import suggest_visible

        out = {t.id: suggest_visible(t, sim=args.sim) for t in tasks}
        print(json.dumps(out) if args.json else "\n".join(f"{k}: visible = {v}" for k, v in out.items()))
        return EXIT_OK
    rows = []
    show = progress_printer(not args.json)
    if not args.json:
        print("| task | clean fail /200 | reference fail /200 | defect visible fail /8 "
              "| defect hidden fail, settle on | settle off | band | ok |")
        print("|---|---|---|---|---|---|---|---|")
    for t in tasks:
        row = gate_task(t, sim=args.sim, progress=show)
        rows.append(row)
        if not args.json:
            print(f"| {row['task']} | {row['clean_fail']} | {row['reference_fail']} | "
                  f"{row['defect_visible_fail']} | {row['defect_hidden_fail_settle']} | "
                  f"{row['defect_hidden_fail_nosettle']} | {row['band'][0]}-{row['band'][1]} | "
                  f"{'yes' if row['ok'] else 'NO: ' + '; '.join(row['problems'])} |", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return EXIT_OK if all(r["ok"] for r in rows) else EXIT_NOT_PASS


def cmd_demo(args) -> int:
    from ..grade import GradeOptions, grade
    from ..task import load_task

    task = load_task(args.task)
    options = GradeOptions(hidden=args.hidden)
    print(f"== {task.id}: {task.title}")
    print(f"== 1. the defective design as shipped ({task.editable}), late settling on")
    bad = grade(task, task.defective_text, options)
    print_report(bad)
    print(f"\n== 2. the reference fix, late settling on, {args.hidden} hidden seeds")
    good = grade(task, task.reference_text, options)
    print_report(good)
    ok = bad["verdict"] != "pass" and good["verdict"] == "pass"
    print("\ndemo:", "ok (the defect is caught, the fix passes)" if ok else "UNEXPECTED RESULT")
    return EXIT_OK if ok else EXIT_NOT_PASS



def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("tasks", help="list the public tasks and the no-bug controls (one per family)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_tasks)

    s = sub.add_parser("show", help="show a task, the path of its editable file and its bug report")
    s.add_argument("task")
    s.add_argument("--file", action="store_true", help="print the editable file's text (as shipped)")
    s.add_argument("--reference", action="store_true", help="print the reference fix's text")
    s.add_argument("--rung", default="full", choices=RUNGS,
                   help="the information rung of the bug report shown (default full)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("grade", help="grade a submission (full editable file or unified diff)")
    s.add_argument("task")
    s.add_argument("file", help="the submission; - reads standard input")
    s.add_argument("--sim", default="icarus", choices=sim_choices("auto"))
    s.add_argument("--hidden", default="all", help="number of hidden seeds, or 'all' (default)")
    s.add_argument("--no-settle", action="store_true", help="demo: turn late settling off")
    s.add_argument("--batch-policy", choices=["self-checked", "certified"], default=None,
                   help="when Verilator may batch a hidden stage (default: $CDC_ENV_BATCH_POLICY, "
                   "else self-checked; see docs/parity.md)")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.add_argument("--progress", action="store_true", help="show progress even when not on a terminal")
    s.set_defaults(func=cmd_grade)

    s = sub.add_parser("demo", help="grade a task's defect and its reference fix end to end")
    s.add_argument("task", nargs="?", default="handshake")
    s.add_argument("--hidden", type=int, default=32)
    s.set_defaults(func=cmd_demo)

    s = sub.add_parser("gate-tasks", help="check task variants against the variant gate (README, Results)")
    s.add_argument("tasks", nargs="*")
    s.add_argument("--sim", default="icarus", choices=sim_choices())
    s.add_argument("--catalogue-sample", type=int, default=0, metavar="N",
                   help="also gate N entries of every catalogue (evenly spread over its indices)")
    s.add_argument("--suggest-visible", action="store_true",
                   help="print 8 visible seeds (4 on which the defect fails) instead of gating")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_gate_tasks)
