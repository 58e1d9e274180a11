"""Where the package's run-time data lives: tasks/, trusted/, agents/, tools/, fixtures/.

* ``trusted/`` -- everything the verdict rests on and no submission may see or change: the
  synchronizer primitives and the testbench harness (``trusted/hdl``) and the trusted C/C++ that
  holds the verdict nonce or runs seeds (``trusted/icarus``, ``trusted/verilator``,
  ``trusted/stage``).
* ``agents/`` -- agent-facing data: scripted agents' move lists and the stand-in model's replies.
* ``tasks/`` -- the tasks (their ``common/CONTRACT.md`` is the primitives' contract the agent reads).

In a source checkout (or an editable install) they are the top-level folders of the repository;
in a wheel they are bundled under ``cdc_env/_data/`` (see ``[tool.hatch...force-include]`` in
pyproject.toml). Everything else asks this module, never ``__file__`` arithmetic of its own.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_root() -> Path:
    bundled = _PKG / "_data"
    if (bundled / "tasks").is_dir():
        return bundled
    return _PKG.parent


def tasks_dir() -> Path:
    return data_root() / "tasks"


def trusted_dir() -> Path:
    """The trusted code and HDL the verdict rests on (see the module docstring)."""
    return data_root() / "trusted"


def trusted_source(kind: str, name: str) -> Path:
    """A trusted runner's source: ``kind`` is its folder (icarus, verilator, stage)."""
    return trusted_dir() / kind / name


def agents_dir(kind: str) -> Path:
    """Agent-facing data: ``scripted`` (scripted agents) or ``standin`` (stand-in replies)."""
    return data_root() / "agents" / kind


def common_dir() -> Path:
    """The tasks' shared, agent-readable files (the primitives' timing contract)."""
    return tasks_dir() / "common"


def primitives_file() -> Path:
    return tb_include_dir() / "cdc_sync.v"


def primitive_files() -> list[Path]:
    """Every trusted HDL file a build compiles with the design: the primitives (cdc_sync.v), the
    reset synchronizer with the late-release model of asynchronously reset flops (cdc_reset.v) and
    the qualified-word primitive (cdc_hold.v)."""
    return [primitives_file(), tb_include_dir() / "cdc_reset.v", tb_include_dir() / "cdc_hold.v"]


def primitives_bytes(files: list[Path] | None = None) -> bytes:
    """The primitive files' contents (``files``, default all of them), for fingerprints (one part
    per file, length-prefixed)."""
    return b"".join(len(d := p.read_bytes()).to_bytes(8, "little") + d
                    for p in (primitive_files() if files is None else files))


def contract_file() -> Path:
    return common_dir() / "CONTRACT.md"


def tb_include_dir() -> Path:
    """The trusted HDL: primitives (cdc_sync.v) and testbench harness (*.vh)."""
    return trusted_dir() / "hdl"


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


def cache_root() -> Path:
    """The cache of built runtimes, trusted binaries and certificates: ``$CDC_ENV_CACHE``, else
    ``$XDG_CACHE_HOME/cdc_env``, else ``~/.cache/cdc_env``."""
    env = os.environ.get("CDC_ENV_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "cdc_env"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: to a scratch name beside it, then renamed
    over it. For files in the shared cache that another process may read at any moment (it sees
    the old content or the new, never a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
