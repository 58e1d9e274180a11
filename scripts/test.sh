#!/usr/bin/env bash
# Set up, then run the whole test suite (ruff first: a lint error fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 -m ruff check .
bash scripts/plain-install.sh
exec python3 -m pytest -q -ra "$@"
