"""``cdc-env serve``: run the HTTP server (cdc_env.server) for the tasks named on the command line.

    cdc-env serve --tasks handshake event /path/to/minted/fifo_h1 --token-env CDC_TOKEN --port 8765

Only the named tasks are served (``--all-public`` names every public one and the no-bug controls); a
held-out task is served only when its folder is named. With ``--token-env VAR`` the token is read from the
environment variable VAR (never from the command line, where ``ps`` would show it) and every request
must carry it. Without a token the server binds to loopback only, unless
``--allow-remote-without-token`` says otherwise, and it says so when it starts. ``--port 0`` picks a
free port; the first line printed (JSON with ``--json``) gives the URL.

Not covered: daemonizing, TLS, logging to files (run it under a supervisor / behind a proxy).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from ..env import DEFAULT_HIDDEN
from ..errors import CdcError
from .common import sim_choices


def _positive(kind: type, name: str):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} takes a number, not '{text}'") from None
        if not math.isfinite(value) or value <= 0:  # nan compares false with everything
            raise argparse.ArgumentTypeError(f"{name} must be a positive finite number, not '{text}'")
        return value

    return parse


def cmd_serve(args: argparse.Namespace) -> int:
    from ..errors import EXIT_OK
    from ..server.app import create_app
    from ..server.config import ServerConfig, resolve_tasks
    from ..server.run import bind, is_loopback, uvicorn_server
    from ..task import control_ids, task_ids
    from .common import parse_hidden

    names = list(args.tasks or [])
    if args.all_public:
        names += [t for t in [*task_ids(), *control_ids()] if t not in names]
    if not names:
        raise CdcError("name the tasks to serve: --tasks ID_OR_FOLDER ... (or --all-public)")
    token = None
    if args.token_env:
        token = os.environ.get(args.token_env, "")
        if not token.strip():
            raise CdcError(f"--token-env {args.token_env}: that environment variable is unset or empty")
    if token is None and not is_loopback(args.host) and not args.allow_remote_without_token:
        raise CdcError(f"refusing to listen on {args.host} without a token: set one with --token-env VAR, "
                       "or pass --allow-remote-without-token")
    if not 0 <= args.port <= 65535:
        raise CdcError(f"--port must be 0..65535, not {args.port}")
    tasks = resolve_tasks(names)
    config = ServerConfig(tasks=tasks, token=token, workers=args.workers or 0, max_episodes=args.max_episodes,
                          idle_timeout=args.idle_timeout, max_body=args.max_body,
                          hidden=parse_hidden(args.hidden), sim=args.sim, header_timeout=args.header_timeout,
                          body_timeout=args.body_timeout, max_connections=args.max_connections)
    app = create_app(config)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    heldout = [t.id for t in tasks.values() if t.heldout]
    if token is not None:
        access = f"bearer token required (from ${args.token_env})"
    elif is_loopback(args.host):
        access = "no token: listening on loopback only; anyone with an account on this machine can use it"
    else:
        access = "no token and NOT loopback: anyone who can reach this address can use it"
    if args.json:
        info = {"url": url, "pid": os.getpid(), "tasks": list(tasks), "heldout": heldout,
                "workers": config.workers, "token": token is not None, "access": access}
        print(json.dumps(info), flush=True)
    else:
        shown = ", ".join(f"{t} (held-out)" if t in heldout else t for t in tasks)
        print(f"cdc-env serve: {url}  tasks: {shown}\n  {access}\n  simulation workers: {config.workers}, "
              f"at most {config.max_episodes} live episodes, idle timeout {config.idle_timeout:g} s, "
              f"bodies up to {config.max_body} bytes; OpenAPI document at {url}/openapi.json", flush=True)
    try:
        uvicorn_server(app).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the signal after its graceful shutdown
        pass
    finally:
        sock.close()
        print("cdc-env serve: stopped", file=sys.stderr, flush=True)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    from ..server.config import DEFAULT_MAX_BODY

    s = sub.add_parser("serve", help="serve the named tasks over HTTP (episodes, tools, one-shot grades)")
    s.add_argument("--tasks", nargs="+", metavar="TASK", help="public task ids or task folders (held-out)")
    s.add_argument("--all-public", action="store_true",
                   help="serve every public task and the no-bug controls")
    s.add_argument("--token-env", metavar="VAR", help="require the bearer token held in env variable VAR")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    s.add_argument("--allow-remote-without-token", action="store_true",
                   help="listen on a non-loopback address with no token (unsafe)")
    s.add_argument("--workers", type=_positive(int, "--workers"),
                   help="simulation processes (default: cores)")
    s.add_argument("--max-episodes", type=_positive(int, "--max-episodes"), default=100,
                   help="live episodes at once (default 100)")
    s.add_argument("--idle-timeout", type=_positive(float, "--idle-timeout"), default=600.0,
                   help="seconds without a request before an episode expires (default 600)")
    s.add_argument("--max-body", type=_positive(int, "--max-body"), default=DEFAULT_MAX_BODY,
                   help=f"largest request body in bytes (default {DEFAULT_MAX_BODY})")
    s.add_argument("--header-timeout", type=_positive(float, "--header-timeout"), default=10.0,
                   help="seconds a connection has to send a request's head (default 10)")
    s.add_argument("--body-timeout", type=_positive(float, "--body-timeout"), default=30.0,
                   help="seconds a connection has to send a request's body (default 30)")
    s.add_argument("--max-connections", type=_positive(int, "--max-connections"), default=4096,
                   help="open connections at once; beyond it the oldest idle one is closed (default 4096)")
    s.add_argument("--hidden", default=str(DEFAULT_HIDDEN), metavar="N|all",
                   help=f"default hidden seeds per submission (default {DEFAULT_HIDDEN}, as CdcRepairEnv)")
    s.add_argument("--sim", default="icarus", choices=sim_choices("auto"))
    s.add_argument("--json", action="store_true", help="print the start-up line as JSON")
    s.set_defaults(func=cmd_serve)
