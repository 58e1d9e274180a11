"""Where an eval run grades: in this process (``cdc_env.grade.grade``, the default) or on a backend
of ``cdc_env.backends`` -- a local pool of worker processes (``--workers``) or a Ray cluster
(``--ray``), docs/scale.md. A backend takes the one-shot grades, the agentic submit grades and the
gate-off regrades; ``run_visible`` and the controls stay in this process.

``open_grading`` starts what was asked for and returns a ``Grading``: the grader to hand to
``run_eval``, what metadata.json records about it (``grades_on``), and one line per machine that
cannot grade. Close it (or use it as a context manager) when the run ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import CdcError

if TYPE_CHECKING:
    from ..backends import Backend

Grader = Callable[..., dict]  # cdc_env.grade.grade's signature: (task, submission, options)
IN_PROCESS = {"backend": "in-process"}


class NoGrader(CdcError):
    """The backend started but no machine of it can grade (exit status 3 on the command line)."""


@dataclass
class Grading:
    """The grader of a run and where it grades; ``grader`` None means in this process."""

    grader: Grader | None = None
    grades_on: dict = field(default_factory=lambda: dict(IN_PROCESS))
    backend: Backend | None = None
    problems: list[str] = field(default_factory=list)  # one line per machine that cannot grade

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()

    def __enter__(self) -> Grading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_grading(*, workers: int | None = None, ray: str | None = None, sim: str = "icarus",
                 ship: bool = True) -> Grading:
    """Grade in this process (neither ``workers`` nor ``ray``), on a local pool of ``workers``
    processes, or on the Ray cluster at ``ray`` (``auto``, ``local`` or an address).

    Raises ``CdcError`` on bad input (both asked for, ``workers`` < 1, Ray not installed) and
    ``NoGrader`` when the backend cannot start."""
    if workers is not None and ray:
        raise CdcError("choose --workers or --ray, not both")
    if workers is not None and workers < 1:
        raise CdcError("--workers must be 1 or more")
    if workers is None and not ray:
        return Grading()
    from ..backends import grade_function, make_backend  # noqa: PLC0415 -- only a backend run needs it

    backend = make_backend(workers=workers, ray=ray, sim=sim, ship=ship)
    try:
        nodes = backend.start()
    except CdcError as exc:
        raise NoGrader(str(exc)) from None
    on_ray = backend.name == "ray"
    problems = []
    for n in nodes:
        if not n.get("ok"):
            where = f"node {n.get('address')}" if on_ray else "this machine"
            problems.append(f"{where} cannot grade{' and was not used' if on_ray else ''}: "
                            f"{'; '.join(n.get('problems') or [])}")
    return Grading(grade_function(backend), {**backend.info(), "nodes": backend.nodes}, backend, problems)
