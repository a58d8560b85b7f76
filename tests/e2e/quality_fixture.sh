# Sourced by the quality e2e tests (arguments: BIN SRC DATA): a scratch directory WORK
# removed on exit, fail(), and RUN, the first seed of a quality.sh-shaped directory
# WORK/q whose parties/ hold wine-red split 80/20 (SCHEMA), with the parties' configs.
set -euo pipefail
BIN="$1"; SRC="$2"; DATA="$3"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
SCHEMA="$SRC/deploy/schemas/wine.schema.json"
RUN="$WORK/q/seed-1"
"$BIN/vfsynth" split --input "$DATA/winequality-red.csv" --schema "$SCHEMA" \
  --parties "$SRC/deploy/parties/wine-2.json" --out "$RUN/parties" --holdout-fraction 0.2 2>/dev/null
# Each party's config, as run-local.sh writes it beside the run (the parties' own scores
# read their data and schema from it).
for party in lab winery; do
  cat > "$RUN/$party.json" <<JSON
{"name": "$party", "curator": "127.0.0.1:50051", "plaintext": true, "data": "parties/$party.csv",
 "schema": "parties/$party.schema.json", "secrets": "secrets.txt", "privacy": {"mode": "none"}}
JSON
done
