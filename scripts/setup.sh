#!/usr/bin/env bash
# Create .venv and install every package of packages/* editable, plus the dev tools.
# Idempotent: re-installs only when a pyproject.toml changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=.venv
STAMP=$VENV/.ragloom-setup-stamp

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV with $PYTHON"
  "$PYTHON" -m venv "$VENV"
fi
stamp=$(cat pyproject.toml packages/*/pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$stamp" ]; then
  echo "setup: $VENV is up to date"
  exit 0
fi

# The machine's pip.conf lists optional local indexes; hide its warnings about absent ones.
pip() {
  "$VENV/bin/python" -m pip --disable-pip-version-check "$@" 2> >(grep -v "^WARNING: Location" >&2)
}
pip install -q -U "pip>=25.1"
# setuptools>=70.1 builds wheels itself: without build isolation, sdists (crcmod) need it
pip install -q "hatchling>=1.21" editables "setuptools>=70.1"
pip install -q --group dev
# core first, then the rest; no build isolation: hatchling is already in the venv.
args=(-e packages/core)
for pkg in packages/*/; do
  pkg=${pkg%/}
  [ "$pkg" != packages/core ] && [ -f "$pkg/pyproject.toml" ] && args+=(-e "$pkg")
done
# each package's own test-only dependencies: its [dependency-groups] test
groups=()
for pkg in packages/*/pyproject.toml; do
  if "$VENV/bin/python" -c 'import sys, tomllib; sys.exit("test" not in tomllib.load(open(sys.argv[1], "rb")).get("dependency-groups", {}))' "$pkg"; then
    groups+=(--group "$pkg:test")
  fi
done
echo "setup: installing ${args[*]}"
pip install -q --no-build-isolation "${args[@]}"
# after the editables, so that groups may name ragloom-* packages (already satisfied)
if [ ${#groups[@]} -gt 0 ]; then
  echo "setup: installing test groups ${groups[*]}"
  pip install -q "${groups[@]}"
fi
echo "$stamp" > "$STAMP"
echo "setup: done ($($VENV/bin/python --version))"
