"""Task model: one folder per task with a ``task.toml`` manifest.

A task holds the design (the editable file and any read-only sources), the hidden testbench, the
bug report the agent reads, a reference fix and the clean design, the clock domains, and the seed
configuration (see seeds.py). Public tasks live under ``tasks/``; any other folder with a
manifest (a held-out variant, say) is loaded by path and never listed.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import paths
from .errors import CdcError

DESIGN_KINDS = ("defective", "reference", "clean")
CONTROL_SUFFIX = "_control"  # a family's no-bug control is the task "<family>_control"


@dataclass(frozen=True)
class Domain:
    name: str  # "a" or "b": the testbench's clk_a/rst_an or clk_b/rst_bn
    clock: str  # the top module's clock port
    reset: str  # the top module's active-low reset port ("": none; see Task.async_resets)


@dataclass(frozen=True)
class SeedConfig:
    fast: str  # "a", "b" or "either"
    ratio_min: float
    ratio_max: float
    low_band: float  # share of seeds drawn from ratios [1, 2)
    run_slow_cycles: int
    hidden_count: int
    visible: tuple[int, ...]
    # Ratio excursions (hidden seeds only, cdc_env/sim/seeds.py): the fast side faster than
    # ratio_max, up to excursion_max, and, for fast "a"/"b", the other side the faster one, up to
    # excursion_other. 0: none of that kind. Each task's BUG.md says why they are fair.
    excursion_max: float = 0.0
    excursion_other: float = 0.0


@dataclass(frozen=True)
class Task:
    id: str
    family: str
    title: str
    dir: Path
    top: str
    editable: str
    testbench: str
    tb_top: str
    bug_report: str
    reference: str
    clean: str
    domains: tuple[Domain, ...]
    seeds: SeedConfig
    stimulus: dict[str, tuple[int, int]] = field(default_factory=dict)
    sources: tuple[str, ...] = ()  # read-only design sources besides the editable file
    cross_memories: tuple[str, ...] = ()  # memories allowed to be written/read across domains
    heldout: bool = False
    # Whether the design may hold words in the cdc_ram storage primitive (gate rule CDC-MEM). None:
    # the task declares it by its own design -- storage exactly when the shipped design uses cdc_ram.
    storage: bool | None = None
    # Whether the design may use the cdc_hold_bus qualified word (gate rule CDC-QUAL). None: the task
    # declares it by its own design -- provided exactly when the shipped design uses cdc_hold_bus.
    hold: bool | None = None
    # A no-bug control (control_of): the family's clean design is served instead of the defect, with
    # a review request instead of the bug report. ``base`` is the task it is derived from, ``given``
    # the file served as the editable one (default: the editable file itself).
    control: bool = False
    base: str | None = None
    given: str | None = None
    # Active-low reset inputs asynchronous to both clocks (the reset-domain family): each domain
    # makes its own reset from them through cdc_sync_reset (gate rule CDC-RESET).
    async_resets: tuple[str, ...] = ()

    def path(self, rel: str) -> Path:
        return self.dir / rel

    def text(self, rel: str) -> str:
        return self.path(rel).read_text(encoding="utf-8")

    @property
    def defective_text(self) -> str:
        """The editable file as it ships (for a control: the defect of the task it derives from)."""
        return self.text(self.editable)

    @property
    def given_text(self) -> str:
        """The design the agent is given to start from: the defect, or for a control the clean design."""
        return self.text(self.given or self.editable)

    @property
    def reference_text(self) -> str:
        return self.text(self.reference)

    @property
    def clean_text(self) -> str:
        return self.text(self.clean)

    @property
    def bug_report_text(self) -> str:
        """The bug report file as written. What the agent reads -- at a rung, and for a no-bug
        control the review request -- is ``cdc_env.rungs.report(task, rung)``."""
        return self.text(self.bug_report)

    def design(self, kind: str) -> str:
        """The text of one of the task's designs: ``defective`` (the design the agent is given),
        ``reference`` (the fix) or ``clean`` (the design without the bug)."""
        files = {"defective": self.given or self.editable, "reference": self.reference, "clean": self.clean}
        if kind not in files:
            raise CdcError(f"unknown design kind '{kind}' (known: {', '.join(DESIGN_KINDS)})")
        return self.text(files[kind])

    def files(self, text: str) -> dict[str, str]:
        """The design files the gate and the simulators take: ``text`` as the editable file (a
        submission, or one of ``design(kind)``) plus the task's read-only sources."""
        return {self.editable: text, **{rel: self.text(rel) for rel in self.sources}}


def _req(table: dict, key: str, where: Path):
    if key not in table:
        raise CdcError(f"{where}: missing key '{key}'")
    return table[key]


def _is_file(path: Path) -> bool:
    """Path.is_file, False for a name the OS cannot even look up (a component over 255 bytes,
    a path over PATH_MAX, a NUL byte) instead of raising: such a name is an unknown task."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def load_task(name_or_path: str | Path) -> Task:
    """Load a task by public id (``handshake``), a family's no-bug control (``handshake_control``), a
    catalogue entry (``fifo@17``: materialised in the cache, see families/catalogue.py) or the path
    of its folder."""
    name = str(name_or_path)
    if "@" in name and not _is_file(Path(name) / "task.toml"):
        from .families import catalogue

        return load_task(catalogue.resolve(name))
    if name.endswith(CONTROL_SUFFIX) and not _is_file(Path(name) / "task.toml") \
            and not _is_file(paths.tasks_dir() / name / "task.toml"):
        family = name[: -len(CONTROL_SUFFIX)]
        bases = control_bases()
        if family in bases:
            return control_of(load_task(bases[family]))
    p = Path(name_or_path)
    if not _is_file(p / "task.toml"):
        p = paths.tasks_dir() / str(name_or_path)
    manifest = p / "task.toml"
    if not _is_file(manifest) or str(name_or_path) in ("common", ""):
        known = ", ".join([*task_ids(), *control_ids()]) or "none"
        raise CdcError(f"unknown task '{name_or_path}' (known tasks: {known})")
    try:
        m = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CdcError(f"{manifest}: cannot read manifest: {exc}") from None
    s = _req(m, "seeds", manifest)
    domains = tuple(
        Domain(name=k, clock=_req(v, "clock", manifest), reset=str(v.get("reset", "")))
        for k, v in sorted(_req(m, "clocks", manifest).items())
    )
    if [d.name for d in domains] != ["a", "b"]:
        raise CdcError(f"{manifest}: clocks must be exactly [clocks.a] and [clocks.b]")
    seeds = SeedConfig(
        fast=s.get("fast", "a"),
        ratio_min=float(_req(s, "ratio_min", manifest)),
        ratio_max=float(_req(s, "ratio_max", manifest)),
        low_band=float(s.get("low_band", 0.0)),
        run_slow_cycles=int(_req(s, "run_slow_cycles", manifest)),
        hidden_count=int(s.get("hidden_count", 200)),
        visible=tuple(int(x) for x in _req(s, "visible", manifest)),
        excursion_max=float(s.get("excursion_max", 0.0)),
        excursion_other=float(s.get("excursion_other", 0.0)),
    )
    if seeds.fast not in ("a", "b", "either") or not 1.0 <= seeds.ratio_min <= seeds.ratio_max:
        raise CdcError(f"{manifest}: bad [seeds] (fast must be a|b|either, 1 <= ratio_min <= ratio_max)")
    if not (seeds.excursion_max == 0.0 or seeds.excursion_max > seeds.ratio_max) or not (
            seeds.excursion_other == 0.0 or (seeds.excursion_other > 1.0 and seeds.fast != "either")):
        raise CdcError(f"{manifest}: bad [seeds] excursions (excursion_max 0 or above ratio_max; "
                       "excursion_other 0 or above 1, and only with fast a|b)")
    stim = {k: (int(v[0]), int(v[1])) for k, v in m.get("stimulus", {}).items()}
    task = Task(
        id=_req(m, "id", manifest),
        family=m.get("family", m["id"]),
        title=m.get("title", m["id"]),
        dir=p.resolve(),
        top=_req(m, "top", manifest),
        editable=_req(m, "editable", manifest),
        testbench=_req(m, "testbench", manifest),
        tb_top=_req(m, "tb_top", manifest),
        bug_report=m.get("bug_report", "BUG.md"),
        reference=_req(m, "reference", manifest),
        clean=_req(m, "clean", manifest),
        domains=domains,
        seeds=seeds,
        stimulus=stim,
        sources=tuple(m.get("sources", [])),
        cross_memories=tuple(m.get("cross_memories", [])),
        heldout=bool(m.get("heldout", False)),
        storage=bool(m["storage"]) if "storage" in m else None,
        hold=bool(m["hold"]) if "hold" in m else None,
        async_resets=tuple(str(x) for x in m.get("async_resets", [])),
    )
    if any(not d.reset for d in domains) and not task.async_resets:
        raise CdcError(f"{manifest}: a domain without a reset input needs async_resets")
    for rel in (task.editable, task.testbench, task.bug_report, task.reference, task.clean, *task.sources):
        if not task.path(rel).is_file():
            raise CdcError(f"{manifest}: file '{rel}' named in the manifest is missing")
    return task


def task_ids() -> list[str]:
    root = paths.tasks_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "task.toml").is_file())


def list_tasks() -> list[Task]:
    """Every public task (held-out variants are never listed)."""
    return [load_task(t) for t in task_ids()]


# ---------------------------------------------------------------------- no-bug controls

def control_bases() -> dict[str, str]:
    """Each family of the public tasks and the task its no-bug control derives from: the family's
    first task by id (its clean design is a correct design of the family)."""
    out: dict[str, str] = {}
    for t in list_tasks():
        out.setdefault(t.family, t.id)
    return out


def control_ids() -> list[str]:
    """The ids of the no-bug controls, one per family: ``<family>_control``."""
    return [f + CONTROL_SUFFIX for f in sorted(control_bases())]


def control_of(task: Task) -> Task:
    """The no-bug control derived from ``task``: its clean design served as the editable file, a
    review request instead of the bug report (cdc_env.rungs), graded like any task. The correct
    answer is the design unchanged (the reference is the clean design)."""
    from dataclasses import replace  # noqa: PLC0415

    if task.control:
        return task
    return replace(task, id=task.family + CONTROL_SUFFIX,
                   title=f"The clean {task.family} design (of {task.id}), no bug planted",
                   control=True, base=task.id, given=task.clean, reference=task.clean)


def list_controls() -> list[Task]:
    """The no-bug controls, one per family of the public tasks, by family name."""
    bases = control_bases()
    return [control_of(load_task(bases[f])) for f in sorted(bases)]
