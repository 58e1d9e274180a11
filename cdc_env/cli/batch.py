"""``cdc-env grade-batch`` (batch.py on a backend of backends.py) and ``cdc-env report`` (report_html.py).

Exit status of ``grade-batch``: 0 the run finished and graded at least one line (whatever the
verdicts), 2 bad input or usage (also: no line of the file is a prediction), 3 no backend could
grade (e.g. no Ray node passed its setup check, or every grade failed to run).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import add_backend_options, sim_choices


def cmd_grade_batch(args: argparse.Namespace) -> int:
    from ..backends import make_backend
    from ..batch import BatchRun, run_batch, summary_markdown
    from ..errors import CdcError
    from .common import EXIT_TOOL, EXIT_USAGE, parse_hidden

    if args.workers is not None and args.ray:
        print("cdc-env: choose --workers or --ray, not both", file=sys.stderr)
        return EXIT_USAGE
    if args.workers is not None and args.workers < 1:
        print("cdc-env: --workers must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    hidden = parse_hidden(args.hidden)

    def bad_line(b) -> None:
        if not args.quiet:
            who = f" (id {b.id!r})" if b.id is not None else ""
            print(f"cdc-env: {args.predictions}:{b.line}{who}: {b.reason}; skipped", file=sys.stderr)

    backend = make_backend(workers=args.workers, ray=args.ray, sim=args.sim, ship=not args.ray_no_ship,
                           quiet=args.quiet)
    show = not args.json and not args.quiet or args.progress
    run = BatchRun(Path(args.predictions), Path(args.out), sim=args.sim, hidden=hidden,
                   resume=args.resume, on_bad_line=bad_line, progress=show, run_id=args.run_id)
    try:
        summary = run_batch(run, backend)
    except CdcError as exc:
        msg = str(exc)
        print(f"cdc-env: {msg}", file=sys.stderr)
        return EXIT_TOOL if msg.startswith("no Ray node") else EXIT_USAGE
    for n in summary.get("nodes") or []:
        if n.get("ok"):
            continue
        problems = "; ".join(n.get("problems") or [])
        if summary["backend"]["backend"] == "ray":
            print(f"cdc-env: node {n.get('address')} cannot grade and was not used: {problems}",
                  file=sys.stderr)
        else:
            print(f"cdc-env: warning: this machine: {problems} (the reports say what that changed)",
                  file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(summary_markdown(summary))
        print(f"results: {Path(args.out) / 'results.jsonl'}")
    return nothing_graded(summary, args)


def nothing_graded(summary: dict, args: argparse.Namespace) -> int:
    """EXIT_OK when at least one line was graded; else one line and 3 (every grade failed to be
    made: tool_error) or 2 (no line could be read as a prediction)."""
    from .common import EXIT_OK, EXIT_TOOL, EXIT_USAGE

    if summary["graded"]:
        return EXIT_OK
    lines = summary.get("lines", 0)
    if summary["not_graded"]:
        print(f"cdc-env: graded 0 of {lines} lines: every grade failed to run (see "
              f"{Path(args.out) / 'results.jsonl'})", file=sys.stderr)
        return EXIT_TOOL
    print(f"cdc-env: graded 0 of {lines} lines: no line is a prediction (reasons in "
          f"{Path(args.out) / 'errors.jsonl'})", file=sys.stderr)
    return EXIT_USAGE


def cmd_report(args: argparse.Namespace) -> int:
    from ..report_html import write_report
    from .common import EXIT_OK

    path = write_report(Path(args.dir), Path(args.output) if args.output else None)
    if args.json:
        print(json.dumps({"html": str(path)}))
    else:
        print(f"wrote {path}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("grade-batch", help="grade a JSONL predictions file on a local pool or a Ray cluster")
    s.add_argument("predictions", help='JSONL: {"id", "task", "submission"} plus optional "sim", "hidden", '
                   '"meta"; or SWE-bench\'s {"instance_id", "model_patch", "model_name_or_path"}, '
                   "one a line or as a JSON list (preds.json)")
    s.add_argument("--out", required=True, metavar="DIR",
                   help="results folder (results.jsonl, errors.jsonl, summary.json/.md)")
    add_backend_options(s, workers_default="one per CPU")
    s.add_argument("--sim", default="icarus", choices=sim_choices("auto"),
                   help="simulator for lines that do not name one (default icarus)")
    s.add_argument("--hidden", default="all", metavar="N|all",
                   help="hidden seeds for lines that do not say (default all)")
    s.add_argument("--resume", action="store_true", help="keep the results in --out; grade only the rest")
    s.add_argument("--run_id", "--run-id", dest="run_id", metavar="ID",
                   help="a name for the run (SWE-bench's --run_id), kept in run.json and summary.json")
    s.add_argument("--progress", action="store_true", help="show progress even with --json")
    s.add_argument("--quiet", action="store_true", help="no progress, bad-line messages or Ray INFO")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=cmd_grade_batch)

    s = sub.add_parser("report", help="write a results page for a grade-batch or eval folder")
    s.add_argument("dir", help="a grade-batch --out or eval --out folder")
    s.add_argument("--html", action="store_true", help="write HTML (the only format; the default)")
    s.add_argument("-o", "--output", metavar="FILE", help="where to write it (default DIR/report.html)")
    s.add_argument("--json", action="store_true", help="print the written path as JSON")
    s.set_defaults(func=cmd_report)


