#!/usr/bin/env bash
# Start/stop the local servers the integration tests use (all on 127.0.0.1, data under
# .services/). Each integration adds its own scripts/services/<name>.sh with start/stop.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:?usage: services.sh start|stop}
shopt -s nullglob
for service in scripts/services/*.sh; do
  bash "$service" "$action"
done
