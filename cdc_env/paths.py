"""Where the package's run-time data lives: tasks/, runners/, tools/, fixtures/.

In a source checkout (or an editable install) they are the top-level folders of the repository;
in a wheel they are bundled under ``cdc_env/_data/`` (see ``[tool.hatch...force-include]`` in
pyproject.toml). Everything else asks this module, never ``__file__`` arithmetic of its own.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_root() -> Path:
    bundled = _PKG / "_data"
    if (bundled / "tasks").is_dir():
        return bundled
    return _PKG.parent


def tasks_dir() -> Path:
    return data_root() / "tasks"


def common_dir() -> Path:
    """The shared synchronizer primitives and their timing contract."""
    return tasks_dir() / "common"


def primitives_file() -> Path:
    return common_dir() / "cdc_sync.v"


def contract_file() -> Path:
    return common_dir() / "CONTRACT.md"


def tb_include_dir() -> Path:
    return data_root() / "runners" / "tb"


def tb_includes() -> list[Path]:
    """The testbench harness files every build copies next to the testbench (cdc_tb.vh,
    cdc_monitor.vh)."""
    return sorted(tb_include_dir().glob("*.vh"))


def tools_dir() -> Path:
    return data_root() / "tools"


def fixtures_dir() -> Path:
    return data_root() / "fixtures"


def schema_file(name: str) -> Path:
    return _PKG / "schemas" / name
