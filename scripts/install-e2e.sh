#!/usr/bin/env bash
# Installs what the dashboard's end-to-end test (tests/e2e) needs, once; a no-op when present:
# Debian's chromium (the browser the test drives: /usr/bin/chromium; no browser is ever
# downloaded), Node.js and npm (to run playwright-core), curl (the test uses an API key with it),
# then the test's pinned npm packages (npm ci in tests/e2e). Run as root (CI) or with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
# Node.js from another source (NodeSource) ships npm itself; Debian's nodejs does not.
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v curl >/dev/null 2>&1 || missing+=(curl)

if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
else
  echo "chromium, node, npm and curl present"
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 18 ]; then
  echo "Node.js $(node --version) is too old for playwright-core: 18 or newer is needed" >&2
  exit 1
fi

# The pinned playwright-core from package-lock.json (it downloads no browser).
if [ -f tests/e2e/node_modules/.package-lock.json ] \
  && cmp -s <(node -p 'require("./tests/e2e/package-lock.json").packages["node_modules/playwright-core"].version') \
            <(node -p 'require("./tests/e2e/node_modules/playwright-core/package.json").version' 2>/dev/null); then
  echo "tests/e2e/node_modules up to date"
else
  (cd tests/e2e && npm ci --no-audit --no-fund)
fi
