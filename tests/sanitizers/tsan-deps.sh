#!/usr/bin/env bash
# ThreadSanitizer needs the libraries our threads synchronise through to be instrumented:
# - Abseil: absl::Mutex (ours, and gRPC's underneath) is invisible to TSan otherwise, and
#   every guarded access a false race.
# - protobuf: its headers add members to MapFieldBase under TSan, so an instrumented binary
#   and the system's libprotobuf disagree on the layout of every map field (a Struct's
#   fields: a crash, not a report).
# This builds the installed releases from Debian's own source (its patches: same sonames,
# same inline namespaces) with -fsanitize=thread into build-tsan/deps/lib; the tsan test
# preset puts that first on LD_LIBRARY_PATH, so every library (ours, gRPC's) loads them.
# Usage: tests/sanitizers/tsan-deps.sh [out-dir]   (about 15 minutes here; once per machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="$(realpath -m "${1:-build-tsan/deps}")"
STAMP="$(dpkg-query -W -f='${Package}=${Version} ' libabsl-dev libprotobuf-dev)"
if [ -f "$OUT/lib/.versions" ] && [ "$(cat "$OUT/lib/.versions")" = "$STAMP" ]; then
  echo "instrumented $STAMP already in $OUT/lib"
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
TSAN=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 -DCMAKE_INSTALL_PREFIX="$OUT"
      -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_C_FLAGS="-fsanitize=thread" -DCMAKE_CXX_FLAGS="-fsanitize=thread"
      -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread")

# Unpacks Debian's source of package $1 at version $2 into $WORK/$1.
fetch() {
  (cd "$WORK" && apt-get "${APT[@]}" source -qq --download-only "$1=$2")
  dpkg-source -x "$WORK/$1"_*.dsc "$WORK/$1" > /dev/null 2>&1
}

fetch abseil "$(dpkg-query -W -f='${Version}' libabsl-dev)"
cmake -S "$WORK/abseil" -B "$WORK/abseil-build" "${TSAN[@]}" -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF > /dev/null
cmake --build "$WORK/abseil-build" -j "$(nproc)"
cmake --install "$WORK/abseil-build" > /dev/null

# Only the runtime library: protoc and the lite library run in no test process.
fetch protobuf "$(dpkg-query -W -f='${Version}' libprotobuf-dev)"
cmake -S "$WORK/protobuf" -B "$WORK/protobuf-build" "${TSAN[@]}" -Dprotobuf_BUILD_SHARED_LIBS=ON \
  -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_WITH_ZLIB=ON > /dev/null
cmake --build "$WORK/protobuf-build" -j "$(nproc)" --target libprotobuf
cp -a "$WORK/protobuf-build"/libprotobuf.so.* "$OUT/lib/"

echo "$STAMP" > "$OUT/lib/.versions"
echo "instrumented $STAMP in $OUT/lib"
