#!/usr/bin/env bash
# The horizontal topology through the real daemons: deploy/run-local.sh --topology
# horizontal cuts Adult by rows over three parties, runs signds and dpfedavg, each
# publishing a table that vfsynth eval scores and whose statement names the per-user
# epsilon and which `vfsynth synthesize` redraws from the curator's artefact; bad flags
# are refused.
set -euo pipefail
BIN="$1"; SRC="$2"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# run-local --topology horizontal into $WORK/$1 on 300 rows of Adult at epsilon 8.
run() {
  local out="$WORK/$1"; shift
  "$SRC/deploy/run-local.sh" --out "$out" --topology horizontal --epsilon 8 --rows 300 --holdout 0.2 \
    --bin "$BIN" "$@" > "$out.out" 2>&1 \
    || { cat "$out.out"; tail -n 20 "$out"/logs/*.log; fail "run-local --topology horizontal $*"; }
  [ "$(head -1 "$out/synthetic.csv")" = "$(head -1 "$SRC/deploy/datasets/adult.csv")" ] \
    || fail "synthetic header: $(head -1 "$out/synthetic.csv")"
  [ "$(wc -l < "$out/synthetic.csv")" -eq 301 ] || fail "synthetic row count"
}
# The statement of run $1 names mode $2; vfsynth eval scores the table and its report
# carries the statement's ledger paragraph, containing $3.
check_release() {
  local out="$WORK/$1"
  "$BIN/vfsynth" privacy statement "$out/synthetic.privacy.json" > "$out.statement" || fail "privacy statement"
  grep -q "privacy $2" "$out.statement" && grep -q "against curator: epsilon 8" "$out.statement" \
    || { cat "$out.statement"; fail "statement"; }
  "$BIN/vfsynth" eval --real "$out/parties/holdout.csv" --synthetic "$out/synthetic.csv" \
    --schema "$SRC/deploy/schemas/adult.schema.json" --target class --out "$out.eval" \
    --privacy-statement "$out/synthetic.privacy.json" --eval-max-rows 2000 2> "$out.eval.log" \
    || { tail "$out.eval.log"; fail "vfsynth eval"; }
  grep -q '"summary_score"' "$out.eval/metrics.json" || fail "metrics.json"
  grep -q "$3" "$out.eval/report.html" || fail "report's privacy scope"
  # The artefact beside the curator's checkpoint redraws the published table, statement included.
  "$BIN/vfsynth" synthesize --generator "$out/checkpoint/generator.vfsg" --output "$out.again.csv" 2> "$out.synth.err" \
    || { cat "$out.synth.err"; fail "vfsynth synthesize"; }
  cmp -s "$out/synthetic.csv" "$out.again.csv" || fail "the redrawn table differs from the published one"
  cmp -s "$out/synthetic.privacy.json" "$out.again.privacy.json" || fail "the redrawn table's statement differs"
}

run signds --rounds 8 --horizontal '"users_per_round": 6, "local_epochs": 2'
grep -q '"topology": "horizontal"' "$WORK/signds/party-2.json" || fail "party config topology"
# Every party holds a third of the training rows, every column.
rows=$(( $(wc -l < "$WORK/signds/parties/train.csv") - 1 ))
[ $(( $(wc -l < "$WORK/signds/parties/party-1.csv") - 1 )) -eq $(( (rows + 2) / 3 )) ] || fail "party-1's rows"
# 8 rounds of 6 users, each charged once on its party's ledger.
takes=$(cat "$WORK"/signds/party-*.ledger | grep -c "^take") || true
[ "$takes" -eq 48 ] || fail "ledger takes: $takes"
check_release signds signds "participation ledger"

# dpfedavg: each of the 4 rounds charged once on every party's privacy ledger, and the
# sum released under each charge recorded against it.
run dpfedavg --privacy dpfedavg --rounds 4 --horizontal '"users_per_round": 30, "local_epochs": 2'
charges=$(cat "$WORK"/dpfedavg/party-*.ledger | grep -c "^charge") || true
releases=$(cat "$WORK"/dpfedavg/party-*.ledger | grep -c "^release.*name=update_sum_") || true
[ "$charges" -eq 12 ] && [ "$releases" -eq 12 ] || fail "dpfedavg ledgers: $charges charges, $releases releases"
check_release dpfedavg dpfedavg "privacy ledger: 4 rounds"

for bad in "--privacy strict --epsilon 8" "--epsilon 8 --batch 64" "--epsilon 8 --parties-count 0"; do
  set +e
  # shellcheck disable=SC2086
  "$SRC/deploy/run-local.sh" --out "$WORK/bad" --topology horizontal $bad --bin "$BIN" > "$WORK/out" 2>&1; rc=$?
  set -e
  [ $rc -eq 2 ] || { cat "$WORK/out"; fail "'$bad' was not refused"; }
done
echo "PASS"
