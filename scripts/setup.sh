#!/usr/bin/env bash
# Everything a fresh Debian machine (root, Python >= 3.11) needs: Icarus Verilog, bubblewrap,
# the C++ toolchain Verilator builds with, and this package with its Python dependencies -- the
# test extra, which includes the adapter frameworks (gymnasium, verifiers + uv, openenv-core) so
# the adapter tests run the real ones (about 35 s of pip on a warm cache).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v iverilog >/dev/null 2>&1 || missing+=(iverilog)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)  # the Icarus verdict VPI module and the seed runner
command -v make >/dev/null 2>&1 || missing+=(make)
command -v perl >/dev/null 2>&1 || missing+=(perl)
python3 -c "import ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)  # CI's plain-install venv
command -v chromium >/dev/null 2>&1 || missing+=(chromium)  # the results page's rendering test
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]} (apt-get)" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
echo "setup: installing cdc_env and its dependencies (pip)" >&2
"$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[test]"
"$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[ray]"  # grade-batch --ray and its tests
