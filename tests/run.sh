#!/usr/bin/env bash
# Installs what is missing, configures, builds and runs the tests through ctest.
# Usage: tests/run.sh [--fast] [extra ctest args]   (BUILD_DIR overrides ./build)
#   --fast   only the tests labelled `unit` (tests/CMakeLists.txt): one module at a time, in
#            process; a few minutes instead of about fifteen
set -euo pipefail
cd "$(dirname "$0")/.."
LABEL_ARGS=()
if [ "${1:-}" = --fast ]; then
  LABEL_ARGS=(-L unit)
  shift
fi
deploy/install-deps.sh
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j "$JOBS"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$JOBS" "${LABEL_ARGS[@]}" "$@"
