"""Task families: one small protocol per family, one registry line each.

A family turns a frozen parameter value (``Params``) into a task folder, and knows its parameter
regions: ``train`` (the committed tasks and the training catalogue draw from it) and ``heldout``
(disjoint from training; held-out sets are minted from a secret key and never committed).

Adding a family: a package ``cdc_env/families/<name>/`` whose ``__init__`` exposes ``FAMILY`` (an
object satisfying ``Family``) and one line in ``REGISTRY`` below.

Everything a family produces is a pure function of its parameters (text only: no time, no
randomness); every random choice is made by a ``Draw`` handed in by the caller (the catalogue and
the held-out minting derive it from their key), so an entry is reproducible on any machine.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from ..errors import CdcError

Region = Literal["train", "heldout"]
T = TypeVar("T")


class Draw:
    """A deterministic stream of integers from HMAC-SHA256(key, label|counter)."""

    def __init__(self, key: bytes, label: str) -> None:
        self.key, self.label, self.n = key, label, 0

    def below(self, n: int) -> int:
        """An integer in 0..n-1."""
        if n < 1:
            raise ValueError("below(n) needs n >= 1")
        self.n += 1
        d = hmac.new(self.key, f"{self.label}|{self.n}".encode(), hashlib.sha256).digest()
        return int.from_bytes(d[:8], "big") % n

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def chance(self, num: int, den: int) -> bool:
        """True with probability num/den."""
        return self.below(den) < num

    def child(self, label: str) -> Draw:
        """An independent stream for a sub-choice (its own label)."""
        return Draw(self.key, f"{self.label}/{label}")


class Family(Protocol):
    """What every family provides. ``Params`` values are frozen dataclasses with an ``id``."""

    name: str  # registry name, also task.toml's ``family`` of its tasks
    title: str  # one line for ``cdc-env tasks``

    def training(self) -> tuple[Any, ...]:
        """The committed training variants: ``tasks/<p.id>/`` is exactly ``generate(p)``."""

    def generate(self, p: Any) -> dict[str, str]:
        """The task folder's files (relative path -> text) of ``p``."""

    def to_dict(self, p: Any) -> dict:
        """``p`` as JSON-ready data; ``from_dict(to_dict(p)) == p``."""

    def from_dict(self, d: dict) -> Any:
        """Parameters from ``to_dict``'s output; a bad value raises CdcError naming it."""

    def draw(self, d: Draw, region: Region, vid: str) -> Any:
        """One parameter value of ``region`` with id ``vid``, every choice taken from ``d``."""

    def region_of(self, p: Any) -> Region | None:
        """Which region ``p`` lies in (None: neither, e.g. a hand-made value)."""

    def search(self, p: Any) -> Iterator[Any]:
        """Calibration steps for the variant gate, in order (``p`` first): stimulus and run-length
        knobs the gate may retune while the design stays what ``draw`` chose. The first step whose
        visible seeds can be chosen and whose gate holds is kept."""


# name -> module exposing FAMILY. One line per family.
# (handshake and event are handwritten single tasks under tasks/, not generator families.)
REGISTRY: dict[str, str] = {
    "dataen": "cdc_env.families.dataen",
    "fifo": "cdc_env.families.fifo",
    "reconv": "cdc_env.families.reconv",
    "reset": "cdc_env.families.rst",
}


def names() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> Family:
    """The family called ``name``; an unknown name raises CdcError listing the known ones."""
    if name not in REGISTRY:
        raise CdcError(f"unknown family '{name[:60]}' (known: {', '.join(names()) or 'none'})")
    return importlib.import_module(REGISTRY[name]).FAMILY


def write_files(files: dict[str, str], out: Path, *, force: bool = False) -> Path:
    """Write a generated task folder ({relative path: text}) into ``out`` (created); refuse to mix
    with other files unless ``force`` (then files the generator no longer makes are removed)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise CdcError(f"{out} exists and is not empty (use --force to overwrite)")
    if out.exists() and force:
        stale = {str(f.relative_to(out)) for f in out.rglob("*") if f.is_file()} - set(files)
        for rel in stale:
            (out / rel).unlink()
    for rel, text in files.items():
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    return out


def task_files(module: str, manifest: str, testbench: str, bug_report: str, design) -> dict[str, str]:
    """A generated task folder's files, laid out the same way by every family: ``task.toml``,
    ``tb.v``, ``BUG.md``, the editable ``<module>.v`` (``design("defect")``) and its
    ``reference/`` and ``clean/`` versions (``design(kind)`` gives each text)."""
    ed = f"{module}.v"
    return {
        "task.toml": manifest,
        "tb.v": testbench,
        "BUG.md": bug_report,
        ed: design("defect"),
        f"reference/{ed}": design("reference"),
        f"clean/{ed}": design("clean"),
    }


def differs(files: dict[str, str], folder: Path) -> list[str]:
    """Files of ``folder`` that differ from ``files`` (a generator's output), or are extra."""
    folder = Path(folder)
    found = folder.rglob("*") if folder.is_dir() else []
    have = {str(f.relative_to(folder)): f for f in found if f.is_file()}
    bad = [rel for rel, text in files.items() if rel not in have or have[rel].read_text() != text]
    bad += [rel for rel in have if rel not in files]
    return sorted(bad)


def params_json(p: Any, omit_defaults: dict[str, Any] | None = None) -> str:
    """A parameter dataclass as sorted JSON; fields equal to their ``omit_defaults`` value are
    left out (so fields added later leave older variants' manifests as they were)."""
    d = asdict(p)
    for key, default in (omit_defaults or {}).items():
        if d[key] == default:
            del d[key]
    return json.dumps(d, sort_keys=True)


def params_from_dict(cls: type[T], d: dict) -> T:
    """``cls(**d)`` with JSON lists back as tuples (every sequence field of a parameter set is a tuple)."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def gate_tail(stimulus: dict[str, tuple[int, int]], band: tuple[int, int]) -> str:
    """The end of a generated task.toml: the per-seed stimulus ranges and the gate's band."""
    stim = "".join(f"{k} = [{lo}, {hi}]\n" for k, (lo, hi) in stimulus.items())
    return f"[stimulus]\n{stim}\n[gate]\ndefect_hidden_fail = [{band[0]}, {band[1]}]\n"


class DataclassFamily:
    """The members a family shares when its parameters are one frozen dataclass (``params``) with
    ``to_json`` and ``check``: ``to_dict``, ``from_dict`` (a bad value raises CdcError)."""

    name: str
    params: type

    def to_dict(self, p: Any) -> dict:
        return json.loads(p.to_json())

    def from_dict(self, d: dict) -> Any:
        try:
            p = params_from_dict(self.params, d)
        except TypeError as exc:
            raise CdcError(f"not a {self.name} parameter set: {exc}") from None
        p.check()
        return p
