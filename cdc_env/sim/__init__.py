"""The seed-running layer under the grade: simulator backends and their registry.

``register(cls)`` adds a backend (a ``base.Simulator`` subclass with a unique ``name``);
``get_simulator(name)`` gives an instance; ``names()`` lists the registered names in order
(Icarus first: the default and the four-state reference). Callers outside this package branch on a
backend's capability flags (``batching``, ``four_state``), never on its name, so adding a
backend touches only this package. The modules:

* base.py -- the Simulator interface, Build, SeedResult, limits, the verdict channel and the
  helpers every backend uses; icarus.py, verilator.py -- the two backends;
* proc.py -- bounded, sandboxed tool runs; seeds.py -- seed plans and the visible/hidden sets;
* stage.py -- running seeds and stages (one at a time, one sandbox per chunk, batched) and the
  one "scratch dir -> build -> run seeds -> clean up" recipe;
* certs.py -- parity certificates and the batching policy; costmodel.py -- the cost model and
  ``sim="auto"``'s choice.
"""

from __future__ import annotations

import re

from ..errors import CdcError
from .base import Simulator
from .icarus import Icarus
from .verilator import Verilator

_REGISTRY: dict[str, type[Simulator]] = {}


def register(cls: type[Simulator]) -> type[Simulator]:
    """Add a backend (usable as a class decorator). Raises ValueError for a name already taken."""
    if not (isinstance(cls, type) and issubclass(cls, Simulator)):
        raise TypeError(f"{cls!r} is not a Simulator subclass")
    name = cls.name
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", name) or name in ("auto", "both"):
        # the report schema's pattern for simulator.name; "auto" and "both" are CLI choices
        raise ValueError(f"a simulator needs a name of its own ([a-z][a-z0-9_-]*), not {name!r}")
    if _REGISTRY.get(name, cls) is not cls:
        raise ValueError(f"a simulator named {name!r} is already registered")
    _REGISTRY[name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a backend (tests register their own and take them away again)."""
    _REGISTRY.pop(name, None)


def names() -> tuple[str, ...]:
    """The registered backends' names, in registration order."""
    return tuple(_REGISTRY)


def get_simulator(name: str) -> Simulator:
    """A fresh instance of the backend called ``name``; CdcError (one line) for an unknown name."""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise CdcError(f"unknown simulator '{name}' (choose {' or '.join(names())})")
    return cls()


def capable(flag: str) -> tuple[str, ...]:
    """The registered backends with the capability ``flag`` (e.g. "batching", "four_state")."""
    return tuple(n for n, cls in _REGISTRY.items() if getattr(cls, flag))


register(Icarus)
register(Verilator)
