#!/usr/bin/env bash
# Installs what is missing, configures, builds and runs every test through ctest.
# Usage: tests/run.sh [extra ctest args]   (BUILD_DIR overrides ./build)
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j "$JOBS"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$JOBS" "$@"
