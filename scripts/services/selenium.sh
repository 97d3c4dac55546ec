#!/usr/bin/env bash
# Headless Chromium for the ragloom-loader-selenium integration tests: installs Debian's
# chromium + chromium-driver when missing (idempotent; apt-get, as root), checks both
# binaries, and runs a ChromeDriver (W3C WebDriver server) on
# 127.0.0.1:$RAGLOOM_SELENIUM_PORT only; data and log under $RAGLOOM_SERVICES_DIR/selenium/.
# The loader's own sessions start Chromium through the same binaries.
#
#   bash scripts/services/selenium.sh start     start; idempotent
#   bash scripts/services/selenium.sh stop      stop and delete the data; idempotent
#   bash scripts/services/selenium.sh restart   stop and start again, keeping the data
#   bash scripts/services/selenium.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/services/env.sh  # the ports and where the servers keep their files

action=${1:?usage: selenium.sh start|stop|restart|status}
NAME=selenium
HOST=127.0.0.1
PORT_VAR=RAGLOOM_SELENIUM_PORT
URL_SCHEME=http
PORT=$RAGLOOM_SELENIUM_PORT
BASE=$RAGLOOM_SERVICES_DIR/selenium
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

source scripts/services/lib/pidfile_service.sh
service_main "$action"
