"""``cdc-env eval`` (model runs against a Chat Completions endpoint) and ``cdc-env standin`` (the
local stand-in model). The work is in cdc_env/eval/ and standin.py; this module only parses options
and prints.

Exit status of ``eval``: 0 the run finished (whatever the model scored), 1 the endpoint cannot be
reached or refuses requests, the controls failed (nothing was run or written), or rollouts ended in
endpoint errors (not results: ``--resume`` runs them again), 2 bad input, 3 ``--workers``/``--ray``
gave no machine that can grade.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import add_backend_options, sim_choices


def cmd_eval(args: argparse.Namespace) -> int:
    from ..errors import CdcError
    from ..eval import (
        ControlsFailed,
        EndpointUnavailable,
        EvalSettings,
        NoGrader,
        ProgressBar,
        open_grading,
        run_eval,
        summary_markdown,
    )
    from .common import EXIT_NOT_PASS, EXIT_OK, EXIT_TOOL, EXIT_USAGE, parse_hidden

    tasks = [t for item in args.tasks or [] for t in item.split(",") if t]
    settings = EvalSettings(
        mode=args.mode, base_url=args.base_url, model=args.model, tasks=tasks, api_key_env=args.api_key_env,
        samples=args.samples, concurrency=args.concurrency, hidden=parse_hidden(args.hidden), sim=args.sim,
        max_steps=args.max_steps, max_sim_runs=args.max_sim_runs, temperature=args.temperature,
        max_tokens=args.max_tokens, timeout_s=args.timeout, retries=args.retries, stream=args.stream,
        rungs=[r for item in args.rung or ["full"] for r in item.split(",") if r])
    progress = None if args.json else ProgressBar(tty=True if args.progress else None)
    try:
        grading = open_grading(workers=args.workers, ray=args.ray, sim=args.sim, ship=not args.ray_no_ship)
    except NoGrader as exc:
        print(f"cdc-env: {exc}", file=sys.stderr)
        return EXIT_TOOL
    except CdcError as exc:  # both asked for, --workers 0, Ray not installed
        print(f"cdc-env: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in grading.problems:
        print(f"cdc-env: {line}", file=sys.stderr)
    try:
        with grading:
            summary = run_eval(settings, args.out, resume=args.resume, progress=progress,
                               grader=grading.grader, grades_on=grading.grades_on,
                               say=lambda line: print(f"cdc-env eval: {line}", file=sys.stderr, flush=True))
    except (ControlsFailed, EndpointUnavailable) as exc:
        print(f"cdc-env: {exc}", file=sys.stderr)
        return EXIT_NOT_PASS
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(summary_markdown(summary, f"{settings.mode} -- {settings.model}"))
        print(f"results: {Path(args.out) / 'results.jsonl'}")
    errors = summary["overall"]["endpoint_error"]
    if errors:
        print(f"cdc-env: {errors} rollouts ended in endpoint errors (not results); "
              "run again with --resume to retry them", file=sys.stderr)
        return EXIT_NOT_PASS
    return EXIT_OK


def cmd_standin(args: argparse.Namespace) -> int:
    from ..standin import StandinServer, load_scripts
    from .common import EXIT_OK

    if args.list:
        scripts = load_scripts()
        if args.json:
            print(json.dumps({n: s.get("description", "") for n, s in scripts.items()}, indent=2))
        else:
            for name, s in scripts.items():
                print(f"{name:22} {s.get('description', '')}")
        return EXIT_OK
    server = StandinServer(args.port, log=Path(args.log) if args.log else None)
    info = {"url": server.url, "models": list(server.scripts)}
    print(json.dumps(info) if args.json else
          f"stand-in model at {server.url} (models: {', '.join(server.scripts)}); Ctrl-C stops it",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("eval",
                       help="evaluate a model (one-shot or agentic) through a Chat Completions "
                       "endpoint")
    s.add_argument("--mode", required=True, choices=["oneshot", "agentic"])
    s.add_argument("--base-url", required=True, help="the endpoint, e.g. https://api.openai.com/v1")
    s.add_argument("--model", required=True)
    s.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="the environment variable holding the API key (default OPENAI_API_KEY; "
                        "a loopback endpoint may run without one)")
    s.add_argument("--tasks", nargs="+", metavar="TASK",
                   help="task ids, family names (handshake event fifo ...), no-bug controls "
                   "(handshake_control ..., or 'controls' for all); default: every public defect task")
    s.add_argument("--rung", nargs="+", metavar="RUNG",
                   help="information rungs, each a rollout per task and sample: full (the bug report; "
                   "default), symptom, minimal")
    s.add_argument("--samples", type=int, default=1, metavar="K",
                   help="rollouts per task (default 1; with --resume it may grow)")
    s.add_argument("--concurrency", type=int, default=1, metavar="C", help="rollouts at a time (default 1)")
    s.add_argument("--hidden", default="all", metavar="N|all", help="hidden seeds per grade (default all)")
    s.add_argument("--out", required=True, metavar="DIR", help="results folder")
    s.add_argument("--resume", action="store_true",
                   help="continue the run in --out, skipping finished rollouts")
    s.add_argument("--sim", default="icarus", choices=sim_choices("auto"),
                   help="simulator (default icarus); auto: the cheaper one per grade, the controls on each")
    add_backend_options(s, workers_default="in this process",
                        ray_note="; run_visible and the controls stay on this machine")
    s.add_argument("--max-steps", type=int, default=30, help="agentic: tool-call budget (default 30)")
    s.add_argument("--max-sim-runs", type=int, default=6, help="agentic: run_visible budget (default 6)")
    s.add_argument("--temperature", type=float, default=None)
    s.add_argument("--max-tokens", type=int, default=None)
    s.add_argument("--timeout", type=float, default=300.0, help="seconds per request (default 300)")
    s.add_argument("--retries", type=int, default=4, help="retries on 429/5xx/time-out (default 4)")
    s.add_argument("--stream", action="store_true",
                   help="use streamed chat completions (tool calls too), for proxies that only stream")
    s.add_argument("--progress", action="store_true",
                   help="draw the progress bar even when not on a terminal (default there: "
                        "one plain line per rollout)")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("standin", help="serve the stand-in model (scripted replies) on 127.0.0.1")
    s.add_argument("--port", type=int, default=0, help="port (default 0: any free port, printed)")
    s.add_argument("--log", metavar="FILE", help="append every request body to FILE (JSONL)")
    s.add_argument("--list", action="store_true", help="list the scripts (= model names) and exit")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_standin)
