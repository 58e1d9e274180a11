"""What an eval run is: ``EvalSettings`` (checked once, ``hidden`` decoded here), the endpoint URL
without secrets, and the tasks a run names."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ..errors import CdcError
from ..rungs import DEFAULT_RUNG, check_rung
from ..sim import get_simulator
from ..sim.seeds import parse_hidden
from ..task import Task, list_controls, list_tasks, load_task

MODES = ("oneshot", "agentic")
OPERATIONAL = ("concurrency", "timeout_s", "retries", "backoff_s", "backoff_cap_s", "samples", "stream")


@dataclass
class EvalSettings:
    """What a run is; everything but the ``OPERATIONAL`` settings must match for ``--resume``."""

    mode: str
    base_url: str
    model: str
    tasks: list[str]
    api_key_env: str = "OPENAI_API_KEY"
    samples: int = 1
    concurrency: int = 1
    hidden: int | str = "all"
    sim: str = "icarus"
    max_steps: int = 30
    max_sim_runs: int = 6
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 300.0
    retries: int = 4
    backoff_s: float = 2.0
    backoff_cap_s: float = 60.0
    stream: bool = False  # streamed chat completions (some proxies only stream); same replies
    rungs: list[str] = field(default_factory=lambda: [DEFAULT_RUNG])  # information rungs, each a rollout

    @staticmethod
    def old_key(key: dict) -> dict:
        """A recorded run key as this version writes it (runs from before rungs were full-rung runs)."""
        return {"rungs": [DEFAULT_RUNG], **key}

    def check(self) -> None:
        if self.mode not in MODES:
            raise CdcError(f"--mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        for name in ("samples", "concurrency", "max_steps"):
            if getattr(self, name) < 1:
                raise CdcError(f"{name.replace('_', '-')} must be 1 or more")
        if self.max_sim_runs < 0 or self.retries < 0 or self.timeout_s <= 0:
            raise CdcError("--max-sim-runs and --retries must be 0 or more, --timeout more than 0")
        if not urlsplit(self.base_url).scheme.startswith("http"):
            raise CdcError(f"--base-url must be an http(s) URL, not {redact_url(self.base_url)!r}")
        if self.sim != "auto":  # auto: the cheaper simulator per grade (grade's sim="auto")
            get_simulator(self.sim)
        if not self.rungs:
            raise CdcError("--rung needs at least one rung")
        self.rungs = list(dict.fromkeys(check_rung(r) for r in self.rungs))
        try:
            self.hidden = parse_hidden(self.hidden)  # "all" or a count, from here on
        except ValueError as exc:
            raise CdcError(f"--{exc}") from None

    def run_key(self) -> dict:
        """The settings that define the results (how the run is driven may change on resume)."""
        d = asdict(self)
        for name in OPERATIONAL:
            d.pop(name)
        d["base_url"] = redact_url(self.base_url)
        return d


def redact_url(url: str) -> str:
    """The URL without user info, query or fragment (where keys tend to hide)."""
    p = urlsplit(url)
    host = p.hostname or ""
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path, "", ""))


def is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def resolve_tasks(names: list[str] | None) -> list[Task]:
    """Task ids, family names (``fifo``: its defect tasks), no-bug control ids
    (``handshake_control``) or ``controls`` (every control) to tasks, in order, without repeats;
    none means every public defect task."""
    public = list_tasks()
    if not names:
        return public
    out: dict[str, Task] = {}
    for name in names:
        group = list_controls() if name == "controls" else [t for t in public if t.family == name]
        for t in group or [load_task(name)]:
            out.setdefault(t.id, t)
    return list(out.values())
