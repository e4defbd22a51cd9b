#!/usr/bin/env bash
# Installs the API contract tools (pinned) into ./.venv-api, once: schemathesis, which fuzzes
# the server against its OpenAPI document, and openapi-python-client, which generates a typed
# client from it (tests/contract/run.sh uses both), with what that client imports. Nothing at
# run time needs them.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS="4.32.5"
CLIENT_GENERATOR="0.29.1"
# What the generated client imports besides httpx and attrs (which the generator brings).
DATEUTIL="2.9.0.post0"
VENV=".venv-api"

if [ -x "$VENV/bin/python" ] &&
  "$VENV/bin/python" - "$SCHEMATHESIS" "$CLIENT_GENERATOR" "$DATEUTIL" <<'PY' 2>/dev/null; then
import importlib.metadata as m, sys
sys.exit(m.version("schemathesis") != sys.argv[1] or m.version("openapi-python-client") != sys.argv[2]
         or m.version("python-dateutil") != sys.argv[3])
PY
  echo "schemathesis $SCHEMATHESIS and openapi-python-client $CLIENT_GENERATOR present in $VENV"
  exit 0
fi
echo "installing schemathesis $SCHEMATHESIS and openapi-python-client $CLIENT_GENERATOR into $VENV ..."
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
  "schemathesis==$SCHEMATHESIS" "openapi-python-client==$CLIENT_GENERATOR" \
  "python-dateutil==$DATEUTIL"
"$VENV/bin/schemathesis" --version
echo "api tools installed in $VENV"
