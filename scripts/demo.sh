#!/usr/bin/env bash
# Set up, then grade the handshake task's defective design and its reference fix end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec python3 -m cdc_env.cli demo "$@"
