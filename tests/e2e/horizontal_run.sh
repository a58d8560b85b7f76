#!/usr/bin/env bash
# The horizontal topology through the real daemons: deploy/run-local.sh --topology
# horizontal cuts Adult by rows over three parties, runs signds, publishes a table that
# vfsynth eval scores and whose statement names the per-user epsilon; bad flags are refused.
set -euo pipefail
BIN="$1"; SRC="$2"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SRC/deploy/run-local.sh" --out "$WORK/run" --topology horizontal --epsilon 8 --rounds 8 --rows 300 \
  --holdout 0.2 --horizontal '"users_per_round": 6, "local_epochs": 2' --bin "$BIN" > "$WORK/run.out" 2>&1 \
  || { cat "$WORK/run.out"; tail -n 20 "$WORK"/run/logs/*.log; fail "run-local --topology horizontal"; }
[ "$(head -1 "$WORK/run/synthetic.csv")" = "$(head -1 "$SRC/data/adult.csv")" ] \
  || fail "synthetic header: $(head -1 "$WORK/run/synthetic.csv")"
[ "$(wc -l < "$WORK/run/synthetic.csv")" -eq 301 ] || fail "synthetic row count"
grep -q '"topology": "horizontal"' "$WORK/run/party-2.json" || fail "party config topology"
# Every party holds a third of the training rows, every column.
rows=$(( $(wc -l < "$WORK/run/parties/train.csv") - 1 ))
[ $(( $(wc -l < "$WORK/run/parties/party-1.csv") - 1 )) -eq $(( (rows + 2) / 3 )) ] || fail "party-1's rows"
# 8 rounds of 6 users, each charged once on its party's ledger.
takes=$(cat "$WORK"/run/party-*.ledger | grep -c "^take") || true
[ "$takes" -eq 48 ] || fail "ledger takes: $takes"
"$BIN/vfsynth" privacy statement "$WORK/run/synthetic.privacy.json" > "$WORK/statement" \
  || fail "privacy statement"
grep -q "privacy signds" "$WORK/statement" && grep -q "against curator: epsilon 8" "$WORK/statement" \
  || { cat "$WORK/statement"; fail "statement"; }
"$BIN/vfsynth" eval --real "$WORK/run/parties/holdout.csv" --synthetic "$WORK/run/synthetic.csv" \
  --schema "$SRC/deploy/schemas/adult.schema.json" --target class --out "$WORK/eval" \
  --privacy-statement "$WORK/run/synthetic.privacy.json" --eval-max-rows 2000 2> "$WORK/eval.log" \
  || { tail "$WORK/eval.log"; fail "vfsynth eval"; }
grep -q '"summary_score"' "$WORK/eval/metrics.json" || fail "metrics.json"
grep -q "participation ledger" "$WORK/eval/report.html" || fail "report's privacy scope"

for bad in "--privacy strict --epsilon 8" "--epsilon 8 --batch 64" "--epsilon 8 --parties-count 0"; do
  set +e
  # shellcheck disable=SC2086
  "$SRC/deploy/run-local.sh" --out "$WORK/bad" --topology horizontal $bad --bin "$BIN" > "$WORK/out" 2>&1; rc=$?
  set -e
  [ $rc -eq 2 ] || { cat "$WORK/out"; fail "'$bad' was not refused"; }
done
echo "PASS"
