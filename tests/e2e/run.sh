#!/usr/bin/env bash
# Runs the dashboard's end-to-end test: builds memvault (debug), starts it on a free port with a
# fresh data folder (SQLite), waits until it is ready, runs dashboard.spec.mjs in headless
# Chromium against it, stops the server and exits with the test's status.
# Needs: scripts/install-e2e.sh (Chromium, Node.js, npm ci here) and the embedding model
# (scripts/install-model.sh). Screenshots and the server log land in tests/e2e/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/../.."

E2E=tests/e2e
ARTIFACTS=$E2E/artifacts
mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/*.png "$ARTIFACTS"/server.log

if [ ! -d "$E2E/node_modules/playwright-core" ]; then
  echo "tests/e2e/node_modules is missing: run scripts/install-e2e.sh first" >&2
  exit 1
fi

cargo build --bin memvault
BIN="${CARGO_TARGET_DIR:-target}/debug/memvault"

PORT=$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close();})")
BASE="http://127.0.0.1:$PORT"
DATA=$(mktemp -d -t memvault-e2e-XXXXXX)
SERVER_PID=""

SERVER_LOG="$ARTIFACTS/server.log"
# shellcheck source=../server.sh
. tests/server.sh
trap stop_server EXIT INT TERM

# A clean server: its own SQLite file, no configuration file or database URL from outside, no
# rate limits (the test signs up and saves quickly), no public URL (origins are the Host).
touch "$DATA/memvault.toml"
env -u DATABASE_URL -u MEMVAULT_DATABASE_URL -u MEMVAULT_PUBLIC_URL \
  MEMVAULT_CONFIG="$DATA/memvault.toml" \
  MEMVAULT_DATA_DIR="$DATA" \
  MEMVAULT_LISTEN="127.0.0.1:$PORT" \
  MEMVAULT_RATE_LIMITS=off \
  "$BIN" serve >"$ARTIFACTS/server.log" 2>&1 &
SERVER_PID=$!

echo "memvault starting at $BASE (data in $DATA)"
wait_until_ready

status=0
node "$E2E/dashboard.spec.mjs" "$BASE" || status=$?
if [ "$status" -ne 0 ]; then
  echo "server log (last lines, full log in $ARTIFACTS/server.log):"
  tail -n 30 "$ARTIFACTS/server.log"
fi
exit "$status"
