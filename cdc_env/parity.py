"""Parity between simulators and between run modes, and the parity certificates that allow batching.

Three checks, all on ``SeedResult.key()`` (seed, status, reason, checks, trace hash, sim time):

* **Simulator parity** (``compare_design``): Icarus one process per seed, Verilator one process
  per seed, and Verilator batched must agree on every seed. ``cdc-env parity`` prints it as a
  table; a row is a (task, design, settling mode).
* **Certificates** (``certify``/``check_certificate``): a certificate says "for this task, this
  patch and this settling mode, these seeds gave these results on Icarus, on Verilator one at a
  time and on Verilator batched". It carries the fingerprint of everything the results depend
  on (``fingerprint_components``: the runner, the synchronizer models, the testbench harness,
  the task's testbench and sources and manifest, the patch, both simulators' versions) and an
  HMAC with a key kept in the cache directory. A certificate whose MAC does not match is
  *tampered*; one whose fingerprint differs from today's sources is *stale*; both are refused.
* **The batched grade's own checks** (``run_stage_batched``): a stage runs batched, then again
  batched in reverse order, then two seeds chosen by a secure RNG alone. Every result must equal
  the reverse run and the lone runs (and the certified result, where a certificate exists).
  Anything else -- and any batch that does not complete -- makes every seed run on its own, with
  the reason. Two policies decide when a stage may try (``BATCH_POLICIES``; docs/parity.md):
  ``"certified"`` (the old rule) only under a valid certificate for the exact patch;
  ``"self-checked"`` (the default) also without one, for a design that calls no system task
  that could carry state from one seed to the next in one process (``stateful_constructs``), and
  it issues a certificate (basis ``self-checked``) as a by-product, so a re-grade also checks
  against it. ``CDC_ENV_BATCH_POLICY`` sets the default.

Certificates live in ``$CDC_ENV_CACHE/certificates`` (default ~/.cache/cdc_env). The MAC keeps a
certificate from being edited by hand or copied onto another patch; it does not protect against
someone who can read the key file (the grader's own account).

Not covered here: which simulator a grade uses (grade.py / cost.py) and the cost of a stage.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import paths, verilator
from .proc import Limits
from .seeds import hidden_seeds, plan_seed, visible_seeds
from .simulators import SEED_LIMITS, Build, SeedResult, get_simulator
from .task import Task

BATCH_MIN_SEEDS = 24
CERT_VERSION = 1
BATCH_POLICIES = ("self-checked", "certified")
BATCH_POLICY_ENV = "CDC_ENV_BATCH_POLICY"
CERT_KEEP = 4096  # certificates kept in the cache; a self-checked grade prunes the oldest beyond it
Progress = Callable[[str, int, int], None]


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def runner_fingerprint() -> str:
    """The Verilator runner: C++ main, this backend's code, flags, Verilator and compiler versions."""
    parts = [verilator.harness_file().read_bytes(), inspect.getsource(verilator).encode(),
             " ".join(verilator.VERILATOR_FLAGS).encode(), " ".join(verilator.CXX_DEFINES).encode(),
             verilator.CXX_OPT.encode(), verilator.verilator_version().encode(),
             verilator.compiler_version().encode()]
    return _sha(b"\0".join(parts))


def fingerprint_components(task: Task, design_text: str) -> dict[str, str]:
    """Everything a seed's result depends on, hashed part by part (so a refusal can name the part)."""
    src = b"\0".join(name.encode() + b"\0" + task.path(name).read_bytes() for name in sorted(task.sources))
    return {
        "runner": runner_fingerprint(),
        "icarus": get_simulator("icarus").version(),
        "primitives": _sha(paths.primitives_file().read_bytes()),
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
            return (f"seed {r.seed}: {what_a} gave {_brief(r.key())} but {what_b} gave "
                    f"{_brief(other) if other else 'nothing'}")
    if not subset and len(kb) != len(a):
        return f"{what_a} ran {len(a)} seeds but {what_b} ran {len(kb)}"
    return ""


def _brief(key: tuple) -> str:
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


# The system functions a design may call and still batch under the self-checked policy: the
# static gate's allowlist of pure ones (gate/policy.py PURE_SYSCALLS; a test keeps the two equal),
# which this check repeats so that it holds with the gate off. Everything else keeps a design out:
# file I/O ($fopen, $fwrite, $fread, $readmem*, ...), $system, the process-wide random state
# ($random, $urandom, $dist_*: Verilator keeps it per thread, not per context), time ($time,
# $realtime), output ($display, ...: a seed's output limit applies to the whole batch) and any
# name not listed.
_STATELESS_SYSCALLS = frozenset({"clog2", "signed", "unsigned", "bits", "size", "high", "low", "left",
                                 "right", "countones", "onehot", "onehot0"})
_SYSCALL = re.compile(r"\$([A-Za-z_][A-Za-z0-9_$]*)")
_CLASS = re.compile(r"\b(class|chandle|import|export)\b")


def stateful_constructs(design_text: str) -> list[str]:
    """The constructs in a design (comments and strings aside) that keep it out of self-checked batching.

    Classes (their static members), chandles and DPI ("import"/"export") are listed too; the
    build refuses DPI anyway (verilator.own_code).
    """
    bare = verilator._STRINGS_COMMENTS.sub(" ", design_text)
    found = []
    for m in _SYSCALL.finditer(bare):
        name = m.group(1)
        if name not in _STATELESS_SYSCALLS and f"${name}" not in found:
            found.append(f"${name}")
    for m in _CLASS.finditer(bare):
        if m.group(1) not in found:
            found.append(m.group(1))
    return found


# --- certificates ---------------------------------------------------------------------------

def cert_dir() -> Path:
    return verilator.cache_root() / "certificates"


def _mac_key() -> bytes:
    path = verilator.cache_root() / "certificate.key"
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp" + secrets.token_hex(4))
    tmp.write_text(json.dumps({"body": body, "mac": _mac(body)}, indent=1, sort_keys=True))
    tmp.replace(path)
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


# --- comparing the simulators ----------------------------------------------------------------

@dataclass
class ParityRow:
    task: str
    design: str
    settle: bool
    seeds: int
    identical: int  # seeds where all three runs agree
    icarus_vs_verilator: list[str]  # descriptions of seeds that differ
    batched_vs_single: list[str]
    icarus_fail: int  # seeds that did not pass on Icarus (so the row shows fail paths too)
    cpu_s: dict[str, float]
    build: str = "pass"
    certificate: str = ""

    @property
    def ok(self) -> bool:
        return self.build == "pass" and self.identical == self.seeds

    def as_dict(self) -> dict:
        return {"task": self.task, "design": self.design, "settle": self.settle, "seeds": self.seeds,
                "identical": self.identical, "icarus_vs_verilator": self.icarus_vs_verilator,
                "batched_vs_single": self.batched_vs_single, "icarus_fail": self.icarus_fail,
                "cpu_s": self.cpu_s, "build": self.build, "certificate": self.certificate, "ok": self.ok}


DESIGNS = ("reference", "defective", "clean")


def design_text(task: Task, which: str) -> str:
    texts = {"reference": task.reference_text, "defective": task.defective_text, "clean": task.clean_text}
    return texts[which]


def stage_seed_list(task: Task, which: str | int | list[int]) -> list[int]:
    """'all' (visible + every hidden seed), 'visible', an int N (visible + first N hidden), or a list."""
    if isinstance(which, list):
        return which
    if which == "all":
        return visible_seeds(task) + hidden_seeds(task)
    if which == "visible":
        return visible_seeds(task)
    return visible_seeds(task) + hidden_seeds(task, int(which))


def compare_design(task: Task, text: str, seeds: list[int], *, settle: bool, design: str = "patch",
                   sandbox: bool = True, jobs: int | None = None, certify: bool = False,
                   progress: Progress | None = None) -> ParityRow:
    """Run ``seeds`` on Icarus, Verilator alone and Verilator batched; compare every seed.

    With ``certify`` and full agreement, issue a certificate for these seeds.
    """
    from .grade import run_seeds  # noqa: PLC0415 -- grade imports this module

    icarus, vl = get_simulator("icarus"), get_simulator("verilator")
    files = {task.editable: text, **{rel: task.text(rel) for rel in task.sources}}
    row = ParityRow(task.id, design, settle, len(seeds), 0, [], [], 0, {})
    work = Path(tempfile.mkdtemp(prefix="cdc-parity-"))
    try:
        bi = icarus.build(task, files, work / "icarus", sandbox=sandbox)
        bv = vl.build(task, files, work / "verilator", sandbox=sandbox)
        row.cpu_s = {"icarus_build": round(bi.cpu_s, 3), "verilator_build": round(bv.cpu_s, 3)}
        if bi.status != bv.status or bi.status != "pass":
            row.build = f"icarus {bi.status}, verilator {bv.status}"
            return row
        tag = f"{task.id} {design} settle={'on' if settle else 'off'}"
        ri = run_seeds(icarus, bi, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                       progress=progress, stage=f"{tag} icarus")
        rv = run_seeds(vl, bv, task, seeds, settle=settle, sandbox=sandbox, jobs=jobs,
                       progress=progress, stage=f"{tag} verilator")
        try:
            rb = vl.run_batch(bv, [plan_seed(task, s) for s in seeds], settle=settle, sandbox=sandbox)
            batched, batch_cpu = rb.results, rb.cpu_s
        except verilator.BatchIncomplete as exc:
            batched, batch_cpu = [], 0.0
            row.batched_vs_single.append(f"batch incomplete: {exc}")
        row.cpu_s.update(icarus=round(sum(r.cpu_s for r in ri), 3),
                         verilator=round(sum(r.cpu_s for r in rv), 3), verilator_batched=round(batch_cpu, 3))
        kv = {r.seed: r.key() for r in rv}
        kb = {r.seed: r.key() for r in batched}
        for r in ri:
            same_sim = kv.get(r.seed) == r.key()
            same_batch = kb.get(r.seed) == kv.get(r.seed)
            if not same_sim:
                row.icarus_vs_verilator.append(
                    f"seed {r.seed}: icarus {_brief(r.key())} / verilator "
                    f"{_brief(kv[r.seed]) if r.seed in kv else 'nothing'}")
            if batched and not same_batch:
                row.batched_vs_single.append(
                    f"seed {r.seed}: batched {_brief(kb[r.seed]) if r.seed in kb else 'nothing'}"
                    f" / alone {_brief(kv[r.seed])}")
            row.identical += same_sim and same_batch and bool(batched)
            row.icarus_fail += r.status != "pass"
        if certify and row.ok:
            row.certificate = issue_certificate(task, text, ri, settle=settle).name
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- the batched stage of a grade ------------------------------------------------------------

@dataclass
class StageRun:
    results: list[SeedResult]
    mode: str  # "one-at-a-time" | "batched"
    reason: str
    cpu_s: float
    max_rss_kb: int
    policy: str = ""  # the batching policy in force ("" where batching was not considered)


def run_stage_batched(sim: verilator.Verilator, build: Build, task: Task, design_text: str,
                      seeds: list[int], *, settle: bool, sandbox: bool = True,
                      cert: CertCheck | None = None, rng: secrets.SystemRandom | None = None,
                      limits: Limits = SEED_LIMITS, policy: str = "certified",
                      ) -> tuple[list[SeedResult] | None, str, float, int]:
    """Batched run + reverse-order run + two seeds alone, checked against each other (and a certificate).

    ``policy`` "certified": only under a valid certificate, and the results must equal it.
    "self-checked": a valid certificate is checked against where there is one; without one the
    stage still batches, unless the design uses a construct that could carry state between
    seeds in one process (``stateful_constructs``) or the sandbox is off (a batch's scratch is
    then not private), and on agreement a certificate with basis "self-checked" is issued.
    Returns (results or None when the batch must not be trusted, reason, CPU spent, peak RSS).
    """
    cert = cert or check_certificate(task, design_text, seeds, settle=settle)
    if policy == "certified" and not cert.ok:
        return None, cert.reason, 0.0, 0
    if policy == "certified" and cert.basis != "parity":  # the old rule: Icarus must have agreed
        return None, (f"the certificate is {cert.basis}, and the certified policy needs one from "
                      "parity --certify or cost"), 0.0, 0
    if policy == "self-checked" and not cert.ok:
        risky = stateful_constructs(design_text)
        if risky:
            return None, (f"self-checked batching refused: the design uses {', '.join(risky[:4])} "
                          "(state that could pass between seeds in one process)"), 0.0, 0
        if not sandbox:
            return None, "self-checked batching needs the sandbox (each batch's private /tmp)", 0.0, 0
    plans = [plan_seed(task, s) for s in seeds]
    cpu, rss = 0.0, 0
    # A whole batch runs under the limits of one seed alone: no seed can use more time, memory,
    # processes or output in a batch than it may alone (a batch that needs more is incomplete,
    # and every seed then runs alone under its own limits).
    try:
        fwd = sim.run_batch(build, plans, settle=settle, sandbox=sandbox, tag="batch", limits=limits)
        cpu, rss = cpu + fwd.cpu_s, max(rss, fwd.max_rss_kb)
        rev = sim.run_batch(build, plans[::-1], settle=settle, sandbox=sandbox, tag="batch-rev",
                            limits=limits)
        cpu, rss = cpu + rev.cpu_s, max(rss, rev.max_rss_kb)
    except verilator.BatchIncomplete as exc:
        proc = exc.proc
        return None, f"batched run incomplete ({exc})", cpu + (proc.cpu_s if proc else 0.0), rss
    rng = rng or secrets.SystemRandom()
    lone_seeds = rng.sample(seeds, 2)
    lone = [sim.run_seed(build, plan_seed(task, s), settle=settle, sandbox=sandbox, limits=limits)
            for s in lone_seeds]
    cpu += sum(r.cpu_s for r in lone)
    rss = max([rss] + [r.max_rss_kb for r in lone])
    diff = (first_difference(fwd.results, rev.results, "the batched run", "the reverse-order batched run")
            or first_difference(lone, fwd.results, "the seed alone", "the batched run", subset=True))
    if not diff and cert.ok:
        certified = [SeedResult(seed=k[0], status=k[1], reason=k[2], checks=k[3], trace_hash=k[4],
                                sim_time_ps=k[5]) for k in (cert.results[s] for s in seeds)]
        diff = first_difference(fwd.results, certified, "the batched run", "the certificate")
    if diff:
        return None, f"batched results disagreed ({diff})", cpu, rss
    checks = f"reverse-order re-run and seeds {lone_seeds[0]}, {lone_seeds[1]} alone agreed"
    if cert.ok:
        return fwd.results, f"{cert.reason}; {checks}", cpu, rss
    issued = ""
    if not cert.readable:  # never replace a genuine certificate that covers other seeds
        issued = "; certificate " + issue_certificate(task, design_text, fwd.results, settle=settle,
                                                      basis="self-checked").name + " issued"
        if rng.random() < 1 / 64:  # every first grade issues one: keep the folder bounded, cheaply
            prune_certificates()
    return fwd.results, f"self-checked ({cert.reason}): {checks}{issued}", cpu, rss
