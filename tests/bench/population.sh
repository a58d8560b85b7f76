#!/usr/bin/env bash
# The population benchmark of the horizontal topology (docs/evaluation.md, "Horizontal
# topology at population scale"): U users of two rows each, drawn with replacement from
# Adult's training split (tests/bench/population_table.py), trained through the real
# daemons (deploy/run-local.sh --topology horizontal) per U, epsilon and mode, and the
# published table scored with `vfsynth eval` on the split's holdout, beside the
# independent-marginals baseline.
#   tests/bench/population.sh --out DIR [--users "10000 100000 1000000"] [--epsilons "2 4 8"]
#       [--modes "signds dpfedavg"] [--parties 3] [--seed S (1)] [--bin DIR (build/bin)]
#       [--users-per-round-signds N (U / 2000, at least 1: 2,000 rounds, each user once)]
#       [--users-per-round-dpfedavg N (U / 100, at least 1,000, at most U)]
#       [--rounds R (the mode's: signds U / users a round, dpfedavg 300)]
#       [--eval-rows N (10000)]
# signds runs with participation_cap 1 (each user answers once); the other settings are
# the shipped defaults (the paper's model and alpha). --rounds shortens a run (a smoke test).
# Writes DIR/population.json and DIR/population.md (also printed). DIR/data holds the
# split and the tables, DIR/baseline the baseline's evaluation, DIR/u<U>-<mode>-e<eps> each
# run (its run-local.sh directory, rss/ the daemons' peak resident sets, eval/ the scores).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="" USERS="10000 100000 1000000" EPSILONS="2 4 8" MODES="signds dpfedavg" PARTIES=3
SEED=1 BIN="$ROOT/build/bin" UPR_SIGNDS="" UPR_DPFEDAVG="" ROUNDS="" EVAL_ROWS=10000
while [ $# -gt 0 ]; do
  case "$1" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
  [ $# -ge 2 ] || { echo "$1 needs a value (--help lists the flags)" >&2; exit 2; }
  case "$1" in
    --out) OUT="$2" ;;
    --users) USERS="$2" ;;
    --epsilons) EPSILONS="$2" ;;
    --modes) MODES="$2" ;;
    --parties) PARTIES="$2" ;;
    --seed) SEED="$2" ;;
    --bin) BIN="$2" ;;
    --users-per-round-signds) UPR_SIGNDS="$2" ;;
    --users-per-round-dpfedavg) UPR_DPFEDAVG="$2" ;;
    --rounds) ROUNDS="$2" ;;
    --eval-rows) EVAL_ROWS="$2" ;;
    *) echo "unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
  shift 2
done
positive() {  # NAME VALUE...: each a positive integer
  local name="$1"; shift
  [ $# -gt 0 ] || { echo "$name is empty" >&2; exit 2; }
  for v in "$@"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "$name must be positive integers, not '$v'" >&2; exit 2; }
  done
}
[ -n "$OUT" ] || { echo "--out is required" >&2; exit 2; }
# shellcheck disable=SC2086  # the lists are words
{ positive --users $USERS; positive --parties $PARTIES; positive --seed "$SEED"
  positive --eval-rows "$EVAL_ROWS"; }
[ -z "$UPR_SIGNDS" ] || positive --users-per-round-signds "$UPR_SIGNDS"
[ -z "$UPR_DPFEDAVG" ] || positive --users-per-round-dpfedavg "$UPR_DPFEDAVG"
[ -z "$ROUNDS" ] || positive --rounds "$ROUNDS"
for e in $EPSILONS; do
  if ! [[ "$e" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || ! awk -v e="$e" 'BEGIN { exit !(e > 0) }'; then
    echo "--epsilons must be positive numbers, not '$e'" >&2; exit 2
  fi
done
[ -n "$EPSILONS" ] || { echo "--epsilons is empty" >&2; exit 2; }
[ -n "$MODES" ] || { echo "--modes is empty" >&2; exit 2; }
for m in $MODES; do
  case "$m" in signds|dpfedavg) ;; *) echo "--modes takes signds and dpfedavg, not '$m'" >&2; exit 2 ;; esac
done
for b in vfsynth vfsynth-curator vfsynth-party; do
  [ -x "$BIN/$b" ] || { echo "$BIN/$b is missing: build first or pass --bin" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is missing: run deploy/install-deps.sh" >&2; exit 2; }
# The Debian python3 carries numpy and pandas (install-deps.sh); pyenv's may not.
PY=/usr/bin/python3
"$PY" -c 'import numpy, pandas' 2> /dev/null \
  || { echo "$PY lacks numpy or pandas: run deploy/install-deps.sh" >&2; exit 2; }
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"  # else each daemon re-execs itself
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
DATA="$OUT/data"
TABLES="$ROOT/tests/bench/population_table.py"

# As docs/results.md scores a table: the training split as real, the holdout as test.
score() {  # SYNTHETIC_CSV EVAL_DIR
  "$BIN/vfsynth" eval --real "$DATA/train.csv" --holdout "$DATA/holdout.csv" --synthetic "$1" \
    --schema "$ROOT/deploy/schemas/adult.schema.json" --target class --out "$2" \
    --eval-max-rows "$EVAL_ROWS" --eval-seed "$SEED" > "$2.log" 2>&1 \
    || { echo "population: vfsynth eval of $1 failed:" >&2; tail -5 "$2.log" >&2; exit 1; }
}

"$PY" "$TABLES" split --bin "$BIN" --out-dir "$DATA" --seed "$SEED"
"$PY" "$TABLES" independent --train "$DATA/train.csv" --out "$DATA/independent.csv" --seed "$SEED"
mkdir -p "$OUT/baseline"
score "$DATA/independent.csv" "$OUT/baseline/eval"

runs=()
for u in $USERS; do
  table="$DATA/users-$u.csv"
  "$PY" "$TABLES" users --train "$DATA/train.csv" --users "$u" --seed "$SEED" \
    --out "$table" --schema-out "$DATA/users.schema.json"
  for mode in $MODES; do
    if [ "$mode" = signds ]; then
      n="${UPR_SIGNDS:-$(( u / 2000 > 1 ? u / 2000 : 1 ))}"
      settings="\"users_per_round\": $n, \"participation_cap\": 1"
    else
      n="${UPR_DPFEDAVG:-$(( u / 100 > 1000 ? u / 100 : 1000 ))}"
      # The default is capped at U (a sampling rate above 1 is refused); a given one is not.
      [ -n "$UPR_DPFEDAVG" ] || [ "$n" -le "$u" ] || n="$u"
      settings="\"users_per_round\": $n"
    fi
    [ "$n" -le "$u" ] || { echo "$n users a round ($mode) exceed the $u users" >&2; exit 2; }
    for eps in $EPSILONS; do
      run="$OUT/u$u-$mode-e$eps"
      rm -rf "$run"; mkdir -p "$run/rss"
      echo "population: $u users, $mode, epsilon $eps, $n users a round in $run" >&2
      start=$(date +%s.%N)
      SCALE_RSS_DIR="$run/rss" "$ROOT/deploy/run-local.sh" --out "$run" --bin "$BIN" \
        --topology horizontal --parties-count "$PARTIES" --privacy "$mode" --epsilon "$eps" \
        --csv "$table" --schema "$DATA/users.schema.json" --horizontal "$settings" \
        ${ROUNDS:+--rounds "$ROUNDS"} --seed "$SEED" --join-timeout 3600 \
        --launcher "bash $ROOT/tests/bench/scale.sh --wrap" > "$run/run-local.out" 2>&1 \
        || { echo "population: the run in $run failed (logs in $run/logs)" >&2; tail -5 "$run/run-local.out" >&2; exit 1; }
      end=$(date +%s.%N)
      printf '{"users": %s, "parties": %s, "mode": "%s", "epsilon": %s, "users_per_round": %s, "wall_s": %s}\n' \
        "$u" "$PARTIES" "$mode" "$eps" "$n" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" \
        > "$run/bench.json"
      score "$run/synthetic.csv" "$run/eval"
      runs+=("$run")
    done
  done
done
"$PY" "$ROOT/tests/bench/population_report.py" "${runs[@]}" --baseline "$OUT/baseline/eval" \
  --json "$OUT/population.json" --markdown "$OUT/population.md"
cat "$OUT/population.md"
