# Sourced by a scripts/services/<name>.sh script for a server it runs in the background
# with a pid file: start (idempotent, bounded wait for the port), stop (data removed, log
# kept), restart (data kept) and status. Before `service_main "$action"` the script sets
# NAME, HOST, PORT, PORT_VAR (the variable that overrides the port), URL_SCHEME, DATA,
# LOG, PIDFILE and WAIT, and defines launch() (start the server, write its pid to
# $PIDFILE); it may define after_start() (a check once the port answers).

port_open() {
  (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
}

running() {
  [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
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
  local deadline=$((SECONDS + WAIT))
  until port_open; do
    if ! running || [ "$SECONDS" -ge "$deadline" ]; then
      echo "$NAME: not accepting connections on $HOST:$PORT after ${WAIT}s; see $LOG" >&2
      tail -n 20 "$LOG" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  if declare -F after_start >/dev/null; then
    after_start
  fi
  echo "$NAME: running on $URL_SCHEME://$HOST:$PORT (log: $LOG)"
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
