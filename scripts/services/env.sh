# shellcheck shell=bash
# The one definition of where the local test servers of scripts/services/ listen. Sourced
# by every scripts/services/<name>.sh, and read by the tests through
# ragloom.testkit.servers.service_setting (which sources this file), so a moved port moves
# the server and the tests together. In a shell: `source scripts/services/env.sh`.
#
# Settings (each keeps a value already in the environment):
#   RAGLOOM_<SERVICE>_PORT   the port of each server, defaults below
#   RAGLOOM_SERVICES_DIR     where the servers keep data, logs and pid files
# Addresses, derived from the settings unless set (names end in _URL, _DSN or _ADDRESS;
# setting one points the tests at another server, the scripts still use the port):
#   RAGLOOM_AMAZON_S3_URL, RAGLOOM_TENCENT_COS_URL (the same moto server),
#   RAGLOOM_AZURE_BLOB_URL, RAGLOOM_GOOGLE_CLOUD_STORAGE_URL, RAGLOOM_NEO4J_URL,
#   RAGLOOM_PG_DSN, RAGLOOM_RAY_ADDRESS, RAGLOOM_SELENIUM_URL
# FalkorDB (the Neo4j test server) keeps its port in a signed 16-bit value: RAGLOOM_NEO4J_PORT
# must stay below 32768 (neo4j.sh refuses others).

export RAGLOOM_AMAZON_S3_PORT=${RAGLOOM_AMAZON_S3_PORT:-20233}
export RAGLOOM_AZURE_BLOB_PORT=${RAGLOOM_AZURE_BLOB_PORT:-28329}
export RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT=${RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT:-34326}
export RAGLOOM_NEO4J_PORT=${RAGLOOM_NEO4J_PORT:-23948}
export RAGLOOM_PG_PORT=${RAGLOOM_PG_PORT:-55433}
export RAGLOOM_RAY_PORT=${RAGLOOM_RAY_PORT:-46379}
export RAGLOOM_SELENIUM_PORT=${RAGLOOM_SELENIUM_PORT:-24301}
RAGLOOM_SERVICES_DIR=${RAGLOOM_SERVICES_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.services}
export RAGLOOM_SERVICES_DIR

export RAGLOOM_AMAZON_S3_URL=${RAGLOOM_AMAZON_S3_URL:-http://127.0.0.1:$RAGLOOM_AMAZON_S3_PORT}
export RAGLOOM_TENCENT_COS_URL=${RAGLOOM_TENCENT_COS_URL:-http://127.0.0.1:$RAGLOOM_AMAZON_S3_PORT}
export RAGLOOM_AZURE_BLOB_URL=${RAGLOOM_AZURE_BLOB_URL:-http://127.0.0.1:$RAGLOOM_AZURE_BLOB_PORT}
export RAGLOOM_GOOGLE_CLOUD_STORAGE_URL=${RAGLOOM_GOOGLE_CLOUD_STORAGE_URL:-http://127.0.0.1:$RAGLOOM_GOOGLE_CLOUD_STORAGE_PORT}
export RAGLOOM_NEO4J_URL=${RAGLOOM_NEO4J_URL:-bolt://127.0.0.1:$RAGLOOM_NEO4J_PORT}
export RAGLOOM_PG_DSN=${RAGLOOM_PG_DSN:-postgresql://postgres@127.0.0.1:$RAGLOOM_PG_PORT/postgres}
export RAGLOOM_RAY_ADDRESS=${RAGLOOM_RAY_ADDRESS:-127.0.0.1:$RAGLOOM_RAY_PORT}
export RAGLOOM_SELENIUM_URL=${RAGLOOM_SELENIUM_URL:-http://127.0.0.1:$RAGLOOM_SELENIUM_PORT}
