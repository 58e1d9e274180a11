"""cdc_env: an environment in which a language model repairs clock-domain-crossing bugs.

Public API: ``load_task``, ``list_tasks``, ``grade`` (the verdict), ``CdcError``.
"""

__version__ = "0.1.0"

from .errors import CdcError  # noqa: E402
from .task import list_tasks, load_task  # noqa: E402


def grade(*args, **kwargs):  # noqa: ANN002, ANN003 -- thin re-export, see grade.grade
    from .grade import grade as _grade

    return _grade(*args, **kwargs)


__all__ = ["CdcError", "__version__", "grade", "list_tasks", "load_task"]
