#!/usr/bin/env bash
# Installs the official MCP Python SDK (package `mcp`, pinned) into ./.venv-mcp, once. The
# integration suite drives memvault's MCP server with it (tests/mcp/client.py); nothing at run
# time needs it.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="2.3.0"
VENV=".venv-mcp"

if [ -x "$VENV/bin/python" ] &&
  "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$VERSION')" 2>/dev/null; then
  echo "mcp client $VERSION present in $VENV"
  exit 0
fi
echo "installing the MCP Python SDK (mcp==$VERSION) into $VENV ..."
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$VERSION"
"$VENV/bin/python" -c "import mcp.client.streamable_http"
echo "mcp client installed in $VENV"
