"""Held-out FIFO variants: minted on the operator's machine from a secret, never committed.

``mint(key_file, out)`` derives 4 variants from the key (HMAC-SHA256 of the key drives every
choice), from a parameter region disjoint from the training variants (variants.py):

  depth 32 (training: 8 or 16), data widths HELDOUT_WIDTHS (none is a training width), module
  names from HELDOUT_MODULES (none is a training name); any naming style, including "camel",
  which no training variant uses; each of the three defect shapes at least once.

It writes ``out/<id>/`` (complete task folders with ``heldout = true``), chooses their visible
seeds, runs their variant gate (taskgate.py), and writes ``out/heldout_manifest.json``: the
parameters' and every file's SHA-256, the gate rows, and a fingerprint of the key (an HMAC of a
fixed label, which does not reveal the key). The manifest holds no source; an operator may keep
or publish it to prove later which set was used. ``verify`` re-hashes a folder against its
manifest and, given the key, re-mints into a scratch folder and compares.

Every variant must pass the full gate. Its search is deterministic from the key (``search_steps``):
the write-traffic ranges (WR_PCT_TRIES) over the default run length, then the other stimulus
knob, the run length (RUN_SLOW_TRIES), then other parameters -- burst, data width and status
outputs drawn again from the key (ALT_PARAMS draws; name, style and defect shape stay) -- each
with the stimulus knobs again. The first step whose gate holds is kept and recorded in the
manifest (``search_step``), so ``verify`` re-mints the same texts. If a variant exhausts the
search, nothing is written and minting fails (``cdc-env heldout mint`` exits non-zero).

Same key -> byte-identical folders and manifest (simulation is deterministic). The repository
holds this code and tests that use a throwaway key; never a minted source.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from ..errors import CdcError
from .generator import SHAPES, STYLES, FifoParams, generate, write_task

COUNT = 4
MANIFEST = "heldout_manifest.json"
HELDOUT_AW = 5
HELDOUT_WIDTHS = (9, 11, 13, 20, 28)
HELDOUT_BURSTS = (5, 7, 9, 11, 13, 19, 21, 25)
HELDOUT_MODULES = ("frame_fifo", "cross_queue", "edge_buffer", "clk_bridge", "sensor_fifo", "dma_fifo",
                   "line_buffer", "event_queue", "tlm_fifo", "relay_fifo")
# Stimulus ranges tried in order until the gate holds (deterministic: the first that passes).
WR_PCT_TRIES = ((30, 90), (20, 90), (40, 95), (15, 80), (50, 100), (10, 70))
RUN_SLOW_TRIES = (300, 450, 200)  # run lengths (slow cycles); the first is the family's default
ALT_PARAMS = 3  # further draws of burst, width and status outputs, after the stimulus knobs


class _Draw:
    """A deterministic stream of integers from HMAC-SHA256(key, label|counter)."""

    def __init__(self, key: bytes, label: str) -> None:
        self.key, self.label, self.n = key, label, 0

    def below(self, n: int) -> int:
        self.n += 1
        d = hmac.new(self.key, f"{self.label}|{self.n}".encode(), hashlib.sha256).digest()
        return int.from_bytes(d[:8], "big") % n


def read_key(path: Path) -> bytes:
    try:
        key = path.read_bytes().strip()
    except OSError as exc:
        raise CdcError(f"cannot read key file {path}: {exc.strerror}") from None
    if len(key) < 16:
        raise CdcError(f"key file {path} holds {len(key)} bytes; use at least 16 random bytes")
    return key


def key_fingerprint(key: bytes) -> str:
    return hmac.new(key, b"cdc-env heldout key fingerprint v1", hashlib.sha256).hexdigest()


def alternative(key: bytes, p: FifoParams, i: int, k: int) -> FifoParams:
    """Variant ``i``'s parameters for search draw ``k``: ``p`` itself for k = 0, else burst, data
    width and status outputs drawn again from the key (id, module, style and shape stay)."""
    if k == 0:
        return p
    d = _Draw(key, f"variant{i}-alt{k}")
    extras = tuple(e for e in ("level", "busy", "wlevel") if d.below(2))
    return replace(p, width=HELDOUT_WIDTHS[d.below(len(HELDOUT_WIDTHS))],
                   burst=HELDOUT_BURSTS[d.below(len(HELDOUT_BURSTS))], extras=extras)


def search_steps() -> list[tuple[int, int, int]]:  # see Step below
    """The search order: (parameter draw, run length, traffic range index)."""
    return [(k, run, w) for k in range(ALT_PARAMS + 1) for run in RUN_SLOW_TRIES
            for w in range(len(WR_PCT_TRIES))]


def derive(key: bytes) -> list[FifoParams]:
    """The held-out variants' parameters (visible seeds and stimulus not yet calibrated)."""
    out = []
    shapes = list(SHAPES) + [SHAPES[_Draw(key, "extra-shape").below(len(SHAPES))]]
    styles = sorted(STYLES)
    for i in range(COUNT):
        d = _Draw(key, f"variant{i}")
        vid = "heldout_" + hmac.new(key, f"id{i}".encode(), hashlib.sha256).hexdigest()[:10]
        extras = tuple(e for e in ("level", "busy", "wlevel") if d.below(2))
        out.append(FifoParams(
            id=vid, module=HELDOUT_MODULES[d.below(len(HELDOUT_MODULES))], style=styles[d.below(len(styles))],
            width=HELDOUT_WIDTHS[d.below(len(HELDOUT_WIDTHS))], aw=HELDOUT_AW,
            burst=HELDOUT_BURSTS[d.below(len(HELDOUT_BURSTS))], shape=shapes[i], extras=extras,
            heldout=True))
    return out


def file_hashes(p: FifoParams) -> dict[str, str]:
    return {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in sorted(generate(p).items())}


def fingerprint(hashes: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in sorted(hashes.items())).encode()).hexdigest()


Step = tuple[int, int, int]  # (parameter draw, run length, traffic range index)


def _calibrate(key: bytes, i: int, p: FifoParams, gate: bool, progress,
               steps: list[Step]) -> tuple[FifoParams, dict | None, Step] | None:
    """Walk ``steps`` (see ``search_steps``); keep the first whose visible seeds can be chosen and
    whose defect is caught within the band on the hidden seeds, and (with ``gate``) whose full
    gate holds. Within one parameter draw and run length, a range that catches too few moves on
    to lighter write traffic only (the reader then waits on a near-empty FIFO more often), too
    many to heavier traffic only. Return (params, gate row, step), or None when no step holds."""
    from ..sim.seeds import hidden_seeds
    from ..task import load_task
    from ..taskgate import count_failures, gate_task, hidden_band
    from .calibrate import choose_visible

    def load(wr: tuple[int, int]) -> float:
        return (wr[0] + wr[1]) / 2

    group, last_wr, direction = None, None, 0  # direction -1: only lighter traffic, +1: heavier
    for step in steps:
        k, run, w = step
        wr = WR_PCT_TRIES[w]
        if (k, run) != group:
            group, last_wr, direction = (k, run), None, 0
        if last_wr is not None and direction and (load(wr) - load(last_wr)) * direction <= 0:
            continue
        try:
            q = choose_visible(replace(alternative(key, p, i, k), wr_pct=wr, run_slow_cycles=run))
        except CdcError:
            continue
        work = Path(tempfile.mkdtemp(prefix="cdc-heldout-gate-"))
        try:
            task = load_task(write_task(q, work / q.id))
            lo, hi = hidden_band(task)
            caught, _ = count_failures(task, task.defective_text, hidden_seeds(task), settle=True,
                                       hidden_checks=False)
            if progress:
                progress(f"  {q.id} draw {k}, {run} slow cycles, wr_pct {wr}: defect caught on "
                         f"{caught}/200 (band {lo}-{hi})")
            row = {"task": q.id, "ok": lo <= caught <= hi, "defect_hidden_fail_settle": caught,
                   "problems": [] if lo <= caught <= hi else
                   [f"defect caught on {caught} hidden seeds (need {lo}-{hi})"]}
            if row["ok"] and gate:
                row = gate_task(task)
                if progress:
                    progress(f"  {q.id} gate: {'ok' if row['ok'] else '; '.join(row['problems'])}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if row["ok"]:
            return q, (row if gate else None), step
        direction = -1 if caught < lo else 1 if caught > hi else direction
        last_wr = wr
    return None


def mint(key_file: Path, out: Path, *, gate: bool = True, calibrate: bool = True, force: bool = False,
         progress=None, _steps: list[list[int]] | None = None) -> dict:
    """Mint the held-out set into ``out``; return the manifest (also written to ``out``).

    gate: run the 200-seed gate for each variant (and go on with the search if it fails).
    calibrate: choose visible seeds by simulation (off only in tests that check the text alone).
    Raises CdcError, writing nothing, when a variant's search is exhausted.
    """
    key = read_key(Path(key_file))
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise CdcError(f"{out} is not empty (use --force to replace a minted set)")
        if not (out / MANIFEST).is_file():
            raise CdcError(f"{out} is not empty and holds no {MANIFEST}: refusing to replace it")
        shutil.rmtree(out)
    variants, chosen = [], []
    for i, p in enumerate(derive(key)):
        if progress:
            progress(f"minting {p.id} ({p.style}, depth {p.depth}, burst {p.burst}, {p.shape})")
        if not calibrate:
            q, row, step = p, None, (0, p.run_slow_cycles, 0)
        else:
            steps = [tuple(_steps[i])] if _steps is not None else search_steps()
            found = _calibrate(key, i, p, gate, progress, steps)
            if found is None:
                raise CdcError(f"{p.id}: no step of the search ({len(steps)} parameter draws, run lengths "
                               f"and traffic ranges) passes the variant gate; nothing was written")
            q, row, step = found
        chosen.append(q)
        hashes = file_hashes(q)
        variants.append({"id": q.id, "params_sha256": hashlib.sha256(q.to_json().encode()).hexdigest(),
                         "search_step": list(step), "files": hashes, "fingerprint": fingerprint(hashes),
                         "gate": row})
    for q in chosen:  # only once all four hold
        write_task(q, out / q.id)
    manifest = {"version": 1, "family": "fifo", "key_fingerprint": key_fingerprint(key),
                "gated": gate, "calibrated": calibrate, "variants": variants}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def verify(folder: Path, key_file: Path | None = None) -> dict:
    """Check ``folder`` against its manifest; with a key, also re-mint and compare."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise CdcError(f"{folder}: no readable {MANIFEST}: {exc}") from None
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
        same_key = key_fingerprint(key) == manifest.get("key_fingerprint")
        ids = [p.id for p in derive(key)]
        res["key_ok"] = same_key and ids == [v["id"] for v in manifest["variants"]]
        if res["key_ok"]:
            scratch = Path(tempfile.mkdtemp(prefix="cdc-heldout-verify-"))
            try:
                # Re-mint the same texts: same stimulus choice, visible seeds re-chosen, no gate.
                again = mint(Path(key_file), scratch / "set", gate=False,
                             calibrate=manifest.get("calibrated", True),
                             _steps=[v.get("search_step", [0, RUN_SLOW_TRIES[0], 0])
                                     for v in manifest["variants"]])
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            res["key_ok"] = [v["fingerprint"] for v in again["variants"]] == \
                [v["fingerprint"] for v in manifest["variants"]]
        res["ok"] = res["ok"] and res["key_ok"]
    return res
