"""Held-out minting with a throwaway key, for every registered family: the same key mints the
same set, another key a different one, every variant lies in its family's held-out region and
outside its training region, the manifest verifies (and catches a changed file), and nothing
minted is in the repository. Most tests skip the simulations (visible seeds, gate): what they test
is the derivation and the bookkeeping; ``cdc-env heldout mint`` runs them for real (README, "Held-out
variants", for the measured runs with fresh keys)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_env import families, paths
from cdc_env.errors import CdcError
from cdc_env.families import Draw
from cdc_env.families.heldout import COUNT, MANIFEST, derive, mint, verify
from cdc_env.task import list_tasks, load_task


def _key(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


def test_same_key_same_set_other_key_other_set(tmp_path):
    k1 = _key(tmp_path, "k1", "throwaway-key-for-tests-0001\n")
    k2 = _key(tmp_path, "k2", "throwaway-key-for-tests-0002\n")
    a = mint(k1, tmp_path / "a", gate=False, calibrate_seeds=False)
    b = mint(k1, tmp_path / "b", gate=False, calibrate_seeds=False)
    c = mint(k2, tmp_path / "c", gate=False, calibrate_seeds=False)
    assert a == b and _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert a["families"] == families.names() and len(a["variants"]) == COUNT * len(families.names())
    assert {v["id"] for v in a["variants"]}.isdisjoint({v["id"] for v in c["variants"]})
    assert {v["fingerprint"] for v in a["variants"]}.isdisjoint({v["fingerprint"] for v in c["variants"]})
    assert a["key_fingerprint"] != c["key_fingerprint"]
    assert "throwaway" not in (tmp_path / "a" / MANIFEST).read_text()


@pytest.mark.parametrize("name", families.names())
def test_minted_variants_are_complete_heldout_tasks_from_the_heldout_region(tmp_path, name):
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0003")
    m = mint(k, tmp_path / "set", [name], gate=False, calibrate_seeds=False)
    assert {v["family"] for v in m["variants"]} == {name}
    fam = families.get(name)
    for p in derive(k.read_bytes(), name):
        t = load_task(tmp_path / "set" / p.id)
        assert t.heldout and t.family == name
        assert fam.region_of(p) == "heldout"
    assert not any(t.heldout for t in list_tasks())  # never listed among public tasks


@pytest.mark.parametrize("name", families.names())
def test_heldout_draws_never_land_in_training_and_training_never_in_heldout(name):
    """Over many keys: every held-out draw is in the held-out region and not in training; every
    committed variant and every training draw is in training. A region test is its own check:
    the families' region_of is what the minting and the catalogue assert on every value."""
    fam = families.get(name)
    for p in fam.training():
        assert fam.region_of(p) == "train", p.id
    for i in range(300):
        h = fam.draw(Draw(f"key{i}".encode(), "t"), "heldout", f"heldout_{i}")
        t = fam.draw(Draw(f"key{i}".encode(), "t"), "train", f"train_{i}")
        assert fam.region_of(h) == "heldout" and fam.region_of(t) == "train"
        assert fam.from_dict(fam.to_dict(h)) == h and fam.from_dict(fam.to_dict(t)) == t


def test_fifo_heldout_draws_cover_every_heldout_shape_including_early_publish():
    fam = families.get("fifo")
    shapes = {fam.draw(Draw(f"k{i}".encode(), "t"), "heldout", "v").shape for i in range(200)}
    assert shapes == {"bus_binary", "bit_binary", "dst_gray", "early_publish"}


def test_reset_heldout_region_is_disjoint_from_training():
    from cdc_env.families import rst

    assert not set(rst.HELDOUT_MODULES) & set(rst.TRAIN_MODULES)
    assert not set(rst.generator.HELDOUT_MACHINES) & set(rst.generator.TRAIN_MACHINES)
    assert {(p.machine_a, p.machine_b) for p in rst.VARIANTS} <= {
        (a, b) for a in rst.generator.TRAIN_MACHINES for b in rst.generator.TRAIN_MACHINES}


def test_no_minted_source_is_in_the_repository(tmp_path):
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0004")
    m = mint(k, tmp_path / "set", gate=False, calibrate_seeds=False)
    minted = {hashlib.sha256(b).hexdigest() for b in _tree(tmp_path / "set").values()}
    ids = [v["id"] for v in m["variants"]]
    root = paths.data_root()
    for folder in ("tasks", "heldout", "catalogues", "cdc_env", "tests", "fixtures", "trusted", "agents",
                   "tools"):
        for f in (root / folder).rglob("*"):
            if not f.is_file() or f.stat().st_size > 4 << 20:
                continue
            data = f.read_bytes()
            assert hashlib.sha256(data).hexdigest() not in minted, f
            assert not any(i.encode() in data for i in ids), f


def test_verify_accepts_the_set_and_catches_a_change(tmp_path):
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0005")
    other = _key(tmp_path, "o", "throwaway-key-for-tests-0006")
    m = mint(k, tmp_path / "set", gate=False, calibrate_seeds=False)
    assert verify(tmp_path / "set")["ok"]
    r = verify(tmp_path / "set", k)
    assert r["ok"] and r["key_ok"]
    assert not verify(tmp_path / "set", other)["ok"]
    v0 = m["variants"][0]["id"]
    bug = tmp_path / "set" / v0 / "BUG.md"
    bug.write_text(bug.read_text() + "\n")
    r = verify(tmp_path / "set")
    assert not r["ok"] and r["variants"][0]["problems"] == ["BUG.md differs"]


def test_cli_mint_refuses_a_short_key_a_used_folder_and_an_unknown_family(tmp_path):
    def cli(*a):
        return subprocess.run([sys.executable, "-m", "cdc_env.cli", "heldout", *a], capture_output=True,
                              text=True, timeout=300)

    short = _key(tmp_path, "short", "abc")
    r = cli("mint", "--key-file", str(short), "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "at least 16" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file").write_text("x")
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0007")
    r = cli("mint", "--key-file", str(k), "--out", str(tmp_path / "used"))
    assert r.returncode == 2 and "not empty" in r.stderr
    r = cli("mint", "--family", "nosuch", "--key-file", str(k), "--out", str(tmp_path / "y"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = cli("verify", "--dir", str(tmp_path / "nothing"), "--json")
    assert r.returncode == 2
    mint(k, tmp_path / "ok", gate=False, calibrate_seeds=False)
    r = cli("verify", "--dir", str(tmp_path / "ok"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["ok"]


def test_search_starts_with_the_drawn_value_and_keeps_the_design():
    """A family's search yields the drawn value first and then only retunes the stimulus and run
    length: the generated design files stay the same."""
    for name in families.names():
        fam = families.get(name)
        p = fam.draw(Draw(b"throwaway-key-for-tests-0009", "t"), "heldout", "v")
        steps = list(fam.search(p))
        assert steps[0] == p and all(q.id == p.id for q in steps)
        design = {k: v for k, v in fam.generate(p).items() if k.endswith(".v") and k != "tb.v"}
        for q in steps:
            assert {k: v for k, v in fam.generate(q).items() if k in design} == design


def test_mint_writes_nothing_and_fails_when_a_search_is_exhausted(tmp_path, monkeypatch):
    """When no step of a variant's search passes the gate, minting raises (the CLI exits
    non-zero) and leaves the output folder empty: a partial set never looks minted."""
    from cdc_env.families import heldout

    calls = []

    def exhausted(fam, key, label, region, vid, **kw):
        calls.append(vid)
        p = heldout.at_step(fam, key, label, region, vid, (0, 0))
        return None if len(calls) == 3 else (p, {"ok": True, "problems": []}, (0, 0))

    monkeypatch.setattr(heldout, "calibrate", exhausted)
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0008")
    with pytest.raises(CdcError, match="passes the variant gate"):
        mint(k, tmp_path / "set", ["fifo"])
    assert len(calls) == 3
    assert not (tmp_path / "set").exists() or not any((tmp_path / "set").iterdir())
