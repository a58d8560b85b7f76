#!/usr/bin/env bash
# One-shot set-up step of deploy/docker-compose.yml for the demo: splits a shipped
# dataset by the party layout (vfsynth split) and puts each party's CSV and schema
# into that party's own data volume. A real deployment mounts each institution's
# own files there instead. Existing files are kept; runs as root to hand them over.
#   env: VFSYNTH_PARTIES, DATASET (CSV), SCHEMA, LAYOUT (party layout JSON), VFSYNTH_UID
#   volumes: /init/<party>-data
set -euo pipefail
PARTIES="${VFSYNTH_PARTIES:?set VFSYNTH_PARTIES to the roster}"
OWNER="${VFSYNTH_UID:-10001}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DATASET="${DATASET:-$ROOT/deploy/datasets/adult.csv}"
SCHEMA="${SCHEMA:-$ROOT/deploy/schemas/adult.schema.json}"
LAYOUT="${LAYOUT:-$ROOT/deploy/parties/adult-3.json}"
split_dir=$(mktemp -d)
trap 'rm -rf "$split_dir"' EXIT

vfsynth split --input "$DATASET" --schema "$SCHEMA" --parties "$LAYOUT" --out "$split_dir"
for party in $PARTIES; do
  dir="/init/$party-data"
  [ -d "$dir" ] || { echo "data-init: $dir is not mounted" >&2; exit 1; }
  for file in "$party.csv" "$party.schema.json"; do
    [ -f "$split_dir/$file" ] || { echo "data-init: the layout has no party '$party'" >&2; exit 1; }
    [ -f "$dir/$file" ] || install -m 640 "$split_dir/$file" "$dir/$file"
  done
  chown -R "$OWNER:$OWNER" "$dir"
done
echo "data-init: $(basename "$DATASET") split for $PARTIES"
