#!/usr/bin/env bash
# vfsynth demo, on a fresh machine: installs what is missing, builds, makes
# certificates, splits Adult into 3 party files (hospital, insurer, bank), starts one
# curator and 3 parties on loopback over mTLS, trains, writes
# demo-out/synthetic.csv and demo-out/report.html, lets each party score the table on
# its own data (demo-out/eval-<party>/), and prints a summary.
# Privacy: mode `marginals` at (epsilon 10, delta 1e-5) by default: the parties measure
# noisy histograms once (across parties by secure counts), each charging its ledger, and G
# is fitted to them for --rounds steps; epsilon 10 holds against every observer.
# Usage: deploy/demo.sh [--rounds N] [--privacy marginals|none|dpsgd|strict|vflgan|gswgan|pate] [--epsilon E]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=2000 PRIVACY=marginals EPSILON=10
USAGE="usage: deploy/demo.sh [--rounds N] [--privacy marginals|none|dpsgd|strict|vflgan|gswgan|pate] [--epsilon E]"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --privacy) PRIVACY="$2"; shift 2 ;;
    --epsilon) EPSILON="$2"; shift 2 ;;
    *) echo "$USAGE" >&2; exit 2 ;;
  esac
done

deploy/build.sh
OUT=demo-out
rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)
privacy_args=(--privacy "$PRIVACY")
[ "$PRIVACY" = none ] || privacy_args+=(--epsilon "$EPSILON")
# The schema holds public bounds only; its numeric columns train over their grids
# (docs/data.md). In strict and dpsgd run-local.sh releases label pairs for Adult's label
# `class`, whose predictors all sit at other parties (docs/privacy.md, "Label pairs").
deploy/run-local.sh --out "$OUT" --dataset adult --rounds "$ROUNDS" "${privacy_args[@]}"
elapsed=$(( $(date +%s) - start ))

echo "evaluating the synthetic table against the real one (vfsynth eval)..."
build/bin/vfsynth eval --real deploy/datasets/adult.csv --synthetic "$OUT/synthetic.csv" \
  --schema deploy/schemas/adult.schema.json --target class --out "$OUT" \
  --privacy-statement "$OUT/synthetic.privacy.json" --eval-max-rows 10000 2> "$OUT/logs/eval.log"

# What each institution can check alone: the table against its own rows and columns
# (not DP; it stays with the party). The bank holds the label.
for party in hospital insurer bank; do
  target_args=()
  [ "$party" = bank ] && target_args=(--target class)
  build/bin/vfsynth eval --party-config "$OUT/$party.json" --synthetic "$OUT/synthetic.csv" \
    --out "$OUT/eval-$party" "${target_args[@]}" --eval-max-rows 10000 2> "$OUT/logs/eval-$party.log"
done

score() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p" "${2:-$OUT}/metrics.json" | head -1; }
# Predicting `class` with model $1 trained on real rows (TRTR) and on synthetic ones (TSTR),
# both tested on real rows.
utility() {
  awk -v model="$1" '
    $0 ~ "\"model\": \"" model "\"" { on = 1; next }
    on && /"model":/ { on = 0 }
    on && /"(trtr|tstr|trts|tsts)"/ { match($0, /"[a-z]+"/); scheme = substr($0, RSTART + 1, RLENGTH - 2) }
    on && /"accuracy"/ { gsub(/[^0-9.eE+-]/, "", $2); accuracy[scheme] = $2 }
    on && /"binary_f1"/ { gsub(/[^0-9.eE+-]/, "", $2); f1[scheme] = $2 }
    END { printf "accuracy %.3f / %.3f, F1 %.3f / %.3f", accuracy["trtr"], accuracy["tstr"], f1["trtr"], f1["tstr"] }
  ' "$OUT/metrics.json"
}
rows=$(( $(wc -l < "$OUT/synthetic.csv") - 1 ))
rate=$(grep -oE '(rounds|steps)/s=[0-9.]*' "$OUT/logs/curator.log" | tail -1 | cut -d= -f2)
echo
echo "== vfsynth demo summary =="
echo "parties:          hospital, insurer, bank (separate processes, mTLS on loopback)"
echo "rounds:           ${ROUNDS} (${rate:-?} rounds/s, ${elapsed}s wall including start-up)"
echo "privacy:          $(build/bin/vfsynth privacy statement "$OUT/synthetic.privacy.json" | sed '1s/^privacy //; 2,$s/^/                /')"
[ "$PRIVACY" = none ] || [ "$PRIVACY" = vflgan ] || echo "ledgers:          $OUT/*.ledger"
echo "synthetic rows:   ${rows}"
echo "column shapes:    $(score column_shapes)"
echo "pair trends:      $(score column_pair_trends)"
echo "summary score:    $(score summary_score)"
echo "each party alone: hospital $(score summary_score "$OUT/eval-hospital"), insurer $(score summary_score \
  "$OUT/eval-insurer"), bank $(score summary_score "$OUT/eval-bank") (summary score on its own rows and columns)"
# The curator's score against what the run released under DP (no further ε; none in mode none).
if [ -f "$OUT/synthetic.released.json" ]; then
  released() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p" "$OUT/synthetic.released.json" | head -1; }
  echo "released stats:   $(awk -v score="$(released score)" -v floor="$(released noise_floor)" \
    'BEGIN { printf "%.3f against the run'"'"'s released histograms (the real table: about %.3f)", score, 1 - floor }')" \
    "($OUT/synthetic.released.json)"
fi
echo "predicting class: $(utility random_forest) (random forest trained on real / on synthetic rows, tested on real)"
echo "synthetic table:  $(pwd)/$OUT/synthetic.csv"
echo "report:           $(pwd)/$OUT/report.html"
echo "logs:             $(pwd)/$OUT/logs/"
