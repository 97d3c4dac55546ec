#!/usr/bin/env bash
# A local Ray cluster of processes for the ragloom-ingestor-ray integration tests: a head
# node (`ray start --head`) and ${RAGLOOM_RAY_WORKERS:-1} worker node(s) joined to it, each
# a `ray start --block` process with its own raylet, all on this machine. The head's GCS
# listens on 127.0.0.1:$RAGLOOM_RAY_PORT, $RAGLOOM_RAY_ADDRESS (scripts/services/env.sh;
# connect with `ray.init(address=...)`); no dashboard. Logs and pid files under
# $RAGLOOM_SERVICES_DIR/ray/.
#
#   bash scripts/services/ray.sh start     start the missing nodes; idempotent
#   bash scripts/services/ray.sh stop      stop every node, remove Ray's temp dir; idempotent
#   bash scripts/services/ray.sh restart   stop and start again
#   bash scripts/services/ray.sh status    exit 0 when the head and every worker node run
#
# Loopback only: Ray resolves 127.0.0.1 to the host's routable address (and binds every
# interface) unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, its loopback mode; so the nodes,
# and any driver, run with it (drivers: the settings in $RAGLOOM_SERVICES_DIR/ray/driver.env, which
# the tests read; the cluster also wants its token, see below). Ray's CLI refuses to start a worker node
# in that mode: workers start through scripts/services/lib/ray_join.py, the same CLI with
# 127.0.0.1 kept as given. Ray's own files (sockets, session logs) go to a short temp dir,
# ${RAGLOOM_RAY_TEMP_DIR:-/tmp/ragloom-ray-PORT}: Unix socket paths are limited to 107 bytes.
#
# Sizes (small, for a 2-core CI machine): RAGLOOM_RAY_HEAD_CPUS and RAGLOOM_RAY_WORKER_CPUS
# (logical CPUs per node, default 1 each), RAGLOOM_RAY_OBJECT_STORE_MB (per node, default
# 100; Ray's minimum is 75). Ports: GCS PORT, Ray client server PORT+1, dashboard agents
# PORT+2 (head) and PORT+2+i (worker i), worker processes PORT+10+50*n .. PORT+59+50*n on
# node n (head 0); Ray picks its other ports among the free ones.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/services/env.sh  # the ports and where the servers keep their files

action=${1:?usage: ray.sh start|stop|restart|status}
HOST=127.0.0.1
PORT=$RAGLOOM_RAY_PORT
WORKERS=${RAGLOOM_RAY_WORKERS:-1}
HEAD_CPUS=${RAGLOOM_RAY_HEAD_CPUS:-1}
WORKER_CPUS=${RAGLOOM_RAY_WORKER_CPUS:-1}
OBJECT_STORE=$((${RAGLOOM_RAY_OBJECT_STORE_MB:-100} * 1024 * 1024))
BASE=$RAGLOOM_SERVICES_DIR/ray
TEMP=${RAGLOOM_RAY_TEMP_DIR:-${TMPDIR:-/tmp}/ragloom-ray-$PORT}
WAIT=${RAGLOOM_RAY_START_TIMEOUT:-90}
STARTED="Ray runtime started."

TOKEN=$BASE/auth_token
DRIVER_ENV=$BASE/driver.env

# Loopback mode (see above), token authentication with this cluster's own token (not
# ~/.ray/auth_token, which Ray would otherwise pick up, or not, depending on the node), no
# usage stats, and no draining on stop (Ray waits up to 30 s for nothing on a test cluster).
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=$TOKEN \
  RAY_USAGE_STATS_ENABLED=0 RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0

find_ray() {
  RAY=.venv/bin/ray
  [ -x "$RAY" ] || RAY=$(command -v ray) || {
    echo "ray: the ray CLI is not installed; run scripts/setup.sh (ray[data] is a" \
      "dependency of packages/ingestor-ray)" >&2
    exit 1
  }
  PYTHON=$(dirname "$RAY")/python  # the same environment: the nodes' workers run it
}

source scripts/services/lib/pidfile.sh

# Node names: head, worker-1 .. worker-N; each has $BASE/<name>.pid and <name>.log.
nodes() {
  echo head
  local i
  for ((i = 1; i <= WORKERS; i++)); do echo "worker-$i"; done
}

node_running() {
  pid_running "$BASE/$1.pid"
}

# ARGS: the command that starts node $1 (with the ports of node number $2).
node_args() {
  local name=$1 n=$2
  local common=(--block --node-ip-address "$HOST" --temp-dir "$TEMP" --disable-usage-stats
    --object-store-memory "$OBJECT_STORE" --include-log-monitor false
    --min-worker-port $((PORT + 10 + 50 * n)) --max-worker-port $((PORT + 59 + 50 * n))
    --dashboard-agent-listen-port $((PORT + 2 + n)))
  if [ "$name" = head ]; then
    ARGS=("$RAY" start --head --port "$PORT" --ray-client-server-port $((PORT + 1)) \
      --include-dashboard false --num-cpus "$HEAD_CPUS" "${common[@]}")
  else
    ARGS=("$PYTHON" scripts/services/lib/ray_join.py start --address "$HOST:$PORT" \
      --num-cpus "$WORKER_CPUS" "${common[@]}")
  fi
}

# Start node $1 (number $2) in the background and wait until it says it has started.
launch() {
  local name=$1 n=$2 log=$BASE/$1.log
  node_args "$name" "$n"
  nohup "${ARGS[@]}" >"$log" 2>&1 &
  echo $! >"$BASE/$name.pid"
  wait_ready "$BASE/$name.pid" "$log" "ray: the $name node did not start within ${WAIT}s" \
    grep -q "$STARTED" "$log"
}

# The token (made once per cluster) and what a driver needs to connect, for `source`.
prepare_auth() {
  if ! node_running head; then
    (umask 077 && "$PYTHON" -c 'import secrets; print(secrets.token_hex(32))' >"$TOKEN")
  elif [ ! -s "$TOKEN" ]; then
    echo "ray: the running cluster's token $TOKEN is gone; run ray.sh restart" >&2
    exit 1
  fi
  cat >"$DRIVER_ENV" <<EOF
# Drivers of the cluster of scripts/services/ray.sh: set -a; . $DRIVER_ENV; set +a
RAY_ADDRESS=$HOST:$PORT
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
RAY_AUTH_MODE=token
RAY_AUTH_TOKEN_PATH=$TOKEN
EOF
}

start() {
  find_ray
  mkdir -p "$BASE" "$TEMP"
  if ! node_running head && port_open; then
    echo "ray: $HOST:$PORT is in use by another process; set RAGLOOM_RAY_PORT" >&2
    exit 1
  fi
  local name n=0 started=()
  if ! node_running head; then  # worker nodes of a head that is gone cannot rejoin
    for name in $(nodes | tail -n +2); do stop_node "$name"; done
  fi
  prepare_auth
  for name in $(nodes); do
    if ! node_running "$name"; then
      launch "$name" "$n"
      started+=("$name")
    fi
    n=$((n + 1))
  done
  if [ ${#started[@]} = 0 ]; then
    echo "ray: already running on $HOST:$PORT, $WORKERS worker node(s) (logs: $BASE)"
  else
    echo "ray: cluster on $HOST:$PORT (started: ${started[*]}; head $HEAD_CPUS CPU," \
      "$WORKERS worker node(s) of $WORKER_CPUS CPU; logs: $BASE/*.log, Ray's in $TEMP)"
  fi
  echo "ray: drivers connect with the settings in $DRIVER_ENV"
}

# SIGTERM to a `ray start --block` stops its node's processes; SIGKILL after 30 s.
stop_node() {
  stop_pid "$BASE/$1.pid" 30
}

# Processes of this cluster left behind (e.g. after a SIGKILL): their command lines name
# its temp dir, which no other cluster uses.
leftovers() {
  local proc pid
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ "$pid" = $$ ] && continue
    tr '\0' ' ' 2>/dev/null <"$proc/cmdline" | grep -qF -- "$TEMP/" && echo "$pid"
  done
  return 0
}

stop() {
  local name pids
  if [ -d "$BASE" ]; then
    for name in $(nodes | tac) $(cd "$BASE" && ls -- *.pid 2>/dev/null | sed 's/\.pid$//'); do
      stop_node "$name"
    done
  fi
  pids=$(leftovers)
  if [ -n "$pids" ]; then
    sleep 2  # processes of a node that is stopping exit by themselves
    pids=$(leftovers)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  fi
  rm -rf "$TEMP" "$TOKEN" "$DRIVER_ENV"
  echo "ray: stopped (logs kept: $BASE)"
}

status() {
  local name missing=()
  for name in $(nodes); do
    node_running "$name" || missing+=("$name")
  done
  if [ ${#missing[@]} = 0 ] && port_open; then
    echo "ray: running on $HOST:$PORT, $WORKERS worker node(s) (logs: $BASE)"
  else
    echo "ray: not running${missing:+ (down: ${missing[*]})}"
    exit 1
  fi
}

case "$action" in
  start) start ;;
  stop) stop ;;
  restart)
    stop
    start
    ;;
  status) status ;;
  *)
    echo "usage: ray.sh start|stop|restart|status" >&2
    exit 2
    ;;
esac
