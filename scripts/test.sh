#!/usr/bin/env bash
# Set everything up and run every check: ruff, mypy --strict on every package, all unit tests and
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

# The trap first: a failing start must not leave the other servers running.
trap 'bash scripts/services.sh stop' EXIT
bash scripts/services.sh start

echo "== ruff"
$PY -m ruff check packages integration-tests scripts
echo "== mypy --strict (every package)"
$PY scripts/typecheck.py
echo "== pytest"
$PY -m pytest packages/*/tests integration-tests scripts/tests "$@"
