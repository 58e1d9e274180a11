"""Held-out variants of every family: minted on the operator's machine from a secret, never
committed.

``mint(key_file, out, families)`` mints ``COUNT`` (4) variants per family from the key: variant
``i`` of family ``F`` is ``F.draw(Draw(key, "F/heldout/i"), "heldout", vid)`` -- the family's
held-out region, disjoint from its training region (each family's module docstring says how) --
calibrated and gated by ``calibrate.calibrate`` (the family's search, then fresh draws). Its id is
``heldout_<F>_`` and 10 hex digits of an HMAC of the key.

It writes ``out/<id>/`` (complete task folders with ``heldout = true``) and
``out/heldout_manifest.json``: per variant its family, the parameters' and every file's SHA-256,
the search step kept, the gate row, and a fingerprint of the key (an HMAC of a fixed label, which
does not reveal it). The manifest holds no source; an operator may keep or publish it to prove
later which set was used. ``verify`` re-hashes a folder against its manifest and, given the key,
re-makes the recorded steps into a scratch folder (visible seeds re-chosen, no gate) and compares.

Every variant must pass the full gate; if one exhausts its search nothing is written and minting
fails (``cdc-env heldout mint`` exits non-zero). Same key -> byte-identical folders and manifest
(simulation is deterministic). The repository holds this code and tests that use a throwaway key,
never a minted source.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..errors import CdcError
from . import get, names, write_files
from .calibrate import at_step, calibrate

COUNT = 4
MANIFEST = "heldout_manifest.json"
VERSION = 2  # version 1 (FIFO only, before the family protocol) cannot be verified: re-mint


def read_key(path: Path) -> bytes:
    try:
        key = Path(path).read_bytes().strip()
    except OSError as exc:
        raise CdcError(f"cannot read key file {path}: {exc.strerror}") from None
    if len(key) < 16:
        raise CdcError(f"key file {path} holds {len(key)} bytes; use at least 16 random bytes")
    return key


def key_fingerprint(key: bytes) -> str:
    return hmac.new(key, b"cdc-env heldout key fingerprint v1", hashlib.sha256).hexdigest()


def variant_id(key: bytes, family: str, i: int) -> str:
    return f"heldout_{family}_" + hmac.new(key, f"{family}/id{i}".encode(), hashlib.sha256).hexdigest()[:10]


def label(family: str, i: int) -> str:
    return f"{family}/heldout/{i}"


def derive(key: bytes, family: str) -> list:
    """A family's held-out parameters, draw 0, before calibration (visible seeds not chosen)."""
    fam = get(family)
    return [at_step(fam, key, label(family, i), "heldout", variant_id(key, family, i), (0, 0))
            for i in range(COUNT)]


def file_hashes(files: dict[str, str]) -> dict[str, str]:
    return {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in sorted(files.items())}


def fingerprint(hashes: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in sorted(hashes.items())).encode()).hexdigest()


def mint(key_file: Path, out: Path, families: list[str] | None = None, *, gate: bool = True,
         calibrate_seeds: bool = True, force: bool = False, progress: Callable[[str], None] | None = None,
         _steps: dict[str, list] | None = None) -> dict:
    """Mint the held-out sets of ``families`` (default: every registered family) into ``out``;
    return the manifest (also written to ``out``).

    gate: run the full variant gate for each variant (the band is always measured).
    calibrate_seeds: choose visible seeds by simulation (off only in tests of the text alone).
    Raises CdcError, writing nothing, when a variant's search is exhausted.
    """
    key = read_key(Path(key_file))
    families = families or names()
    for f in families:
        get(f)  # an unknown name fails before any work
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise CdcError(f"{out} is not empty (use --force to replace a minted set)")
        if not (out / MANIFEST).is_file():
            raise CdcError(f"{out} is not empty and holds no {MANIFEST}: refusing to replace it")
        shutil.rmtree(out)
    variants, chosen = [], []
    for family in families:
        fam = get(family)
        for i in range(COUNT):
            vid = variant_id(key, family, i)
            if progress:
                progress(f"minting {vid}")
            if not calibrate_seeds:
                step = (0, 0)
                q, row = at_step(fam, key, label(family, i), "heldout", vid, step), None
            else:
                steps = [tuple(_steps[vid])] if _steps is not None else None
                found = calibrate(fam, key, label(family, i), "heldout", vid, gate=gate, progress=progress,
                                  steps=steps)
                if found is None:
                    raise CdcError(f"{vid}: no step of the search passes the variant gate; "
                                   "nothing was written")
                q, row, step = found
                row = row if gate else None
            if fam.region_of(q) != "heldout":
                raise CdcError(f"{vid}: the family's held-out draw is outside its held-out region")
            files = fam.generate(q)
            chosen.append(files)
            hashes = file_hashes(files)
            variants.append({"id": vid, "family": family,
                             "params_sha256": hashlib.sha256(
                                 json.dumps(fam.to_dict(q), sort_keys=True).encode()).hexdigest(),
                             "search_step": list(step), "files": hashes, "fingerprint": fingerprint(hashes),
                             "gate": row})
    for v, files in zip(variants, chosen, strict=True):  # only once every variant holds
        write_files(files, out / v["id"])
    manifest = {"version": VERSION, "families": families, "key_fingerprint": key_fingerprint(key),
                "gated": gate, "calibrated": calibrate_seeds, "variants": variants}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def verify(folder: Path, key_file: Path | None = None) -> dict:
    """Check ``folder`` against its manifest; with a key, also re-make the recorded steps and compare."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise CdcError(f"{folder}: no readable {MANIFEST}: {exc}") from None
    if manifest.get("version") != VERSION:
        raise CdcError(f"{folder}: manifest version {manifest.get('version')} (this code verifies "
                       f"{VERSION}): re-mint the set with cdc-env heldout mint")
    rows = []
    for v in manifest.get("variants", []):
        problems = []
        d = folder / v["id"]
        have = {str(f.relative_to(d)): hashlib.sha256(f.read_bytes()).hexdigest()
                for f in d.rglob("*") if f.is_file()} if d.is_dir() else {}
        if not have:
            problems.append("folder missing")
        for rel, h in v["files"].items():
            if have.get(rel) != h:
                problems.append(f"{rel} differs")
        problems += [f"{rel} not in the manifest" for rel in have if rel not in v["files"]]
        rows.append({"id": v["id"], "ok": not problems, "problems": problems})
    res: dict = {"ok": all(r["ok"] for r in rows) and bool(rows), "variants": rows, "key_checked": False}
    if key_file is not None:
        key = read_key(Path(key_file))
        res["key_checked"] = True
        families = manifest.get("families", [])
        ids = [variant_id(key, f, i) for f in families for i in range(COUNT)]
        res["key_ok"] = (key_fingerprint(key) == manifest.get("key_fingerprint")
                         and ids == [v["id"] for v in manifest["variants"]])
        if res["key_ok"]:
            scratch = Path(tempfile.mkdtemp(prefix="cdc-heldout-verify-"))
            try:
                again = mint(Path(key_file), scratch / "set", families, gate=False,
                             calibrate_seeds=manifest.get("calibrated", True),
                             _steps={v["id"]: v["search_step"] for v in manifest["variants"]})
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            res["key_ok"] = [v["fingerprint"] for v in again["variants"]] == \
                [v["fingerprint"] for v in manifest["variants"]]
        res["ok"] = res["ok"] and res["key_ok"]
    return res
