"""``cdc-env doctor``: check every system prerequisite at once (doctor.py) and print the install
line for each one missing. Exit 0 when everything required is there, 1 when not."""

from __future__ import annotations

import argparse
import json

from .common import EXIT_NOT_PASS, EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..doctor import apt_line, as_json, run_checks

    checks = run_checks()
    out = as_json(checks)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for c in checks:
            mark = "ok     " if c.ok else ("MISSING" if c.required else "warning")
            print(f"{mark}  {c.name:16} {c.detail}")
            if not c.ok and c.fix:
                print(f"{'':9}{'':16} fix: {c.fix}")
        line = apt_line(checks)
        if line:
            print(f"\nall missing system packages at once: {line}")
        print("\n" + ("ready: every required prerequisite is installed" if out["ok"] else
                      "NOT READY: a required prerequisite is missing (above)"))
    return EXIT_OK if out["ok"] else EXIT_NOT_PASS


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("doctor", help="check every prerequisite; print the install line for each missing")
    s.add_argument("--json", action="store_true", help="print the checks as JSON")
    s.set_defaults(func=cmd_doctor)
