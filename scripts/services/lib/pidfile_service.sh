# shellcheck shell=bash
# Sourced by a scripts/services/<name>.sh script for a server it runs in the background
# with a pid file: start (idempotent, bounded wait for the port), stop (data removed, log
# kept), restart (data kept) and status. Before `service_main "$action"` the script sets
# NAME, HOST, PORT, PORT_VAR (the variable that overrides the port), URL_SCHEME, DATA,
# LOG, PIDFILE and WAIT, and defines launch() (start the server, write its pid to
# $PIDFILE); it may define after_start() (a check once the port answers).

source scripts/services/lib/pidfile.sh

running() {
  # shellcheck disable=SC2153  # PIDFILE: set by the sourcing script
  pid_running "$PIDFILE"
}

start() {
  mkdir -p "$DATA"
  touch "$LOG"
  if running && port_open; then
    echo "$NAME: already running on $HOST:$PORT (log: $LOG)"
    return 0
  fi
  if ! running && port_open; then
    echo "$NAME: $HOST:$PORT is in use by another process; set $PORT_VAR" >&2
    exit 1
  fi
  running || launch
  wait_ready "$PIDFILE" "$LOG" "$NAME: not accepting connections on $HOST:$PORT after ${WAIT}s" \
    port_open
  if declare -F after_start >/dev/null; then
    after_start
  fi
  echo "$NAME: running on $URL_SCHEME://$HOST:$PORT (log: $LOG)"
}

stop_server() {
  stop_pid "$PIDFILE" "$WAIT"
}

service_main() {
  case "$1" in
    start)
      start
      ;;
    stop)
      stop_server
      rm -rf "$DATA"
      echo "$NAME: stopped, data removed (log kept: $LOG)"
      ;;
    restart)
      stop_server
      start
      ;;
    status)
      if running && port_open; then
        echo "$NAME: running on $HOST:$PORT (log: $LOG)"
      else
        echo "$NAME: not running"
        exit 1
      fi
      ;;
    *)
      echo "usage: $NAME.sh start|stop|restart|status" >&2
      exit 2
      ;;
  esac
}
