#!/usr/bin/env bash
# deploy/quality.sh --suite (deploy/suite/run.sh) end to end at a few rounds: every suite table converted from
# its Debian R package, split by its shipped schema and layout, trained through the real
# daemons under none and dpsgd, scored (with the label from the other parties' columns)
# and summed up in the dataset x mode table with its independent-marginals baseline.
set -euo pipefail
BIN="$1"; SRC="$2"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
TABLES=$(awk '$1 !~ /^#/ && NF { print $1 }' "$SRC/deploy/suite/tables.tsv")
[ "$(echo "$TABLES" | wc -l)" -ge 6 ] || fail "fewer than six suite tables"

"$SRC/deploy/quality.sh" --suite --out "$WORK/s" --modes "none dpsgd:10" --rounds 2 --batch 64 --rows 400 \
  --eval-rows 400 --eval-repeats 1 --bin "$BIN" > "$WORK/out" 2>&1 || { tail -n 30 "$WORK/out"; fail "suite"; }
for name in $TABLES; do
  csv="$WORK/s/tables/$name.csv"
  # The converted header is the schema's columns, in order.
  python3 - "$csv" "$SRC/deploy/suite/$name.schema.json" <<'PY' || fail "$name: header"
import json, sys
header = open(sys.argv[1]).readline().strip().split(",")
assert header == [c["name"] for c in json.load(open(sys.argv[2]))["columns"]], header
PY
  for mode in none dpsgd-10; do
    python3 - "$WORK/s/$name/$mode/summary.json" "$mode" <<'PY' || fail "$name $mode: summary"
import json, math, sys
mean = json.load(open(sys.argv[1]))["mean"]
for key in ("tstr_f1", "trtr_f1", "cross_party_tstr_f1", "cross_party_trtr_f1"):
    assert 0 <= mean[key] <= 1, (key, mean)
assert mean["cross_party_trtr_f1"] > 0, mean  # the other parties' columns carry some of the label
# Every party scored the table on its own data (vfsynth eval --party-config).
# dpsgd's marginal release gives the curator's score against the released statistics;
# none releases nothing to score against.
for run in json.load(open(sys.argv[1]))["runs"]:
    assert 0 <= run["federated_summary_score"] <= 1, run
    released = run["released_fidelity_score"]
    assert (0 <= released <= 1) if sys.argv[2] != "none" else math.isnan(released), run
PY
  done
  [ "$(grep -c "^| $name (" "$WORK/s/suite.md")" -eq 3 ] || fail "$name: rows in suite.md: $(cat "$WORK/s/suite.md")"
  grep "^| $name (" "$WORK/s/suite.md" | grep "dpsgd ε=10" | grep -Eq "\| (all met|missed: [A-Za-z0-9, ]+) \|$" \
    || fail "$name: targets cell"
  grep "^| $name (" "$WORK/s/suite.md" | grep -q "| independent marginals |" || fail "$name: baseline row"
done

# The parties' own scores and the curator's released-statistics score rank the suite's
# runs against the joint scores (no value asserted: at 2 rounds the ranking says little).
for score in "the federated summary score" "the released-statistics score"; do
  grep -Eq "^Spearman ρ between the joint summary score and $score over ([0-9]+) runs: -?[01]\.[0-9]{3}$" \
    "$WORK/s/suite.md" || fail "Spearman line: $(tail -n 3 "$WORK/s/suite.md")"
done

# A second call keeps finished runs; bad input is refused before anything runs.
"$SRC/deploy/quality.sh" --suite --out "$WORK/s" --tables pima --modes "none dpsgd:10" --rounds 2 --batch 64 \
  --rows 400 --eval-rows 400 --eval-repeats 1 --bin "$BIN" > "$WORK/out" 2>&1 || fail "second call"
[ "$(grep -c "kept (" "$WORK/out")" -eq 2 ] || fail "finished runs were not kept: $(cat "$WORK/out")"
set +e
"$SRC/deploy/quality.sh" --suite --out "$WORK/t" --tables "pima nosuch" --bin "$BIN" > "$WORK/out" 2>&1; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "no suite table named 'nosuch'" "$WORK/out" || fail "unknown table: $(cat "$WORK/out")"
[ ! -e "$WORK/t/pima" ] || fail "a run started before the unknown table was refused"
set +e
"$SRC/deploy/quality.sh" --suite --out "$WORK/t" --csv x.csv --bin "$BIN" > "$WORK/out" 2>&1; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "takes its tables" "$WORK/out" || fail "--suite with --csv: $(cat "$WORK/out")"
# The MST baseline's mode needs the path of mst_lite.py (outside the repository).
set +e
"$SRC/deploy/quality.sh" --suite --out "$WORK/t" --tables pima --modes mst:1 --bin "$BIN" > "$WORK/out" 2>&1; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "needs --mst PATH" "$WORK/out" || fail "mode mst without --mst: $(cat "$WORK/out")"
echo PASS
