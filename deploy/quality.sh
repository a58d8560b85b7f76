#!/usr/bin/env bash
# One row of docs/results.md's tables: trains the distributed system
# (curator + parties over loopback mTLS, deploy/run-local.sh) once per seed on 80% of
# the records, evaluates the published table of the last round against the 20% it
# never saw (vfsynth eval --holdout), and prints the mean and spread over seeds.
#   deploy/quality.sh --out DIR [--dataset adult|wine-red|wine-white
#                     | --csv T.csv --schema S.json --parties P.json --label C] [--privacy MODE]
#                     [--epsilon E] [--seeds "1 2 3"] [--rounds N] [--eval-rows N] [--schema S.json]
#                     [--eval-repeats R] [--rescore] [--mst mst_lite.py]
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
# --privacy mst --epsilon E --mst PATH: the centralised MST baseline (PATH is mst_lite.py,
# kept outside the repository; docs/results.md) instead of a vfsynth run: the same split
# and party configs as a vfsynth run of the seed (run-local.sh --prepare-only), mst_lite.py
# on the training rows, then the same evaluation. --delta D (default 1e-5) reaches it too.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="" DATASET=adult CSV="" PRIVACY=none EPSILON="" SEEDS="1 2 3" ROUNDS="" EVAL_ROWS=10000 SCHEMA_OVERRIDE=""
EVAL_REPEATS=5 RESCORE=0 MST="" DELTA=1e-5
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
    --mst) MST="$2"; shift 2 ;;
    --delta) DELTA="$2"; EXTRA+=(--delta "$2"); shift 2 ;;
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
if [ "$PRIVACY" = mst ]; then
  [ -n "$MST" ] || { echo "--privacy mst needs --mst PATH (the MST baseline's mst_lite.py, kept outside the repository)" >&2; exit 2; }
  [ -f "$MST" ] || { echo "--mst $MST: no such file" >&2; exit 2; }
fi
# The MST baseline's seed $2 into run directory $1. run-local.sh --prepare-only makes the
# split (train.csv, holdout.csv) and the party data and configs exactly as a vfsynth run of
# the seed does (the split depends on the seed, table and layout only, not on the mode), so
# both are scored on the same rows and evaluate_parties works unchanged; nothing is started.
# mst_lite.py generates as many rows as the training split has (a vfsynth run's default).
# It runs under the Debian python3, where install-deps.sh puts numpy, pandas and scipy (a
# python3 earlier on PATH, e.g. pyenv's, may lack them).
train_mst() {
  "$ROOT/deploy/run-local.sh" --out "$1" --dataset "$DATASET" --seed "$2" --holdout 0.2 \
    --privacy none "${EXTRA[@]}" --prepare-only \
    && /usr/bin/python3 "$MST" --csv "$1/parties/train.csv" --schema "$SCHEMA" \
      --epsilon "$EPSILON" --delta "$DELTA" --out "$1/synthetic.csv" \
      --rows "$(($(wc -l < "$1/parties/train.csv") - 1))" --seed "$2"
}
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
    if [ "$PRIVACY" = mst ]; then
      train_mst "$run" "$seed" > "$run.log" 2>&1
    else
      "$ROOT/deploy/run-local.sh" --out "$run" --dataset "$DATASET" ${ROUNDS:+--rounds "$ROUNDS"} --seed "$seed" \
        --holdout 0.2 "${privacy_args[@]}" "${EXTRA[@]}" > "$run.log" 2>&1
    fi || { tail -n 20 "$run.log" >&2; echo "run with seed $seed failed" >&2; exit 1; }
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
  --label "$DATASET${SCHEMA_OVERRIDE:+ ($(basename "$SCHEMA_OVERRIDE" .schema.json))} $PRIVACY${EPSILON:+ ε=$EPSILON}$([ "$PRIVACY" = mst ] || echo " (${ROUNDS:-default} rounds)")" "$OUT"/seed-*/ > "$OUT/summary.json"
python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["markdown_row"])' "$OUT/summary.json"
