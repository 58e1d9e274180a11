#!/usr/bin/env bash
# Set up the core (scripts/setup.sh: apt iverilog, bubblewrap, gcc if missing; pip into .venv), then
# grade the handshake task's defective design and its reference fix end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$(bash scripts/setup.sh | tail -n 1)"
exec "$PY" -m cdc_env demo "$@"
