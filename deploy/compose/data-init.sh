#!/usr/bin/env bash
# One-shot set-up step of deploy/docker-compose.yml and of the Kubernetes data-prep Job
# (deploy/k8s/party/base/data-prep-job.yaml): splits a shipped dataset by the party
# layout (vfsynth split) and puts each party's CSV and schema into that party's own
# data volume, or, with SOURCE_DIR, loads them from there (an institution's own files).
# Existing files are kept; as root it hands them to the daemons' uid.
#   env: VFSYNTH_PARTIES, DATASET (CSV), SCHEMA, LAYOUT (party layout JSON), VFSYNTH_UID,
#        DATA_DIR (one party's volume, instead of /init/<party>-data),
#        SOURCE_DIR (holds <party>.csv and <party>.schema.json: copied, not split)
#   volumes: /init/<party>-data, or DATA_DIR
set -euo pipefail
PARTIES="${VFSYNTH_PARTIES:?set VFSYNTH_PARTIES to the roster}"
OWNER="${VFSYNTH_UID:-10001}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DATASET="${DATASET:-$ROOT/deploy/datasets/adult.csv}"
SCHEMA="${SCHEMA:-$ROOT/deploy/schemas/adult.schema.json}"
LAYOUT="${LAYOUT:-$ROOT/deploy/parties/adult-3.json}"
read -r -a roster <<< "$PARTIES"
if [ -n "${DATA_DIR:-}" ] && [ "${#roster[@]}" -ne 1 ]; then
  echo "data-init: DATA_DIR is one party's volume, but VFSYNTH_PARTIES names ${#roster[@]}" >&2
  exit 1
fi
if [ -n "${SOURCE_DIR:-}" ]; then
  from="$SOURCE_DIR"
  what="loaded from $SOURCE_DIR"
else
  from=$(mktemp -d)
  trap 'rm -rf "$from"' EXIT
  vfsynth split --input "$DATASET" --schema "$SCHEMA" --parties "$LAYOUT" --out "$from"
  what="$(basename "$DATASET") split"
fi
for party in "${roster[@]}"; do
  dir="${DATA_DIR:-/init/$party-data}"
  [ -d "$dir" ] || { echo "data-init: $dir is not mounted" >&2; exit 1; }
  for file in "$party.csv" "$party.schema.json"; do
    [ -f "$from/$file" ] || { echo "data-init: $from has no $file (is '$party' a party of the layout?)" >&2; exit 1; }
    [ -f "$dir/$file" ] || install -m 640 "$from/$file" "$dir/$file"
  done
  if [ "$(id -u)" -eq 0 ]; then chown -R "$OWNER:$OWNER" "$dir"; fi
done
echo "data-init: $what for ${roster[*]}"
