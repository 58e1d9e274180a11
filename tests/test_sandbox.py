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
