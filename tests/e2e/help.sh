#!/usr/bin/env bash
# Every binary and every `vfsynth` command answers --help with its usage and its own
# flags, one line each, and exits 0.
set -euo pipefail
BIN="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

# expect_help <expected flag...> -- <command...>
expect_help() {
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  "$@" > "$WORK/out" 2> "$WORK/err" || fail "'$*' exited $? (stderr: $(head -c 300 "$WORK/err"))"
  grep -q '^usage: ' "$WORK/out" || fail "'$*' printed no usage line"
  for flag in "${flags[@]}"; do
    grep -q "^  --$flag[= ]" "$WORK/out" || fail "'$*' does not list --$flag"
  done
}

expect_help config resume log_level -- "$BIN/vfsynth-curator" --help
expect_help config resume log_level -- "$BIN/vfsynth-party" --help
expect_help log_level -- "$BIN/vfsynth" --help
expect_help input schema parties out skip_bad_rows log_level -- "$BIN/vfsynth" split --help
expect_help input out party_count parties -- "$BIN/vfsynth" schema --help
expect_help real schema out parties rounds -- "$BIN/vfsynth" audit --help
expect_help config rounds -- "$BIN/vfsynth" train-local -h
expect_help curator json -- "$BIN/vfsynth" status --help
expect_help real synthetic schema target out parties holdout -- "$BIN/vfsynth" eval --help
expect_help mode epsilon delta party_count schema parties label -- "$BIN/vfsynth" privacy --help
expect_help generator output rows label_column -- "$BIN/vfsynth" synthesize --help
expect_help log_level -- "$BIN/vfsynth" ledger --help
# --version names the project's version and the build type.
for binary in vfsynth vfsynth-curator vfsynth-party; do
  "$BIN/$binary" --version > "$WORK/version" || fail "$binary --version exited $?"
  grep -qE '^vfsynth [0-9]+\.[0-9]+\.[0-9]+ \([A-Za-z]+ build\)$' "$WORK/version" \
    || fail "$binary --version: $(head -c 200 "$WORK/version")"
done
# The one-host launcher answers --help with its header, and names --help for a typo.
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
"$ROOT/deploy/run-local.sh" --help > "$WORK/run-local" || fail "run-local.sh --help exited $?"
grep -q '^  deploy/run-local.sh --out DIR' "$WORK/run-local" || fail "run-local.sh --help: no usage"
grep -q -- '--privacy none|dpsgd|strict' "$WORK/run-local" || fail "run-local.sh --help: no flags"
! "$ROOT/deploy/run-local.sh" --outt x 2> "$WORK/typo" || fail "run-local.sh accepted --outt"
grep -q 'unknown argument --outt (--help lists them)' "$WORK/typo" || fail "run-local.sh typo message"
# A command's help lists its own flags, not every command's.
"$BIN/vfsynth" split --help > "$WORK/split"
! grep -q '^  --audit_models' "$WORK/split" || fail "split --help lists audit's flags"
echo "help: every binary and command answers --help"
