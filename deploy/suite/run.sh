#!/usr/bin/env bash
# The generalisation suite (`deploy/quality.sh --suite` comes here): every table of
# deploy/suite/tables.tsv, converted into DIR/tables (convert-tables.sh), under each mode,
# one deploy/quality.sh run per table and mode into DIR/<table>/<mode>/, the
# independent-marginals baseline of each table on the same split (DIR/<table>/baseline.json),
# and DIR/suite.md, the dataset x mode table with the targets checked (suite_table.py).
#   deploy/quality.sh --suite --out DIR [--tables "cps1988 pima"] [--modes "none dpsgd:10"]
#                     [--seeds "1 2"] [--eval-rows N] [--bin DIR] [further quality.sh arguments]
# --modes: mode or mode:epsilon, default "none dpsgd:10 strict:10 dpsgd:1"; --seeds default 1.
# Mode mst is the centralised MST baseline: give --mst PATH (quality.sh), e.g.
# --modes "mst:1 mst:10" --mst ../shared/anchors/mst_lite.py.
# A table and mode whose summary.json exists is kept, not run again.
set -euo pipefail
SUITE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$SUITE/../.." && pwd)"
OUT="" TABLES="" MODES="none dpsgd:10 strict:10 dpsgd:1" SEEDS=1 EVAL_ROWS=10000 BIN="$ROOT/build/bin"
FORWARDED=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --tables) TABLES="$2"; shift 2 ;;
    --modes) MODES="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --eval-rows) EVAL_ROWS="$2"; FORWARDED+=("$1" "$2"); shift 2 ;;
    --bin) BIN="$2"; FORWARDED+=("$1" "$2"); shift 2 ;;
    --dataset|--csv|--schema|--parties|--label|--privacy|--epsilon)
      echo "--suite takes its tables, schemas, layouts, labels and modes from deploy/suite ($1 given)" >&2; exit 2 ;;
    *) FORWARDED+=("$1"); shift ;;
  esac
done
[ -n "$OUT" ] || { echo "--out is required" >&2; exit 2; }
# shellcheck disable=SC2086
"$SUITE/convert-tables.sh" "$OUT/tables" $TABLES
while read -r name _ _ label <&3; do
  case "$name" in ''|'#'*) continue ;; esac
  if [ -n "$TABLES" ] && [[ " $TABLES " != *" $name "* ]]; then continue; fi
  table=(--csv "$OUT/tables/$name.csv" --schema "$SUITE/$name.schema.json"
         --parties "$SUITE/$name.parties.json" --label "$label")
  first=""
  for mode in $MODES; do
    privacy="${mode%%:*}" epsilon=""
    [ "$privacy" = "$mode" ] || epsilon="${mode#*:}"
    dir="$OUT/$name/${privacy}${epsilon:+-$epsilon}"
    first="${first:-$dir}"
    if [ -f "$dir/summary.json" ]; then echo "== $name, $mode: kept ($dir/summary.json exists)"; continue; fi
    echo "== $name, $privacy${epsilon:+ ε=$epsilon}"
    "$ROOT/deploy/quality.sh" --out "$dir" "${table[@]}" --privacy "$privacy" ${epsilon:+--epsilon "$epsilon"} \
      --seeds "$SEEDS" "${FORWARDED[@]}"
  done
  python3 "$ROOT/deploy/quality_baseline.py" --out "$first" --schema "$SUITE/$name.schema.json" \
    --target "$label" --parties "$SUITE/$name.parties.json" --bin "$BIN" --eval-rows "$EVAL_ROWS" \
    --json "$OUT/$name/baseline.json"
done 3< "$SUITE/tables.tsv"
python3 "$SUITE/suite_table.py" "$OUT" | tee "$OUT/suite.md"
