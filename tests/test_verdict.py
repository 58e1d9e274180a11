"""The verdict channel: only the nonce-bearing line with a zero exit status can pass."""

from __future__ import annotations

from cdc_env.sim.base import parse_verdict
from cdc_env.sim.proc import ProcResult

NONCE = 0x1234ABCD5678EF00
GOOD = f"CDCV {NONCE:016x} PASS checks=10 hash=00000000deadbeef t=100 msg=ok"


def proc(stdout: str, rc: int = 0, timed_out: bool = False, exceeded: bool = False) -> ProcResult:
    return ProcResult(rc, stdout, "", 0.01, 0.01, 1000, timed_out, exceeded)


def test_pass_needs_the_nonce_line():
    r = parse_verdict(1, proc(GOOD), NONCE)
    assert (r.status, r.checks, r.trace_hash, r.sim_time_ps) == ("pass", 10, "00000000deadbeef", 100)


def test_forged_line_with_another_nonce_is_not_a_pass():
    forged = GOOD.replace(f"{NONCE:016x}", "0" * 16)
    assert parse_verdict(1, proc(forged), NONCE).status == "fail"
    assert parse_verdict(1, proc("PASS\nALL TESTS PASSED\n"), NONCE).status == "fail"


def test_two_verdict_lines_fail():
    assert parse_verdict(1, proc(GOOD + "\n" + GOOD), NONCE).reason == "more than one verdict line"


def test_zero_checks_fail():
    r = parse_verdict(1, proc(GOOD.replace("checks=10", "checks=0")), NONCE)
    assert r.status == "fail"


def test_nonzero_exit_after_pass_fails():
    assert parse_verdict(1, proc(GOOD, rc=1), NONCE).status == "fail"


def test_crash_timeout_flood_setup():
    assert parse_verdict(1, proc("", rc=-9), NONCE).reason.startswith("simulator killed by SIGKILL")
    assert parse_verdict(1, proc(GOOD, timed_out=True), NONCE).status == "timeout"
    assert parse_verdict(1, proc(GOOD, exceeded=True), NONCE).status == "fail"
    assert parse_verdict(1, proc("CDCV-SETUP-ERROR missing plusarg"), NONCE).status == "tool_error"
    assert "without a verdict" in parse_verdict(1, proc("hello"), NONCE).reason


def test_fail_line_keeps_reason():
    line = GOOD.replace("PASS", "FAIL").replace("msg=ok", "msg=hang: request 3")
    r = parse_verdict(1, proc(line), NONCE)
    assert (r.status, r.reason) == ("fail", "hang: request 3")


# --- grade.verdict: the stages of a grade -> (verdict, failed stage, reason) ------------------

def _steps(*spec):
    """(name, status[, reason[, deferred]]) -> the grade's steps, in pipeline order."""
    from cdc_env.grade import Step
    from cdc_env.report import Stage

    return [Step(Stage(s[0], s[1], ""), *s[2:]) for s in spec]


def test_verdict_of_a_clean_run_is_pass():
    from cdc_env.grade import verdict

    assert verdict(_steps(("allowlist", "pass"), ("gate", "pass"), ("build", "pass"), ("visible", "pass"),
                          ("hidden", "pass"))) == ("pass", None, "")
    # a switched-off gate and a skipped hidden stage do not fail a grade
    assert verdict(_steps(("allowlist", "pass"), ("gate", "not_run"), ("build", "pass"), ("visible", "pass"),
                          ("hidden", "skipped"))) == ("pass", None, "")


def test_verdict_is_the_first_failing_stage():
    from cdc_env.grade import verdict

    assert verdict(_steps(("allowlist", "refused", "not a diff"), ("gate", "skipped"))) == (
        "refused", "allowlist", "not a diff")
    assert verdict(_steps(("allowlist", "pass"), ("gate", "refused", "raw crossing"),
                          ("build", "skipped"))) == ("refused", "gate", "raw crossing")
    assert verdict(_steps(("allowlist", "pass"), ("gate", "pass"),
                          ("build", "compile_error", "no build"))) == ("compile_error", "build", "no build")
    assert verdict(_steps(("allowlist", "pass"), ("gate", "pass"), ("build", "pass"),
                          ("visible", "timeout", "visible seed 3: hang"), ("hidden", "skipped"))) == (
        "timeout", "visible", "visible seed 3: hang")


def test_a_hidden_failure_is_overfit_but_a_tool_error_never_is():
    from cdc_env.grade import verdict

    base = (("allowlist", "pass"), ("gate", "pass"), ("build", "pass"), ("visible", "pass"))
    for status in ("fail", "timeout"):
        assert verdict(_steps(*base, ("hidden", status, "h"))) == ("overfit", "hidden", "h")
    assert verdict(_steps(*base, ("hidden", "tool_error", "t"))) == ("tool_error", "hidden", "t")
    assert verdict(_steps(("allowlist", "pass"), ("gate", "tool_error", "gate died"))) == (
        "tool_error", "gate", "gate died")


def test_a_deferred_gate_refusal_yields_to_a_later_failure_only():
    """A design the gate cannot parse goes on to the build: the compiler's verdict first, and if it
    builds, the gate's refusal all the same."""
    from cdc_env.grade import verdict

    parse = ("gate", "refused", "cannot parse", True)
    assert verdict(_steps(("allowlist", "pass"), parse, ("build", "compile_error", "no build"))) == (
        "compile_error", "build", "no build")
    assert verdict(_steps(("allowlist", "pass"), parse, ("build", "tool_error", "box"))) == (
        "tool_error", "build", "box")
    assert verdict(_steps(("allowlist", "pass"), parse, ("build", "pass"), ("visible", "skipped"))) == (
        "refused", "gate", "cannot parse")


# --- the grading threads' own CPU (sim.proc.cpu_meter) ----------------------------------------

def _spin(seconds: float) -> None:
    import time

    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_cpu_meter_counts_its_threads_and_not_the_others():
    import threading

    from cdc_env.sim.proc import carry_cpu, cpu_meter

    with cpu_meter() as meter:
        other = threading.Thread(target=_spin, args=(0.3,))  # another grade's thread: not carried
        other.start()
        other.join()
        mine = threading.Thread(target=carry_cpu(_spin), args=(0.2,))
        mine.start()
        mine.join()
        _spin(0.1)
        total = meter.total()
    assert 0.3 <= total < 0.6  # 0.2 carried + 0.1 own (+ a little), never the other 0.3
    assert carry_cpu(_spin) is _spin  # outside a meter nothing is wrapped
