#!/usr/bin/env bash
# Installs the Debian packages memvault needs to build, run and test (once; a no-op when they
# are all present). Run as root (CI) or with sudo.
set -euo pipefail

packages=(
  make python3 python3-pip python3-venv ca-certificates pkg-config
  # OCR (leptess): build
  libleptonica-dev libtesseract-dev libclang1-14 libclang-common-14-dev
  # OCR: run (English language data)
  tesseract-ocr-eng
  # OCR test images
  imagemagick fonts-dejavu-core
)

missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "system packages present"
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
