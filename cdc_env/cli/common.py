"""What the command modules share: submissions from files, ``--hidden``, progress, printing a report.

Exit codes live in cdc_env/errors.py (re-exported here for the command modules).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import EXIT_NOT_PASS, EXIT_OK, EXIT_TOOL, EXIT_USAGE, CdcError

__all__ = ["EXIT_NOT_PASS", "EXIT_OK", "EXIT_TOOL", "EXIT_USAGE", "add_backend_options", "parse_hidden",
           "print_report", "progress_printer", "read_submission", "verdict_exit"]


def progress_printer(enabled: bool):
    """Seeds done per stage on stderr: a counter rewritten in place on a terminal; elsewhere (a log
    file) one line when a stage ends, no carriage returns."""
    if not enabled:
        return None
    last: dict[str, int] = {}
    tty = sys.stderr.isatty()

    def show(stage: str, done: int, total: int) -> None:
        if last.get(stage) == done or (not tty and done != total):
            return
        last[stage] = done
        end = "\n" if done == total else ""
        lead = "\r" if tty else ""
        print(f"{lead}  {stage}: {done}/{total} seeds", end=end, file=sys.stderr, flush=True)

    return show


def read_submission(path: str) -> bytes:
    p = Path(path)
    if path == "-":  # at most one byte over the limit: the allowlist then refuses it by size
        from ..submission import MAX_BYTES  # noqa: PLC0415

        return sys.stdin.buffer.read(MAX_BYTES + 1)
    if not p.exists():
        raise CdcError(f"no such file: {path}")
    if not p.is_file():
        raise CdcError(f"not a regular file: {path}")
    size = p.stat().st_size
    if size > 16 << 20:
        raise CdcError(f"{path} is {size} bytes; a submission is at most 256 KiB")
    return p.read_bytes()


def sim_choices(*extra: str) -> list[str]:
    """``--sim`` choices: every registered simulator backend (cdc_env.sim), then ``extra``
    ("auto": the cheaper one per grade; "both": every backend in turn)."""
    from ..sim import names  # noqa: PLC0415

    return [*names(), *extra]


def parse_hidden(value: str, *, at_most: int | None = None, task_id: str | None = None) -> int | str:
    """``--hidden``: seeds.parse_hidden, its ValueError as a one-line CdcError (exit 2)."""
    from ..sim.seeds import parse_hidden as parse  # noqa: PLC0415

    try:
        return parse(value, at_most=at_most, task_id=task_id)
    except ValueError as exc:
        raise CdcError(f"--{exc}") from None


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


def add_backend_options(s, *, workers_default: str, ray_note: str = "") -> None:
    """``--workers``, ``--ray``, ``--ray-no-ship``: where grades run (cdc_env/backends.py), for
    every command that grades many submissions (grade-batch, eval)."""
    s.add_argument("--workers", type=int, default=None, metavar="N",
                   help=f"grade on a local pool of N worker processes (default: {workers_default})")
    s.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="grade on a Ray cluster: its address, 'auto' (the cluster this machine belongs to) "
                        f"or 'local' (start one here); needs cdc_env[ray]{ray_note}")
    s.add_argument("--ray-no-ship", action="store_true",
                   help="use the cdc_env installed on the Ray nodes instead of shipping this one")
