"""Catalogues (cdc_env/families/catalogue.py): distinct training draws per family, the resolver
every front end goes through (``<family>@<index>``), that nothing uncatalogued is served, and the
minting: deterministic from the key, appended as it goes, resumable after a kill, on the local
pool and on Ray. The minting tests use the reset family (its seeds are the cheapest) and skip the
full gate (``--no-gate``: the band and the visible seeds are still simulated); the shipped
catalogues were minted with the gate (README, "Catalogues")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdc_env import families
from cdc_env.errors import CdcError
from cdc_env.families import Draw, catalogue, mint
from cdc_env.task import load_task

from .conftest import needs_bwrap, needs_icarus

ROOT = Path(__file__).resolve().parent.parent


def _cli(*a: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_env", *a], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("name", families.names())
def test_each_family_has_at_least_100_distinct_training_draws(name):
    fam = families.get(name)
    seen = set()
    for i in range(400):
        p = fam.draw(Draw(catalogue.DEFAULT_KEY, f"{name}/train/{i}"), "train", "same_id")
        assert fam.region_of(p) == "train"
        seen.add(json.dumps(fam.to_dict(p), sort_keys=True))
    assert len(seen) >= 100, len(seen)


def _shipped(name: str) -> list[dict]:
    es = catalogue.entries(name)
    assert es, f"catalogues/{name}.jsonl is empty (cdc-env catalogue mint --family {name} --count 20)"
    return es


@pytest.mark.parametrize("name", families.names())
def test_shipped_entries_are_gated_and_materialise_to_their_gated_files(name, tmp_path):
    for e in _shipped(name):
        assert e["id"] == f"{name}@{e['index']}" and e["gated"] and e["gate"]["ok"], e["id"]
        assert e["gate"]["clean_fail"] == 0 and e["gate"]["reference_fail"] == 0
        assert 98 <= e["gate"]["defect_hidden_fail_settle"] <= 138
        assert e["gate"]["defect_hidden_fail_nosettle"] == 0 and 3 <= e["gate"]["defect_visible_fail"] <= 5
        folder = catalogue.materialise(e, tmp_path)
        t = load_task(folder)
        assert t.id == e["task_id"] and t.family == name and not t.heldout
        assert list(t.seeds.visible) == e["params"]["visible"]


def test_load_task_resolves_a_catalogue_id_and_refuses_an_uncatalogued_one():
    e = _shipped("reset")[0]
    t = load_task(e["id"])
    served = {str(f.relative_to(t.dir)): f.read_text() for f in t.dir.rglob("*") if f.is_file()}
    assert t.id == e["task_id"] and catalogue.files_sha256(served) == e["files_sha256"]
    for bad in ("reset@999999", "nosuch@1", "reset@-1", "reset@x", "fifo@"):
        with pytest.raises(CdcError):
            load_task(bad)


def test_a_changed_cache_folder_is_written_again(tmp_path):
    e = _shipped("reset")[0]
    folder = catalogue.materialise(e, tmp_path)
    tb = folder / "tb.v"
    tb.write_text(tb.read_text().replace("tb_fail(", "$display("))  # a testbench that never fails
    again = catalogue.materialise(e, tmp_path)
    assert again == folder and "tb_fail(" in tb.read_text()


def test_stale_lists_entries_minted_on_other_code(tmp_path):
    rows = [dict(e) for e in _shipped("reset")[:2]]
    rows[1]["code"] = "0" * 16
    (tmp_path / "reset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert mint.stale("reset", tmp_path) == [rows[1]["id"]]
    assert mint.stale("reset") == []  # the shipped catalogue is current


def test_an_entry_whose_generator_output_changed_is_refused(tmp_path):
    e = dict(_shipped("reset")[0])
    e["params"] = {**e["params"], "pulses": [1, 2]}  # not what was gated
    with pytest.raises(CdcError, match="no longer writes the gated files"):
        catalogue.materialise(e, tmp_path)


def test_gym_family_draws_only_catalogue_entries():
    gym = pytest.importorskip("gymnasium")
    import cdc_env.adapters.gym  # noqa: F401  (registers the envs)

    ids = {e["task_id"] for e in _shipped("fifo")}
    env = gym.make("cdc_env/fifo", hidden=0)
    seen = set()
    for seed in range(12):
        _, info = env.reset(seed=seed)
        assert info["task"] in ids  # every draw is a catalogued, gated variant
        seen.add(info["task"])
    _, again = env.reset(seed=3)
    _, info3 = env.reset(seed=3, options={"task": "fifo"})
    assert again["task"] == info3["task"] and len(seen) > 1
    _, info = env.reset(options={"task": "reset"})
    assert info["task"] in {e["task_id"] for e in _shipped("reset")}
    _, info = env.reset(options={"task": _shipped("fifo")[0]["id"]})
    assert info["task"] == _shipped("fifo")[0]["task_id"]
    env.close()


@needs_icarus
@needs_bwrap
def test_env_serves_a_catalogue_entry_and_its_defect_fails():
    from cdc_env.env import CdcRepairEnv

    e = _shipped("reset")[0]
    env = CdcRepairEnv(load_task(e["id"]), hidden=2)
    first = env.reset()
    assert first["observation"].startswith(f"Task: {e['task_id']}")
    res = env.step("submit", {})
    assert res["done"] and res["reward"] == 0.0
    env.close()


@needs_icarus
@needs_bwrap
def test_http_serves_a_catalogue_entry():
    httpx = pytest.importorskip("httpx", reason="the server extra is not installed")
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    from cdc_env.server import ServerConfig, resolve_tasks, serve_in_thread

    e = _shipped("reset")[0]
    with serve_in_thread(ServerConfig(tasks=resolve_tasks([e["id"]]), workers=1)) as srv, \
            httpx.Client(base_url=srv.url, timeout=120) as c:
        assert [t["id"] for t in c.get("/v1/tasks").json()["tasks"]] == [e["task_id"]]
        first = c.post("/v1/episodes", json={"task": e["task_id"]}).json()
        assert first["task"] == e["task_id"]


def test_verifiers_and_eval_load_a_catalogue_entry():
    from cdc_env.eval.settings import resolve_tasks

    e = _shipped("fifo")[0]
    assert [t.id for t in resolve_tasks([e["id"]])] == [e["task_id"]]
    pytest.importorskip("verifiers.v1", reason="verifiers is not installed")
    from cdc_env.adapters.verifiers import CdcTaskset, CdcTasksetConfig

    tasks = list(CdcTaskset(CdcTasksetConfig(id="cdc-env-verifiers", tasks=[e["id"]])))
    assert [t.data.task_id for t in tasks] == [e["id"]]
    assert tasks[0].data.prompt.startswith(f"Task: {e['task_id']}")


def test_cdc_env_tasks_lists_the_catalogues():
    r = _cli("tasks", "--json")
    assert r.returncode == 0
    rows = {row["id"]: row for row in json.loads(r.stdout)}
    for name in ("fifo", "reset"):
        assert rows[f"{name}@*"]["catalogue"] and rows[f"{name}@*"]["entries"] == len(_shipped(name))
    r = _cli("tasks")
    assert "[catalogue]" in r.stdout and "fifo@<index>" in r.stdout


def test_sample_ids_spread_over_every_catalogue():
    ids = catalogue.sample_ids(3)
    for name in ("fifo", "reset"):
        mine = [i for i in ids if i.startswith(name + "@")]
        assert len(mine) == min(3, len(_shipped(name))) and len(set(mine)) == len(mine)


@needs_icarus
@needs_bwrap
def test_minting_is_deterministic_appends_and_resumes_after_a_kill(tmp_path):
    out = tmp_path / "cat"
    cmd = [sys.executable, "-m", "cdc_env", "catalogue", "mint", "--family", "reset", "--count", "3",
           "--no-gate", "--out", str(out), "--json"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    path = out / "reset.jsonl"
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and p.poll() is None:
        if path.is_file() and path.read_text().count("\n") >= 1:
            break
        time.sleep(0.5)
    os.killpg(p.pid, signal.SIGKILL)  # mid-way: one entry written, the next in flight
    p.wait()
    first = path.read_text().splitlines()
    assert 1 <= len(first) < 3
    with path.open("a") as fh:
        fh.write('{"index": 2, "cut by a kill')  # a line a kill cut short is dropped, not trusted
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    tally = json.loads(r.stdout)
    assert tally["skipped"] == len(first) and tally["entries"] + tally["rejected"] == 3 - len(first)
    rows = catalogue.entries("reset", out)
    done = sorted(e["index"] for e in rows) + [e["index"] for e in catalogue._read_jsonl(
        catalogue.rejected_file("reset", out))]
    assert sorted(done) == [0, 1, 2]
    assert path.read_text().splitlines()[: len(first)] == first  # resumed, not redone
    again = mint.mint_one("reset", catalogue.DEFAULT_KEY, rows[0]["index"], gate=False)
    assert again == rows[0]  # the same key makes the same entry on any run


@needs_icarus
@needs_bwrap
def test_minting_on_ray(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install .[ray])")
    tally = mint.mint("reset", 1, root=tmp_path, backend="ray", jobs=1, gate=False, progress=False)
    assert tally["entries"] + tally["rejected"] == 1
    rows = catalogue.entries("reset", tmp_path)
    if rows:
        assert rows[0] == mint.mint_one("reset", catalogue.DEFAULT_KEY, 0, gate=False)


def test_bad_mint_arguments_are_one_line_errors(tmp_path):
    for args in (["--family", "nosuch", "--count", "1"], ["--family", "reset", "--count", "0"],
                 ["--family", "reset", "--count", "1", "--backend", "nope"]):
        r = _cli("catalogue", "mint", *args, "--out", str(tmp_path))
        assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


@needs_icarus
@needs_bwrap
def test_gate_tasks_regates_a_catalogue_entry_to_its_recorded_row():
    """gate-tasks takes catalogue ids; the gate is deterministic, so re-gating an entry on the
    simulator it was minted on reproduces its recorded counts exactly."""
    e = _shipped("reset")[0]
    r = _cli("gate-tasks", e["id"], "--sim", e["sim"], "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    keys = ("clean_fail", "reference_fail", "defect_visible_fail", "defect_hidden_fail_settle",
            "defect_hidden_fail_nosettle", "ok")
    assert {k: row[k] for k in keys} == {k: e["gate"][k] for k in keys}
