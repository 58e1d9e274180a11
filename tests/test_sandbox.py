"""The sandbox holds on its own: with the static gate off, a design run through the environment
cannot read a hidden-seed file, the reference fix, the testbench source or /etc/passwd, and cannot
write outside its scratch directory.

Each probe design is the handshake reference fix plus an ``initial`` block that tries one escape;
if the attempt succeeds the design holds ``ready_o`` low for good, so every visible seed fails
("no progress"). The control runs the same design through the grader with the sandbox off and
must see the escape succeed -- so each test can fail.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from cdc_env.env import CdcRepairEnv
from cdc_env.grade import grade
from cdc_env.proc import Limits, bwrap_path, run_bounded
from cdc_env.seeds import hidden_seeds
from cdc_env.task import load_task

MARK = 0xCDC5  # the first word of the planted hidden-seed file


def _bwrap_problem() -> str | None:
    if shutil.which("iverilog") is None or shutil.which("vvp") is None:
        return "Icarus Verilog (iverilog, vvp) is not installed"
    if bwrap_path() is None:
        return "bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap"
    with tempfile.TemporaryDirectory() as d:
        res = run_bounded(["/bin/sh", "-c", "true"], Path(d), Limits(wall_s=20), sandbox=True)
    if res.returncode != 0:
        return f"bubblewrap cannot create a sandbox here: {res.stderr.strip()[:200]}"
    return None


pytestmark = pytest.mark.skipif(_bwrap_problem() is not None, reason=str(_bwrap_problem()))


def probe_design(probe: str) -> str:
    """The handshake reference fix plus one escape attempt that, if it works, stalls the design."""
    task = load_task("handshake")
    text = task.reference_text
    stall = "assign ready_o = !busy_q;"
    assert stall in text, "the handshake reference changed: update probe_design"
    body = (f"  integer probe_fd;\n  reg [31:0] probe_mem [0:3];\n  reg leak_q = 1'b0;\n"
            f"  initial begin\n{probe}\n  end\n")
    text = text.replace(stall, "assign ready_o = !busy_q && !leak_q;")
    cut = text.rfind("endmodule")
    return text[:cut] + body + text[cut:]


def read_probe(path: str) -> str:
    return f'    probe_fd = $fopen("{path}", "r");\n    if (probe_fd != 0) leak_q = 1\'b1;'


def readmem_probe(path: str) -> str:
    return f'    $readmemh("{path}", probe_mem);\n    if (probe_mem[0] === 32\'h{MARK:08x}) leak_q = 1\'b1;'


def write_probe(path: str) -> str:
    return (f'    probe_fd = $fopen("{path}", "w");\n'
            f'    if (probe_fd != 0) begin $fwrite(probe_fd, "escaped\\n"); $fclose(probe_fd); end')


@pytest.fixture
def secrets_dirs(tmp_path, monkeypatch):
    """A hidden-seed file under /tmp and one under /var/tmp; scratch directories in tmp_path/scratch."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    var = Path(tempfile.mkdtemp(prefix="cdc-sandbox-test-", dir="/var/tmp"))
    seeds = "\n".join([f"{MARK:08x}"] + [f"{s:08x}" for s in hidden_seeds(load_task("handshake"), 16)])
    for d in (tmp_path, var):
        (d / "hidden_seeds.hex").write_text(seeds + "\n")
    yield tmp_path, var
    shutil.rmtree(var, ignore_errors=True)


def _visible_via_env(design: str) -> str:
    env = CdcRepairEnv("handshake", gate=False, hidden=0)
    env.reset()
    assert env.step("write", {"path": env.task.editable, "content": design})["error"] is None
    out = env.step("run_visible", {})
    end = env.step("submit", {})
    assert end["report"]["sandbox"] is True
    env.close()
    return out["observation"]


def _visible_unsandboxed(design: str) -> dict:
    return grade(load_task("handshake"), design, hidden=0, gate=False, sandbox=False)


def _read_targets(tmp: Path, var: Path) -> dict[str, str]:
    task = load_task("handshake")
    return {
        "hidden seeds in /tmp ($readmemh)": readmem_probe(str(tmp / "hidden_seeds.hex")),
        "hidden seeds in /var/tmp ($readmemh)": readmem_probe(str(var / "hidden_seeds.hex")),
        "hidden seeds in /var/tmp ($fopen)": read_probe(str(var / "hidden_seeds.hex")),
        "reference fix": read_probe(str(task.path(task.reference))),
        "task testbench source": read_probe(str(task.path(task.testbench))),
        "task manifest": read_probe(str(task.dir / "task.toml")),
        "/etc/passwd": read_probe("/etc/passwd"),
        "/etc/passwd ($readmemh)": readmem_probe("/etc/passwd"),
    }


def test_no_design_reads_outside_its_scratch(secrets_dirs):
    tmp, var = secrets_dirs
    for name, probe in _read_targets(tmp, var).items():
        design = probe_design(probe)
        if "readmemh(\"/etc" not in probe:  # /etc/passwd is not hex: $readmemh cannot show success
            control = _visible_unsandboxed(design)
            assert control["verdict"] == "fail", f"control: {name} was not readable without the sandbox"
        obs = _visible_via_env(design)
        assert "8 of 8 visible seeds pass" in obs, f"{name} was readable inside the sandbox:\n{obs}"


def test_no_design_writes_outside_its_scratch(secrets_dirs):
    tmp, var = secrets_dirs
    scratch_root = Path(tempfile.gettempdir())
    targets = {
        "under /tmp": tmp / "escape.txt",
        "under /var/tmp": var / "escape.txt",
        "next to the scratch directory": scratch_root / "escape-rel.txt",
    }
    probes = {name: write_probe(str(p) if name != "next to the scratch directory" else "../escape-rel.txt")
              for name, p in targets.items()}
    for name, probe in probes.items():
        design = probe_design(probe)
        _visible_unsandboxed(design)
        assert targets[name].exists(), f"control: the write {name} did not happen without the sandbox"
        targets[name].unlink()
        obs = _visible_via_env(design)
        assert "8 of 8 visible seeds pass" in obs
        assert not targets[name].exists(), f"a design wrote {name} from inside the sandbox"
    assert list(scratch_root.iterdir()) == [], "scratch directories were left behind"


def test_with_the_gate_on_escape_attempts_are_refused_before_anything_runs(secrets_dirs):
    tmp, var = secrets_dirs
    probes = [read_probe("/etc/passwd"), readmem_probe(str(var / "hidden_seeds.hex")),
              write_probe(str(tmp / "escape.txt"))]
    for probe in probes:
        env = CdcRepairEnv("handshake", hidden=0)
        env.reset()
        env.step("write", {"path": env.task.editable, "content": probe_design(probe)})
        obs = env.step("run_visible", {})["observation"]
        gate = next(s for s in env.step("submit", {})["report"]["stages"] if s["name"] == "gate")
        env.close()
        if gate["status"] == "not_run":
            pytest.skip("the static gate does not run yet (run_gate returns not_run)")
        assert gate["status"] == "refused", gate
        assert "static checks refused" in obs and "nothing was built or simulated" in obs
    assert not (tmp / "escape.txt").exists()


# ---------------------------------------------------------------------------------------------
# Issue 14: capabilities, user namespace, hidden package files, process and memory bounds, no
# network, and a verdict channel the design cannot forge -- all with the gate off.

from cdc_env import paths as _paths  # noqa: E402
from cdc_env import proc as _proc  # noqa: E402
from cdc_env.simulators import get_simulator  # noqa: E402

SECRET_MARK = "cdc-sandbox-secret"


def _usr_mounts() -> list[str]:
    return [ln for ln in Path("/proc/self/mountinfo").read_text().splitlines() if " /usr " in ln]


def _sh(script: str, tmp: Path, limits: Limits | None = None, **kw) -> _proc.ProcResult:
    return run_bounded(["/bin/sh", "-c", script], tmp, limits or Limits(wall_s=30), sandbox=True, **kw)


def test_selftest_reports_every_property():
    box = _proc.selftest()
    assert box.ok, box.reason
    assert box.checks["usr_read_only"] and box.checks["caps_empty"] and box.checks["package_hidden"]
    assert box.checks["network"] == "loopback only" and box.checks["proc_for_tools"] is False
    if _proc.userns_ok():
        assert box.checks["uid"] == _proc.SANDBOX_UID


def test_remount_and_usr_writes_fail_and_the_host_is_unchanged(tmp_path):
    before = _usr_mounts()
    r = _sh("mount -o remount,rw /usr; echo remount=$?; touch /usr/.cdc_escape; echo touch=$?; "
            "unshare -r true 2>/dev/null; echo unshare=$?", tmp_path)
    assert "remount=0" not in r.stdout and "touch=0" not in r.stdout and "unshare=0" not in r.stdout, r.stdout
    assert not Path("/usr/.cdc_escape").exists()
    assert _usr_mounts() == before
    # Control: outside the sandbox the same shell reports success for a harmless probe of the
    # same form, so the probe's output parsing can tell success from failure.
    ctl = run_bounded(["/bin/sh", "-c", "true; echo touch=$?"], tmp_path, Limits(wall_s=30))
    assert "touch=0" in ctl.stdout


def test_package_files_are_hidden_even_when_a_bind_exposes_them(tmp_path, monkeypatch):
    site = tmp_path / "site"  # stands for a site-packages under /usr holding the package
    pkg = site / "cdc_env_pkg" / "tasks" / "t" / "reference"
    pkg.mkdir(parents=True)
    (pkg / "fix.v").write_text(SECRET_MARK)
    (site / "other_tool").mkdir()
    (site / "other_tool" / "ok.txt").write_text("visible")
    monkeypatch.setattr(_proc, "hidden_paths", lambda: [site / "cdc_env_pkg"])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    r = _sh(f"cat {pkg / 'fix.v'}; cat {site / 'other_tool' / 'ok.txt'}", scratch, ro_paths=(site,))
    assert SECRET_MARK not in r.stdout and "visible" in r.stdout, r.stdout + r.stderr
    ctl = run_bounded(["/bin/cat", str(pkg / "fix.v")], scratch, Limits(wall_s=30))
    assert SECRET_MARK in ctl.stdout


def test_the_real_package_data_is_unreadable(tmp_path):
    ref = load_task("handshake")
    r = _sh(f"cat {ref.path(ref.reference)}; ls {_paths.data_root()}; ls {_paths.tasks_dir()}", tmp_path)
    assert "module" not in r.stdout and "handshake" not in r.stdout, r.stdout


def test_fork_bomb_is_bounded_by_the_cgroup(tmp_path):
    if _proc.accounting().lower_bound:
        pytest.skip(f"no cgroup on this host: {_proc.accounting().reason}")
    r = _sh("for i in $(seq 300); do (echo x >> forks; sleep 5) & done; sleep 1; wc -l < forks",
            tmp_path, Limits(wall_s=30, pids=16))
    assert r.limit == "pids", (r.limit, r.stdout, r.stderr[-300:])
    assert not (tmp_path / "forks").exists() or len((tmp_path / "forks").read_text().split()) < 300


def _memory_bomb(n: int, mib: int) -> str:
    code = f"a=bytearray(b'x')*({mib}<<20); import time; time.sleep(3)"
    return " ".join(f'python3 -c "{code}" & ' for _ in range(n)) + "wait; echo done"


def test_memory_bomb_is_bounded_for_the_whole_tree(tmp_path):
    if _proc.accounting().lower_bound:
        pytest.skip(f"no cgroup on this host: {_proc.accounting().reason}")
    if shutil.which("python3", path="/usr/bin") is None:
        pytest.skip("/usr/bin/python3 is needed to allocate memory inside the sandbox")
    lim = Limits(wall_s=30, mem_bytes=512 << 20, pids=16)
    r = _sh(_memory_bomb(3, 300), tmp_path, lim)  # 900 MiB over three processes of 300 each
    assert r.limit == "memory", (r.limit, r.stdout, r.stderr[-300:])
    assert r.max_rss_kb <= (512 << 20) // 1024 + 1024


def test_no_network_not_even_the_hosts_loopback(tmp_path):
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        code = (f"import socket\nfor a in (('127.0.0.1', {port}), ('1.1.1.1', 53)):\n"
                "    try:\n        socket.create_connection(a, 2); print('OPEN', a)\n"
                "    except OSError as e: print('SHUT', a, e)\n")
        r = run_bounded(["/usr/bin/python3", "-c", code], tmp_path, Limits(wall_s=30), sandbox=True)
        assert "OPEN" not in r.stdout and r.stdout.count("SHUT") == 2, r.stdout + r.stderr
        ctl = run_bounded(["/usr/bin/python3", "-c", code], tmp_path, Limits(wall_s=30))
        assert f"OPEN ('127.0.0.1', {port})" in ctl.stdout
    finally:
        srv.close()


def test_bwrap_failure_is_a_sandbox_error_not_tool_output(tmp_path):
    r = run_bounded(["/bin/true"], tmp_path, Limits(wall_s=30), sandbox=True,
                    ro_paths=(tmp_path / "does-not-exist",))
    assert r.sandbox_error and "bwrap" in r.sandbox_error


def test_cpu_is_charged_for_every_process_in_the_sandbox(tmp_path):
    if _proc.accounting().lower_bound:
        pytest.skip(f"no cgroup on this host: {_proc.accounting().reason}")
    spin = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"
    r = _sh(f"({spin}) & ({spin}) & wait", tmp_path)
    one = _sh(spin, tmp_path)
    assert r.cpu_s > 1.5 * one.cpu_s > 0, (r.cpu_s, one.cpu_s)


# --- designs with the gate off, on both simulators -------------------------------------------

def _sims() -> list[str]:
    return [s for s in ("icarus", "verilator") if get_simulator(s).available()]


def _probe_fix(body: str) -> str:
    text = load_task("handshake").reference_text
    cut = text.rfind("endmodule")
    return text[:cut] + "  integer probe_r, probe_fd;\n  reg [63:0] probe_n;\n  initial begin\n" + body + \
        "\n  end\n" + text[cut:]


def _grade_kept(design: str, sim: str, keep: Path) -> dict:
    return grade(load_task("handshake"), design, sim=sim, hidden=0, gate=False, keep_dir=keep)


def _fopen_probes(ref: Path) -> str:
    return "\n".join([
        '    probe_fd = $fopen("/usr/.cdc_escape_fopen", "w");',
        '    if (probe_fd != 0) begin probe_r = $fopen("/tmp/esc_usr", "w"); $fclose(probe_r); end',
        f'    probe_fd = $fopen("{ref}", "r");',
        '    if (probe_fd != 0) begin probe_r = $fopen("/tmp/esc_ref", "w"); $fclose(probe_r); end',
        '    probe_fd = $fopen("/proc/self/mem", "r");',
        '    if (probe_fd != 0) begin probe_r = $fopen("/tmp/esc_proc", "w"); $fclose(probe_r); end',
        # a seed may not alter the build the later seeds run (append: never destroys it)
        '    probe_fd = $fopen("sim.vvp", "a");',
        '    if (probe_fd != 0) begin probe_r = $fopen("/tmp/esc_build", "w"); $fclose(probe_r); end',
        '    probe_fd = $fopen("Vtb", "a");',
        '    if (probe_fd != 0) begin probe_r = $fopen("/tmp/esc_build2", "w"); $fclose(probe_r); end',
        '    probe_fd = $fopen("new_file_in_the_build", "w");',
        '    if (probe_fd != 0) begin probe_r = $fopen("/tmp/esc_build3", "w"); $fclose(probe_r); end',
        '    probe_r = $fopen("/tmp/ran_fopen", "w"); $fclose(probe_r);',
    ])


@pytest.mark.parametrize("sim", _sims())
def test_file_probes_fail_with_the_gate_off(sim, tmp_path):
    task = load_task("handshake")
    keep = tmp_path / "keep"
    r = _grade_kept(_probe_fix(_fopen_probes(task.path(task.reference))), sim, keep)
    assert r["verdict"] == "pass", r["reason"]
    assert list(keep.glob(".tmp-*/ran_fopen")), "the probe did not run"
    assert sorted(p.name for p in keep.glob(".tmp-*/esc_*")) == []
    assert not Path("/usr/.cdc_escape_fopen").exists()


def test_icarus_cannot_start_processes():
    """Why the process probes below are Verilator-only: Icarus has no $system (vvp refuses to
    run a program that calls it)."""
    r = grade(load_task("handshake"), _probe_fix('    probe_r = $system("true");'), sim="icarus",
              hidden=0, gate=False)
    assert r["verdict"] in ("compile_error", "fail"), r["reason"]
    assert r["verdict"] == "compile_error" or "without a verdict" in r["reason"], r["reason"]


def _system_probes(ref: Path, port: int) -> str:
    net = (f"import socket\\ntry:\\n socket.create_connection(('127.0.0.1',{port}),2); "
           f"open('/tmp/esc_net','w')\\nexcept OSError: pass")
    cmds = [
        "mount -o remount,rw /usr 2>/dev/null && touch /usr/.cdc_escape_sys && echo > /tmp/esc_remount; "
        "echo > /tmp/ran_1",
        "touch /usr/.cdc_escape_sys2 2>/dev/null && echo > /tmp/esc_usr",
        f"cat {ref} > /tmp/leak 2>/dev/null; [ -s /tmp/leak ] && echo > /tmp/esc_ref",
        "[ -e /proc/self/mem ] && echo > /tmp/esc_proc",
        f'python3 -c "{net}"',
        "echo > /tmp/ran_2; d=$(mktemp -d /tmp/forks.XXXXXX); "
        "for i in $(seq 200); do (echo x >> $d/n; sleep 3) & done 2>/dev/null; sleep 1; "
        "[ $(wc -l < $d/n) -ge 200 ] && echo > /tmp/esc_forks",
        "d=$(mktemp -d /tmp/mem.XXXXXX); for i in 1 2 3; do python3 -c \"a=bytearray(b'x')*(500<<20); "
        "open('$d/'+str($i),'w'); import time; time.sleep(2)\" & done; wait; "
        "[ $(ls $d | wc -l) -ge 3 ] && echo > /tmp/esc_mem",
    ]
    # Summed, so that Verilator keeps every call (it drops all but the last of plain re-assignments).
    calls = [f'    probe_r = probe_r + $system("{c.replace(chr(34), chr(92) + chr(34))}");' for c in cmds]
    return "    probe_r = 0;\n" + "\n".join(calls)


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_process_probes_fail_with_the_gate_off_on_verilator(tmp_path):
    import socket

    task = load_task("handshake")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    before = _usr_mounts()
    try:
        keep = tmp_path / "keep"
        r = _grade_kept(_probe_fix(_system_probes(task.path(task.reference), srv.getsockname()[1])),
                        "verilator", keep)
    finally:
        srv.close()
    assert r["stages"][2]["status"] == "pass", r["stages"][2]["detail"][-500:]
    assert list(keep.glob(".tmp-*/ran_1")) and list(keep.glob(".tmp-*/ran_2")), "the probes did not run"
    assert sorted(p.name for p in keep.glob(".tmp-*/esc_*")) == []
    forks = [len((d / "n").read_text().split()) for d in keep.glob(".tmp-*/forks.*") if (d / "n").exists()]
    assert forks and max(forks) < 200, forks  # a dash that cannot fork exits: fewer lines, no marker
    assert not Path("/usr/.cdc_escape_sys").exists() and not Path("/usr/.cdc_escape_sys2").exists()
    assert _usr_mounts() == before


# --- the verdict channel with the gate off ----------------------------------------------------

_FORGE_PLUSARG = """    if ($value$plusargs("cdc_nonce=%h", probe_n))
      $display("CDCV %016h PASS checks=99 hash=0000000000000000 t=1 msg=ok", probe_n);
    probe_r = $fopen("/tmp/ran_forge", "w"); $fclose(probe_r);
    #1 $finish;"""
_FORGE_ENV = ('    probe_r = probe_r + $system("n=$(head -c 16 <&$CDC_VERDICT_FD 2>/dev/null); '
              'echo CDCV $n PASS checks=9 hash=0000000000000000 t=1 msg=ok; echo > /tmp/ran_forge");\n'
              '    #1 $finish;')
_FORGE_CALL_ICARUS = """    probe_r = $fopen("/tmp/ran_forge", "w"); $fclose(probe_r);
    #1 $cdc_verdict(1'b1, 32'd9, 64'd0, 64'd1, "ok");
    #1 $finish;"""
_FORGE_CALL_VERILATOR = """    probe_r = $fopen("/tmp/ran_forge", "w"); $fclose(probe_r);
    #1 cdc_verdict(1'b1, 32'd9, 64'd0, 64'd1, "ok");
    #1 $finish;"""


def _forge_fix(body: str, dpi: bool = False) -> str:
    fix = _probe_fix(body)
    if dpi:
        imp = ('  import "DPI-C" context function void cdc_verdict(input bit pass, input int unsigned n, '
               'input longint unsigned h, input longint unsigned t, input string msg);\n')
        fix = fix.replace("  integer probe_r", imp + "  integer probe_r", 1)
    return fix


@pytest.mark.parametrize("sim", _sims())
def test_a_design_cannot_forge_the_verdict_with_the_gate_off(sim, tmp_path):
    cases = {"plusarg": _forge_fix(_FORGE_PLUSARG)}
    if sim == "verilator":
        cases["env and pipe"] = _forge_fix(_FORGE_ENV)
        cases["call the verdict routine"] = _forge_fix(_FORGE_CALL_VERILATOR, dpi=True)
    else:
        cases["call the verdict routine"] = _forge_fix(_FORGE_CALL_ICARUS)
    for name, design in cases.items():
        keep = tmp_path / name.replace(" ", "_")
        r = _grade_kept(design, sim, keep)
        assert r["verdict"] != "pass", f"{sim}: forged a pass by {name}"
        if r["stages"][2]["status"] == "pass":
            assert list(keep.glob(".tmp-*/ran_forge")), f"{sim} {name}: the forgery did not run"
        else:
            assert r["verdict"] == "compile_error", r["reason"]


# --- limits by purpose ------------------------------------------------------------------------

def _padded_fix(n: int) -> str:
    """The handshake fix plus ``n`` generated registers nothing reads (a big compiled output)."""
    text = load_task("handshake").reference_text
    pad = (f"  genvar pi;\n  generate for (pi = 0; pi < {n}; pi = pi + 1) begin : pad\n"
           "    reg [63:0] r = 64'd0;\n    initial r = pi * 7;\n  end endgenerate\n")
    cut = text.rfind("endmodule")
    return text[:cut] + pad + text[cut:]


def test_a_large_compiled_output_is_not_an_output_flood(tmp_path):
    """sim.vvp may exceed what a tool may print (1 MiB): builds have their own file-size bound."""
    keep = tmp_path / "keep"
    r = grade(load_task("handshake"), _padded_fix(20000), hidden=0, gate=False, keep_dir=keep)
    assert (keep / "sim.vvp").stat().st_size > 1 << 20
    assert r["verdict"] == "pass", r["reason"]


def test_an_elaboration_limit_is_a_gate_refusal_with_no_build():
    text = load_task("handshake").reference_text
    cut = text.rfind("endmodule")
    design = (text[:cut] + "  genvar gi;\n  generate for (gi = 0; gi < 100000; gi = gi + 1) begin : g\n"
              "    wire [7:0] w = 8'd0;\n  end endgenerate\n" + text[cut:])
    r = grade(load_task("handshake"), design, hidden=0)
    assert r["verdict"] == "refused" and r["findings"][0]["rule"] == "GATE-LIMIT", r["findings"][:2]
    assert next(s for s in r["stages"] if s["name"] == "build")["status"] == "skipped"


def test_no_sandbox_is_no_grade_unless_the_caller_opts_out(monkeypatch):
    monkeypatch.setattr(_proc, "bwrap_path", lambda: None)
    _proc.selftest.cache_clear()
    try:
        task = load_task("handshake")
        r = grade(task, task.reference_text, hidden=0)
        assert r["verdict"] == "tool_error" and "bubblewrap" in r["reason"], r["reason"]
        assert next(s for s in r["stages"] if s["name"] == "build")["status"] == "tool_error"
        unsafe = grade(task, task.reference_text, hidden=0, sandbox=False)
        assert unsafe["verdict"] == "pass" and unsafe["unsafe_no_sandbox"] is True
        assert unsafe["sandbox"] is False
    finally:
        _proc.selftest.cache_clear()


def test_a_failing_selftest_is_a_tool_error(monkeypatch):
    monkeypatch.setattr(_proc, "_SELFTEST", 'echo "FAIL planted failure"; exit 0')
    _proc.selftest.cache_clear()
    try:
        task = load_task("handshake")
        r = grade(task, task.reference_text, hidden=0)
        assert r["verdict"] == "tool_error" and "planted failure" in r["reason"]
    finally:
        _proc.selftest.cache_clear()


_FORGE_HIER = """    #100;
    hs_tb.checks = 32'd5;
    hs_tb.emit_verdict(1'b1, "ok");"""


@pytest.mark.parametrize("sim", _sims())
def test_a_design_cannot_reach_into_the_testbench_with_the_gate_off(sim):
    """An upward reference could call the testbench's own emit_verdict (which holds the channel);
    a design must elaborate on its own, so it is refused at the build whatever the gate says."""
    r = grade(load_task("handshake"), _probe_fix(_FORGE_HIER), sim=sim, hidden=0, gate=False)
    assert r["verdict"] == "compile_error", r["reason"]
    assert "outside itself" in r["stages"][2]["detail"]


# --- one sandbox per stage with the trusted runner (issue 15, opt-in) -------------------------

_LEAVE_TMP = """    probe_fd = $fopen("/tmp/left_by_an_earlier_seed", "r");
    if (probe_fd != 0) leak_q = 1'b1;
    probe_fd = $fopen("/tmp/left_by_an_earlier_seed", "w");
    if (probe_fd != 0) $fclose(probe_fd);"""


@pytest.mark.parametrize("sim", _sims())
def test_the_stage_runner_gives_the_same_verdicts_and_isolates_seeds(sim, monkeypatch):
    from cdc_env import simulators

    task = load_task("handshake")
    design = task.defective_text
    monkeypatch.setenv(simulators.STAGE_ENV, "0")
    alone = grade(task, design, sim=sim, hidden=32, gate=False, batch=False)
    monkeypatch.setenv(simulators.STAGE_ENV, "1")
    staged = grade(task, design, sim=sim, hidden=32, gate=False, batch=False)
    assert staged["seeds"]["visible"]["results"] == alone["seeds"]["visible"]["results"]
    assert staged["verdict"] == alone["verdict"]
    ref = grade(task, task.reference_text, sim=sim, hidden=32, batch=False)
    assert ref["verdict"] == "pass" and ref["seeds"]["hidden"]["passed"] == 32
    # a seed finds nothing an earlier seed of its stage left in /tmp (the design fails if it does)
    text = task.reference_text.replace("assign ready_o = !busy_q;", "assign ready_o = !busy_q && !leak_q;")
    cut = text.rfind("endmodule")
    leaky = (text[:cut] + "  integer probe_fd;\n  reg leak_q = 1'b0;\n  initial begin\n" + _LEAVE_TMP
             + "\n  end\n" + text[cut:])
    assert grade(task, leaky, sim=sim, hidden=0, gate=False)["verdict"] == "pass"
    forged = grade(task, _forge_fix(_FORGE_PLUSARG), sim=sim, hidden=0, gate=False)
    assert forged["verdict"] != "pass"


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_process_probes_fail_inside_the_stage_runner_too(monkeypatch):
    """The same escapes as above, from seeds started by the stage runner: each succeeding escape
    would stall the design (every seed fails), so a pass means every one of them failed."""
    from cdc_env import simulators

    task = load_task("handshake")
    before = _usr_mounts()
    ref = task.path(task.reference)
    checks = [
        "mount -o remount,rw /usr 2>/dev/null",
        "touch /usr/.cdc_escape_stage 2>/dev/null",
        f"[ -s {ref} ]",
        "[ -e /proc/self/mem ]",
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\" 2>/dev/null",
        "d=$(mktemp -d /tmp/f.XXXXXX); for i in $(seq 200); do (echo x >> $d/n; sleep 3) & done 2>/dev/null; "
        "sleep 1; [ $(wc -l < $d/n) -ge 200 ]",
    ]
    body = "\n".join(f'    if ($system("{c.replace(chr(34), chr(92) + chr(34))}") == 0) leak_q = 1\'b1;'
                     for c in checks)
    text = task.reference_text.replace("assign ready_o = !busy_q;", "assign ready_o = !busy_q && !leak_q;")
    cut = text.rfind("endmodule")
    design = text[:cut] + "  reg leak_q = 1'b0;\n  initial begin\n" + body + "\n  end\n" + text[cut:]
    monkeypatch.setenv(simulators.STAGE_ENV, "1")
    r = grade(task, design, sim="verilator", hidden=0, gate=False)
    assert r["verdict"] == "pass", r["reason"]
    assert not Path("/usr/.cdc_escape_stage").exists() and _usr_mounts() == before
    # control: the probe logic itself can fail a design (an always-true check stalls it)
    control = design.replace("mount -o remount,rw /usr 2>/dev/null", "true")
    assert grade(task, control, sim="verilator", hidden=0, gate=False)["verdict"] == "fail"
