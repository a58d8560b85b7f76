#!/usr/bin/env bash
# deploy/quality_baseline.py on a quality.sh-shaped directory: the baseline table keeps
# every column's values (a permutation each) and loses the dependence between them.
source "$(dirname "$0")/quality_fixture.sh" "$@"
# The "run": the training rows themselves, the best table a generator could publish.
"$BIN/vfsynth" eval --real "$RUN/parties/train.csv" --holdout "$RUN/parties/holdout.csv" \
  --synthetic "$RUN/parties/train.csv" --schema "$SCHEMA" --target quality --out "$RUN" \
  --eval-max-rows 800 --eval-seed 1 2>/dev/null
python3 "$SRC/deploy/quality_baseline.py" --out "$WORK/q" --schema "$SCHEMA" --target quality \
  --bin "$BIN" --eval-rows 800 > "$WORK/out" || fail "quality_baseline.py: $(cat "$WORK/out")"
grep -q "above on 1 of 1 seeds" "$WORK/out" || fail "the real rows do not beat their shuffle: $(cat "$WORK/out")"

python3 - "$RUN/parties/train.csv" "$RUN/baseline-independent/synthetic.csv" "$WORK/q/baseline.json" <<'PY' || fail "baseline table"
import csv, json, sys
real = list(csv.reader(open(sys.argv[1])))
base = list(csv.reader(open(sys.argv[2])))
assert real[0] == base[0], "header changed"
assert len(real) == len(base), "row count changed"
columns = list(zip(*real[1:])), list(zip(*base[1:]))
for name, r, b in zip(real[0], *columns):
    assert sorted(r) == sorted(b), f"{name}: values changed"
assert sum(r != b for r, b in zip(*columns)) == len(real[0]), "a column kept its order"
summary = json.load(open(sys.argv[3]))
s = summary["seeds"][0]
assert s["run"]["pair_trends"] > s["baseline"]["pair_trends"] + 0.02, s
assert s["baseline"]["column_shapes"] > 0.9, s
PY

# Bad input: a directory without runs, a run without its metrics.
mkdir -p "$WORK/empty"
if python3 "$SRC/deploy/quality_baseline.py" --out "$WORK/empty" --schema "$SCHEMA" --target quality \
     --bin "$BIN" 2> "$WORK/err"; then fail "empty directory accepted"; fi
grep -q "no seed-\*/ run directories" "$WORK/err" || fail "message: $(cat "$WORK/err")"
rm "$RUN/metrics.json"
if python3 "$SRC/deploy/quality_baseline.py" --out "$WORK/q" --schema "$SCHEMA" --target quality \
     --bin "$BIN" 2> "$WORK/err"; then fail "unfinished run accepted"; fi
grep -q "has no metrics.json" "$WORK/err" || fail "message: $(cat "$WORK/err")"
echo "quality_baseline OK"
