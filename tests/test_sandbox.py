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
from cdc_env.sim.proc import Limits, bwrap_path, run_bounded
from cdc_env.sim.seeds import hidden_seeds, plan_seed
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


class Mode:
    """How a grade's seeds run: "stage" (one sandbox per chunk of a stage, the trusted runner
    inside; the default) or "per-seed" (one sandbox per seed, ``CDC_ENV_STAGE_SANDBOX=0``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.runs: list[bool] = []  # stage mode: one entry per chunk, False = the runner failed
        self.forked: list[bool] = []  # per chunk: every seed forked from one simulator process

    def assert_forked(self, sim: str) -> None:
        """Stage mode on Icarus: every seed of every chunk was forked at time 0 from the chunk's
        one vvp process (the runner's zygote mode, issue 26), so the proof ran against it."""
        if self.name == "stage" and sim == "icarus":
            assert self.forked and all(self.forked), f"a chunk did not fork its seeds: {self.forked}"

    def assert_runner_held(self) -> None:
        """Stage mode: every chunk was run and reported by its runner (none fell back to one
        sandbox per seed, as it does when the runner dies or its report does not parse)."""
        if self.name == "stage":
            assert self.runs and all(self.runs), f"a stage runner failed: {self.runs}"


@pytest.fixture(params=["stage", "per-seed"])
def mode(request, monkeypatch) -> Mode:
    """Every gate-off proof that runs seeds runs under both modes."""
    from cdc_env.sim import stage as sim_stage

    m = Mode(request.param)
    monkeypatch.setenv(sim_stage.STAGE_ENV, "1" if m.name == "stage" else "0")
    real = sim_stage.run_stage_sandboxed

    def spy(*a, **k):
        res = real(*a, **k)
        m.runs.append(res is not None)
        m.forked.append(res is not None and all(r.forked for r in res))
        return res

    monkeypatch.setattr(sim_stage, "run_stage_sandboxed", spy)
    return m


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


def test_no_design_reads_outside_its_scratch(secrets_dirs, mode):
    tmp, var = secrets_dirs
    for name, probe in _read_targets(tmp, var).items():
        design = probe_design(probe)
        if "readmemh(\"/etc" not in probe:  # /etc/passwd is not hex: $readmemh cannot show success
            control = _visible_unsandboxed(design)
            assert control["verdict"] == "fail", f"control: {name} was not readable without the sandbox"
        obs = _visible_via_env(design)
        assert "8 of 8 visible seeds pass" in obs, f"{name} was readable inside the sandbox:\n{obs}"
    mode.assert_runner_held()


def test_no_design_writes_outside_its_scratch(secrets_dirs, mode):
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
    mode.assert_runner_held()


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
from cdc_env.sim import get_simulator  # noqa: E402
from cdc_env.sim import proc as _proc  # noqa: E402

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


def _stall_fix(body: str, decls: str = "") -> str:
    """The handshake fix plus an ``initial`` block ``body`` that sets ``leak_q`` when an escape
    works; ``leak_q`` holds ``ready_o`` low for good, so every seed that saw an escape fails."""
    text = load_task("handshake").reference_text
    stall = "assign ready_o = !busy_q;"
    assert stall in text, "the handshake reference changed: update _stall_fix"
    text = text.replace(stall, "assign ready_o = !busy_q && !leak_q;")
    cut = text.rfind("endmodule")
    return (text[:cut] + "  integer probe_r, probe_fd;\n  reg [63:0] probe_k;\n  reg leak_q = 1'b0;\n"
            + decls + "  initial begin\n" + body + "\n  end\n" + text[cut:])


def _fopen_leaks(targets: list[tuple[str, str]]) -> str:
    """Each $fopen that succeeds is an escape."""
    return "\n".join(f'    probe_fd = $fopen("{path}", "{how}");\n    if (probe_fd != 0) leak_q = 1\'b1;'
                     for path, how in targets)


def _sh_leaks(checks: list[str]) -> str:
    """Each shell command (Verilator's $system) that exits 0 is an escape."""
    return "\n".join(f'    if ($system("{c.replace(chr(34), chr(92) + chr(34))}") == 0) leak_q = 1\'b1;'
                      for c in checks)


def _sh_run(cmds: list[str]) -> str:
    """Shell commands whose status does not matter (summed: Verilator keeps every call)."""
    return "    probe_r = 0;\n" + "\n".join(
        f'    probe_r = probe_r + $system("{c.replace(chr(34), chr(92) + chr(34))}");' for c in cmds)


@pytest.mark.parametrize("sim", _sims())
def test_file_probes_fail_with_the_gate_off(sim, mode):
    task = load_task("handshake")
    targets = [("/usr/.cdc_escape_fopen", "w"), (str(task.path(task.reference)), "r"),
               ("/proc/self/mem", "r"),
               # a seed may not alter the build the later seeds run (append: never destroys it)
               ("sim.vvp", "a"), ("Vtb", "a"), ("new_file_in_the_build", "w")]
    r = grade(task, _stall_fix(_fopen_leaks(targets)), sim=sim, hidden=0, gate=False)
    assert r["verdict"] == "pass", r["reason"]
    assert not Path("/usr/.cdc_escape_fopen").exists()
    mode.assert_runner_held()
    # control: a write that is allowed (its /tmp) trips the same probe
    ctl = grade(task, _stall_fix(_fopen_leaks([*targets, ("/tmp/allowed", "w")])), sim=sim, hidden=0,
                gate=False)
    assert ctl["verdict"] == "fail", ctl["reason"]


def test_icarus_cannot_start_processes():
    """Why the process probes below are Verilator-only: Icarus has no $system (vvp refuses to
    run a program that calls it)."""
    r = grade(load_task("handshake"), _probe_fix('    probe_r = $system("true");'), sim="icarus",
              hidden=0, gate=False)
    assert r["verdict"] in ("compile_error", "fail"), r["reason"]
    assert r["verdict"] == "compile_error" or "without a verdict" in r["reason"], r["reason"]


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_process_probes_fail_with_the_gate_off_on_verilator(mode):
    """Escapes from a shell the design starts: each that succeeds stalls the design (every seed
    fails), so a pass means every one of them failed."""
    import socket

    task = load_task("handshake")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    before = _usr_mounts()
    ref = task.path(task.reference)
    net = (f"import socket,sys\\nfor a in (('127.0.0.1',{port}),('1.1.1.1',53)):\\n"
           " try: socket.create_connection(a,2); sys.exit(0)\\n except OSError: pass\\nsys.exit(1)")
    checks = [
        "mount -o remount,rw /usr 2>/dev/null",
        "touch /usr/.cdc_escape_sys 2>/dev/null",
        f"[ -s {ref} ]",
        "[ -e /proc/self/mem ]",
        f"python3 -c \"{net}\" 2>/dev/null",
        "d=$(mktemp -d /tmp/f.XXXXXX); for i in $(seq 200); do (echo x >> $d/n; sleep 3) & done 2>/dev/null; "
        "sleep 1; [ $(wc -l < $d/n) -ge 200 ]",
        "d=$(mktemp -d /tmp/mem.XXXXXX); for i in 1 2 3; do python3 -c \"a=bytearray(b'x')*(500<<20); "
        "open('$d/'+str($i),'w'); import time; time.sleep(2)\" 2>/dev/null & done; wait; "
        "[ $(ls $d | wc -l) -ge 3 ]",
    ]
    design = _stall_fix(_sh_leaks(checks))
    try:
        r = grade(task, design, sim="verilator", hidden=0, gate=False)
    finally:
        srv.close()
    assert r["verdict"] == "pass", r["reason"]
    assert not Path("/usr/.cdc_escape_sys").exists() and _usr_mounts() == before
    mode.assert_runner_held()
    # control: the probe logic itself can fail a design (an always-true check stalls it)
    control = design.replace("mount -o remount,rw /usr 2>/dev/null", "true")
    assert grade(task, control, sim="verilator", hidden=0, gate=False)["verdict"] == "fail"


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
def test_a_design_cannot_forge_the_verdict_with_the_gate_off(sim, tmp_path, mode):
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
        # built and run (the forgery ran: its seeds' own /tmp is gone with them), or refused
        assert r["stages"][2]["status"] == "pass" or r["verdict"] == "compile_error", r["reason"]
    mode.assert_runner_held()


# --- limits by purpose ------------------------------------------------------------------------

def _padded_fix(n: int) -> str:
    """The handshake fix plus ``n`` generated registers nothing reads (a big compiled output)."""
    text = load_task("handshake").reference_text
    pad = (f"  genvar pi;\n  generate for (pi = 0; pi < {n}; pi = pi + 1) begin : pad\n"
           "    reg [63:0] r = 64'd0;\n    initial r = pi * 7;\n  end endgenerate\n")
    cut = text.rfind("endmodule")
    return text[:cut] + pad + text[cut:]


def test_a_large_compiled_output_is_not_an_output_flood(tmp_path, mode):
    """sim.vvp may exceed what a tool may print (1 MiB): builds have their own file-size bound."""
    keep = tmp_path / "keep"
    r = grade(load_task("handshake"), _padded_fix(20000), hidden=0, gate=False, keep_dir=keep)
    assert (keep / "sim.vvp").stat().st_size > 1 << 20
    assert r["verdict"] == "pass", r["reason"]
    mode.assert_runner_held()


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
    from cdc_env.sim import stage as sim_stage

    task = load_task("handshake")
    design = task.defective_text
    monkeypatch.setenv(sim_stage.STAGE_ENV, "0")
    alone = grade(task, design, sim=sim, hidden=32, gate=False, batch=False)
    monkeypatch.setenv(sim_stage.STAGE_ENV, "1")
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


# --- what only matters when seeds share a sandbox (issue 15): each proof runs in both modes -----
# A seed learns which seed it is from its own plusargs (+stim_key), as a hostile design could.

def _when_seed(seed: int, body: str) -> str:
    key = plan_seed(load_task("handshake"), seed).stim_key
    return (f'    if ($value$plusargs("stim_key=%d", probe_k) && probe_k[31:0] == 32\'d{key}) begin\n'
            f'{body}\n    end')


# Files a seed can try to leave for the seeds after it: its /tmp, the build folder (its cwd and
# $HOME), and bubblewrap's own tmpfs root and /dev (writable unless remounted read-only).
_MARKERS = ["/tmp/cdc_mark", "cdc_mark", "/cdc_mark", "/dev/cdc_mark", "/dev/shm/cdc_mark"]
# State that outlives a process inside the sandbox's namespaces, and a process left behind:
# (check that it exists, create it), both shell commands run by the design through $system.
# keyctl(KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, ...) and add_key(..., KEY_SPEC_USER_KEYRING) via ctypes
_PY_KEY_FIND = ("import ctypes,sys; c=ctypes.CDLL(None); "
                "sys.exit(0 if c.syscall(250, 10, -4, b'user', b'cdc_mark', 0) >= 0 else 1)")
_PY_KEY_ADD = ("import ctypes,sys; c=ctypes.CDLL(None); "
               "sys.exit(0 if c.syscall(248, b'user', b'cdc_mark', b'x', 1, -4) >= 0 else 1)")
_PY_MQ = ("import ctypes,sys; c=ctypes.CDLL('librt.so.1'); "
          "sys.exit(0 if c.mq_open(b'/cdc_mark', {flags}, 0o600, None) >= 0 else 1)")
_STATE = {
    "SysV message queue": ("ipcs -q | grep -q 0x", "ipcmk -Q >/dev/null"),
    "SysV shared memory": ("ipcs -m | grep -q 0x", "ipcmk -M 4096 >/dev/null"),
    "SysV semaphore": ("ipcs -s | grep -q 0x", "ipcmk -S 1 >/dev/null"),
    "key in the user keyring": (f'python3 -c "{_PY_KEY_FIND}"', f'python3 -c "{_PY_KEY_ADD}"'),
    "POSIX message queue": ("python3 -c \"" + _PY_MQ.format(flags=0) + "\"",
                            "python3 -c \"" + _PY_MQ.format(flags="0o102") + "\""),
    # /tmp left in a shape a simple clean-up cannot walk (issue 27): unreadable or unwritable
    # directories, a tree deeper than a recursion limit, a path longer than PATH_MAX
    "directory of mode 000": ("[ -e /tmp/cdc_d000 ]", "mkdir -p /tmp/cdc_d000/in && : > /tmp/cdc_d000/in/f "
                                                      "&& chmod 000 /tmp/cdc_d000"),
    "directory of mode 500": ("[ -e /tmp/cdc_d500 ]",
                              "mkdir -p /tmp/cdc_d500/in && : > /tmp/cdc_d500/f && chmod 500 /tmp/cdc_d500"),
    "tree 70 levels deep": ("[ -e /tmp/cdc_deep ]",
                            "mkdir /tmp/cdc_deep && cd /tmp/cdc_deep && for i in $(seq 70); do "
                            "mkdir d && cd d; done && : > f"),
    "path over 4 KB": ("[ -e /tmp/cdc_long ]",
                       "mkdir /tmp/cdc_long && cd /tmp/cdc_long && for i in $(seq 24); do mkdir " + "y" * 200
                       + " && cd " + "y" * 200 + "; done && : > f"),
    "process left behind": (
        "sleep 0.3; [ -e /tmp/cdc_ghost ]",
        "(for i in $(seq 400); do : > /tmp/cdc_ghost; sleep 0.02; done) >/dev/null 2>&1 &"),
    "process left behind (setsid)": (
        "sleep 0.3; [ -e /tmp/cdc_ghost2 ]",
        "setsid sh -c 'for i in $(seq 400); do : > /tmp/cdc_ghost2; sleep 0.02; done' >/dev/null 2>&1 &"),
}


def _leave_state(sim: str, create_first: bool = False) -> str:
    """Each seed first looks for what an earlier seed left (found: ``leak_q``), then leaves it."""
    # ... and what a seed running at the same time leaves in its /tmp, were that folder inside the
    # build folder every seed can read (it was: <build>/.tmp-<tag>; only while both seeds run)
    beside = [f".tmp-stage{i}/cdc_mark" for i in range(4)] + [f".tmp-seed{i}/cdc_mark" for i in range(1, 9)]
    look = _fopen_leaks([(m, "r") for m in _MARKERS + beside])
    leave = "\n".join(f'    probe_fd = $fopen("{m}", "w");\n    if (probe_fd != 0) $fclose(probe_fd);'
                      for m in _MARKERS)
    if sim == "verilator":
        look += "\n" + _sh_leaks([c for c, _ in _STATE.values()])
        leave += "\n" + _sh_run([m for _, m in _STATE.values()])
    return _stall_fix(leave + "\n" + look if create_first else look + "\n" + leave)


@pytest.mark.parametrize("sim", _sims())
def test_a_seed_leaves_nothing_for_the_next_seed(sim, mode):
    """Every seed looks for files (in /tmp, the build folder, /, /dev, /dev/shm) and, on
    Verilator, SysV IPC objects, POSIX queues, user keys and still-running processes (plain and
    setsid) left by an earlier seed, and fails if it finds one; then leaves them all itself.
    With seeds sharing a sandbox this catches a runner that does not empty /tmp, kill and reap
    every process after each seed, or forbid IPC objects, queues and keys (its seccomp filter),
    and a sandbox whose root or /dev stays writable."""
    task = load_task("handshake")
    r = grade(task, _leave_state(sim), sim=sim, hidden=8, gate=False)
    assert r["verdict"] == "pass", r["reason"]
    mode.assert_runner_held()
    mode.assert_forked(sim)
    # control: a seed that leaves its /tmp marker before looking finds it (the probe can trip)
    ctl = grade(task, _leave_state(sim, create_first=True), sim=sim, hidden=0, gate=False)
    assert ctl["verdict"] == "fail", ctl["reason"]


# What one process would carry from a seed to the next if seeds shared a simulator process: the
# system tasks' own state ($random's seed), files, and the verdict module's plusarg slots. Icarus
# seeds of a stage sandbox are forked at time 0 from one vvp (issue 26); each must see exactly
# what a fresh vvp sees. FRESH_RANDOM: the first $random of a fresh Icarus 11 process.
FRESH_RANDOM = 303379748
_CARRIED = f"""    probe_r = $random;
    if (probe_r != {FRESH_RANDOM}) leak_q = 1'b0;
    probe_fd = $fopen("/tmp/cdc_carry", "r");
    if (probe_fd != 0) leak_q = 1'b0;
    probe_fd = $fopen("/tmp/cdc_carry", "w");
    if (probe_fd != 0) $fclose(probe_fd);
    if ($test$plusargs("cdc_zygote_slot")) leak_q = 1'b0;"""


def _carried_fix(body: str) -> str:
    """A design that is stalled (fails) unless it finds state carried over from an earlier seed."""
    return _stall_fix(body).replace("reg leak_q = 1'b0;", "reg leak_q = 1'b1;")


@pytest.mark.skipif("icarus" not in _sims(), reason="Icarus Verilog is not installed")
def test_a_design_that_needs_state_from_an_earlier_seed_never_passes(mode):
    """The seed-isolation proof of several Icarus seeds per vvp process: the design works only
    when it finds what an earlier seed left (its $random advanced, its file in /tmp, or the
    verdict module's placeholder plusargs), so with seeds isolated every seed fails -- with the
    very results one fresh process per seed gives -- and the stage really forked its seeds.
    Controls: the probe trips when the state is there (the design advances $random itself), and
    FRESH_RANDOM is what a fresh process sees (a design that needs it passes)."""
    task = load_task("handshake")
    r = grade(task, _carried_fix(_CARRIED), sim="icarus", hidden=8, gate=False)
    assert r["verdict"] == "fail" and r["seeds"]["visible"]["passed"] == 0, r["reason"]
    mode.assert_runner_held()
    mode.assert_forked("icarus")
    ctl = grade(task, _carried_fix("    probe_r = $random;\n" + _CARRIED), sim="icarus", hidden=0, gate=False)
    assert ctl["verdict"] == "pass", ctl["reason"]
    fresh = _stall_fix(f"    probe_r = $random;\n    if (probe_r != {FRESH_RANDOM}) leak_q = 1'b1;")
    assert grade(task, fresh, sim="icarus", hidden=8, gate=False)["verdict"] == "pass"


@pytest.mark.skipif("icarus" not in _sims(), reason="Icarus Verilog is not installed")
@pytest.mark.parametrize(("tid", "kind"), [("fifo_01", "reference"), ("handshake", "defective")])
def test_forked_seeds_give_the_results_of_fresh_processes(tid, kind, monkeypatch):
    """Identity of several seeds per vvp process: every seed's status, reason, check count, trace
    hash and end time equal those of one fresh vvp per seed (same stage sandboxes, zygote off),
    and the forked run really forked every seed."""
    from cdc_env.sim import stage as sim_stage

    task = load_task(tid)
    text = task.reference_text if kind == "reference" else task.defective_text
    runs = {}
    real = sim_stage.run_stage_sandboxed
    seen: list = []

    def spy(*a, **k):
        seen.append(real(*a, **k))
        return seen[-1]

    monkeypatch.setattr(sim_stage, "run_stage_sandboxed", spy)
    for z in ("0", "1"):
        monkeypatch.setenv(sim_stage.ZYGOTE_ENV, z)
        seen.clear()
        r = grade(task, text, sim="icarus", hidden=24)
        runs[z] = (r["verdict"], {st: r["seeds"][st]["results"] for st in r["seeds"]})
        assert seen and all(x is not None and all(s.forked == (z == "1") for s in x) for x in seen)
    assert runs["1"] == runs["0"]


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_the_state_probes_detect_state_within_one_sandbox(tmp_path):
    """Control for the IPC / key / queue / process probes above: left inside one sandbox by one
    command, each is found by the next command. (In the stage runner the seed's seccomp filter
    forbids creating them; with one sandbox per seed they die with the sandbox.)"""
    for name, (check, make) in _STATE.items():
        r = _sh(f"{make}\n{check} && echo FOUND", tmp_path, writable=False, tag="ctl")
        assert "FOUND" in r.stdout, (name, r.stdout, r.stderr)


_KILL = "for p in $(seq 1 64); do [ $p -ne $$ ] && [ $p -ne $PPID ] && kill -9 $p; done 2>/dev/null"
_KILL_ALL = "kill -9 -1 2>/dev/null"  # every process but the caller: the seed's own simulator too
# ptrace(PTRACE_ATTACH) of every other process but its own shell and simulator, and bubblewrap's
# init (pid 1: it holds nothing; with one sandbox per seed it is dumpable, and a seed that stops it
# only times itself out): one success leaks
_PTRACE = ("python3 -c \"import ctypes,os,sys; c=ctypes.CDLL(None); "
           "mine={os.getpid(), os.getppid(), int(sys.argv[1])}; "
           "sys.exit(0 if any(c.ptrace(16, p, 0, 0) == 0 for p in range(2, 65) if p not in mine) else 1)\" "
           "$PPID")
# a forged report record written to every descriptor the seed may have inherited
_FORGE_RECORD = ("python3 -c \"import os\\nfor n in range(3, 1024):\\n try: os.write(n, "
                 "b'R 0 0 1 1 0 0 0 0\\\\n')\\n except OSError: pass\"")


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_a_seed_cannot_stop_trace_or_forge_its_runner(mode):
    """A seed ptraces every process it can see, writes forged result records to every inherited
    descriptor, then sends SIGKILL to every process but its own shell and simulator. Catches a
    dumpable runner without the seccomp filter (ptrace), a result channel left open in the seed
    (the stage's report no longer parses) and a runner a seed can kill: the runner must survive
    and report every seed, and the design (the reference fix) still passes. A failing design
    that also kills every process (kill(-1), its own simulator included) still fails, with the
    runner intact."""
    task = load_task("handshake")
    body = _sh_leaks([_PTRACE]) + "\n" + _sh_run([_FORGE_RECORD, _KILL])
    r = grade(task, _stall_fix(body), sim="verilator", hidden=8, gate=False)
    assert r["verdict"] == "pass", r["reason"]
    mode.assert_runner_held()
    failing = task.defective_text
    cut = failing.rfind("endmodule")
    forged = failing[:cut] + "  integer probe_r;\n  initial begin\n" + \
        _sh_run([_FORGE_RECORD, _KILL, _KILL_ALL]) + "\n  end\n" + failing[cut:]
    mode.runs.clear()
    assert grade(task, forged, sim="verilator", hidden=8, gate=False)["verdict"] != "pass"
    mode.assert_runner_held()


def _dying_runner(tmp: Path, script: str) -> Path:
    d = tmp / "runner"
    d.mkdir()
    exe = d / "cdc_seed_runner"
    exe.write_text("#!/bin/sh\n" + script + "\n")
    exe.chmod(0o755)
    return d


@pytest.mark.parametrize("death", ["killed", "exits early"])
def test_a_runner_that_dies_never_passes_the_seeds_it_did_not_report(death, tmp_path, monkeypatch):
    """A runner that reports one seed (with a made-up verdict line) and is killed or exits
    before the others: the chunk's seeds all run again, one sandbox each, so no unreported seed
    is counted and no runner-reported verdict of that chunk is trusted. Catches a grader that
    keeps a dead runner's partial report (the defective design would pass its first seeds)."""
    from cdc_env.sim import stage as sim_stage

    forged = "CDCV 0000000000000000 PASS checks=9 hash=0000000000000000 t=1 msg=ok"
    rec = f"R 0 0 1 1 0 0 {len(forged) + 1} 0"
    end = "kill -9 $$" if death == "killed" else "exit 0"
    runner = _dying_runner(tmp_path, f"printf '%s\\n%s\\n' '{rec}' '{forged}' >&$CDC_RESULT_FD; {end}")
    task = load_task("handshake")
    monkeypatch.setenv(sim_stage.STAGE_ENV, "0")
    alone = grade(task, task.defective_text, sim="icarus", hidden=0, gate=False)
    monkeypatch.setenv(sim_stage.STAGE_ENV, "1")
    monkeypatch.setattr(sim_stage, "stage_runner", lambda **_: runner)
    fell_back = []
    real = sim_stage.run_stage_sandboxed
    monkeypatch.setattr(sim_stage, "run_stage_sandboxed",
                        lambda *a, **k: fell_back.append(real(*a, **k)) or fell_back[-1])
    r = grade(task, task.defective_text, sim="icarus", hidden=0, gate=False)
    assert fell_back and all(x is None for x in fell_back), "the dead runner's report was used"
    assert r["verdict"] == "fail" and r["seeds"]["visible"]["results"] == alone["seeds"]["visible"]["results"]


@pytest.mark.parametrize("zygote", [False, True])
def test_a_simulator_the_runner_cannot_start_is_a_tool_error_not_a_failed_seed(zygote, monkeypatch):
    """The stage runner's child exits 127 when exec fails (a model held open for writing by another
    process is ETXTBSY: the red team's one-off "exit status 127") and 126 when its filter cannot
    be installed. It says so first on the seed's stderr, and the seed is a tool_error: nothing
    was judged. Before, it was a failing seed -- a wrong verdict for a correct design."""
    from cdc_env.sim import stage as sim_stage
    from cdc_env.sim.base import seed_plusargs
    from cdc_env.sim.stage import run_seeds, scratch_build

    missing = "./no-such-simulator"
    task = load_task("handshake")
    sim = get_simulator("icarus")
    monkeypatch.setenv(sim_stage.ZYGOTE_ENV, "1" if zygote else "0")
    monkeypatch.setattr(sim, "seed_argv", lambda b, plan, settle: [missing, *seed_plusargs(plan, settle)])
    monkeypatch.setattr(sim, "zygote_argv", lambda b: ([missing, "+cdc_zygote_slot"], 1))
    with scratch_build(sim, task, task.files(task.reference_text)) as build:
        assert build.status == "pass", build.log
        results = run_seeds(sim, build, task, [1, 2], settle=True)
    assert [r.status for r in results] == ["tool_error"] * 2, [(r.status, r.reason) for r in results]
    assert "cannot start the simulator" in results[0].reason, results[0].reason


def _exhaust(sim: str) -> str:
    """Seed 2 floods its output, seed 3 writes past its file-size limit, seed 4 spins forever
    (CPU); on Verilator seed 6 also takes more memory than its limit, in three processes."""
    flood = "    repeat (40000) $display(\"flood flood flood flood flood flood flood flood flood flood\");"
    big = ('    probe_fd = $fopen("/tmp/big", "w");\n'
           '    repeat (40000) $fwrite(probe_fd, "01234567890123456789012345678901234567890123456789\\n");\n'
           '    $fclose(probe_fd);')
    spin = "    probe_r = 0;\n    while (probe_r >= 0) probe_r = (probe_r + 1) % 1000;"
    body = "\n".join([_when_seed(2, flood), _when_seed(3, big), _when_seed(4, spin)])
    if sim == "verilator":
        mem = ("for i in 1 2 3; do python3 -c \"a=bytearray(b'x')*(900<<20); import time; time.sleep(2)\" "
               "2>/dev/null & done; wait")
        body += "\n" + _when_seed(6, _sh_run([mem]))
    return _stall_fix(body)


@pytest.mark.parametrize("sim", _sims())
def test_one_seed_exhausting_a_resource_affects_only_its_own_result(sim, mode):
    """Catches limits set for the stage instead of each seed (one seed's CPU, output or file
    size charged to its neighbours) and a chunk that keeps running after a time-out or loses
    the seeds after a flood: every other seed that ran passes, the spinning seed times out."""
    r = grade(load_task("handshake"), _exhaust(sim), sim=sim, hidden=0, gate=False)
    res = {x["seed"]: x["status"] for x in r["seeds"]["visible"]["results"]}
    assert res[2] != "pass" and res[3] != "pass" and res[4] == "timeout", res
    assert all(st == "pass" for seed, st in res.items() if seed not in (2, 3, 4, 6)), res
    assert all(seed in res for seed in (1, 2, 3, 4)), res
    mode.assert_runner_held()


_NONCE_SCAN = ("python3 -c \"import os,re,sys\\nseen=' '.join(sys.argv)+' '.join(f'{k}={v}' for k,v in "
               "os.environ.items())\\nfor n in range(0, 1024):\\n try:\\n  os.set_blocking(n, False); "
               "seen += os.read(n, 65536).decode('latin-1')\\n except OSError: pass\\n"
               "sys.exit(0 if re.search('[0-9a-f]{16}', seen) else 1)\"")


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_a_seed_learns_no_nonce(mode):
    """Every seed reads whatever it can from every descriptor it inherited, its environment and
    its arguments, and fails if a 64-bit hex value (a nonce) is among them. Catches a runner
    that hands a seed another seed's nonce (or its own, past the verdict routine) through an
    inherited descriptor, the environment or argv."""
    task = load_task("handshake")
    r = grade(task, _stall_fix(_sh_leaks([_NONCE_SCAN])), sim="verilator", hidden=8, gate=False)
    assert r["verdict"] == "pass", r["reason"]
    mode.assert_runner_held()
    ctl = _stall_fix(_sh_leaks([_NONCE_SCAN.replace("python3 -c", "CDC_X=00112233aabbccdd python3 -c")]))
    assert grade(task, ctl, sim="verilator", hidden=0, gate=False)["verdict"] == "fail"


# A seed fills its /tmp with 60 KB files (under its file-size limit) up to 120 MB: the write must
# fail first. /tmp was a host folder without a bound (1.5 GiB reached the host's disk).
_FILL_TMP = ("python3 -c \"import sys\\nfor i in range(2000):\\n try: open(f'/tmp/cdc_fill{i}', 'wb')"
             ".write(bytes(60000))\\n except OSError: sys.exit(1)\"")


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_a_seeds_tmp_has_a_quota(mode):
    """Every seed tries to write 120 MB to /tmp; each must be stopped by the tmpfs quota
    (Limits.tmp_bytes, 64 MiB), and each gets the whole quota again (the runner empties /tmp)."""
    task = load_task("handshake")
    r = grade(task, _stall_fix(_sh_leaks([_FILL_TMP])), sim="verilator", hidden=0, gate=False)
    assert r["verdict"] == "pass", r["reason"]
    mode.assert_runner_held()
    # control: 3 MB fit, so the probe can pass a write
    ctl = grade(task, _stall_fix(_sh_leaks([_FILL_TMP.replace("range(2000)", "range(50)")])),
                sim="verilator", hidden=0, gate=False)
    assert ctl["verdict"] == "fail", ctl["reason"]


_WRITE = "python3 -c \"open('/tmp/cdc_size', 'wb').write(bytes({n}))\""


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_a_seeds_file_size_limit_is_one_figure_in_both_modes(mode):
    """RLIMIT_FSIZE of a seed is SEED_LIMITS' figure (its output cap, 1 MiB) in both modes: a
    512 KB file is written, a 1.2 MB one is not. Under the stage runner it was 64 KiB (the
    runner's own limit, which a seed cannot raise)."""
    task = load_task("handshake")
    body = (_sh_leaks(["! " + _WRITE.format(n=500_000), _WRITE.format(n=1_200_000)]))
    r = grade(task, _stall_fix(body), sim="verilator", hidden=0, gate=False)
    assert r["verdict"] == "pass", r["reason"]
    mode.assert_runner_held()


# prlimit / renice / ionice / taskset on every process but the seed's own shell and simulator
_RETUNE = ("for p in 1 2 3; do [ $p -ne $$ ] && [ $p -ne $PPID ] && { prlimit --pid $p --nofile=4:4 || "
           "renice -n 19 -p $p || ionice -c 3 -p $p || taskset -p 1 $p; } >/dev/null 2>&1 && exit 0; "
           "done; renice -n 19 -u $(id -u) >/dev/null 2>&1 && exit 0; exit 1")


@pytest.mark.skipif("verilator" not in _sims(), reason="Verilator is not installed")
def test_a_seed_cannot_retune_its_runner(monkeypatch):
    """Under the stage runner a seed may not change the runner's (or bubblewrap init's) resource
    limits, priority, I/O priority or CPU affinity: the seccomp filter refuses prlimit64 on them
    and setpriority / ioprio_set outright. (With one sandbox per seed there is no runner.)"""
    from cdc_env.sim import stage as sim_stage

    monkeypatch.setenv(sim_stage.STAGE_ENV, "1")
    task = load_task("handshake")
    r = grade(task, _stall_fix(_sh_leaks([_RETUNE])), sim="verilator", hidden=0, gate=False)
    assert r["verdict"] == "pass", r["reason"]


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="no /proc/self/clear_refs")
def test_a_printing_design_does_not_make_the_grader_hold_a_chunks_output(monkeypatch):
    """Every seed prints up to its output cap (1 MiB). The stage runner's report is parsed record by
    record as it arrives, so the grading process (this one) holds about one seed's output, not the
    whole chunk's (72 seeds in one chunk here: over 140 MiB before)."""
    from cdc_env.sim import stage as sim_stage

    monkeypatch.setenv(sim_stage.STAGE_ENV, "1")
    task = load_task("handshake")
    flood = '    repeat (20000) $display("flood flood flood flood flood flood flood flood %0d", probe_r);'
    design = _stall_fix(flood)
    grade(task, task.reference_text, hidden=0, gate=False)  # warm up: build caches, self-test
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = _peak_rss_mib()
    r = grade(task, design, sim="icarus", hidden=64, gate=False, jobs=1)
    grown = _peak_rss_mib() - base
    assert r["verdict"] != "tool_error", r["reason"]
    assert grown < 40, f"the grading process grew by {grown:.0f} MiB"


# A stand-in for a simulator with a zygote, one line of /bin/sh (the runner's protocol, no vvp):
# started with CDC_ZYGOTE_FD=<requests>,<answers> it is the zygote; started with CDC_VERDICT_FD it
# is a fresh seed, which prints its verdict line (a PASS, or a FAIL when it finds /tmp/leftover).
_FAKE_SEED = ('if [ -n "$CDC_ZYGOTE_FD" ]; then printf "ready\\n" >&4; '
              'while read -r req <&3; do {zygote_seed}; done; exit 0; fi; '
              'read -r nonce <&3; v=PASS; [ -e /tmp/leftover ] && v=FAIL; '
              'echo "CDCV $nonce $v checks=1 hash=0000000000000000 t=1 msg=fresh"')


def _fake_zygote_stage(tmp_path: Path, zygote_seed: str) -> list:
    """Run 3 seeds in one stage sandbox through the real runner, with a /bin/sh zygote whose
    answer to each request is ``zygote_seed``; return the seeds' results."""
    from cdc_env.sim.base import Build
    from cdc_env.sim.icarus import Icarus
    from cdc_env.sim.stage import run_stage_sandboxed

    script = _FAKE_SEED.replace("{zygote_seed}", zygote_seed)
    argv = ["/bin/sh", "-c", script, "fake-sim"]

    class FakeSim(Icarus):
        def seed_argv(self, build, plan, settle):
            return [*argv, f"+seed={plan.seed}"]

        def seed_ro_paths(self, build):
            return ()

        def zygote_argv(self, build):
            return [*argv, "+slot"], len(argv)

    task = load_task("handshake")
    build = Build("pass", "", tmp_path, extra={"tb_top": task.tb_top})
    plans = [plan_seed(task, s) for s in (1, 2, 3)]
    res = run_stage_sandboxed(FakeSim(), build, plans, settle=True)
    assert res is not None and len(res) == 3, res
    return res


def test_a_forked_seed_killed_by_the_chunks_memory_limit_runs_again_as_a_fresh_process(tmp_path):
    """In zygote mode the chunk's memory (one cgroup limit) holds the zygote's image next to the
    forked seed, so a seed killed by SIGKILL that the runner did not time out or stop for a flood
    (the OOM killer, when the seed is its pick) may owe that to the zygote: the seed runs again as
    a fresh process, whose result is the one without a zygote. Here the zygote answers every seed
    with a SIGKILL; a fresh run passes. Catches a runner that reports the forked kill (the seed
    failed only because it was forked: a verdict that differs with CDC_ENV_ZYGOTE=0)."""
    res = _fake_zygote_stage(tmp_path, 'printf "P 1\\nX -9 1000 100 0\\n" >&4')
    assert [r.status for r in res] == ["pass"] * 3, [(r.status, r.reason) for r in res]
    assert not any(r.forked for r in res)


def test_a_seed_rerun_after_its_zygote_is_lost_starts_on_an_empty_tmp(tmp_path):
    """A seed whose zygote is lost before its result is complete runs again as a fresh process;
    that fresh run starts on an empty /tmp, like every seed. Here the zygote's (first) seed
    writes /tmp/leftover and the zygote dies; the fresh run fails if it finds the file. Catches a
    runner that reruns the seed on what its forked attempt left."""
    res = _fake_zygote_stage(tmp_path, 'printf "P 1\\n" >&4; echo x > /tmp/leftover; exit 3')
    assert [r.status for r in res] == ["pass"] * 3, [(r.status, r.reason) for r in res]
