"""Minting catalogue entries (catalogue.py says what an entry is) and checking them for staleness.

``mint(family, count)`` mints indices 0..count-1, skipping those already in the catalogue or its
rejected file, on a local process pool (``jobs`` processes) or on Ray (``jobs`` tasks in flight;
the package is shipped to the workers as grade-batch ships it), with a tqdm bar. ``mint_one`` is
the unit of work: deterministic from (family, key, index), so any machine makes the same entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from concurrent import futures as cf
from pathlib import Path

from .. import paths
from ..errors import CdcError
from . import get, names
from .calibrate import calibrate
from .catalogue import (
    DEFAULT_KEY,
    _mkdirs,
    _read_jsonl,
    catalogue_dir,
    catalogue_file,
    entries,
    files_sha256,
    key_fingerprint,
    rejected_file,
    task_id,
)


def elaborated_models(family: str) -> list[Path]:
    """The trusted HDL files a build of the family's designs elaborates: each file defining a module
    that a training variant's files name, and cdc_reset.v (every asynchronously reset flop is mapped
    to its model). Both simulators elaborate from the testbench's top alone (``-s`` /
    ``--top-module``), so a model no design names takes no part in a build's behaviour, and adding
    one (a new family's primitive) leaves the other families' entries current."""
    fam = get(family)
    text = "\n".join(t for p in fam.training() for t in fam.generate(p).values())
    out = []
    for f in paths.primitive_files():
        modules = re.findall(r"^\s*module\s+(\w+)", f.read_text(), re.M)
        if f.name == "cdc_reset.v" or any(re.search(rf"\b{m}\b", text) for m in modules):
            out.append(f)
    return out


def code_fingerprint(family: str, sim: str = "icarus") -> str:
    """SHA-256 of what a gate row rests on: the family package's Python sources (its generator),
    the trusted HDL models its builds elaborate (``elaborated_models``), the testbench harness and
    the simulator's version. The shared family
    code (``families/__init__.py``, which a new family's registry line changes, and
    ``calibrate.py``) is left out: what it contributes to a served entry is its parameters and
    files, which the entry records and ``files_sha256`` pins."""
    import importlib

    from ..sim import get_simulator

    mod = importlib.import_module(get(family).__class__.__module__)
    pkg = Path(mod.__file__).parent
    parts = sorted(pkg.glob("*.py"))
    h = hashlib.sha256()
    for f in parts:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(paths.primitives_bytes(elaborated_models(family)))
    for f in sorted(paths.tb_includes()):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    try:
        h.update(str(get_simulator(sim).version()).encode())
    except Exception:  # noqa: BLE001 -- a missing simulator: the fingerprint says so
        h.update(b"no simulator")
    return h.hexdigest()[:16]


def summary(root: Path | None = None) -> list[dict]:
    """Each registered family's catalogue: size, rejected indices, stale entries."""
    out = []
    for f in names():
        es = entries(f, root)
        code = {sim: code_fingerprint(f, sim) for sim in {e.get("sim", "icarus") for e in es}}
        out.append({"family": f, "entries": len(es), "rejected": len(_read_jsonl(rejected_file(f, root))),
                    "stale": sum(e.get("code") != code[e.get("sim", "icarus")] for e in es),
                    "file": str(catalogue_file(f, root).relative_to(paths.data_root()))
                    if root is None else str(catalogue_file(f, root))})
    return out


def stale(family: str, root: Path | None = None) -> list[str]:
    """Entries whose code fingerprint differs from the code's now (their gate ran on other code)."""
    es = entries(family, root)
    code = {sim: code_fingerprint(family, sim) for sim in {e.get("sim", "icarus") for e in es}}
    return [e["id"] for e in es if e.get("code") != code[e.get("sim", "icarus")]]


# ---------------------------------------------------------------------- minting

def mint_one(family: str, key: bytes, i: int, gate: bool = True, sim: str = "icarus") -> dict:
    """Entry ``i`` (or a rejection row: ``{"index": i, "rejected": ...}``). Runs anywhere: a pool
    process or a Ray worker; deterministic from (family, key, i)."""
    fam = get(family)
    vid = task_id(family, i)
    found = calibrate(fam, key, f"{family}/train/{i}", "train", vid, gate=gate, sim=sim)
    if found is None:
        return {"index": i, "family": family, "rejected": "no step of the search passes the variant gate"}
    q, row, step = found
    if fam.region_of(q) != "train":
        raise CdcError(f"{vid}: the family's training draw is outside its training region")
    files = fam.generate(q)
    return {"index": i, "id": f"{family}@{i}", "family": family, "task_id": vid, "params": fam.to_dict(q),
            "step": list(step), "files_sha256": files_sha256(files), "gate": row if gate else None,
            "gated": gate, "sim": sim, "code": code_fingerprint(family, sim),
            "key_fingerprint": key_fingerprint(key)}


def _append(path: Path, row: dict) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def done_indices(family: str, root: Path | None = None) -> set[int]:
    return {e["index"] for e in _read_jsonl(catalogue_file(family, root))} | \
        {e["index"] for e in _read_jsonl(rejected_file(family, root))}


def _tidy(path: Path) -> None:
    """Drop a last line cut by a kill (so appends start on a fresh line)."""
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            path.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")


def mint(family: str, count: int, *, key: bytes = DEFAULT_KEY, root: Path | None = None,
         backend: str = "pool", jobs: int = 1, gate: bool = True, sim: str = "icarus",
         progress: bool = True, on_entry: Callable[[dict], None] | None = None,
         ray_address: str = "local") -> dict:
    """Mint indices 0..count-1 of ``family``'s catalogue into ``root`` (default: the repository's
    catalogues/), skipping indices already done; return counts."""
    get(family)
    if count < 1 or jobs < 1:
        raise CdcError("--count and --jobs must be at least 1")
    folder = _mkdirs(Path(root) if root else catalogue_dir())
    cat, rej = catalogue_file(family, folder), rejected_file(family, folder)
    for p in (cat, rej):
        _tidy(p)
    done = done_indices(family, folder)
    todo = [i for i in range(count) if i not in done]
    from tqdm import tqdm

    bar = tqdm(total=count, initial=count - len(todo), desc=f"catalogue {family}", unit="variant",
               disable=not progress, dynamic_ncols=True)
    tally = {"entries": 0, "rejected": 0, "skipped": count - len(todo)}

    def finish(row: dict) -> None:
        _append(rej if "rejected" in row else cat, row)
        tally["rejected" if "rejected" in row else "entries"] += 1
        bar.update(1)
        if on_entry:
            on_entry(row)

    try:
        for row in _run(family, key, todo, backend=backend, jobs=jobs, gate=gate, sim=sim,
                        ray_address=ray_address):
            finish(row)
    finally:
        bar.close()
    return tally


def _run(family: str, key: bytes, todo: list[int], *, backend: str, jobs: int, gate: bool, sim: str,
         ray_address: str) -> Iterable[dict]:
    if not todo:
        return
    if backend == "pool":
        if jobs == 1:
            for i in todo:
                yield mint_one(family, key, i, gate, sim)
            return
        with cf.ProcessPoolExecutor(jobs) as pool:
            futs = [pool.submit(mint_one, family, key, i, gate, sim) for i in todo]
            for f in cf.as_completed(futs):
                yield f.result()
        return
    if backend != "ray":
        raise CdcError(f"unknown backend '{backend[:20]}' (pool or ray)")
    yield from _run_ray(family, key, todo, jobs=jobs, gate=gate, sim=sim, address=ray_address)


def _run_ray(family: str, key: bytes, todo: list[int], *, jobs: int, gate: bool, sim: str,
             address: str) -> Iterable[dict]:
    """One Ray task per index, at most ``jobs`` in flight; the package is shipped to the workers
    the way grade-batch ships it (backends.ray_runtime_env)."""
    try:
        import ray
    except ImportError:
        raise CdcError("--backend ray needs Ray: pip install 'cdc_env[ray]'") from None
    import logging

    from ..backends import LOCAL_SYSTEM_CONFIG, ray_runtime_env

    tmp = tempfile.mkdtemp(prefix="cdc-ray-cat-")
    started = False
    try:
        if not ray.is_initialized():
            env = ray_runtime_env(Path(tmp))
            kw = {"logging_level": logging.WARNING, "log_to_driver": False, "runtime_env": env}
            try:
                if address == "local":
                    ray.init(include_dashboard=False, num_cpus=jobs, _system_config=LOCAL_SYSTEM_CONFIG, **kw)
                else:
                    ray.init(address=address, **kw)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise CdcError(f"cannot start or join Ray at {address}: {str(exc).splitlines()[0]}") from None
            started = True
        remote = ray.remote(num_cpus=1, max_retries=2)(mint_one)
        pending, queue = [], list(todo)
        while queue or pending:
            while queue and len(pending) < jobs:
                pending.append(remote.remote(family, key, queue.pop(0), gate, sim))
            ready, pending = ray.wait(pending, num_returns=1)
            yield ray.get(ready[0])
    finally:
        if started:
            ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
