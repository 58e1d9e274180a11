"""``cdc-env export harbor OUT [TASKS]``: the tasks in another framework's task format (harbor.py)."""

from __future__ import annotations

import argparse
import json


def cmd_export_harbor(args: argparse.Namespace) -> int:
    from ..harbor import export_harbor
    from .common import EXIT_OK, parse_hidden

    folders = export_harbor(args.out, args.tasks, rung=args.rung, hidden=parse_hidden(args.hidden))
    if args.json:
        print(json.dumps({"tasks": [str(f) for f in folders]}))
    else:
        for f in folders:
            print(f"wrote {f}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("export", help="write the tasks in another framework's task format")
    kinds = s.add_subparsers(dest="format", required=True)
    h = kinds.add_parser("harbor", help="each task as a Harbor task folder (task.toml, instruction.md, "
                         "environment/Dockerfile, tests/test.sh)")
    h.add_argument("out", help="the folder to write the task folders into")
    h.add_argument("tasks", nargs="*", metavar="TASK",
                   help="task ids or controls (default: every public task)")
    h.add_argument("--rung", default="full", choices=["full", "symptom", "minimal"],
                   help="the information rung of instruction.md (default full)")
    h.add_argument("--hidden", default="all", metavar="N|all",
                   help="hidden seeds test.sh grades on (default all, as grade-batch and eval)")
    h.add_argument("--json", action="store_true", help="print the written folders as JSON")
    h.set_defaults(func=cmd_export_harbor)
