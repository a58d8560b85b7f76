#!/usr/bin/env bash
# The demo topology across Linux network namespaces: the curator and each party run
# in their own namespace with their own address, joined by veth links to a bridge in
# a 'hub' namespace; nothing is bound on loopback and no host interface is touched.
# The curator's certificate carries its namespace address as IP SAN. A short run (few
# rounds, small batch) must publish a valid synthetic table, and the curator must have
# seen every party's stream come from that party's own address.
#   deploy/netns-e2e.sh [BIN_DIR] [SOURCE_DIR]
# Needs root (CAP_NET_ADMIN) and `ip netns`; without them it prints SKIP and exits 77.
set -euo pipefail
SRC="${2:-$(cd "$(dirname "$0")/.." && pwd)}"
BIN="${1:-$SRC/build/bin}"
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
for role in curator "${PARTIES[@]}"; do
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
"$SRC/deploy/run-local.sh" --out "$WORK/run" --dataset adult --rounds 3 --batch 128 --rows "$ROWS" \
  --privacy strict --epsilon 10 --host "${ADDRESS[curator]}" --port 50051 --bin "$BIN" \
  --launcher "$WORK/launch.sh" > "$WORK/run.out" 2>&1 &
run_pid=$!
# Waiting on a background job lets INT/TERM reach the trap (and the cleanup) at once.
# run-local.sh fails unless the curator and every party exit 0.
wait "$run_pid" || { cat "$WORK/run.out"; tail -n 20 "$WORK"/run/logs/*.log; fail "the run across namespaces failed"; }
run_pid=""

LOGS="$WORK/run/logs"
openssl x509 -in "$WORK/run/certs/curator.crt" -noout -ext subjectAltName | grep -q "IP Address:${ADDRESS[curator]}" \
  || fail "the curator certificate lacks IP SAN ${ADDRESS[curator]}"
python3 "$SRC/tests/e2e/check_synthetic.py" "$WORK/run/synthetic.csv" "$SRC/deploy/schemas/adult.schema.json" "$ROWS" \
  || fail "synthetic table violates the schema"
for party in "${PARTIES[@]}"; do
  # The curator logs the peer address of each Train stream.
  seen=$(sed -n "s/.*party $party opened its Train stream from ipv4:\([0-9.]*\):[0-9]*.*/\1/p" "$LOGS/curator.log" | sort -u)
  [ "$seen" = "${ADDRESS[$party]}" ] \
    || fail "$party's stream came from '${seen:-nowhere}', expected its namespace address ${ADDRESS[$party]}"
done
echo "PASS: ${#PARTIES[@]} parties in their own namespaces trained with the curator at ${ADDRESS[curator]}"
