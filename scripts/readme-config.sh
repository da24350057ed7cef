#!/bin/sh
# Regenerates README.md's configuration table from `queen --config-markdown`
# (the same settings table that `queen --help` prints).
# Usage: readme-config.sh BUILD_DIR
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
BIN="${1:-build}/queen"
TABLE=$("$BIN" --config-markdown)
awk -v table="$TABLE" '
    /<!-- BEGIN queen --help -->/ { print; print table; skip = 1; next }
    /<!-- END queen --help -->/ { skip = 0 }
    !skip { print }
' "$ROOT/README.md" > "$ROOT/README.md.tmp"
mv "$ROOT/README.md.tmp" "$ROOT/README.md"
