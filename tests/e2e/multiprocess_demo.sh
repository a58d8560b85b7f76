#!/usr/bin/env bash
# The demo topology end to end with real processes: vfsynth-curator and one
# vfsynth-party per party over loopback mTLS; checks the published synthetic CSV
# (all columns, categories from the schema, numerics inside the bounds), a party
# with a wrong certificate being refused, `vfsynth status` and the metrics endpoint
# of a waiting curator, SIGTERM stopping the curator cleanly, and `vfsynth synthesize`
# redrawing the published table from the curator's generator artefact, and the
# privacy statement beside the table.
set -euo pipefail
BIN="$1"; SRC="$2"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SRC/deploy/run-local.sh" --out "$WORK/run" --dataset adult --rounds 4 --batch 128 --rows 1500 --bin "$BIN" \
  > "$WORK/run.out" 2>&1 || { cat "$WORK/run.out"; tail -n 20 "$WORK"/run/logs/*.log; fail "run-local"; }
# run-local.sh fails unless the curator and every party exit 0; the table is checked below.
CSV="$WORK/run/synthetic.csv"
python3 "$SRC/tests/e2e/check_synthetic.py" "$CSV" "$SRC/deploy/schemas/adult.schema.json" 1500 \
  || fail "synthetic table violates the schema"
# The table comes with its privacy statement; a run in mode none claims no epsilon.
"$BIN/vfsynth" privacy statement "$WORK/run/synthetic.privacy.json" > "$WORK/statement.txt" \
  || fail "no privacy statement beside the table"
grep -q "against published: not DP (mode none" "$WORK/statement.txt" || { cat "$WORK/statement.txt"; fail "statement"; }
if grep -q "epsilon" "$WORK/statement.txt"; then cat "$WORK/statement.txt"; fail "mode none states an epsilon"; fi

# `vfsynth synthesize` redraws the table from the curator's publishable generator
# artefact alone: byte for byte the published one (run-local.sh names `class` the
# label, at temperature 0.5), and at label temperature 1 another `class` column and
# nothing else. The private checkpoint beside it is refused, naming the artefact.
ARTEFACT="$WORK/run/checkpoint/generator.vfsg"
SYNTH=("$BIN/vfsynth" synthesize --generator "$ARTEFACT")
"${SYNTH[@]}" --output "$WORK/again.csv" 2> "$WORK/synth.err" || { cat "$WORK/synth.err"; fail "vfsynth synthesize"; }
cmp -s "$CSV" "$WORK/again.csv" || fail "offline synthesis differs from the published table"
cmp -s "$WORK/run/synthetic.privacy.json" "$WORK/again.privacy.json" || fail "the redrawn table's privacy statement differs"
set +e
"$BIN/vfsynth" synthesize --generator "$WORK/run/checkpoint/curator.ckpt" --output "$WORK/private.csv" \
  2> "$WORK/synth-private.err"; prc=$?
set -e
[ $prc -ne 0 ] && grep -q "private to the curator.*$ARTEFACT" "$WORK/synth-private.err" && [ ! -e "$WORK/private.csv" ] \
  || { cat "$WORK/synth-private.err"; fail "synthesize from the private checkpoint"; }
"${SYNTH[@]}" --output "$WORK/warm.csv" --label_temperature 1 2> "$WORK/synth.err" \
  || { cat "$WORK/synth.err"; fail "vfsynth synthesize --label_temperature 1"; }
python3 - "$CSV" "$WORK/warm.csv" <<'PY' || fail "label temperature changed more than the label"
import csv, sys
a, b = (list(csv.reader(open(f))) for f in sys.argv[1:3])
label = a[0].index("class")
assert a[0] == b[0] and len(a) == len(b)
assert all(x[:label] + x[label + 1:] == y[:label] + y[label + 1:] for x, y in zip(a, b))
assert sum(x[label] != y[label] for x, y in zip(a, b)) > 0
PY
set +e
"${SYNTH[@]}" --output "$WORK/bad.csv" --label_column age 2> "$WORK/synth-bad.err"; brc=$?
set -e
[ $brc -ne 0 ] && grep -q "column 'age' is not categorical" "$WORK/synth-bad.err" && [ ! -e "$WORK/bad.csv" ] \
  || { cat "$WORK/synth-bad.err"; fail "synthesize with a numeric label column"; }

# A party whose certificate names another party is refused; the curator keeps
# waiting for the real one and SIGTERM then stops it cleanly. Its join timeout (120 s)
# must outlast the checks below on a loaded machine: a curator that gave up early
# would have exited before the SIGTERM.
cd "$WORK/run"
MPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e 's/"join_timeout_seconds": 120/"join_timeout_seconds": 120, "checkpoint_dir": "checkpoint2", "metrics_listen": "127.0.0.1:'"$MPORT"'"/' \
  curator.json > curator2.json
grep -q metrics_listen curator2.json || fail "could not edit curator.json"
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

# The operator's view of the waiting curator: status over mTLS and Prometheus text.
operator_status() {  # CURATOR_ADDRESS [more flags]: `vfsynth status` with the operator's certificate
  "$BIN/vfsynth" status --curator "$1" --ca certs/ca.crt --cert certs/operator.crt --key certs/operator.key "${@:2}"
}
operator_status "127.0.0.1:$PORT" > status.txt 2> status.err || { cat status.err; fail "vfsynth status"; }
grep -q "run local-adult: waiting, round 0/" status.txt || { cat status.txt; fail "status report"; }
grep -Eq "^bank +no +no +NO" status.txt || { cat status.txt; fail "status does not show bank absent"; }
"$BIN/vfsynth" status --party-config hospital.json --json > status.json 2> status.err \
  || { cat status.err; fail "vfsynth status --party-config --json"; }
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); assert s["state"] == "waiting", s' status.json \
  || fail "status JSON"
python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  "http://127.0.0.1:$MPORT/metrics" > metrics.txt || fail "metrics endpoint"
grep -q '^vfsynth_run_state{state="waiting"} 1$' metrics.txt || { cat metrics.txt; fail "metrics state"; }
grep -q '^vfsynth_party_connected{party="bank"} 0$' metrics.txt || { cat metrics.txt; fail "metrics party"; }
# Bad use gets a clear error, not a hang or a crash.
set +e
"$BIN/vfsynth" status > /dev/null 2> status-usage.err; urc=$?
operator_status 127.0.0.1:1 --timeout-seconds 2 > /dev/null 2> status-down.err; drc=$?
set -e
[ $urc -eq 2 ] && grep -q "needs --curator" status-usage.err || { cat status-usage.err; fail "status usage error"; }
[ $drc -eq 1 ] && grep -q "GetStatus at 127.0.0.1:1" status-down.err || { cat status-down.err; fail "status of a dead curator"; }

kill -TERM "$CURATOR"
set +e; wait "$CURATOR"; crc=$?; set -e
[ $crc -eq 1 ] || fail "curator exit code $crc after SIGTERM (expected 1: run cancelled)"
# Stopped: its port no longer answers.
set +e
operator_status "127.0.0.1:$PORT" --timeout-seconds 2 > /dev/null 2>&1; src=$?
set -e
[ $src -eq 1 ] || fail "the stopped curator still answers status (exit $src)"
echo PASS
