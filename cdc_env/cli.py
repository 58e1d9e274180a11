"""The ``cdc-env`` command line. Every command has ``--json``; bad input gives one line on stderr
and exit status 2, never a traceback.

Exit status (cdc_env/errors.py): 0 success (a grade that passed), 1 a grade that did not pass or a
check that failed, 2 bad input or usage, 3 tool_error (the grader could not decide).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from . import __version__
from .errors import EXIT_NOT_PASS, EXIT_OK, EXIT_TOOL, EXIT_USAGE, CdcError

# Subcommands that live in other modules: name -> (module, one-line help). Each module defines
# register(subparsers) (older ones: add_commands). Only the chosen command's module is imported, so
# `cdc-env grade` loads none of the server, eval or openai code (tests/test_cli.py checks this); the
# others appear in `cdc-env --help` from this table alone.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("cdc_env.gate.cli", "run the allowlist and the static gate on a submission (no simulation)"),
    "fixtures": ("cdc_env.fixtures_cli", "the reward-hack registry: replay, prove, log"),
    "controls": ("cdc_env.fixtures_cli", "the control fixtures evaluation runs before any model call"),
    "scripted": ("cdc_env.scripted", "replay the scripted agents against the environment; print a table"),
    "parity": ("cdc_env.sim_cli", "compare Icarus, Verilator and batched Verilator seed by seed"),
    "cost": ("cdc_env.sim_cli", "measure the CPU cost of grading each task's reference fix"),
    "fifo": ("cdc_env.fifo.cli", "the asynchronous FIFO family: list and generate variants"),
    "heldout": ("cdc_env.fifo.cli", "mint and verify held-out FIFO variants (never committed)"),
    "serve": ("cdc_env.server_cli", "serve the named tasks over HTTP (episodes, tools, one-shot grades)"),
    "eval": ("cdc_env.eval_cli", "evaluate a model (one-shot or agentic) via a Chat Completions endpoint"),
    "standin": ("cdc_env.eval_cli", "serve the stand-in model (scripted replies) on 127.0.0.1"),
    "grade-batch": ("cdc_env.batch_cli", "grade a JSONL predictions file on a local pool or a Ray cluster"),
    "report": ("cdc_env.batch_cli", "write a results page for a grade-batch or eval folder"),
}

# Commands that need an optional extra: name -> (extra, modules it provides).
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "serve": ("server", ("fastapi", "uvicorn", "pydantic")),
    "eval": ("eval", ("openai",)),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        print(f"cdc-env: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def progress_printer(enabled: bool):
    if not enabled:
        return None
    last: dict[str, int] = {}

    def show(stage: str, done: int, total: int) -> None:
        if last.get(stage) == done:
            return
        last[stage] = done
        end = "\n" if done == total else ""
        print(f"\r  {stage}: {done}/{total} seeds", end=end, file=sys.stderr, flush=True)

    return show


def read_submission(path: str) -> bytes:
    p = Path(path)
    if path == "-":  # at most one byte over the limit: the allowlist then refuses it by size
        from .submission import MAX_BYTES  # noqa: PLC0415

        return sys.stdin.buffer.read(MAX_BYTES + 1)
    if not p.exists():
        raise CdcError(f"no such file: {path}")
    if not p.is_file():
        raise CdcError(f"not a regular file: {path}")
    size = p.stat().st_size
    if size > 16 << 20:
        raise CdcError(f"{path} is {size} bytes; a submission is at most 256 KiB")
    return p.read_bytes()


def parse_hidden(value: str, *, at_most: int | None = None, task_id: str | None = None) -> int | str:
    """``--hidden``: seeds.parse_hidden, its ValueError as a one-line CdcError (exit 2)."""
    from .seeds import parse_hidden as parse  # noqa: PLC0415

    try:
        return parse(value, at_most=at_most, task_id=task_id)
    except ValueError as exc:
        raise CdcError(f"--{exc}") from None


def cmd_tasks(args) -> int:
    from .task import list_tasks

    tasks = list_tasks()
    if args.json:
        print(json.dumps([{"id": t.id, "family": t.family, "title": t.title, "editable": t.editable}
                          for t in tasks], indent=2))
    else:
        for t in tasks:
            print(f"{t.id:24} {t.family:12} {t.title}")
    return EXIT_OK


def cmd_show(args) -> int:
    from .seeds import hidden_seeds
    from .task import load_task

    t = load_task(args.task)
    path = t.path(t.editable)
    info = {"id": t.id, "family": t.family, "title": t.title, "editable": t.editable,
            "editable_path": str(path), "top": t.top,
            "domains": {d.name: {"clock": d.clock, "reset": d.reset} for d in t.domains},
            "ratio": [t.seeds.ratio_min, t.seeds.ratio_max], "fast": t.seeds.fast,
            "visible_seeds": list(t.seeds.visible), "hidden_seeds": len(hidden_seeds(t)),
            "bug_report": t.bug_report_text}
    if args.file:
        info["file"] = t.defective_text
    if args.json:
        print(json.dumps(info, indent=2))
    elif args.file:  # the file alone, so that `cdc-env show TASK --file > fix.v` gives a starting point
        print(t.defective_text, end="")
    else:
        print(f"{t.id} ({t.family}): {t.title}\neditable file: {t.editable}   top: {t.top}")
        print(f"  at {path}  (cdc-env show {t.id} --file prints it)")
        print(f"clock ratio {t.seeds.ratio_min}:1 to {t.seeds.ratio_max}:1, fast side: {t.seeds.fast}")
        print(f"seeds: {len(t.seeds.visible)} visible, {info['hidden_seeds']} hidden\n")
        print(t.bug_report_text)
    return EXIT_OK


def verdict_exit(report: dict) -> int:
    if report["verdict"] == "pass":
        return EXIT_OK
    return EXIT_TOOL if report["verdict"] == "tool_error" else EXIT_NOT_PASS


def print_report(report: dict) -> None:
    print(f"task {report['task']}  simulator {report['simulator']['name']} {report['simulator']['version']}"
          f"  settle {'on' if report['settle'] else 'off'}"
          + ("" if report.get("sandbox", True) else "  SANDBOX OFF (unsafe opt-in)"))
    for s in report["stages"]:
        detail = s["detail"].splitlines()[0][:100] if s["detail"] else ""
        print(f"  {s['name']:10} {s['status']:14} {detail}")
    for f in report["findings"]:
        loc = f"{f.get('file') or ''}:{f.get('line') or ''}"
        print(f"  [{f['rule']}] {loc} {f['message']}")
    for stage, summary in report["seeds"].items():
        for fail in summary["failed"][:10]:
            where = f"{fail['status']}, ratio {fail.get('ratio')}"
            print(f"  {stage} seed {fail['seed']} ({where}): {fail['reason']}")
        if len(summary["failed"]) > 10:
            print(f"  ... {len(summary['failed']) - 10} more failing {stage} seeds")
    tail = f" -- {report['reason']}" if report["reason"] else ""
    print(f"verdict: {report['verdict']}  reward {report['reward']}  ({report['cpu_s']} CPU-s){tail}")


def cmd_grade(args) -> int:
    from .grade import grade
    from .parity import batch_policy
    from .task import load_task

    task = load_task(args.task)
    hidden = parse_hidden(args.hidden, at_most=task.seeds.hidden_count, task_id=task.id)  # as the server does
    data = read_submission(args.file)
    try:
        policy = batch_policy(args.batch_policy)
    except ValueError as exc:  # an unknown name in $CDC_ENV_BATCH_POLICY
        raise CdcError(str(exc)) from None
    report = grade(task, data, sim=args.sim, hidden=hidden, settle=not args.no_settle, batch_policy=policy,
                   progress=progress_printer(not args.json and sys.stderr.isatty() or args.progress))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return verdict_exit(report)


def cmd_gate_tasks(args) -> int:
    from .task import list_tasks, load_task
    from .taskgate import gate_task

    tasks = [load_task(t) for t in args.tasks] if args.tasks else list_tasks()
    if args.suggest_visible:
        from .taskgate import suggest_visible

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
    from .grade import grade
    from .task import load_task

    task = load_task(args.task)
    print(f"== {task.id}: {task.title}")
    print(f"== 1. the defective design as shipped ({task.editable}), late settling on")
    bad = grade(task, task.defective_text, hidden=args.hidden)
    print_report(bad)
    print(f"\n== 2. the reference fix, late settling on, {args.hidden} hidden seeds")
    good = grade(task, task.reference_text, hidden=args.hidden)
    print_report(good)
    ok = bad["verdict"] != "pass" and good["verdict"] == "pass"
    print("\ndemo:", "ok (the defect is caught, the fix passes)" if ok else "UNEXPECTED RESULT")
    return EXIT_OK if ok else EXIT_NOT_PASS


def missing_extra(command: str) -> str | None:
    """The one-line message for a command whose optional extra is not installed, else None."""
    import importlib.util

    extra, modules = EXTRAS.get(command, ("", ()))
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (f"cdc-env {command} needs the '{extra}' extra ({', '.join(missing)} not installed): "
            f"pip install 'cdc_env[{extra}]'")


def _command_of(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser. Subcommands of LAZY_COMMANDS are imported only for ``command`` (the one about to
    run); the others are listed by name and help. ``command="*"`` imports every one (for tests)."""
    p = _Parser(prog="cdc-env", description="Repair clock-domain-crossing bugs; grade the repairs.")
    p.add_argument("--version", action="version", version=f"cdc-env {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("tasks", help="list the public tasks")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_tasks)

    s = sub.add_parser("show", help="show a task, the path of its editable file and its bug report")
    s.add_argument("task")
    s.add_argument("--file", action="store_true", help="print the editable file's text (as shipped)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("grade", help="grade a submission (full editable file or unified diff)")
    s.add_argument("task")
    s.add_argument("file", help="the submission; - reads standard input")
    s.add_argument("--sim", default="icarus", choices=["icarus", "verilator", "auto"])
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

    s = sub.add_parser("gate-tasks", help="check task variants against the gate of SPEC section 2")
    s.add_argument("tasks", nargs="*")
    s.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    s.add_argument("--suggest-visible", action="store_true",
                   help="print 8 visible seeds (4 on which the defect fails) instead of gating")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_gate_tasks)

    wanted = list(dict.fromkeys(m for name, (m, _) in LAZY_COMMANDS.items() if command in (name, "*")))
    for mod in wanted:
        module = importlib.import_module(mod)
        (getattr(module, "register", None) or module.add_commands)(sub)
    for name, (_, helptext) in LAZY_COMMANDS.items():
        if name not in sub.choices:  # listed for --help; parsed for real only when chosen
            sub.add_parser(name, help=helptext, add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_of(argv)
    if command in LAZY_COMMANDS and (problem := missing_extra(command)):
        print(problem, file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser(command)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CdcError as exc:
        print(f"cdc-env: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cdc-env: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
