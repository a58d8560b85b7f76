#!/usr/bin/env bash
# Address flags are checked like the config settings they replace: a port out of range
# is refused (the socket layer would wrap it), and plaintext only on loopback.
set -euo pipefail
BIN="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/curator.json" <<JSON
{"run_id": "r", "parties": ["a"], "plaintext": true, "privacy": {"mode": "none"},
 "checkpoint_dir": "$WORK/checkpoint"}
JSON
cat > "$WORK/party.json" <<JSON
{"name": "a", "curator": "127.0.0.1:50051", "plaintext": true, "data": "a.csv",
 "schema": "a.json", "secrets": "secrets.txt", "privacy": {"mode": "none"}}
JSON

# expect_refused <message> -- <command...>: exits non-zero, saying <message>.
expect_refused() {
  local message="$1"; shift 2
  if "$@" > "$WORK/out" 2> "$WORK/err"; then fail "'$*' was accepted"; fi
  grep -qF -- "$message" "$WORK/err" || fail "'$*' did not say \"$message\": $(head -c 300 "$WORK/err")"
}

expect_refused "--listen '127.0.0.1:99999' is not host:port" -- \
  "$BIN/vfsynth-curator" --config "$WORK/curator.json" --listen 127.0.0.1:99999
expect_refused "listen '0.0.0.0:50051' is not a loopback address" -- \
  "$BIN/vfsynth-curator" --config "$WORK/curator.json" --listen 0.0.0.0:50051
expect_refused "--curator '127.0.0.1:0' is not host:port" -- \
  "$BIN/vfsynth-party" --config "$WORK/party.json" --curator 127.0.0.1:0
expect_refused "curator '10.0.0.5:50051' is not a loopback address" -- \
  "$BIN/vfsynth-party" --config "$WORK/party.json" --curator 10.0.0.5:50051
expect_refused "--curator '127.0.0.1:70000' is not host:port" -- \
  "$BIN/vfsynth" status --curator 127.0.0.1:70000 --plaintext
expect_refused "curator '10.0.0.5:50051' is not a loopback address" -- \
  "$BIN/vfsynth" status --curator 10.0.0.5:50051 --plaintext
echo "address flags: checked like the settings they replace"
