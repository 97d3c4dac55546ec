#!/usr/bin/env bash
# Set everything up and run the main job over the sample documents in docs/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
exec .venv/bin/python scripts/summarize_docs.py "$@"
