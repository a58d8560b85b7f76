#!/usr/bin/env bash
# A table the project does not ship, through the real daemons in one command: a drafted
# schema and layout (vfsynth schema draft) and deploy/run-local.sh --csv, in mode strict.
set -euo pipefail
BIN="$1"; SRC="$2"; DATA="$3"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cp "$DATA/winequality-white.csv" "$WORK/my table.csv"
"$BIN/vfsynth" schema draft --input "$WORK/my table.csv" --out "$WORK/draft" --party-count 3 2> /dev/null \
  || fail "schema draft"
# --parties is the layout file of the other commands; a count given there is refused, not ignored.
if "$BIN/vfsynth" schema draft --input "$WORK/my table.csv" --out "$WORK/draft2" --parties 3 > "$WORK/out" 2>&1 \
  || ! grep -q "party-count" "$WORK/out"; then cat "$WORK/out"; fail "schema draft --parties 3 was not refused"; fi
"$SRC/deploy/run-local.sh" --out "$WORK/run" --csv "$WORK/my table.csv" --schema "$WORK/draft/schema.json" \
  --parties "$WORK/draft/parties.json" --rounds 3 --batch 64 --rows 300 \
  --privacy strict --epsilon 10 --bin "$BIN" > "$WORK/run.out" 2>&1 \
  || { cat "$WORK/run.out"; tail -n 20 "$WORK"/run/logs/*.log; fail "run-local --csv"; }
[ "$(head -1 "$WORK/run/synthetic.csv")" = "$(head -1 "$WORK/my table.csv")" ] \
  || fail "synthetic header: $(head -1 "$WORK/run/synthetic.csv")"
[ "$(wc -l < "$WORK/run/synthetic.csv")" -eq 301 ] || fail "synthetic row count"
grep -q '"run_id": "local-my_table"' "$WORK/run/curator.json" || fail "run id from the file name"
"$BIN/vfsynth" privacy statement "$WORK/run/synthetic.privacy.json" | grep -q "against published: epsilon 10" \
  || fail "privacy statement"
# A label the drafted schema holds as a number fails the run before anything is released.
set +e
"$SRC/deploy/run-local.sh" --out "$WORK/label" --csv "$WORK/my table.csv" --schema "$WORK/draft/schema.json" \
  --parties "$WORK/draft/parties.json" --label-column quality --rounds 3 --batch 64 \
  --privacy strict --epsilon 10 --bin "$BIN" > "$WORK/label.out" 2>&1; rc=$?
set -e
[ $rc -ne 0 ] && grep -q "column 'quality' is not categorical" "$WORK/label/logs/curator.log" \
  || { cat "$WORK/label.out"; fail "a numeric label column was not refused"; }
if grep -q "^charge" "$WORK"/label/*.ledger 2>/dev/null; then fail "a party charged its ledger before the refusal"; fi
set +e; "$SRC/deploy/run-local.sh" --out "$WORK/bad" --csv "$WORK/my table.csv" > "$WORK/out" 2>&1; rc=$?; set -e
[ $rc -eq 2 ] && grep -q "needs --schema and --parties" "$WORK/out" || { cat "$WORK/out"; fail "--csv without a schema"; }
set +e; "$SRC/deploy/quality.sh" --out "$WORK/q" --csv "$WORK/my table.csv" --schema "$WORK/draft/schema.json" \
  --parties "$WORK/draft/parties.json" --bin "$BIN" > "$WORK/out" 2>&1; rc=$?; set -e
[ $rc -eq 2 ] && grep -q "needs --schema, --parties and --label" "$WORK/out" || { cat "$WORK/out"; fail "quality.sh --csv without a label"; }
echo "PASS"
