#!/usr/bin/env bash
# Installs dependencies and builds the Release binaries into build/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
BUILD_DIR="${BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
