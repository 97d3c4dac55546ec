#!/usr/bin/env bash
# Build every distribution of packages/* into one wheelhouse (default dist/wheelhouse).
#   bash scripts/build_wheels.sh [OUT_DIR]
# Then, anywhere:  pip install --find-links dist/wheelhouse ragloom-easy-rag
# (ragloom-* come from the wheelhouse, third-party dependencies from your index).
# Needs a Python with hatchling (the dev environment .venv has it; else $PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist/wheelhouse}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
"$PY" -c 'import hatchling' 2>/dev/null || {
  echo "build_wheels.sh: $PY has no hatchling; run scripts/setup.sh or set PYTHON" >&2
  exit 2
}
mkdir -p "$out"
rm -f "$out"/ragloom_*.whl
# One process builds them all: hatchling's PEP 517 hook, called per package directory.
"$PY" - "$out" packages/*/ <<'PY'
import os
import sys
from pathlib import Path

from hatchling.build import build_wheel

out = Path(sys.argv[1]).resolve()
for package in sys.argv[2:]:
    here = os.getcwd()
    os.chdir(package)
    try:
        print(out / build_wheel(str(out)))
    finally:
        os.chdir(here)
PY
echo "version $(cat VERSION): $(ls "$out"/ragloom_*.whl | wc -l) wheels in $out"
