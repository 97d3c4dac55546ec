#!/usr/bin/env bash
# Set everything up and run every check: ruff, mypy --strict on every package, core's and the
# testkit's tests in a venv of their own (scripts/check_core_alone.sh), all unit tests and
# integration tests (services started by scripts/services.sh). Exit code is non-zero on
# any failure, including pytest collecting no tests (exit 5).
#
#   bash scripts/test.sh [--no-setup] [--moved-ports] [pytest arguments]
#
# --no-setup skips scripts/setup.sh. --moved-ports runs every service on a free port other
# than its default (scripts/services/lib/moved_ports.py), keeping their files under
# .services/moved-ports/ (apart from a default-port set), so a test that leans on a default
# port fails; CI (.ci/run) runs this way. Ports, addresses: scripts/services/env.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

setup=1
moved=0
while [ $# -gt 0 ]; do
  case $1 in
    --no-setup) setup=0 ;;
    --moved-ports) moved=1 ;;
    *) break ;;
  esac
  shift
done
[ "$setup" = 0 ] || bash scripts/setup.sh
PY=.venv/bin/python
if [ "$moved" = 1 ]; then
  eval "$($PY scripts/services/lib/moved_ports.py)"
  export RAGLOOM_SERVICES_DIR=${RAGLOOM_SERVICES_DIR:-$PWD/.services/moved-ports}
  echo "== services on moved ports: $(env | grep -E '^RAGLOOM_[A-Z0-9_]+_PORT=' | sort | tr '\n' ' ')"
fi

# Core tested alone (a venv of only core + testkit) runs beside the services' start, ruff and
# mypy; its result is awaited before pytest.
core_alone_log=$(mktemp)
bash scripts/check_core_alone.sh -q >"$core_alone_log" 2>&1 &
core_alone=$!

# The trap first: a failing start must not leave the other servers running.
trap 'kill $core_alone 2>/dev/null || true; bash scripts/services.sh stop' EXIT
bash scripts/services.sh start

echo "== ruff"
$PY -m ruff check packages integration-tests scripts
echo "== mypy --strict (every package)"
$PY scripts/typecheck.py
echo "== core + testkit alone (scripts/check_core_alone.sh)"
if wait $core_alone; then tail -n 2 "$core_alone_log"; else cat "$core_alone_log"; exit 1; fi
echo "== pytest"
$PY -m pytest packages/*/tests integration-tests scripts/tests "$@"
