"""CPU cost of a cdc-env command up to its first simulator launch (interpreter start included).

    python3 bench/bench_startup.py grade handshake tasks/handshake/reference/hs_top.v --hidden 8

Runs the CLI in this process with ``subprocess.Popen`` hooked: at the first launch of iverilog,
vvp or verilator (directly or under bubblewrap) it prints ``os.times()`` (user + system of this
process and its children so far) and exits without simulating. A benchmark, never a test.
"""

import os
import subprocess
import sys

_orig = subprocess.Popen.__init__
_seen: list[str] = []


def _hook(self, args, *a, **k):
    argv = [args] if isinstance(args, str) else list(args)
    _seen.append(os.path.basename(str(argv[0])))
    if any(s in " ".join(map(str, argv)) for s in ("iverilog", "verilator", "vvp")):
        t = os.times()
        print(f"{t.user + t.system + t.children_user + t.children_system:.3f} CPU-s before launching "
              f"{_seen[-1]} (earlier launches: {_seen[:-1]})", file=sys.stderr)
        os._exit(0)
    return _orig(self, args, *a, **k)


subprocess.Popen.__init__ = _hook
sys.argv = ["cdc-env", *sys.argv[1:]]
from cdc_env.cli import main  # noqa: E402

raise SystemExit(main())
