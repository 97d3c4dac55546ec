#!/usr/bin/env bash
# Headless Chromium for the ragloom-loader-selenium integration tests: installs Debian's
# chromium + chromium-driver when missing (idempotent; apt-get, as root), checks both
# binaries, and runs a ChromeDriver (W3C WebDriver server) on
# 127.0.0.1:${RAGLOOM_SELENIUM_PORT:-24301} only; data and log under .services/selenium/.
# The loader's own sessions start Chromium through the same binaries.
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

# Chromium has no PyPI wheel; Debian's chromium and chromium-driver are the same version.
ensure_installed() {
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" != 0 ]; then
      echo "selenium: chromium/chromedriver missing; run as root: apt-get install -y chromium chromium-driver" >&2
      exit 1
    fi
    echo "selenium: installing chromium and chromium-driver (apt-get; log: $LOG)"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; } \
      >>"$LOG" 2>&1 || { echo "selenium: apt-get failed; see $LOG" >&2; tail -n 20 "$LOG" >&2; exit 1; }
  fi
  local browser driver
  browser=$(chromium --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -n1) || true
  driver=$(chromedriver --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -n1) || true
  if [ -z "$browser" ] || [ -z "$driver" ]; then
    echo "selenium: chromium ('$browser') or chromedriver ('$driver') does not run" >&2
    exit 1
  fi
  if [ "${browser%%.*}" != "${driver%%.*}" ]; then
    echo "selenium: chromium $browser and chromedriver $driver differ in major version" >&2
    exit 1
  fi
  echo "selenium: chromium $browser, chromedriver $driver"
}

# Start ChromeDriver in the background on $HOST:$PORT (local connections only), output
# to $LOG, pid in $PIDFILE.
launch() {
  ensure_installed
  nohup chromedriver --port="$PORT" --log-path="$DATA/chromedriver.log" \
    >>"$LOG" 2>&1 </dev/null &
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
  touch "$LOG"
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
