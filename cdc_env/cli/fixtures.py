"""``cdc-env fixtures replay|prove|log`` and ``cdc-env controls`` (see fixtures.py)."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import EXIT_NOT_PASS, EXIT_OK, EXIT_TOOL
from ..fixtures import hack_log, load_fixtures, prove_one, replay_one, run_controls
from .common import sim_choices


def _sims(value: str) -> list[str]:
    return sim_choices() if value == "both" else [value]


def _print_rows(rows: list[dict], title: str) -> None:
    print(f"| fixture | sim | expected | got | finding | ok |  ({title})")
    print("|---|---|---|---|---|---|")
    for r in rows:
        rule = f" [{r['expect_rule']}]" if r.get("expect_rule") else ""
        exp = f"{r['expect']} @ {r['expect_stage']}{rule}"
        got = f"{r['got']} @ {r['got_stage']}"
        ok = {True: "yes", False: "NO", None: "undecided (tool_error)"}[r["ok"]]
        found = ",".join(r["rules"])[:40]
        print(f"| {r['fixture']} | {r['sim']} | {exp} | {got} | {found} | {ok} |", flush=True)


def _run(fn, jobs: list[tuple], workers: int, progress: bool) -> list[dict]:
    # Each grade already runs its seeds on every core; two fixtures at a time keeps the gate and
    # build phases overlapped with simulation.
    from tqdm import tqdm

    rows: list[dict] = []
    # A bar on a terminal only (disable=None): nothing in a log file.
    with ThreadPoolExecutor(max_workers=workers) as pool, \
            tqdm(total=len(jobs), desc="fixtures", unit="fixture", file=sys.stderr,
                 disable=None if progress else True) as bar:
        for row in pool.map(lambda a: fn(*a), jobs):
            rows.append(row)
            bar.update(1)
    return rows


def cmd_replay(args) -> int:
    fixtures = load_fixtures(args.only or None)
    jobs = [(f, s) for s in _sims(args.sim) for f in fixtures if s in f.sims]
    rows = _run(replay_one, jobs, args.workers, not args.json)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_rows(rows, "replay")
        bad = [r for r in rows if r["ok"] is False]
        und = [r for r in rows if r["ok"] is None]
        print(f"{len(rows) - len(bad) - len(und)} passed, {len(bad)} failed"
              + (f", {len(und)} undecided" if und else ""))
    if any(r["ok"] is False for r in rows):
        return EXIT_NOT_PASS
    return EXIT_TOOL if any(r["ok"] is None for r in rows) else EXIT_OK


def cmd_prove(args) -> int:
    fixtures = [f for f in load_fixtures(args.only or None) if f.kind == "hack"]
    jobs = [(f, s) for s in _sims(args.sim) for f in fixtures if s in f.sims]
    rows = _run(prove_one, jobs, args.workers, not args.json)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_rows(rows, "with the fixture's switch on, it must NOT be caught at its stage")
    if any(r["ok"] is False for r in rows):
        return EXIT_NOT_PASS
    return EXIT_TOOL if any(r["ok"] is None for r in rows) else EXIT_OK


def cmd_log(args) -> int:
    text = hack_log(load_fixtures())
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    return EXIT_OK


def cmd_controls(args) -> int:
    ok, rows, message = run_controls(args.sim)
    if args.json:
        print(json.dumps({"ok": ok, "message": message, "rows": rows}, indent=2))
    else:
        if rows:
            _print_rows(rows, "controls")
        print(("controls ok: " if ok else "CONTROLS FAILED: ") + message)
    return EXIT_OK if ok else EXIT_NOT_PASS


def register(sub) -> None:
    p = sub.add_parser("fixtures", help="the reward-hack registry: replay, prove, log")
    fsub = p.add_subparsers(dest="fixtures_command", required=True, parser_class=type(p))
    for name, fn, helptext in (("replay", cmd_replay, "grade every fixture; exit 1 on any deviation"),
                               ("prove", cmd_prove, "replay each hack with its stage/rule switched off")):
        s = fsub.add_parser(name, help=helptext)
        s.add_argument("--sim", default="icarus", choices=sim_choices("both"))
        s.add_argument("--only", nargs="*", help="fixture names")
        s.add_argument("--workers", type=int, default=2)
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=fn)
    s = fsub.add_parser("log", help="write the hack log (docs/hack-log.md) from the registry")
    s.add_argument("--out", help="file to write (default: standard output)")
    s.set_defaults(func=cmd_log)
    p = sub.add_parser("controls", help="the control fixtures evaluation runs before any model call")
    p.add_argument("--sim", default="icarus", choices=sim_choices())
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_controls)
