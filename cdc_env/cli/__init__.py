"""The ``cdc-env`` command line. Every command has ``--json``; bad input gives one line on stderr
and exit status 2, never a traceback.

Exit status (cdc_env/errors.py): 0 success (a grade that passed), 1 a grade that did not pass or a
check that failed, 2 bad input or usage, 3 tool_error (the grader could not decide).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .._version import __version__
from ..errors import EXIT_USAGE, CdcError, clip_quoted

# Every command family has its module in this package: name -> (module, one-line help). Each
# module defines register(subparsers). Only the chosen command's module is imported, so
# `cdc-env grade` loads none of the server, eval or openai code (tests/test_cli.py checks this); the
# others appear in `cdc-env --help` from this table alone.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("cdc_env.cli.doctor", "check every prerequisite; print the install line for each missing"),
    "tasks": ("cdc_env.cli.tasks", "list the public tasks"),
    "show": ("cdc_env.cli.tasks", "show a task, the path of its editable file and its bug report"),
    "grade": ("cdc_env.cli.tasks", "grade a submission (full editable file or unified diff)"),
    "demo": ("cdc_env.cli.tasks", "grade a task's defect and its reference fix end to end"),
    "gate-tasks": ("cdc_env.cli.tasks", "check task variants against the variant gate (README, Results)"),
    "check": ("cdc_env.cli.check", "run the allowlist and the static gate on a submission (no simulation)"),
    "fixtures": ("cdc_env.cli.fixtures", "the reward-hack registry: replay, prove, log"),
    "controls": ("cdc_env.cli.fixtures", "the control fixtures evaluation runs before any model call"),
    "scripted": ("cdc_env.cli.scripted", "replay the scripted agents against the environment; print a table"),
    "parity": ("cdc_env.cli.sim", "compare Icarus, Verilator and batched Verilator seed by seed"),
    "cost": ("cdc_env.cli.sim", "measure the CPU cost of grading each task's reference fix"),
    "family": ("cdc_env.cli.families", "the task families: list, show and generate variants"),
    "fifo": ("cdc_env.cli.families", "the asynchronous FIFO family: list and generate variants"),
    "catalogue": ("cdc_env.cli.families", "the catalogues of gated training variants: list, mint, show"),
    "heldout": ("cdc_env.cli.families", "mint and verify held-out variants of every family"),
    "serve": ("cdc_env.cli.serve", "serve the named tasks over HTTP (episodes, tools, one-shot grades)"),
    "eval": ("cdc_env.cli.eval", "evaluate a model (one-shot or agentic) via a Chat Completions endpoint"),
    "standin": ("cdc_env.cli.eval", "serve the stand-in model (scripted replies) on 127.0.0.1"),
    "grade-batch": ("cdc_env.cli.batch", "grade a JSONL predictions file on a local pool or a Ray cluster"),
    "report": ("cdc_env.cli.batch", "write a results page for a grade-batch or eval folder"),
    "export": ("cdc_env.cli.export", "write the tasks in another framework's format (harbor)"),
}

# Commands that need an optional extra: name -> (extra, modules it provides).
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "serve": ("server", ("fastapi", "uvicorn", "pydantic")),
    "eval": ("eval", ("openai",)),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (what it quotes of the input cut)
        print(f"cdc-env: {clip_quoted(message)}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


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

    wanted = list(dict.fromkeys(m for name, (m, _) in LAZY_COMMANDS.items() if command in (name, "*")))
    for mod in wanted:
        module = importlib.import_module(mod)
        module.register(sub)
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
        print(f"cdc-env: {clip_quoted(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cdc-env: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
