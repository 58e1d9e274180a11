"""``cdc-env check [--netlist] TASK FILE [--json]``: run the static gate on a submission.

FILE is a submission exactly as ``cdc-env grade`` takes it (the full editable file or a unified
diff; ``-`` reads standard input): the allowlist runs first, then the gate (synthesis, policy,
netlist rules). Nothing is simulated. ``--netlist`` also prints what was analysed and what a
grade would simulate: flops per domain, primitives, crossings, and the netlist itself.
Exit status: 0 pass, 1 refused, 3 tool_error, 2 bad input.
"""

from __future__ import annotations

import json
import sys


def cmd_check(args) -> int:
    from ..errors import EXIT_NOT_PASS, EXIT_OK, EXIT_TOOL
    from ..gate import run_gate
    from ..submission import allowlist
    from ..task import load_task
    from .common import read_submission

    task = load_task(args.task)
    allowed = allowlist(task, read_submission(args.file))
    if not allowed.ok:
        out = {"task": task.id, "stage": "allowlist", "status": "refused", "detail": allowed.reason,
               "findings": [], "cpu_s": 0.0}
    else:
        design = task.files(allowed.text)
        g = run_gate(task, design)
        out = {"task": task.id, "stage": "gate", "status": g.status, "detail": g.detail,
               "findings": g.findings, "cpu_s": round(g.cpu_s, 4)}
        if args.netlist:
            out["netlist"] = dict(g.netlist or {}, summary=g.summary)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        if args.netlist:
            _print_netlist(out.get("netlist") or {})
        for f in out["findings"]:
            loc = f"{f.get('file') or ''}:{f.get('line') or ''}"
            print(f"{loc}: {f['severity']} [{f['rule']}] {f['message']}")
        print(f"{out['stage']}: {out['status']}" + (f" -- {out['detail']}" if out["detail"] else ""),
              file=sys.stdout)
    return {"pass": EXIT_OK, "refused": EXIT_NOT_PASS}.get(out["status"], EXIT_TOOL)


def _print_netlist(n: dict) -> None:
    s = n.get("summary") or {}
    if not n.get("verilog"):
        print("netlist: none (the design did not synthesize)")
        return
    print(f"netlist sha256 {n['sha256']}: {n['cells']} cells, {n['flops']} flop bits")
    for dom, count in (s.get("flops_per_domain") or {}).items():
        print(f"  domain {dom}: {count} flop bits")
    for p in s.get("primitives", []):
        params = ", ".join(f"{k}={v}" for k, v in p.items() if k not in ("name", "type"))
        print(f"  primitive {p['name']}: {p['type']}" + (f" #({params})" if params else ""))
    for c in s.get("crossings", []):
        print(f"  crossing {c['from']} -> {c['to']} through {c['primitive']} ({c['type']}): "
              f"{', '.join(c['bits'])}")
    print("--- netlist (what a grade simulates) ---")
    print(n["verilog"].rstrip())
    print("---")


def register(sub) -> None:
    s = sub.add_parser("check", help="run the allowlist and the static gate on a submission (no simulation)")
    s.add_argument("task")
    s.add_argument("file", help="the submission (full editable file or unified diff); - reads standard input")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--netlist", action="store_true",
                   help="also print what was analysed and will be simulated (flops per domain, primitives, "
                        "crossings, the netlist)")
    s.set_defaults(func=cmd_check)
