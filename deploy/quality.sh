#!/usr/bin/env bash
# One row of docs/evaluation.md's results table: trains the distributed system
# (curator + parties over loopback mTLS, deploy/run-local.sh) once per seed on 80% of
# the records, evaluates the published table of the last round against the 20% it
# never saw (vfsynth eval --holdout), and prints the mean and spread over seeds.
#   deploy/quality.sh --out DIR [--dataset adult|wine-red|wine-white
#                     | --csv T.csv --schema S.json --parties P.json --label C] [--privacy MODE]
#                     [--epsilon E] [--seeds "1 2 3"] [--rounds N] [--eval-rows N] [--schema S.json]
#                     [--eval-repeats R] [--rescore]
#                     [any further deploy/run-local.sh arguments, e.g. --batch 512]
#   deploy/quality.sh --suite --out DIR [...]   the generalisation suite (deploy/suite/run.sh)
# Writes DIR/seed-<s>/ (run, metrics.json, report.html, party-<name>/: each party's score of
# the table on its own data) and DIR/summary.json.
# --rounds: default the curator's for the mode (docs/configuration.md).
# Each table is evaluated R times (default 5): at eval seed s (metrics.json, the
# protocol's figure) and at s + 1000·r (seed-<s>/eval-<r>/). One evaluation of one
# table moves the total difference by about ±0.03 (its 10,000-row subsample and 20 %
# synthetic test split); the summary also gives the
# mean over the R. --rescore evaluates DIR's existing tables again without training.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="" DATASET=adult CSV="" PRIVACY=none EPSILON="" SEEDS="1 2 3" ROUNDS="" EVAL_ROWS=10000 SCHEMA_OVERRIDE=""
EVAL_REPEATS=5 RESCORE=0
for arg in "$@"; do
  if [ "$arg" = --suite ]; then
    args=()
    for a in "$@"; do [ "$a" = --suite ] || args+=("$a"); done
    exec "$ROOT/deploy/suite/run.sh" "${args[@]}"
  fi
done
BIN="$ROOT/build/bin"
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --dataset) DATASET="$2"; shift 2 ;;
    --csv) CSV="$2"; EXTRA+=(--csv "$2"); shift 2 ;;
    --parties) LAYOUT="$2"; EXTRA+=(--parties "$2"); shift 2 ;;
    --label) TARGET="$2"; EXTRA+=(--label-column "$2"); shift 2 ;;
    --privacy) PRIVACY="$2"; shift 2 ;;
    --epsilon) EPSILON="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --eval-rows) EVAL_ROWS="$2"; shift 2 ;;
    --eval-repeats) EVAL_REPEATS="$2"; shift 2 ;;
    --rescore) RESCORE=1; shift ;;
    --bin) BIN="$2"; EXTRA+=(--bin "$2"); shift 2 ;;
    --schema) SCHEMA_OVERRIDE="$2"; EXTRA+=(--schema "$2"); shift 2 ;;
    *) EXTRA+=("$1"); shift ;;
  esac
done
[ -n "$OUT" ] || { echo "--out is required" >&2; exit 2; }
[[ "$EVAL_REPEATS" =~ ^[1-9][0-9]*$ ]] || { echo "--eval-repeats must be a positive integer" >&2; exit 2; }
[ -z "$ROUNDS" ] || [[ "$ROUNDS" =~ ^[0-9]+$ ]] || { echo "--rounds must be a non-negative integer" >&2; exit 2; }
if [ -n "$CSV" ]; then
  [ -n "$SCHEMA_OVERRIDE" ] && [ -n "${LAYOUT:-}" ] && [ -n "${TARGET:-}" ] \
    || { echo "--csv needs --schema, --parties and --label (the column the utility models predict)" >&2; exit 2; }
  DATASET=csv
fi
case "$DATASET" in
  csv) SCHEMA="$SCHEMA_OVERRIDE" ;;
  adult) SCHEMA="$ROOT/deploy/schemas/adult.schema.json"; TARGET=class; LAYOUT="$ROOT/deploy/parties/adult-3.json" ;;
  wine-red|wine-white) SCHEMA="$ROOT/deploy/schemas/wine.schema.json"; TARGET=quality; LAYOUT="$ROOT/deploy/parties/wine-2.json" ;;
  *) echo "unknown dataset $DATASET" >&2; exit 2 ;;
esac
[ -z "$SCHEMA_OVERRIDE" ] || SCHEMA="$SCHEMA_OVERRIDE"
privacy_args=(--privacy "$PRIVACY")
if [ "$PRIVACY" != none ]; then
  [ -n "$EPSILON" ] || { echo "--privacy $PRIVACY needs --epsilon" >&2; exit 2; }
  privacy_args+=(--epsilon "$EPSILON")
fi
# Evaluates run $1's published table into $2 at eval seed $3.
evaluate() {
  mkdir -p "$2"
  "$BIN/vfsynth" eval --real "$1/parties/train.csv" --holdout "$1/parties/holdout.csv" \
    --synthetic "$1/synthetic.csv" --schema "$SCHEMA" --target "$TARGET" --parties "$LAYOUT" --out "$2" \
    --eval-max-rows "$EVAL_ROWS" --eval-seed "$3" 2> "$2/eval.log" \
    || { tail -n 5 "$2/eval.log" >&2; exit 1; }
}
# Each party of run $1 scores the published table on its own rows and columns (vfsynth eval
# --party-config) into $1/party-<name>/ at eval seed $2; the label's holder predicts it.
evaluate_parties() {
  local party target_args
  for party in $(python3 -c 'import json, sys; print(" ".join(p["name"] for p in json.load(open(sys.argv[1]))["parties"]))' "$LAYOUT"); do
    [ -f "$1/$party.json" ] || { echo "$1 has no $party.json (the party's config run-local.sh writes)" >&2; exit 1; }
    target_args=()
    grep -q "\"name\": *\"$TARGET\"" "$1/parties/$party.schema.json" && target_args=(--target "$TARGET")
    "$BIN/vfsynth" eval --party-config "$1/$party.json" --synthetic "$1/synthetic.csv" --out "$1/party-$party" \
      "${target_args[@]}" --eval-max-rows "$EVAL_ROWS" --eval-seed "$2" 2> "$1/party-$party.log" \
      || { tail -n 5 "$1/party-$party.log" >&2; exit 1; }
  done
}
total_difference() { sed -n 's/.*total difference \([0-9.]*\).*/\1/p' "$1/metrics.json" | head -n 1; }
mkdir -p "$OUT"
for seed in $SEEDS; do
  run="$OUT/seed-$seed"
  if [ "$RESCORE" = 1 ]; then
    [ -f "$run/synthetic.csv" ] && [ -f "$run/train-seconds" ] \
      || { echo "--rescore: $run has no published table (synthetic.csv, train-seconds)" >&2; exit 1; }
  else
    rm -rf "$run"
    start=$(date +%s.%N)
    "$ROOT/deploy/run-local.sh" --out "$run" --dataset "$DATASET" ${ROUNDS:+--rounds "$ROUNDS"} --seed "$seed" \
      --holdout 0.2 "${privacy_args[@]}" "${EXTRA[@]}" > "$run.log" 2>&1 \
      || { tail -n 20 "$run.log" >&2; echo "run with seed $seed failed" >&2; exit 1; }
    end=$(date +%s.%N)
    echo "$start $end" | awk '{printf "%.1f\n", $2 - $1}' > "$run/train-seconds"
  fi
  rm -rf "$run"/eval-*/ "$run"/party-*/
  evaluate "$run" "$run" "$seed"
  evaluate_parties "$run" "$seed"
  repeated="$(total_difference "$run")"
  for ((r = 1; r < EVAL_REPEATS; r++)); do
    evaluate "$run" "$run/eval-$r" "$((seed + 1000 * r))"
    repeated="$repeated $(total_difference "$run/eval-$r")"
  done
  echo "seed $seed: $(sed -n 's/.*"summary": "\([^"]*\)".*/\1/p' "$run/metrics.json") ($(cat "$run/train-seconds") s training); total difference over $EVAL_REPEATS evaluations: $repeated"
done
python3 "$ROOT/deploy/quality_summary.py" --layout "$LAYOUT" \
  --label "$DATASET${SCHEMA_OVERRIDE:+ ($(basename "$SCHEMA_OVERRIDE" .schema.json))} $PRIVACY${EPSILON:+ ε=$EPSILON} (${ROUNDS:-default} rounds)" "$OUT"/seed-*/ > "$OUT/summary.json"
python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["markdown_row"])' "$OUT/summary.json"
