#!/usr/bin/env bash
# Start/stop the local servers the integration tests use (all on 127.0.0.1, data under
# .services/). Each integration adds its own scripts/services/<name>.sh with start/stop;
# they run in parallel, and this fails if any of them fails (its output is shown). When a
# start fails, the services this call started are stopped again, so none is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:?usage: services.sh start|stop}
shopt -s nullglob
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
names=()
for service in scripts/services/*.sh; do
  name=$(basename "$service" .sh)
  [ "$name" = env ] && continue  # the ports (sourced by the scripts), not a service
  bash "$service" "$action" >"$logs/$name" 2>&1 &
  pids+=($!)
  names+=("$name")
done
failed=0
started=()
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    cat "$logs/${names[$i]}"
    started+=("${names[$i]}")
  else
    echo "services: ${names[$i]} $action failed:" >&2
    cat "$logs/${names[$i]}" >&2
    failed=1
  fi
done
if [ "$failed" = 1 ] && [ "$action" = start ]; then
  for name in "${started[@]}"; do
    echo "services: stopping $name (another service failed to start)" >&2
    bash "scripts/services/$name.sh" stop >/dev/null 2>&1 || true
  done
fi
exit $failed
