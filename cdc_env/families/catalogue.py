"""Catalogues: the gated training variants of each family, the only generated variants served.

A catalogue is ``catalogues/<family>.jsonl``, one entry per line, minted deterministically from a
key (``DEFAULT_KEY``, public, for the shipped catalogues): entry ``i`` is
``F.draw(Draw(key, "F/train/i"), "train", "F_c<iiii>")`` calibrated by ``calibrate.calibrate``
(the family's search, then fresh draws) and gated by the full variant gate. An entry holds:

  index, id (``<family>@<index>``, the name every front end takes), task_id, params (the family's
  ``to_dict``), step (parameter draw, search index), files_sha256 (of the generated folder), gate
  (the gate row: counts per design, hidden/visible seeds, band, problems), sim (the simulator the
  gate ran on), code (``mint.code_fingerprint``: the family's generator code, the trusted HDL models
  and testbench harness, the simulator version), key_fingerprint.

An index whose search is exhausted is written to ``<family>.rejected.jsonl`` (never served) so that
a resumed minting skips it too. Minting (``mint.py``) appends each finished entry at once (a kill
loses only the entries in flight; a restart skips done indices) and runs on a local process pool
or on Ray. This module only reads and serves (``task.load_task`` imports it: no simulation here).

``resolve("fifo@17")`` materialises an entry's task folder in the cache (``paths.cache_root()``,
``catalogue/<family>/<files_sha256[:16]>/``) after checking the regenerated files against
``files_sha256``; ``task.load_task`` calls it for any name with an ``@``, so every front end (env,
gym, HTTP, OpenEnv, verifiers, eval, gate-tasks) serves catalogue entries and nothing else
generated. ``mint.stale(family)`` lists entries whose code fingerprint differs from the code's now
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
from pathlib import Path

from .. import paths
from ..errors import CdcError
from . import get, names, write_files

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
