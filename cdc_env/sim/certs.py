"""Parity certificates and the batching policy.

A certificate says "for this task, this patch and this settling mode, these seeds gave these
results" -- on Icarus, on Verilator one at a time and on Verilator batched (basis ``parity``,
issued by ``cdc-env parity --certify`` or ``cdc-env cost``), or in a batched grade's own checks
(basis ``self-checked``, stage.run_stage_batched). Results are compared on ``SeedResult.key()``
(seed, status, reason, checks, trace hash, sim time). A certificate carries the fingerprint of
everything the results depend on (``fingerprint_components``: the runner, the synchronizer
models, the testbench harness, the task's testbench and sources and manifest, the patch, both
simulators' versions) and an HMAC with a key kept in the cache directory. A certificate whose
MAC does not match is *tampered*; one whose fingerprint differs from today's sources is
*stale*; both are refused.

Two batching policies decide when a stage may try to batch (``BATCH_POLICIES``; docs/parity.md):
``"certified"`` only under a valid certificate for the exact patch; ``"self-checked"`` (the
default) also without one. Under both, a build that could carry state from one seed to the next
in one process (random or stateful runtime calls in Verilator's generated C++,
``verilator.batch_hazards``) never batches. ``CDC_ENV_BATCH_POLICY`` sets the default.

Certificates live in ``$CDC_ENV_CACHE/certificates`` (default ~/.cache/cdc_env). The MAC keeps a
certificate from being edited by hand or copied onto another patch; it does not protect against
someone who can read the key file (the grader's own account).
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import os
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from ..task import Task
from . import icarus, verilator
from .base import SeedResult, cache_root

CERT_VERSION = 1
BATCH_POLICIES = ("self-checked", "certified")
BATCH_POLICY_ENV = "CDC_ENV_BATCH_POLICY"
CERT_KEEP = 4096  # certificates kept in the cache; a self-checked grade prunes the oldest beyond it


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def runner_fingerprint() -> str:
    """The Verilator runner: C++ main, this backend's code, whether netlists build split and the
    split build's trusted HDL, flags, Verilator and compiler versions."""
    parts = [verilator.harness_file().read_bytes(), inspect.getsource(verilator).encode(),
             verilator.split_sources(), b"split" if verilator.split_enabled() else b"one model",
             " ".join(verilator.VERILATOR_FLAGS).encode(), " ".join(verilator.CXX_DEFINES).encode(),
             verilator.CXX_OPT.encode(), verilator.verilator_version().encode(),
             verilator.compiler_version().encode()]
    return _sha(b"\0".join(parts))


def fingerprint_components(task: Task, design_text: str) -> dict[str, str]:
    """Everything a seed's result depends on, hashed part by part (so a refusal can name the part)."""
    src = b"\0".join(name.encode() + b"\0" + task.path(name).read_bytes() for name in sorted(task.sources))
    return {
        "runner": runner_fingerprint(),
        "icarus": icarus.Icarus().version(),
        "primitives": _sha(paths.primitives_bytes()),
        "harness": _sha(b"".join(p.read_bytes() for p in paths.tb_includes())),
        "testbench": _sha(task.path(task.testbench).read_bytes()),
        "task": _sha((task.dir / "task.toml").read_bytes() + b"\0" + src),
        "patch": _sha(design_text),
    }


def key_list(r: SeedResult) -> list:
    return list(r.key())


def first_difference(a: list[SeedResult], b: list[SeedResult], what_a: str, what_b: str, *,
                     subset: bool = False) -> str:
    """'' when both lists hold the same keys per seed; else a one-line description of the first difference.

    ``subset``: ``a`` may cover fewer seeds than ``b`` (seeds run alone, checked against a batch).
    """
    kb = {r.seed: r.key() for r in b}
    for r in a:
        other = kb.get(r.seed)
        if other != r.key():
            return (f"seed {r.seed}: {what_a} gave {brief(r.key())} but {what_b} gave "
                    f"{brief(other) if other else 'nothing'}")
    if not subset and len(kb) != len(a):
        return f"{what_a} ran {len(a)} seeds but {what_b} ran {len(kb)}"
    return ""


def brief(key: tuple) -> str:
    _, status, reason, checks, h, t = key
    return f"{status} checks={checks} hash={h} t={t}" + (f" ({reason[:60]})" if reason else "")


# --- batching policy ------------------------------------------------------------------------

def batch_policy(policy: str | None = None) -> str:
    """The batching policy in force: ``policy``, else $CDC_ENV_BATCH_POLICY, else "self-checked".

    Raises ValueError (one line) for an unknown name.
    """
    name = policy if policy is not None else (os.environ.get(BATCH_POLICY_ENV) or BATCH_POLICIES[0])
    if name not in BATCH_POLICIES:
        src = "batch_policy" if policy is not None else BATCH_POLICY_ENV
        raise ValueError(f"{src}: unknown batching policy {name!r} (one of: {', '.join(BATCH_POLICIES)})")
    return name


# --- certificates ---------------------------------------------------------------------------

def cert_dir() -> Path:
    return cache_root() / "certificates"


def _mac_key() -> bytes:
    path = cache_root() / "certificate.key"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)  # first writer wins; never overwrite a key in use
        except FileExistsError:
            pass
        os.unlink(tmp)
    return path.read_bytes()


def _mac(body: dict) -> str:
    return hmac.new(_mac_key(), json.dumps(body, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def cert_path(task: Task, design_text: str, settle: bool) -> Path:
    subject = f"{task.id}|{_sha(design_text)}|{'settle' if settle else 'nosettle'}"
    return cert_dir() / f"{task.id}-{_sha(subject)[:24]}.json"


@dataclass
class CertCheck:
    ok: bool
    reason: str
    path: Path
    results: dict[int, tuple] = field(default_factory=dict)  # certified key per seed
    basis: str = ""  # "parity" (Icarus, Verilator alone and batched agreed) or "self-checked"
    readable: bool = False  # genuine and current for this patch (whether or not it covers the seeds)


def check_certificate(task: Task, design_text: str, seeds: list[int], *, settle: bool) -> CertCheck:
    """Is there a valid certificate covering ``seeds`` of this patch in this settling mode?"""
    path = cert_path(task, design_text, settle)
    if not path.is_file():
        return CertCheck(False, "no parity certificate for this patch and stage", path)
    try:
        doc = json.loads(path.read_text())
        body, mac = doc["body"], doc["mac"]
        ok_mac = isinstance(mac, str) and hmac.compare_digest(mac, _mac(body))
    except (OSError, ValueError, KeyError, TypeError):
        return CertCheck(False, "parity certificate refused: unreadable", path)
    if not ok_mac:
        return CertCheck(False, "parity certificate refused: tampered (its signature does not match)", path)
    now = fingerprint_components(task, design_text)
    changed = sorted(k for k in now.keys() | body["components"].keys()
                     if now.get(k) != body["components"].get(k))
    if changed or body.get("version") != CERT_VERSION:
        return CertCheck(False, "parity certificate refused: stale (changed since it was issued: "
                         + (", ".join(changed) or "certificate format") + ")", path)
    if body["task"] != task.id or body["settle"] != settle:
        return CertCheck(False, "parity certificate refused: issued for another task or settling mode", path)
    results = {int(k): tuple([int(k), *v]) for k, v in body["results"].items()}
    basis = body.get("basis", "parity")  # certificates from before the self-checked policy
    missing = [s for s in seeds if s not in results]
    if missing:
        return CertCheck(False, f"parity certificate does not cover {len(missing)} of the stage's seeds "
                         f"(e.g. {missing[0]})", path, basis=basis, readable=True)
    return CertCheck(True, f"parity certificate {path.name} ({basis}) issued {body['issued']}", path, results,
                     basis=basis, readable=True)


def issue_certificate(task: Task, design_text: str, results: list[SeedResult], *, settle: bool,
                      basis: str = "parity") -> Path:
    """Write a certificate for ``results`` (which the caller has seen agree in every mode).

    basis: "parity" (Icarus, Verilator alone and Verilator batched agreed; only this kind lets
    ``sim="auto"`` choose Verilator) or "self-checked" (a batched grade's own checks agreed).
    """
    body = {
        "version": CERT_VERSION,
        "basis": basis,
        "task": task.id,
        "settle": settle,
        "components": fingerprint_components(task, design_text),
        "issued": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": {str(r.seed): key_list(r)[1:] for r in results},
    }
    path = cert_path(task, design_text, settle)
    paths.write_atomic(path, json.dumps({"body": body, "mac": _mac(body)}, indent=1, sort_keys=True))
    return path


def prune_certificates(keep: int = CERT_KEEP) -> int:
    """Delete the least recently written certificates beyond ``keep``; return how many went.

    A pruned certificate costs nothing but speed: a re-grade of that patch checks itself again
    (self-checked) or runs seed by seed (certified), and ``parity --certify`` re-issues it.
    """
    try:
        entries = [e for e in os.scandir(cert_dir()) if e.name.endswith(".json")]
    except OSError:
        return 0
    if len(entries) <= keep:
        return 0
    def mtime(e: os.DirEntry) -> float:
        try:
            return e.stat().st_mtime
        except OSError:
            return 0.0
    gone = 0
    for e in sorted(entries, key=mtime)[: len(entries) - keep]:
        try:
            os.unlink(e.path)
            gone += 1
        except OSError:
            pass
    return gone
