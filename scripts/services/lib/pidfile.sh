# shellcheck shell=bash
# Sourced by scripts/services/*.sh: the steps of running servers in the background, each
# with a pid file. lib/pidfile_service.sh makes a one-server service of them; ray.sh (a
# head and worker nodes, a pid file each) uses them directly. HOST and PORT name the port
# a script waits for; WAIT is its start timeout in seconds.

# Whether something accepts connections on $HOST:$PORT.
port_open() {
  (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
}

# pid_running PIDFILE: whether the process of PIDFILE runs.
pid_running() {
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# wait_ready PIDFILE LOG FAILURE CHECK...: wait until the command CHECK... succeeds; when
# the process of PIDFILE ends first or $WAIT seconds pass, print "FAILURE; see LOG" and the
# end of LOG, and exit 1.
wait_ready() {
  local pidfile=$1 log=$2 failure=$3 deadline=$((SECONDS + WAIT))
  shift 3
  until "$@"; do
    if ! pid_running "$pidfile" || [ "$SECONDS" -ge "$deadline" ]; then
      echo "$failure; see $log" >&2
      tail -n 20 "$log" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
}

# stop_pid PIDFILE TIMEOUT: SIGTERM the process of PIDFILE, SIGKILL it when it still runs
# after TIMEOUT seconds; remove PIDFILE (also a stale one). Idempotent.
stop_pid() {
  local pidfile=$1 timeout=$2 pid deadline
  if pid_running "$pidfile"; then
    pid=$(cat "$pidfile")
    kill "$pid"
    deadline=$((SECONDS + timeout))
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        kill -9 "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.2
    done
  fi
  rm -f "$pidfile"
}
