#!/usr/bin/env bash
# The API contract: the server against its own OpenAPI document.
# 1. schemathesis (every check, the seed in schemathesis.toml) with an API key, then with a
#    session cookie (the dashboard's way in), against a fresh server on SQLite; 0 failures.
# 2. A typed Python client generated from the document (openapi-python-client) runs the
#    README's quickstart (quickstart.py) against a second fresh server.
# Needs scripts/install-api-tools.sh (.venv-api) and the embedding model. The server log and
# schemathesis' reports land in tests/contract/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${MEMVAULT_CONTRACT_SKIP:-}" = "1" ]; then
  echo "== API contract: SKIPPED (MEMVAULT_CONTRACT_SKIP=1; CI runs it in its SQLite pass)"
  exit 0
fi

CONTRACT=tests/contract
ARTIFACTS=$CONTRACT/artifacts
VENV=.venv-api
mkdir -p "$ARTIFACTS"
rm -rf "${ARTIFACTS:?}"/*

if [ ! -x "$VENV/bin/schemathesis" ]; then
  echo "$VENV is missing: run scripts/install-api-tools.sh first" >&2
  exit 1
fi

cargo build --bin memvault
BIN="${CARGO_TARGET_DIR:-target}/debug/memvault"

PORT=$("$VENV/bin/python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1]); s.close()")
BASE="http://127.0.0.1:$PORT"
DATA=$(mktemp -d -t memvault-contract-XXXXXX)
SERVER_PID=""

SERVER_LOG="$ARTIFACTS/server.log"
# shellcheck source=../server.sh
. tests/server.sh
trap stop_server EXIT INT TERM

# A clean server: its own SQLite file and no configuration from outside. Rate limits and the
# doors' limits are off or high: the run sends thousands of requests from one address, and a
# 429 (documented everywhere it can happen) would only hide what is behind it.
# (server_env is made again for each server: it names the data folder.)
make_env() {
  server_env=(env -u DATABASE_URL -u MEMVAULT_DATABASE_URL -u MEMVAULT_PUBLIC_URL
    MEMVAULT_CONFIG="$DATA/memvault.toml"
    MEMVAULT_DATA_DIR="$DATA"
    MEMVAULT_LISTEN="127.0.0.1:$PORT"
    MEMVAULT_RATE_LIMITS=off
    MEMVAULT_ABUSE__SIGN_UP_PER_ADDRESS_PER_HOUR=100000
    MEMVAULT_ABUSE__SIGN_UP_PER_EMAIL_PER_HOUR=100000
    MEMVAULT_ABUSE__SIGN_IN_PER_ADDRESS_PER_MINUTE=100000
    MEMVAULT_ABUSE__SIGN_IN_PER_EMAIL_PER_HOUR=100000
    MEMVAULT_ABUSE__WORKSPACES_PER_USER_PER_DAY=100000
    MEMVAULT_ABUSE__INVITATIONS_PER_WORKSPACE_PER_DAY=100000)
}
make_env
touch "$DATA/memvault.toml"

KEY=$("${server_env[@]}" "$BIN" admin create-workspace --name "Contract" --plan ultimate 2>/dev/null |
  "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['apiKey'])")

start_server() {
  "${server_env[@]}" "$BIN" serve >>"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  echo "memvault starting at $BASE (data in $DATA)"
  wait_until_ready
}
start_server

status=0
# One run: the shared configuration plus the credential of one security scheme (`api_key` or
# `session`), so that schemathesis knows it and can also test requests without it.
run_schemathesis() {
  local name=$1 scheme=$2 credential=$3
  shift 3
  echo "== schemathesis ($name)"
  local config="$ARTIFACTS/schemathesis-$name.toml"
  cp "$CONTRACT/schemathesis.toml" "$config"
  printf '\n[auth.openapi.%s]\napi_key = "%s"\n' "$scheme" "$credential" >>"$config"
  if ! SCHEMATHESIS_HOOKS="$CONTRACT/hooks.py" "$VENV/bin/schemathesis" --config-file "$config" run \
    "$BASE/api/openapi.json" --no-color "$@" \
    --report junit --report-dir "$ARTIFACTS/$name" >"$ARTIFACTS/schemathesis-$name.txt" 2>&1; then
    status=1
    echo "schemathesis ($name) found failures:"
    sed -n '/FAILURES/,$p' "$ARTIFACTS/schemathesis-$name.txt" | head -n 200
  else
    tail -n 12 "$ARTIFACTS/schemathesis-$name.txt"
  fi
}

run_schemathesis key api_key "$KEY"

# The same, signed in: a user's session cookie, with this server's Origin on every request
# (a cookie request that changes something must carry it).
EMAIL="contract-$(date +%s)@example.com"
COOKIE=$(curl -fsS -D - -o /dev/null -H 'Content-Type: application/json' -H "Origin: $BASE" \
  -d "{\"email\":\"$EMAIL\",\"password\":\"correct horse battery\"}" "$BASE/api/auth/sign-up" |
  tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(memvault\.session_token=[^;]*\).*/\1/p' | head -n 1)
if [ -z "$COOKIE" ]; then
  echo "sign-up gave no session cookie" >&2
  exit 1
fi
WORKSPACE=$(curl -fsS -H "Cookie: $COOKIE" "$BASE/api/workspaces" |
  "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['workspaces'][0]['id'])")
export MEMVAULT_CONTRACT_WORKSPACE=$WORKSPACE
# Signing out would end the session the rest of the run uses: that operation is left to the
# key run (where it answers 401).
run_schemathesis cookie session "${COOKIE#memvault.session_token=}" -H "Origin: $BASE" \
  --exclude-path /api/auth/sign-out

# 2. The generated client's quickstart, on a server of its own (the fuzzing left the first one
# full of odd data). The billing webhook (text/plain, for the provider) is not generated.
stop_server
DATA=$(mktemp -d -t memvault-contract-XXXXXX)
make_env
touch "$DATA/memvault.toml"
KEY=$("${server_env[@]}" "$BIN" admin create-workspace --name "Quickstart" 2>/dev/null |
  "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['apiKey'])")
start_server
echo "== generated client: the quickstart"
rm -rf "$ARTIFACTS/client"
if ! "$VENV/bin/openapi-python-client" generate --url "$BASE/api/openapi.json" --meta none \
  --output-path "$ARTIFACTS/client/memvault_client" >"$ARTIFACTS/client-generation.txt" 2>&1; then
  status=1
  cat "$ARTIFACTS/client-generation.txt"
elif ! PYTHONPATH="$ARTIFACTS/client" "$VENV/bin/python" "$CONTRACT/quickstart.py" "$BASE" "$KEY"; then
  status=1
fi

if [ "$status" -ne 0 ]; then
  echo "server log (last lines, full log in $ARTIFACTS/server.log):"
  tail -n 30 "$ARTIFACTS/server.log"
fi
exit "$status"
