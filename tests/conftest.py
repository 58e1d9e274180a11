"""Shared test helpers: skips (with the reason) for tools that are missing."""

from __future__ import annotations

import shutil

import pytest

needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None or shutil.which("vvp") is None,
                                  reason="Icarus Verilog is not installed (apt-get install iverilog)")
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed (apt-get install bubblewrap)")
