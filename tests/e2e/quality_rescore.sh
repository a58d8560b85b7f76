#!/usr/bin/env bash
# deploy/quality.sh --rescore --eval-repeats on a quality.sh-shaped directory: every
# table is evaluated at R eval seeds, and the summary's per-table mean over them is the
# mean of those evaluations' total differences.
source "$(dirname "$0")/quality_fixture.sh" "$@"
# The "published table": the training rows themselves.
cp "$RUN/parties/train.csv" "$RUN/synthetic.csv"
echo 12.5 > "$RUN/train-seconds"
mkdir -p "$RUN/eval-7"  # a stale evaluation of an earlier rescore: must not count
"$SRC/deploy/quality.sh" --out "$WORK/q" --dataset wine-red --seeds 1 --rescore --eval-repeats 3 \
  --eval-rows 800 --bin "$BIN" > "$WORK/out" 2> "$WORK/err" || fail "rescore: $(cat "$WORK/err")"
grep -q "total difference over 3 evaluations" "$WORK/out" || fail "output: $(cat "$WORK/out")"
[ ! -e "$RUN/eval-7" ] || fail "a stale evaluation was kept"

python3 - "$WORK/q" <<'PY' || fail "summary"
import json, os, statistics, sys
q = sys.argv[1]
def total(path):
    m = json.load(open(os.path.join(path, "metrics.json")))
    return next(x for x in m["utility"]["models"] if x["model"] == "random_forest")["total_difference"]
run = os.path.join(q, "seed-1")
values = [total(run), total(os.path.join(run, "eval-1")), total(os.path.join(run, "eval-2"))]
assert len(set(values)) > 1, f"the evaluations did not differ: {values}"
summary = json.load(open(os.path.join(q, "summary.json")))
r = summary["runs"][0]
assert r["evaluations"] == 3, r
assert abs(r["total_difference_over_evaluations"] - statistics.fmean(values)) < 1e-12, (r, values)
assert r["total_difference"] == values[0], r
assert r["train_seconds"] == 12.5, r
assert summary["markdown_row"].endswith(f"| {statistics.fmean(values):.3f} ({statistics.fmean(values):.3f}–{statistics.fmean(values):.3f}) |"), summary["markdown_row"]
# Each party scored the table (its own training rows, joined) on its own data: the
# federated score is the mean of the two, near perfect.
parties = [json.load(open(os.path.join(run, f"party-{p}", "metrics.json"))) for p in ("lab", "winery")]
assert [m["scope"]["party"] for m in parties] == ["lab", "winery"], parties
assert abs(r["federated_summary_score"] - statistics.fmean(m["summary_score"] for m in parties)) < 1e-12, r
assert r["federated_summary_score"] > 0.9, r
PY

# Bad input: no repeats, a run without a party's config, a run without its table.
if "$SRC/deploy/quality.sh" --out "$WORK/q" --dataset wine-red --seeds 1 --rescore --eval-repeats 0 \
     --bin "$BIN" > /dev/null 2> "$WORK/err"; then fail "--eval-repeats 0 accepted"; fi
grep -q "eval-repeats must be a positive integer" "$WORK/err" || fail "message: $(cat "$WORK/err")"
mv "$RUN/winery.json" "$WORK/winery.json"
if "$SRC/deploy/quality.sh" --out "$WORK/q" --dataset wine-red --seeds 1 --rescore --eval-repeats 1 \
     --bin "$BIN" > /dev/null 2> "$WORK/err"; then fail "a run without a party's config accepted"; fi
grep -q "has no winery.json" "$WORK/err" || fail "message: $(cat "$WORK/err")"
mv "$WORK/winery.json" "$RUN/winery.json"
rm "$RUN/synthetic.csv"
if "$SRC/deploy/quality.sh" --out "$WORK/q" --dataset wine-red --seeds 1 --rescore \
     --bin "$BIN" > /dev/null 2> "$WORK/err"; then fail "a run without its table accepted"; fi
grep -q "has no published table" "$WORK/err" || fail "message: $(cat "$WORK/err")"
echo "quality_rescore OK"
