#!/usr/bin/env bash
# ThreadSanitizer sees a lock only in code it instruments. Debian's abseil is not, so
# absl::Mutex (ours, and gRPC's underneath) would be invisible to it and every guarded
# access a false race. This builds the installed abseil release from Debian's own source
# (its patches: same sonames, same inline namespace) with -fsanitize=thread into
# build-tsan/abseil/lib; the tsan test preset puts that first on LD_LIBRARY_PATH, so
# every library (ours, gRPC's) loads it instead of the system's.
# Usage: tests/sanitizers/tsan-abseil.sh [out-dir]   (a few minutes; once per machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="$(realpath -m "${1:-build-tsan/abseil}")"
VERSION="$(dpkg-query -W -f='${Version}' libabsl-dev)"
if [ -f "$OUT/lib/.version" ] && [ "$(cat "$OUT/lib/.version")" = "$VERSION" ]; then
  echo "instrumented abseil $VERSION already in $OUT/lib"
  exit 0
fi
command -v dpkg-source > /dev/null || apt-get install -y --no-install-recommends dpkg-dev
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Debian's source archive, without touching the system's apt configuration.
mkdir -p "$WORK/apt/lists/partial"
echo "deb-src http://deb.debian.org/debian bookworm main" > "$WORK/apt/sources.list"
APT=(-o "Dir::Etc::SourceList=$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$WORK/apt/lists" -o APT::Sandbox::User=root)
apt-get "${APT[@]}" update -qq
(cd "$WORK" && apt-get "${APT[@]}" source -qq --download-only "abseil=$VERSION")
dpkg-source -x "$WORK"/abseil_*.dsc "$WORK/src" > /dev/null
cmake -S "$WORK/src" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
  -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$OUT" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" > /dev/null
cmake --build "$WORK/build" -j "$(nproc)"
cmake --install "$WORK/build" > /dev/null
echo "$VERSION" > "$OUT/lib/.version"
echo "instrumented abseil $VERSION in $OUT/lib"
