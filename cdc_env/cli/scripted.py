"""``cdc-env scripted``: replay the scripted agents (agents/scripted/) against the environment."""

from __future__ import annotations

import argparse
import json

from ..scripted import run_all
from ..task import list_tasks
from .common import EXIT_NOT_PASS, EXIT_OK, parse_hidden, sim_choices


def cmd_scripted(args: argparse.Namespace) -> int:
    hidden = parse_hidden(args.hidden)
    if args.json:
        runs = run_all(args.agents, args.task, hidden=hidden, sim=args.sim)
        print(json.dumps([r.row() for r in runs], indent=2))
    else:
        print(f"scripted agents on {args.sim}, {args.hidden} hidden seeds per submission\n")
        print("| agent | task | expected | got | tool calls | sim runs | result |")
        print("|---|---|---|---|---|---|---|")
        runs = []
        for t in args.task or [t.id for t in list_tasks()]:
            for r in run_all(args.agents, [t], hidden=hidden, sim=args.sim):
                runs.append(r)
                note = "" if r.outcome == "ok" else ": " + ("; ".join(r.problems) or r.note)[:300]
                print(f"| {r.agent} | {r.task} | {r.expected} | {r.got()} | {r.final.get('steps_used')} | "
                      f"{r.final.get('sim_runs_used')} | {r.outcome}{note} |", flush=True)
    return EXIT_NOT_PASS if any(r.outcome == "FAIL" for r in runs) else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scripted", help="replay the scripted agents against the environment; print a table")
    s.add_argument("agents", nargs="*", metavar="AGENT", help="agents to run (default: all)")
    s.add_argument("--task", action="append", help="task id (repeatable; default: every public task)")
    s.add_argument("--sim", default="icarus", choices=sim_choices())
    s.add_argument("--hidden", default="32", help="hidden seeds per submission, or 'all' (default 32)")
    s.add_argument("--json", action="store_true", help="print the rows as JSON")
    s.set_defaults(func=cmd_scripted)
