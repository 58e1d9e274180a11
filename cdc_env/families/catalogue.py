"""Catalogues: the gated training variants of each family, the only generated variants served.

A catalogue is ``catalogues/<family>.jsonl``, one entry per line, minted deterministically from a
key (``DEFAULT_KEY``, public, for the shipped catalogues): entry ``i`` is
``F.draw(Draw(key, "F/train/i"), "train", "F_c<iiii>")`` calibrated by ``calibrate.calibrate``
(the family's search, then fresh draws) and gated by the full variant gate. An entry holds:

  index, id (``<family>@<index>``, the name every front end takes), task_id, params (the family's
  ``to_dict``), step (parameter draw, search index), files_sha256 (of the generated folder), gate
  (the gate row: counts per design, hidden/visible seeds, band, problems), sim (the simulator the
  gate ran on), code (``code_fingerprint``: the family's generator code, the trusted HDL models
  and testbench harness, the simulator version), key_fingerprint.

An index whose search is exhausted is written to ``<family>.rejected.jsonl`` (never served) so that
a resumed minting skips it too. Minting appends each finished entry at once (a kill loses only the
entries in flight; a restart skips done indices) and runs on a local process pool or on Ray.

``resolve("fifo@17")`` materialises an entry's task folder in the cache (``paths.cache_root()``,
``catalogue/<family>/<files_sha256[:16]>/``) after checking the regenerated files against
``files_sha256``; ``task.load_task`` calls it for any name with an ``@``, so every front end (env,
gym, HTTP, OpenEnv, verifiers, eval, gate-tasks) serves catalogue entries and nothing else
generated. ``stale(family)`` lists entries whose code fingerprint differs from the code's now
(re-mint those: the gate was measured on other code).
"""

from __future__ import annotations

import hashlib
import hmac
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
from . import get, names, write_files
from .calibrate import calibrate

DEFAULT_KEY = b"cdc-env public training catalogue v1"  # public: anyone re-mints the same entries
ID_RE = re.compile(r"^([a-z][a-z0-9_]*)@(\d{1,6})$")


def catalogue_dir() -> Path:
    return paths.data_root() / "catalogues"


def catalogue_file(family: str, root: Path | None = None) -> Path:
    return (Path(root) if root else catalogue_dir()) / f"{family}.jsonl"


def rejected_file(family: str, root: Path | None = None) -> Path:
    return (Path(root) if root else catalogue_dir()) / f"{family}.rejected.jsonl"


def key_fingerprint(key: bytes) -> str:
    return hmac.new(key, b"cdc-env catalogue key fingerprint v1", hashlib.sha256).hexdigest()[:16]


def files_sha256(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for rel, text in sorted(files.items()):
        h.update(f"{rel}\0{len(text.encode())}\0".encode() + text.encode())
    return h.hexdigest()


def code_fingerprint(family: str, sim: str = "icarus") -> str:
    """SHA-256 of what a gate row rests on: the family package's Python sources, the shared
    family code, the trusted HDL models and testbench harness, and the simulator's version."""
    import importlib

    from ..sim import get_simulator

    mod = importlib.import_module(get(family).__class__.__module__)
    pkg = Path(mod.__file__).parent
    parts = sorted(pkg.glob("*.py")) + [Path(__file__).parent / n for n in ("__init__.py", "calibrate.py")]
    h = hashlib.sha256()
    for f in parts:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(paths.primitives_bytes())
    for f in sorted(paths.tb_includes()):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    try:
        h.update(str(get_simulator(sim).version()).encode())
    except Exception:  # noqa: BLE001 -- a missing simulator: the fingerprint says so
        h.update(b"no simulator")
    return h.hexdigest()[:16]


def task_id(family: str, i: int) -> str:
    return f"{family}_c{i:04d}"


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:  # a line cut by a kill mid-write: the index is minted again
            if n != len(path.read_text(encoding="utf-8").splitlines()):
                raise CdcError(f"{path}:{n}: not a JSON line") from None
    return rows


def entries(family: str, root: Path | None = None) -> list[dict]:
    """A family's catalogue (empty when it has none), by index."""
    return sorted(_read_jsonl(catalogue_file(family, root)), key=lambda e: e["index"])


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


def lookup(name: str, root: Path | None = None) -> dict:
    """The entry named ``<family>@<index>``; a bad or unknown name raises CdcError."""
    m = ID_RE.match(name)
    if not m:
        raise CdcError(f"'{name[:60]}' is not a catalogue id (<family>@<index>, e.g. fifo@3)")
    family, i = m.group(1), int(m.group(2))
    get(family)
    for e in entries(family, root):
        if e["index"] == i:
            return e
    raise CdcError(f"{name} is not in the {family} catalogue (cdc-env tasks lists the catalogues; "
                   "an uncatalogued variant is never served)")


def materialise(entry: dict, cache: Path | None = None) -> Path:
    """The entry's task folder in the cache (written once; checked against ``files_sha256``)."""
    fam = get(entry["family"])
    files = fam.generate(fam.from_dict(entry["params"]))
    digest = files_sha256(files)
    if digest != entry["files_sha256"]:
        raise CdcError(f"{entry['id']}: the generator no longer writes the gated files (re-mint the "
                       f"{entry['family']} catalogue: cdc-env catalogue mint --family {entry['family']})")
    base = Path(cache) if cache else paths.cache_root() / "catalogue"
    folder = base / entry["family"] / digest[:16] / entry["task_id"]
    if folder.is_dir() and _folder_sha256(folder) != digest:  # changed in the cache: written again
        shutil.rmtree(folder, ignore_errors=True)
    if not (folder / "task.toml").is_file():
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=_mkdirs(folder.parent)))
        write_files(files, tmp / "t")
        try:
            os.replace(tmp / "t", folder)
        except OSError:  # another process materialised it first: same bytes
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _folder_sha256(folder: Path) -> str:
    try:
        return files_sha256({str(f.relative_to(folder)): f.read_text(encoding="utf-8")
                             for f in folder.rglob("*") if f.is_file()})
    except (OSError, UnicodeDecodeError):
        return ""


def _mkdirs(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def resolve(name: str, root: Path | None = None) -> Path:
    """The task folder of catalogue entry ``name`` (``fifo@17``), materialised in the cache."""
    return materialise(lookup(name, root))


def sample_ids(n: int, root: Path | None = None) -> list[str]:
    """Up to ``n`` entry ids of every catalogue, evenly spread over its entries (deterministic)."""
    out = []
    for f in names():
        es = entries(f, root)
        k = min(n, len(es))
        out += [es[(j * len(es)) // k]["id"] for j in range(k)] if k else []
    return out


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
