#!/usr/bin/env bash
# Installs dependencies and builds Release binaries into build/bin.
#   deploy/build.sh [target ...]    (default: the three binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
BUILD_DIR="${BUILD_DIR:-build}"
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(vfsynth vfsynth-curator vfsynth-party)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target "${TARGETS[@]}"
