"""The verdict channel: only the nonce-bearing line with a zero exit status can pass."""

from __future__ import annotations

from cdc_env.proc import ProcResult
from cdc_env.simulators import parse_verdict

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
