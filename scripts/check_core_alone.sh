#!/usr/bin/env bash
# Core tested alone: a fresh venv holding only packages/core and packages/testkit (with
# their test groups) runs packages/core/tests and packages/testkit/tests, so a core module
# or test that needs another distribution (an integration, easy-rag, a dev tool) fails here.
#
#   bash scripts/check_core_alone.sh [pytest arguments]
#
# Installs as scripts/setup.sh does (python -m venv, pip, editable, no build isolation; the
# machine's pip.conf names the local wheel indexes, so it works offline). uv is not part of
# the project's setup, so it is not used here either. The venv is made anew on every run
# in CORE_ALONE_VENV (default .venv-core-alone/ in the checkout, so two checkouts testing at
# once do not share it) and kept for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=${CORE_ALONE_VENV:-$PWD/.venv-core-alone}
start=$(date +%s)

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
pip() {
  "$VENV/bin/python" -m pip --disable-pip-version-check "$@" 2> >(grep -v "^WARNING: Location" >&2)
}
pip install -q -U "pip>=25.1"
pip install -q "hatchling>=1.21" editables
pip install -q --no-build-isolation -e packages/core -e packages/testkit
pip install -q --group packages/core/pyproject.toml:test
installed=$(date +%s)

# Nothing but core and the testkit from this repository.
others=$("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | grep -i '^ragloom-' \
  | grep -viE '^ragloom-(core|testkit)==' || true)
if [ -n "$others" ]; then
  echo "check_core_alone: other ragloom distributions installed: $others" >&2
  exit 1
fi

echo "== core + testkit alone: $("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | wc -l) distributions, installed in $((installed - start)) s"
"$VENV/bin/python" -m pytest -p no:cacheprovider packages/core/tests packages/testkit/tests "$@"
echo "check_core_alone: done in $(($(date +%s) - start)) s"
