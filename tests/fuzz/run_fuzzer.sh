#!/usr/bin/env bash
# Runs one libFuzzer target for a fixed number of executions from its seed corpus
# (copied, so the source tree is untouched); fails on any crash, leak or sanitizer
# report and keeps the crashing input in ARTIFACT_DIR.
#   run_fuzzer.sh FUZZER SEED_DIR RUNS MAX_LEN ARTIFACT_DIR     (FUZZ_SEED overrides the seed)
set -euo pipefail
FUZZER="$1"; SEEDS="$2"; RUNS="$3"; MAX_LEN="$4"; ARTIFACTS="$5"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$FUZZER" ] || fail "$FUZZER is not built"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/corpus" "$ARTIFACTS"
cp "$SEEDS"/* "$WORK/corpus/"
name=$(basename "$FUZZER")
export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
set +e
"$FUZZER" -runs="$RUNS" -seed="${FUZZ_SEED:-1}" -max_len="$MAX_LEN" -print_final_stats=1 \
  -artifact_prefix="$ARTIFACTS/$name-" "$WORK/corpus" > "$WORK/log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ] || grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:" "$WORK/log"; then
  grep -vE "^#[0-9]+" "$WORK/log" | tail -n 60
  fail "$name found a problem (exit $rc); reproduce with: $FUZZER $ARTIFACTS/$name-<crash file>"
fi
grep -q "^Done $RUNS runs" "$WORK/log" || { tail -n 20 "$WORK/log"; fail "$name did not complete $RUNS runs"; }
grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "$WORK/log"
echo "PASS: $name, $RUNS executions, $(ls "$WORK/corpus" | wc -l) corpus inputs"
