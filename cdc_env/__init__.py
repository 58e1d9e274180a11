"""cdc_env: an environment in which a language model repairs clock-domain-crossing bugs.

Public API: ``load_task``, ``list_tasks``, ``grade`` (the verdict) and ``GradeOptions`` (how a
grade runs, one value), ``CdcRepairEnv`` (the agentic environment), ``CdcError``.
``CdcRepairEnv`` loads on first use. (``cdc_env.grade`` is the function; the module of the same
name is ``sys.modules["cdc_env.grade"]``.)
"""

from ._version import __version__  # noqa: E402
from .errors import CdcError  # noqa: E402
from .grade import GradeOptions, grade  # noqa: E402  -- rebinds the name from the submodule to the function
from .task import list_tasks, load_task  # noqa: E402


def __getattr__(name: str):  # PEP 562: lazy public names
    if name == "CdcRepairEnv":
        from .env import CdcRepairEnv

        return CdcRepairEnv
    raise AttributeError(f"module 'cdc_env' has no attribute {name!r}")


__all__ = ["CdcError", "CdcRepairEnv", "GradeOptions", "__version__", "grade", "list_tasks", "load_task"]
