#!/usr/bin/env bash
# The demo topology end to end with real processes: vfsynth-curator and one
# vfsynth-party per party over loopback mTLS; checks the published synthetic CSV
# (all columns, categories from the schema, numerics inside the bounds), a party
# with a wrong certificate being refused, and SIGTERM stopping the curator cleanly.
set -euo pipefail
BIN="$1"; SRC="$2"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SRC/deploy/run-local.sh" --out "$WORK/run" --dataset adult --rounds 4 --batch 128 --rows 1500 --bin "$BIN" \
  > "$WORK/run.out" 2>&1 || { cat "$WORK/run.out"; tail -n 20 "$WORK"/run/logs/*.log; fail "run-local"; }
CSV="$WORK/run/synthetic.csv"
grep -q "published 1500 synthetic rows" "$WORK/run/logs/curator.log" || fail "curator did not publish"
for party in hospital insurer bank; do
  grep -q "run finished" "$WORK/run/logs/$party.log" || fail "$party did not finish"
done
python3 "$SRC/tests/e2e/check_synthetic.py" "$CSV" "$SRC/deploy/schemas/adult.schema.json" 1500 \
  || fail "synthetic table violates the schema"

# A party whose certificate names another party is refused; the curator keeps
# waiting for the real one (join timeout) and SIGTERM then stops it cleanly.
cd "$WORK/run"
sed -e 's/"join_timeout_seconds": 120/"join_timeout_seconds": 30, "checkpoint_dir": "checkpoint2"/' curator.json > curator2.json
PORT=$(sed -n 's/.*"listen": "127.0.0.1:\([0-9]*\)".*/\1/p' curator2.json)
"$BIN/vfsynth-curator" --config curator2.json 2> curator2.log &
CURATOR=$!
sed -e 's#certs/bank#certs/hospital#g' bank.json > impostor.json
set +e
timeout 60 "$BIN/vfsynth-party" --config impostor.json 2> impostor.log
rc=$?
set -e
[ $rc -ne 0 ] || fail "impostor party was accepted"
grep -q "PERMISSION_DENIED" impostor.log || { cat impostor.log; fail "impostor not refused with PERMISSION_DENIED"; }
grep -q "claims to be 'bank'" impostor.log || { cat impostor.log; fail "refusal does not name the problem"; }
kill -TERM "$CURATOR"
set +e; wait "$CURATOR"; crc=$?; set -e
[ $crc -eq 1 ] || fail "curator exit code $crc after SIGTERM (expected 1: run cancelled)"
grep -q "stop signal" curator2.log || { cat curator2.log; fail "curator did not log the stop"; }
echo PASS
