#!/usr/bin/env bash
# vfsynth demo: installs what is missing, builds, splits Adult into 3 party files and
# trains the split GAN, writing demo-out/synthetic.csv.
# Until the distributed daemons land this runs the single-process reference trainer.
# Usage: deploy/demo.sh [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=300
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) echo "usage: deploy/demo.sh [--rounds N]" >&2; exit 2 ;;
  esac
done

deploy/build.sh
OUT=demo-out
mkdir -p "$OUT/parties"
build/bin/vfsynth split --input data/adult.csv --schema deploy/schemas/adult.schema.json \
  --parties deploy/parties/adult-3.json --out "$OUT/parties"

cat > "$OUT/train-local.json" <<JSON
{
  "run_id": "demo",
  "parties": [
    {"name": "hospital", "data": "parties/hospital.csv", "schema": "parties/hospital.schema.json"},
    {"name": "insurer",  "data": "parties/insurer.csv",  "schema": "parties/insurer.schema.json"},
    {"name": "bank",     "data": "parties/bank.csv",     "schema": "parties/bank.schema.json"}
  ],
  "training": {"rounds": ${ROUNDS}, "log_every": 25},
  "output": {"synthetic_csv": "synthetic.csv"}
}
JSON

start=$(date +%s)
build/bin/vfsynth train-local --config "$OUT/train-local.json"
elapsed=$(( $(date +%s) - start ))
rows=$(( $(wc -l < "$OUT/synthetic.csv") - 1 ))
echo
echo "== vfsynth demo summary =="
echo "rounds:          ${ROUNDS} (reference trainer, 3 parties, privacy: none)"
echo "training time:   ${elapsed}s"
echo "synthetic rows:  ${rows}"
echo "synthetic table: $(pwd)/$OUT/synthetic.csv"
