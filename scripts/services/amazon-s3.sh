#!/usr/bin/env bash
# An S3 server for the ragloom-loader-amazon-s3 (and -tencent-cos) integration tests:
# moto's standalone server (`moto_server`, from the PyPI `moto[server]` wheel in the
# packages' test groups). Listens on 127.0.0.1:$RAGLOOM_AMAZON_S3_PORT only; it
# keeps objects in memory (nothing on disk), log under $RAGLOOM_SERVICES_DIR/amazon-s3/. Test data only.
#
#   bash scripts/services/amazon-s3.sh start     start; idempotent
#   bash scripts/services/amazon-s3.sh stop      stop and delete the data; idempotent
#   bash scripts/services/amazon-s3.sh restart   stop and start again, keeping the data
#   bash scripts/services/amazon-s3.sh status    exit 0 when running
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/services/env.sh  # the ports and where the servers keep their files

action=${1:?usage: amazon-s3.sh start|stop|restart|status}
NAME=amazon-s3
HOST=127.0.0.1
PORT_VAR=RAGLOOM_AMAZON_S3_PORT
URL_SCHEME=http
PORT=$RAGLOOM_AMAZON_S3_PORT
BASE=$RAGLOOM_SERVICES_DIR/amazon-s3
DATA=$BASE/data
LOG=$BASE/amazon-s3.log
PIDFILE=$BASE/amazon-s3.pid
WAIT=${RAGLOOM_AMAZON_S3_START_TIMEOUT:-30}

# Start the server in the background on $HOST:$PORT, data in $DATA, output to $LOG, and
# write its pid to $PIDFILE. Prefer a server from a PyPI wheel (a test dependency in the
# package's [dependency-groups] test), as pgvector.sh does, over a system install.
launch() {
  local bin=.venv/bin/moto_server
  [ -x "$bin" ] || bin=$(command -v moto_server) || {
    echo "amazon-s3: moto_server not found; run scripts/setup.sh (moto[server] is a test" \
      "dependency of packages/loader-amazon-s3)" >&2
    exit 1
  }
  nohup "$bin" -H "$HOST" -p "$PORT" >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
}

source scripts/services/lib/pidfile_service.sh
service_main "$action"
