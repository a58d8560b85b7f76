#!/usr/bin/env bash
# The scale case: a generated table of N aligned records (Adult's rows drawn with
# replacement and jittered, tests/bench/scale_table.py) over K parties, run through the real
# daemons on this host (deploy/run-local.sh), once per K. Reports per K: the parties' data
# load, PSI alignment, rounds/s, publication of N rows, and the peak resident set of the
# curator and of the largest party (GNU time).
#   tests/bench/scale.sh --out DIR [--rows N (1000000)] [--parties "2 4 8"] [--rounds R (20)]
#                        [--privacy MODE (strict)] [--epsilon E (10)] [--seed S (1)] [--bin DIR]
#                        [--max-party-mb M] [--max-curator-mb M]
# Writes DIR/scale.json and DIR/scale.md (also printed); each run stays in DIR/kK. With the
# --max-* bounds it exits 1 when a daemon's peak exceeds one (docs/performance.md, "Scale").
set -euo pipefail
if [ "${1:-}" = --wrap ]; then  # the daemons' launcher: NAME BINARY ARGS...
  name="$2"; shift 2
  exec /usr/bin/time -f %M -o "$SCALE_RSS_DIR/$name.kb" "$@"
fi
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="" ROWS=1000000 PARTIES="2 4 8" ROUNDS=20 PRIVACY=strict EPSILON=10 SEED=1
BIN="$ROOT/build/bin" BOUNDS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --rows) ROWS="$2"; shift 2 ;;
    --parties) PARTIES="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --privacy) PRIVACY="$2"; shift 2 ;;
    --epsilon) EPSILON="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --max-party-mb|--max-curator-mb) BOUNDS+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "--out is required" >&2; exit 2; }
[[ "$ROWS" =~ ^[1-9][0-9]*$ ]] || { echo "--rows must be a positive integer" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is missing: run deploy/install-deps.sh" >&2; exit 2; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# The Debian python3 carries numpy and pandas (install-deps.sh); pyenv's may not.
# shellcheck disable=SC2086
/usr/bin/python3 "$ROOT/tests/bench/scale_table.py" "$ROOT/deploy/datasets/adult.csv" "$ROWS" \
  "$SEED" "$OUT/table.csv" --layouts $PARTIES --layout-dir "$OUT"
runs=()
for k in $PARTIES; do
  run="$OUT/k$k"
  rm -rf "$run"; mkdir -p "$run/rss"
  echo "scale: $ROWS records over $k parties ($PRIVACY, $ROUNDS rounds) in $run" >&2
  SCALE_RSS_DIR="$run/rss" "$ROOT/deploy/run-local.sh" --out "$run" --bin "$BIN" \
    --csv "$OUT/table.csv" --schema "$ROOT/deploy/schemas/adult.schema.json" \
    --parties "$OUT/layout-k$k.json" --label-column class --privacy "$PRIVACY" \
    ${EPSILON:+--epsilon "$EPSILON"} --rounds "$ROUNDS" --seed "$SEED" \
    --join-timeout 3600 --launcher "bash $ROOT/tests/bench/scale.sh --wrap" > "$run/run-local.out" 2>&1 \
    || { echo "scale: the run over $k parties failed (logs in $run/logs)" >&2; tail -5 "$run/run-local.out" >&2; exit 1; }
  runs+=("$run")
done
python3 "$ROOT/tests/bench/scale_report.py" "${runs[@]}" --json "$OUT/scale.json" \
  --markdown "$OUT/scale.md" --expect-rows "$ROWS" "${BOUNDS[@]}"
cat "$OUT/scale.md"
