"""Held-out minting with a throwaway key: the same key mints the same set, another key a
different one, the manifest verifies (and catches a changed file), and nothing minted is in the
repository. Minting here skips the simulations (visible seeds, gate): what is tested is the
derivation and the bookkeeping; ``cdc-env heldout mint`` runs them for real."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from cdc_env import paths
from cdc_env.fifo.heldout import MANIFEST, derive, mint, verify
from cdc_env.fifo.variants import TRAINING
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
    a = mint(k1, tmp_path / "a", gate=False, calibrate=False)
    b = mint(k1, tmp_path / "b", gate=False, calibrate=False)
    c = mint(k2, tmp_path / "c", gate=False, calibrate=False)
    assert a == b and _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert len(a["variants"]) == 4
    assert {v["id"] for v in a["variants"]}.isdisjoint({v["id"] for v in c["variants"]})
    assert {v["fingerprint"] for v in a["variants"]}.isdisjoint({v["fingerprint"] for v in c["variants"]})
    assert a["key_fingerprint"] != c["key_fingerprint"]
    assert "throwaway" not in (tmp_path / "a" / MANIFEST).read_text()


def test_minted_variants_are_complete_heldout_tasks_from_the_heldout_region(tmp_path):
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0003")
    mint(k, tmp_path / "set", gate=False, calibrate=False)
    train = {(p.aw, p.width, p.module) for p in TRAINING}
    shapes = set()
    for p in derive(k.read_bytes()):
        t = load_task(tmp_path / "set" / p.id)
        assert t.heldout and t.family == "fifo"
        assert (p.aw, p.width, p.module) not in train and p.aw not in {q.aw for q in TRAINING}
        # Same structure as the training variants: storage in cdc_ram, nothing declared to cross.
        assert t.cross_memories == ()
        assert all(f"cdc_ram #(.WIDTH({p.width}), .AW({p.aw}))" in x
                   for x in (t.defective_text, t.reference_text, t.clean_text))
        shapes.add(p.shape)
    assert shapes == {"bus_binary", "bit_binary", "dst_gray"}
    assert not any(t.heldout for t in list_tasks())  # never listed among public tasks


def test_no_minted_source_is_in_the_repository(tmp_path):
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0004")
    m = mint(k, tmp_path / "set", gate=False, calibrate=False)
    minted = {hashlib.sha256(b).hexdigest() for b in _tree(tmp_path / "set").values()}
    ids = [v["id"] for v in m["variants"]]
    root = paths.data_root()
    for folder in ("tasks", "heldout", "cdc_env", "tests", "fixtures", "trusted", "agents", "tools"):
        for f in (root / folder).rglob("*"):
            if not f.is_file() or f.stat().st_size > 4 << 20:
                continue
            data = f.read_bytes()
            assert hashlib.sha256(data).hexdigest() not in minted, f
            assert not any(i.encode() in data for i in ids), f


def test_verify_accepts_the_set_and_catches_a_change(tmp_path):
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0005")
    other = _key(tmp_path, "o", "throwaway-key-for-tests-0006")
    m = mint(k, tmp_path / "set", gate=False, calibrate=False)
    assert verify(tmp_path / "set")["ok"]
    r = verify(tmp_path / "set", k)
    assert r["ok"] and r["key_ok"]
    assert not verify(tmp_path / "set", other)["ok"]
    v0 = m["variants"][0]["id"]
    bug = tmp_path / "set" / v0 / "BUG.md"
    bug.write_text(bug.read_text() + "\n")
    r = verify(tmp_path / "set")
    assert not r["ok"] and r["variants"][0]["problems"] == ["BUG.md differs"]


def test_cli_mint_refuses_a_short_key_and_a_used_folder(tmp_path):
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
    r = cli("verify", "--dir", str(tmp_path / "nothing"), "--json")
    assert r.returncode == 2
    mint(k, tmp_path / "ok", gate=False, calibrate=False)
    r = cli("verify", "--dir", str(tmp_path / "ok"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["ok"]


def test_search_order_and_alternative_draws_are_fixed_by_the_key(tmp_path):
    """The search walks the traffic ranges at the default run length first, then the other run
    lengths, then other parameter draws from the key (same name, style and shape)."""
    from cdc_env.fifo.heldout import ALT_PARAMS, RUN_SLOW_TRIES, WR_PCT_TRIES, alternative, search_steps

    steps = search_steps()
    assert steps[: len(WR_PCT_TRIES)] == [(0, RUN_SLOW_TRIES[0], w) for w in range(len(WR_PCT_TRIES))]
    assert len(steps) == (ALT_PARAMS + 1) * len(RUN_SLOW_TRIES) * len(WR_PCT_TRIES) == len(set(steps))
    key = b"throwaway-key-for-tests-0007"
    for i, p in enumerate(derive(key)):
        assert alternative(key, p, i, 0) == p
        alts = [alternative(key, p, i, k) for k in range(1, ALT_PARAMS + 1)]
        assert alts == [alternative(key, p, i, k) for k in range(1, ALT_PARAMS + 1)]
        assert all((a.id, a.module, a.style, a.shape) == (p.id, p.module, p.style, p.shape) for a in alts)


def test_mint_writes_nothing_and_fails_when_a_search_is_exhausted(tmp_path, monkeypatch):
    """When no step of a variant's search passes the gate, minting raises (the CLI exits
    non-zero) and leaves the output folder empty: a partial set never looks minted."""
    import pytest

    from cdc_env.errors import CdcError
    from cdc_env.fifo import heldout

    calls = []

    def exhausted(key, i, p, gate, progress, steps):
        calls.append(i)
        return None if i == 2 else (p, {"ok": True, "problems": []}, steps[0])

    monkeypatch.setattr(heldout, "_calibrate", exhausted)
    k = _key(tmp_path, "k", "throwaway-key-for-tests-0008")
    with pytest.raises(CdcError, match="passes the variant gate"):
        mint(k, tmp_path / "set")
    assert calls == [0, 1, 2]
    assert not (tmp_path / "set").exists() or not any((tmp_path / "set").iterdir())
