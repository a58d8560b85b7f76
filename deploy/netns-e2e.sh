#!/usr/bin/env bash
# The demo topology across Linux network namespaces: the curator and each party run
# in their own namespace with their own address, joined by veth links to a bridge in
# a 'hub' namespace; nothing is bound on loopback and no host interface is touched.
# The curator's certificate carries its namespace address as IP SAN. A short run (few
# rounds, small batch) must publish a valid synthetic table, and the curator's status must
# show every party's stream coming from that party's own address. Then, against a curator
# waiting for its parties, a fourth namespace plays the attacker on another host: a
# certificate from another CA (as operator and as a party) and a genuine party
# certificate claiming another party's name are refused, and the curator goes on waiting.
#   deploy/netns-e2e.sh [BIN_DIR] [SOURCE_DIR]
# Needs root (CAP_NET_ADMIN) and `ip netns`; without them it prints SKIP and exits 77.
set -euo pipefail
SRC=$(realpath "${2:-$(dirname "$0")/..}")
BIN=$(realpath "${1:-$SRC/build/bin}")
SKIP=77
skip() { echo "SKIP: $*"; exit "$SKIP"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v ip > /dev/null || skip "the 'ip' tool (iproute2) is not installed"
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (CAP_NET_ADMIN)"
PARTIES=(hospital insurer bank)
# A private test range; the addresses exist only inside this test's namespaces.
SUBNET=10.213.$(( $$ % 200 + 20 ))
PREFIX="vfs$$"
WORK=$(mktemp -d)
namespaces=()
run_pid=""
cleanup() {
  set +e
  [ -z "$run_pid" ] || kill -TERM "$run_pid" 2>/dev/null
  # Processes keep a deleted namespace alive: stop whatever still runs in ours first.
  for ns in "${namespaces[@]}"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -z "$pids" ] || kill -TERM $pids 2>/dev/null
  done
  for ns in "${namespaces[@]}"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -z "$pids" ] || { sleep 1; kill -KILL $pids 2>/dev/null; }
    ip netns delete "$ns" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

add_namespace() {
  ip netns add "$1" 2> "$WORK/netns.err" || skip "cannot create network namespaces: $(cat "$WORK/netns.err")"
  namespaces+=("$1")
  ip -n "$1" link set lo up
}

HUB="$PREFIX-hub"
add_namespace "$HUB"
ip -n "$HUB" link add br0 type bridge
ip -n "$HUB" link set br0 up
host=1
declare -A ADDRESS
for role in curator "${PARTIES[@]}" attacker; do
  ns="$PREFIX-$role"
  add_namespace "$ns"
  ip -n "$HUB" link add "v-$role" type veth peer name eth0 netns "$ns"
  ip -n "$HUB" link set "v-$role" master br0 up
  ADDRESS[$role]="$SUBNET.$host"
  ip -n "$ns" addr add "${ADDRESS[$role]}/24" dev eth0
  ip -n "$ns" link set eth0 up
  host=$(( host + 1 ))
done
echo "namespaces: curator ${ADDRESS[curator]}, $(for p in "${PARTIES[@]}"; do printf '%s %s ' "$p" "${ADDRESS[$p]}"; done)"

# Each daemon starts inside its own namespace.
cat > "$WORK/launch.sh" <<LAUNCH
#!/bin/sh
role="\$1"; shift
exec ip netns exec "$PREFIX-\$role" "\$@"
LAUNCH
chmod +x "$WORK/launch.sh"
ROWS=800
"$SRC/deploy/run-local.sh" --out "$WORK/run" --dataset adult --rounds 40 --batch 128 --rows "$ROWS" \
  --privacy strict --epsilon 10 --host "${ADDRESS[curator]}" --port 50051 --bin "$BIN" \
  --launcher "$WORK/launch.sh" > "$WORK/run.out" 2>&1 &
run_pid=$!
# While it trains, the operator's status (from the attacker's host, which any host on the
# network may ask) lists every party and no party's network address.
status_during_run() {
  [ -f "$WORK/run/certs/operator.key" ] || return 1
  "$WORK/launch.sh" attacker "$BIN/vfsynth" status --curator "${ADDRESS[curator]}:50051" \
    --ca "$WORK/run/certs/ca.crt" --cert "$WORK/run/certs/operator.crt" --key "$WORK/run/certs/operator.key" \
    --timeout-seconds 2 --json > "$WORK/status.json" 2> /dev/null
}
status_seen=""
while kill -0 "$run_pid" 2> /dev/null; do
  if status_during_run && python3 - "$WORK/status.json" <<'PY'
import json, sys
parties = json.load(open(sys.argv[1])).get("parties", [])
sys.exit(0 if parties and all(p.get("connected") for p in parties) else 1)
PY
  then status_seen=yes; break; fi
  sleep 0.2
done
# Waiting on a background job lets INT/TERM reach the trap (and the cleanup) at once.
# run-local.sh fails unless the curator and every party exit 0.
wait "$run_pid" || { cat "$WORK/run.out"; tail -n 20 "$WORK"/run/logs/*.log; fail "the run across namespaces failed"; }
run_pid=""
[ -n "$status_seen" ] || fail "status never showed every party connected during the run"
for party in "${PARTIES[@]}"; do
  ! grep -qF "${ADDRESS[$party]}" "$WORK/status.json" || fail "status shows $party's network address"
done

LOGS="$WORK/run/logs"
openssl x509 -in "$WORK/run/certs/curator.crt" -noout -ext subjectAltName | grep -q "IP Address:${ADDRESS[curator]}" \
  || fail "the curator certificate lacks IP SAN ${ADDRESS[curator]}"
python3 "$SRC/tests/e2e/check_synthetic.py" "$WORK/run/synthetic.csv" "$SRC/deploy/schemas/adult.schema.json" "$ROWS" \
  || fail "synthetic table violates the schema"
# The curator's own log names where each party's stream came from.
for party in "${PARTIES[@]}"; do
  grep -q "party $party opened its Train stream from ipv4:${ADDRESS[$party]}:" "$LOGS/curator.log" \
    || fail "$party's stream did not come from its namespace address ${ADDRESS[$party]}"
done
# The attacker's host. Its own CA issues certificates for the same names (rogue/).
"$SRC/deploy/gen-certs.sh" "$WORK/rogue" "${PARTIES[@]}" > /dev/null 2>&1 || fail "gen-certs.sh for the rogue CA"
cd "$WORK/run"
python3 - "${ADDRESS[curator]}" <<'PY'
import json, sys
curator = json.load(open("curator.json"))
curator.update(checkpoint_dir="checkpoint-waiting", join_timeout_seconds=300)
json.dump(curator, open("curator-waiting.json", "w"))
bank = json.load(open("bank.json"))
bank.update(connect_timeout_seconds=5, reconnect_timeout_seconds=5, checkpoint_dir="attacker-checkpoint")
bank["privacy"]["ledger"] = "attacker.ledger"
for name, tls in {"rogue-ca": ("rogue/ca.crt", "rogue/bank"), "impostor": ("certs/ca.crt", "certs/hospital")}.items():
    bank["tls"] = {"ca": tls[0], "cert": tls[1] + ".crt", "key": tls[1] + ".key"}
    json.dump(bank, open(f"{name}.json", "w"))
PY
cp -r "$WORK/rogue" rogue
"$WORK/launch.sh" curator "$BIN/vfsynth-curator" --config curator-waiting.json 2> "$LOGS/curator-waiting.log" &
run_pid=$!
status_from_attacker() {  # CERT_DIR OUT: `vfsynth status` with CERT_DIR's operator certificate
  "$WORK/launch.sh" attacker "$BIN/vfsynth" status --curator "${ADDRESS[curator]}:50051" --ca certs/ca.crt \
    --cert "$1/operator.crt" --key "$1/operator.key" --timeout-seconds 5 --json > "$2" 2> "$2.err"
}
for attempt in $(seq 50); do status_from_attacker certs status.json && break; sleep 0.2; done
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["state"] == "waiting"' status.json \
  || { cat status.json status.json.err; fail "the run's operator cannot read the waiting curator's status from another host"; }
set +e
status_from_attacker rogue rogue-status.json; rogue_status=$?
"$WORK/launch.sh" attacker "$BIN/vfsynth-party" --config rogue-ca.json 2> rogue-party.log; rogue_party=$?
"$WORK/launch.sh" attacker "$BIN/vfsynth-party" --config impostor.json 2> impostor.log; impostor=$?
set -e
[ $rogue_status -ne 0 ] || fail "status with another CA's certificate was answered"
[ $rogue_party -ne 0 ] || fail "a party certified by another CA was accepted"
[ $impostor -ne 0 ] && grep -q "PERMISSION_DENIED" impostor.log \
  || { cat impostor.log; fail "hospital's certificate claiming to be bank was not refused"; }
for refused in rogue-status.json.err rogue-party.log impostor.log; do echo "$refused: $(tail -n 1 "$refused" | cut -c1-240)"; done
status_from_attacker certs status-after.json || fail "the curator stopped answering after the attacks"
python3 - status-after.json "${PARTIES[@]}" <<'PY' || fail "the attacks changed the waiting curator's state"
import json, sys
status = json.load(open(sys.argv[1]))
assert status["state"] == "waiting", status["state"]
joined = [p["name"] for p in status.get("parties", []) if p.get("registered") or p.get("connected")]
assert joined == [], f"parties shown registered or connected after the attacks: {joined}"
PY
kill -TERM "$run_pid"
set +e; wait "$run_pid"; crc=$?; set -e
run_pid=""
[ $crc -eq 1 ] || fail "the waiting curator exited $crc after SIGTERM (expected 1: run cancelled)"
echo "PASS: ${#PARTIES[@]} parties in their own namespaces trained with the curator at ${ADDRESS[curator]};"\
  "an attacker on another host was refused (another CA: status and party; a party certificate under another name)"
