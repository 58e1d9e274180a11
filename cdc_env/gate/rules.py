"""The gate's rules: stable IDs, one line of what each catches, and the finding record.

Every refusal the gate makes names one of these IDs; docs/gate.md describes each rule, its
near-miss (what it deliberately lets through) and what it cannot see. Findings are plain dicts
(``rule``, ``severity``, ``file``, ``line``, ``message``) so that the grade report can embed them
as they are. This module does not decide anything; the checks live in policy.py, synth.py and cdc.py.
"""

from __future__ import annotations

RULES: dict[str, str] = {
    # Input and front end
    "GATE-INPUT": "a design file is too large, not text, or nested too deeply to analyse",
    "GATE-PARSE": "the design does not parse or elaborate (slang's diagnostics; a compile error)",
    "GATE-SYNTH": "synthesis (Yosys) refused the design or crashed on it",
    "GATE-LIMIT": "the design exceeds the gate's work bounds or memory budget",
    "GATE-INTERNAL": "the gate's own code failed on the design (a bug of the grader, recorded for its "
                     "maintainers; never a pass)",
    # Policy, on the preprocessed text (what synthesis would drop silently)
    "POL-SYSCALL": "a system task or function that is not on the allowlist of pure ones",
    "POL-INCLUDE": "an `include directive",
    "POL-DIRECTIVE": "a tool directive that is not Verilog (`verilator_config, `systemc_*, unknown "
                     "directives) or `__FILE__/`__LINE__",
    "POL-DPI": "a DPI import or export",
    "POL-BIND": "a bind directive",
    "POL-FORCE": "force/release or procedural assign/deassign",
    "POL-DEFPARAM": "a defparam",
    "POL-UDP": "a user-defined primitive",
    "POL-SPECIFY": "a specify block or specparam",
    "POL-DELAY": "a delay (#), including intra-assignment delays and net or gate delays",
    "POL-INITIAL": "an initial or final block",
    "POL-HIERREF": "a hierarchical reference (into the testbench, a primitive or another instance)",
    "POL-MODNAME": "a module (or other design unit) whose name is already taken",
    "POL-CONSTRUCT": "a construct outside the design subset (classes, interfaces, programs, "
                     "fork/join, waits, events, assertions...) or a formal cell in the netlist",
    # Clock-domain structure, queries on the synthesized netlist (cdc.py)
    "CDC-CLOCK": "a flop clocked by something that is not a task clock, or a clock used as data",
    "CDC-RAW": "a signal crosses clock domains without a synchronizer primitive",
    "CDC-SRCLOGIC": "a synchronizer's input is not a register of the source domain",
    "CDC-REWIRE": "a synchronizer clock/reset rewired (wrong clock or reset, or its output used "
                  "in a domain other than its clock's)",
    "CDC-HANDSYNC": "a hand-written synchronizer (a flop chain sampling a foreign signal)",
    "CDC-BYPASS": "a synchronized signal also crosses raw, or a synchronizer output reaches a third "
                  "domain",
    "CDC-MEM": "a memory written in one domain and read in another; cdc_ram in a task without "
               "storage, or its read data reaching anything but the data path",
    "CDC-QUAL": "a qualified word (cdc_hold_bus) reaching anything but the D of a destination register "
                "loaded under a synchronized qualifier",
    "CDC-SAME-DOMAIN": "a synchronizer whose input comes from its own destination domain",
    "CDC-REDUNDANT": "two or more synchronizers of the same source bits into the same domain",
    "CDC-RESET": "a flop's asynchronous reset, set or load driven by something other than a reset input "
                 "or a cdc_sync_reset output; a cdc_sync_reset whose rst_ni is not a reset input",
}

ERROR = "error"
WARNING = "warning"


def finding(rule: str, message: str, *, file: str | None = None, line: int | None = None,
            severity: str = ERROR) -> dict:
    """One finding. ``rule`` must be a key of RULES; ``message`` names the signal and the fix."""
    if rule not in RULES:
        raise ValueError(f"unknown gate rule {rule!r}")
    return {"rule": rule, "severity": severity, "file": file, "line": line, "message": message}
