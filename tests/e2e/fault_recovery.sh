#!/usr/bin/env bash
# Crash recovery with real processes over loopback mTLS, in strict mode (every party
# keeps a privacy ledger):
#   1. an uninterrupted run gives the reference ledgers;
#   2. kill -9 of a party at a random critic step, restarted with --resume;
#   3. the curator stopped at a random critic step (kill -9, and SIGTERM), restarted with
#      --resume;
#      in 2 and 3 the run completes, every party's ledger charges its marginal release
#      (key 0; strict turns the marginal loss on by default) and each critic step (keys
#      1..) exactly once, its final epsilon equals the uninterrupted run's, and
#      `vfsynth ledger show` verifies it;
#   4. a party that never comes back: the curator fails the run once its reconnect
#      timeout passes, naming the party;
#   5. the curator resumed from another start's checkpoint directory (same run id and
#      settings): the parties refuse it, the run fails naming it, nothing is published.
# Every run releases label pairs for `class` (docs/privacy.md, "Label pairs"), part of the
# key-0 release: after a restart the parties send their kept releases again, never a
# second draw.

set -euo pipefail
BIN="$1"; SRC="$2"
WORK=$(mktemp -d)
PARTIES="hospital insurer bank"
ROUNDS=6 N_CRITIC=5
STEPS=$((ROUNDS * N_CRITIC))
CHARGES=$((STEPS + 1))  # the marginal release, then every critic step
pids=()
cleanup() { for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$WORK"/*/logs/*.log; do echo "== $log" >&2; tail -n 12 "$log" >&2; done
  exit 1
}

prepare() {  # DIR [RECONNECT_TIMEOUT]
  "$SRC/deploy/run-local.sh" --out "$1" --dataset adult --rounds $ROUNDS --batch 128 --rows 300 \
    --privacy strict --epsilon 10 --bin "$BIN" --training "\"n_critic\": $N_CRITIC, \"label_column\": \"class\"" \
    --prepare-only > /dev/null
  python3 - "$1/curator.json" "${2:-120}" <<'PY'
import json, sys
path, timeout = sys.argv[1], float(sys.argv[2])
config = json.load(open(path))
config["reconnect_timeout_seconds"] = timeout
json.dump(config, open(path, "w"), indent=2)
PY
}
start_curator() {  # DIR [--resume]
  "$BIN/vfsynth-curator" --config "$1/curator.json" "${@:2}" 2>> "$1/logs/curator.log" &
  CURATOR=$!; pids+=("$CURATOR")
}
start_party() {  # DIR NAME [--resume]
  "$BIN/vfsynth-party" --config "$1/$2.json" "${@:3}" 2>> "$1/logs/$2.log" &
  eval "PID_$2=$!"; pids+=("$!")
}
start_all() {
  start_curator "$1"
  for party in $PARTIES; do start_party "$1" "$party"; done
}
charges() { if [ -f "$1/$2.ledger" ]; then grep -c '^charge' "$1/$2.ledger" || true; else echo 0; fi; }
# Blocks until PARTY's ledger holds N charges (fails if PID exits first).
wait_charges() {  # DIR PARTY N PID
  while [ "$(charges "$1" "$2")" -lt "$3" ]; do
    kill -0 "$4" 2>/dev/null || fail "process $4 exited before $2 charged $3 steps"
    sleep 0.1
  done
}
expect_exit() {  # PID CODE WHAT
  set +e; wait "$1"; local rc=$?; set -e
  [ "$rc" -eq "$2" ] || fail "$3 exited with $rc, expected $2"
}
expect_exit_within() {  # PID CODE SECONDS WHAT
  local deadline=$((SECONDS + $3))
  while kill -0 "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "$4 still running after $3 s"
    sleep 0.2
  done
  expect_exit "$1" "$2" "$4"
}
wait_all_ok() {  # DIR
  expect_exit "$CURATOR" 0 "curator"
  for party in $PARTIES; do
    local pid_var="PID_$party"
    expect_exit "${!pid_var}" 0 "$party"
  done
  [ "$(wc -l < "$1/synthetic.csv")" -eq 301 ] || fail "no synthetic table in $1"
  # The report on it holds every party's marginal release, sent again after any restart.
  python3 - "$1/synthetic.released.json" $PARTIES <<'PY' || fail "released-statistics report in $1"
import json, sys
report = json.load(open(sys.argv[1]))
released = {h["party"] for h in report["histograms"] if h["kind"] == "marginal"}
assert released == set(sys.argv[2:]), released
assert 0 < report["score"] <= 1, report["score"]
PY
}
# The release and every critic step charged exactly once, and the same final epsilon as
# the reference.
check_ledgers() {  # DIR REFERENCE_DIR
  for party in $PARTIES; do
    python3 - "$1/$party.ledger" "$2/$party.ledger" "$CHARGES" <<'PY' || fail "$party's ledger in $1"
import sys
def charges(path):
    rows = []
    for line in open(path):
        fields = line.rstrip("\n").split("\t")
        if fields[0] == "charge":
            rows.append(dict(f.split("=", 1) for f in fields[1:]))
    return rows
got, reference, steps = charges(sys.argv[1]), charges(sys.argv[2]), int(sys.argv[3])
rounds = [int(r["round"]) for r in got]
assert rounds == list(range(steps)), f"charged keys {rounds}, expected 0..{steps - 1} once each"
assert float(got[0]["q"]) == 1.0, f"key 0 is not the unsampled marginal release: {got[0]}"
assert got[-1]["epsilon"] == reference[-1]["epsilon"], (got[-1]["epsilon"], reference[-1]["epsilon"])
print(sys.argv[1], "charged", len(rounds), "steps once each; epsilon", got[-1]["epsilon"])
PY
    # Every line of the ledger, crashes and torn appends included, still verifies.
    "$BIN/vfsynth" ledger show "$1/$party.ledger" > "$1/$party.ledger.shown" 2>&1 \
      || fail "vfsynth ledger show $1/$party.ledger: $(tail -n 1 "$1/$party.ledger.shown")"
    grep -q '^verified: ' "$1/$party.ledger.shown" || fail "$party's ledger in $1 is not verified"
  done
}
random_step() { echo $(( 3 + RANDOM % (STEPS - 8) )); }
# Each party drew each of its label-pair releases once: its ledger records every kept
# release exactly once, and the kept file still holds the recorded bytes (a second draw
# would have rewritten it, or been refused).
check_label_release() {  # DIR
  for party in $PARTIES; do
    python3 - "$1/$party.ledger" "$1/parties/$party.csv.checkpoint" <<'PY' || fail "$party's kept releases in $1"
import collections, hashlib, os, sys
ledger, checkpoint_dir = sys.argv[1], sys.argv[2]
recorded = collections.Counter()
digests = {}
for line in open(ledger):
    fields = line.rstrip("\n").split("\t")
    if fields[0] == "release":
        record = dict(f.split("=", 1) for f in fields[1:])
        recorded[record["name"]] += 1
        digests[record["name"]] = record["sha256"]
kept = [name for name in recorded if name.endswith(".release")]
assert kept, f"no kept label release recorded in {ledger}: {dict(recorded)}"
assert all(count == 1 for count in recorded.values()), f"a release recorded twice: {dict(recorded)}"
for name in kept:
    data = open(os.path.join(checkpoint_dir, name), "rb").read()
    assert hashlib.sha256(data).hexdigest() == digests[name], f"{name} differs from its ledger record"
PY
  done
}

# 1. Uninterrupted reference run.
REF="$WORK/reference"; prepare "$REF"; start_all "$REF"; wait_all_ok "$REF"
for party in $PARTIES; do [ "$(charges "$REF" "$party")" -eq $CHARGES ] || fail "reference $party ledger"; done
# The daemons print their numbers at a readable precision, never a double's every digit.
if grep -hE "[0-9]\.[0-9]{7,}" "$REF"/logs/*.log; then fail "a log line prints a number at full precision"; fi

# 2. A party killed at a random step and restarted.
RUN="$WORK/party-crash"; prepare "$RUN"; start_all "$RUN"
VICTIM=$(echo $PARTIES | tr ' ' '\n' | shuf -n 1); STEP=$(random_step)
victim_pid_var="PID_$VICTIM"
wait_charges "$RUN" "$VICTIM" "$STEP" "${!victim_pid_var}"
kill -9 "${!victim_pid_var}"; expect_exit "${!victim_pid_var}" 137 "killed $VICTIM"
echo "killed $VICTIM after $(charges "$RUN" "$VICTIM") charged steps"
start_party "$RUN" "$VICTIM" --resume
wait_all_ok "$RUN"
check_ledgers "$RUN" "$REF"
check_label_release "$RUN"

# 3. The curator stopped at a random step and restarted with --resume: killed with -9, and
#    stopped by SIGTERM, which ends its streams at once (within 3 s, not after the server's
#    5-s grace period); the parties meanwhile wait for it to come back.
for stop in KILL TERM; do
  RUN="$WORK/curator-$stop"; prepare "$RUN"; start_all "$RUN"
  STEP=$(random_step)
  wait_charges "$RUN" hospital "$STEP" "$CURATOR"
  if [ $stop = KILL ]; then
    kill -9 "$CURATOR"; expect_exit "$CURATOR" 137 "killed curator"
  else
    kill -TERM "$CURATOR"; expect_exit_within "$CURATOR" 1 3 "curator stopped by SIGTERM"
  fi
  echo "stopped the curator (SIG$stop) after hospital charged $(charges "$RUN" hospital) steps"
  start_curator "$RUN" --resume
  wait_all_ok "$RUN"
  check_ledgers "$RUN" "$REF"
  check_label_release "$RUN"
done

# 4. A party that never comes back fails the run, naming it.
RUN="$WORK/party-gone"; prepare "$RUN" 4; start_all "$RUN"
wait_charges "$RUN" bank 3 "$PID_bank"
kill -9 "$PID_bank"; expect_exit "$PID_bank" 137 "killed bank"
expect_exit "$CURATOR" 1 "curator without bank"
# The curator's error (its last line) names the missing party.
tail -n 1 "$RUN/logs/curator.log" | grep -q "'bank'" || fail "the curator's failure does not name the missing party"
for party in hospital insurer; do
  pid_var="PID_$party"; expect_exit "${!pid_var}" 1 "$party after the run failed"
done
[ ! -e "$RUN/synthetic.csv" ] && [ ! -e "$RUN/synthetic.released.json" ] || fail "a failed run published a table"

# 5. The reference run's checkpoint directory copied over this run's: its curator would
#    publish the reference's generator to parties that trained another start.
RUN="$WORK/other-start"; prepare "$RUN" 4; start_all "$RUN"
wait_charges "$RUN" hospital "$(random_step)" "$CURATOR"
kill -9 "$CURATOR"; expect_exit "$CURATOR" 137 "killed curator"
rm -rf "$RUN/checkpoint"; cp -r "$REF/checkpoint" "$RUN/checkpoint"
start_curator "$RUN" --resume
# The first party to rejoin refuses the other start; the curator fails the run at once,
# naming it, and every party ends.
for party in $PARTIES; do
  pid_var="PID_$party"; expect_exit "${!pid_var}" 1 "$party under another start of the run"
done
expect_exit "$CURATOR" 1 "curator resumed from another start"
grep -q "refuses the run: .*another start of run" "$RUN/logs/curator.log" \
  || fail "the curator's failure does not name the other start"
[ ! -e "$RUN/synthetic.csv" ] || fail "the other start's generator was published"
echo PASS
