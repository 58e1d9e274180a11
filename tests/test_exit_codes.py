"""One set of exit codes (cdc_env/errors.py): no command module defines its own."""

from __future__ import annotations

import re
from pathlib import Path

from cdc_env import errors

PACKAGE = Path(errors.__file__).resolve().parent


def test_the_codes():
    assert (errors.EXIT_OK, errors.EXIT_NOT_PASS, errors.EXIT_USAGE, errors.EXIT_TOOL) == (0, 1, 2, 3)


def test_no_module_defines_its_own_exit_codes():
    own = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name != "errors.py"
           and re.search(r"^\s*EXIT_\w+(\s*,\s*EXIT_\w+)*\s*=", p.read_text(), re.MULTILINE)]
    assert own == []

