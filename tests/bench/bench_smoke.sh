#!/usr/bin/env bash
# Runs vfsynth-bench on a tiny grid and checks that its JSON report is well-formed and
# complete. No assertion on timings: performance is measured by the benchmark itself.
#   bench_smoke.sh BIN_DIR WORK_DIR
set -euo pipefail
BIN="$1"; WORK="$2"
rm -rf "$WORK"; mkdir -p "$WORK"
"$BIN/vfsynth-bench" --grid smoke --work_dir "$WORK/work" --out "$WORK/bench.json" \
  --markdown "$WORK/bench.md" --budget_seconds 0.5 --reference_budget_seconds 0.2 \
  --min_rounds 2 --max_rounds 2 --measured adult-k2 --measured_records 1500 \
  --measured_fit_steps 3 --throughput_records 60 --log_level warn > "$WORK/stdout.md"
python3 "$(dirname "$0")/check_bench_json.py" "$WORK/bench.json" "$WORK/bench.md" \
  --cases vflgan-k2-b64-none k2-b64-none k2-b64-dpsgd k2-b64-strict \
  --measurements adult-k2
