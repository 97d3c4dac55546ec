#!/usr/bin/env bash
# Set everything up and run every check: ruff, mypy --strict on core, all unit tests and
# integration tests (services started by scripts/services.sh). Exit code is non-zero on
# any failure, including pytest collecting no tests (exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--no-setup" ]; then shift; else bash scripts/setup.sh; fi
PY=.venv/bin/python

# The trap first: a failing start must not leave the other servers running.
trap 'bash scripts/services.sh stop' EXIT
bash scripts/services.sh start

echo "== ruff"
$PY -m ruff check packages integration-tests scripts
echo "== mypy --strict (core)"
$PY -m mypy --strict packages/core/src
echo "== pytest"
$PY -m pytest packages/*/tests integration-tests scripts/tests "$@"
