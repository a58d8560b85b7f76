#!/usr/bin/env bash
# vfsynth split + train-local through the real binary, plus its error handling.
set -euo pipefail
BIN="$1"; SRC="$2"; DATA="$3"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$BIN/vfsynth" split --input "$DATA/winequality-red.csv" --schema "$SRC/deploy/schemas/wine.schema.json" \
  --parties "$SRC/deploy/parties/wine-2.json" --out "$WORK/parties"
[ "$(head -1 "$WORK/parties/lab.csv")" = "id,fixed acidity,volatile acidity,citric acid,residual sugar,chlorides,free sulfur dioxide" ] \
  || fail "lab.csv header: $(head -1 "$WORK/parties/lab.csv")"
[ "$(wc -l < "$WORK/parties/winery.csv")" -eq 1600 ] || fail "winery.csv row count"

cat > "$WORK/run.json" <<JSON
{"parties":[{"name":"lab","data":"parties/lab.csv","schema":"parties/lab.schema.json"},
            {"name":"winery","data":"parties/winery.csv","schema":"parties/winery.schema.json"}],
 "training":{"rounds":3,"batch_size":64,"log_every":1},
 "output":{"synthetic_csv":"synthetic.csv","rows":500}}
JSON
"$BIN/vfsynth" train-local --config "$WORK/run.json" 2> "$WORK/log" || { cat "$WORK/log"; fail "train-local"; }
grep -q "round 3/3" "$WORK/log" || fail "no progress line"
grep -q "rounds/s=" "$WORK/log" || fail "no rate in progress line"
[ "$(wc -l < "$WORK/synthetic.csv")" -eq 501 ] || fail "synthetic row count"
[ "$(head -1 "$WORK/synthetic.csv")" = "fixed acidity,volatile acidity,citric acid,residual sugar,chlorides,free sulfur dioxide,total sulfur dioxide,density,pH,sulphates,alcohol,quality" ] \
  || fail "synthetic header: $(head -1 "$WORK/synthetic.csv")"
# --rows / --output overrides
"$BIN/vfsynth" train-local --config "$WORK/run.json" --rounds 0 --rows 10 --output "$WORK/o.csv" 2>/dev/null
[ "$(wc -l < "$WORK/o.csv")" -eq 11 ] || fail "override rows"

# Bad input: clear message, exit code 2, nothing written.
expect_error() {  # expect_error <substring> <args...>
  local want="$1"; shift
  set +e; "$BIN/vfsynth" "$@" > "$WORK/out" 2>&1; local rc=$?; set -e
  [ $rc -eq 2 ] || { cat "$WORK/out"; fail "exit code $rc for: $*"; }
  grep -q -- "$want" "$WORK/out" || { cat "$WORK/out"; fail "message lacks '$want' for: $*"; }
}
printf 'a,b\n1,2\n3\n' > "$WORK/bad.csv"
printf '{"columns":[{"name":"a","type":"integer","min":0,"max":9},{"name":"b","type":"integer","min":0,"max":9}]}' > "$WORK/bad.schema.json"
printf '{"parties":[{"name":"p","columns":["a"]},{"name":"q","columns":["b"]}]}' > "$WORK/p.json"
expect_error "bad.csv:3" split --input "$WORK/bad.csv" --schema "$WORK/bad.schema.json" --parties "$WORK/p.json" --out "$WORK/o2"
[ ! -e "$WORK/o2" ] || fail "split wrote output despite the error"
"$BIN/vfsynth" split --input "$WORK/bad.csv" --schema "$WORK/bad.schema.json" --parties "$WORK/p.json" \
  --out "$WORK/o3" --skip-bad-rows 2>/dev/null
[ "$(wc -l < "$WORK/o3/p.csv")" -eq 2 ] || fail "skip-bad-rows"
expect_error "needs --config" train-local
expect_error "trainig" train-local --config <(echo '{"trainig":{}}')
echo '{"parties":[{"name":"x","data":"missing.csv","schema":"missing.json"}],"output":{"synthetic_csv":"o.csv"}}' > "$WORK/cfg.json"
set +e; "$BIN/vfsynth" train-local --config "$WORK/cfg.json" > "$WORK/out" 2>&1; rc=$?; set -e
[ $rc -ne 0 ] && grep -q "missing.json" "$WORK/out" || fail "missing schema not reported"
# schema draft: a usable schema and layout from any CSV, with the public-knowledge warning.
"$BIN/vfsynth" schema draft --input "$DATA/winequality-red.csv" --out "$WORK/draft" --party-count 2 \
  2> "$WORK/draft.err" > /dev/null || { cat "$WORK/draft.err"; fail "schema draft"; }
grep -q "must be public" "$WORK/draft.err" && grep -q "column 'alcohol': bounds" "$WORK/draft.err" \
  || { cat "$WORK/draft.err"; fail "schema draft warnings"; }
"$BIN/vfsynth" split --input "$DATA/winequality-red.csv" --schema "$WORK/draft/schema.json" \
  --parties "$WORK/draft/parties.json" --out "$WORK/draft/parties" 2>/dev/null || fail "split with a drafted schema"
[ "$(wc -l < "$WORK/draft/parties/party2.csv")" -eq 1600 ] || fail "drafted party2.csv row count"
set +e; "$BIN/vfsynth" schema draft --input "$DATA/winequality-red.csv" --out "$WORK/draft" > "$WORK/out" 2>&1; rc=$?; set -e
[ $rc -ne 0 ] && grep -q "exists" "$WORK/out" || fail "schema draft overwrote its earlier output"
set +e; "$BIN/vfsynth" frobnicate > "$WORK/out" 2>&1; rc=$?; set -e
[ $rc -eq 2 ] && grep -q "unknown command" "$WORK/out" || fail "unknown command"
echo "PASS"
