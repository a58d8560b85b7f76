#!/usr/bin/env bash
# ThreadSanitizer needs the libraries our threads synchronise through to be instrumented:
# - Abseil: absl::Mutex (ours, and gRPC's underneath) is invisible to TSan otherwise, and
#   every guarded access a false race.
# - protobuf: its headers add members to MapFieldBase under TSan, so an instrumented binary
#   and the system's libprotobuf disagree on the layout of every map field (a Struct's
#   fields: a crash, not a report).
# - gRPC: it hands messages, slices and call state between its threads through its own
#   atomics; unseen, every buffer it passes to a handler thread reads as a race.
# This builds the installed releases from Debian's own source (its patches: same sonames,
# same inline namespaces) with -fsanitize=thread into build-tsan/deps/lib; the tsan test
# preset puts that first on LD_LIBRARY_PATH, so every library (ours, gRPC's) loads them.
# Usage: tests/sanitizers/tsan-deps.sh [out-dir]   (about 45 minutes here; once per machine
# and library version)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="$(realpath -m "${1:-build-tsan/deps}")"
mkdir -p "$OUT/lib"
version() { dpkg-query -W -f='${source:Version}' "$1"; }
ABSEIL="$(version libabsl-dev)"
PROTOBUF="$(version libprotobuf-dev)"
GRPC="$(version libgrpc++-dev)"
# True if source package $1 at version $2 is instrumented in $OUT/lib already.
built() { [ "$(cat "$OUT/lib/.$1" 2> /dev/null)" = "$2" ]; }
if built abseil "$ABSEIL" && built protobuf "$PROTOBUF" && built grpc "$GRPC"; then
  echo "instrumented abseil $ABSEIL, protobuf $PROTOBUF and grpc $GRPC already in $OUT/lib"
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
LAUNCHER=()
command -v ccache > /dev/null && LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
TSAN=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 -DCMAKE_INSTALL_PREFIX="$OUT"
      -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_C_FLAGS="-fsanitize=thread" -DCMAKE_CXX_FLAGS="-fsanitize=thread"
      -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" "${LAUNCHER[@]}")

# Unpacks Debian's source of package $1 at version $2 into $WORK/$1.
fetch() {
  (cd "$WORK" && apt-get "${APT[@]}" source -qq --download-only "$1=$2")
  dpkg-source -x "$WORK/$1"_*.dsc "$WORK/$1" > /dev/null 2>&1
}

if ! built abseil "$ABSEIL"; then
  fetch abseil "$ABSEIL"
  cmake -S "$WORK/abseil" -B "$WORK/abseil-build" "${TSAN[@]}" -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF > /dev/null
  cmake --build "$WORK/abseil-build" -j "$(nproc)"
  cmake --install "$WORK/abseil-build" > /dev/null
  echo "$ABSEIL" > "$OUT/lib/.abseil"
fi

# Only the runtime library: protoc and the lite library run in no test process.
if ! built protobuf "$PROTOBUF"; then
  fetch protobuf "$PROTOBUF"
  cmake -S "$WORK/protobuf" -B "$WORK/protobuf-build" "${TSAN[@]}" -Dprotobuf_BUILD_SHARED_LIBS=ON \
    -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_WITH_ZLIB=ON > /dev/null
  cmake --build "$WORK/protobuf-build" -j "$(nproc)" --target libprotobuf
  cp -a "$WORK/protobuf-build"/libprotobuf.so.* "$OUT/lib/"
  echo "$PROTOBUF" > "$OUT/lib/.protobuf"
fi

# The libraries a test process loads (libgrpc++ and what it links of gRPC's own), built as
# Debian builds them (its system providers) but without the code generators. -O1 -g1 keep
# the 850 units' build time down; reports still name gRPC's functions and lines.
if ! built grpc "$GRPC"; then
  fetch grpc "$GRPC"
  cmake -S "$WORK/grpc" -B "$WORK/grpc-build" "${TSAN[@]}" -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_FLAGS="-O1 -g1 -fsanitize=thread" -DCMAKE_CXX_FLAGS="-O1 -g1 -fsanitize=thread" \
    -DBUILD_SHARED_LIBS=ON -DgRPC_BUILD_TESTS=OFF -DgRPC_BACKWARDS_COMPATIBILITY_MODE=OFF -DgRPC_BUILD_CODEGEN=OFF \
    -DgRPC_ABSL_PROVIDER=package -DgRPC_CARES_PROVIDER=package -DgRPC_PROTOBUF_PROVIDER=package \
    -DgRPC_RE2_PROVIDER=package -DgRPC_SSL_PROVIDER=package -DgRPC_ZLIB_PROVIDER=package \
    -DProtobuf_PROTOC_LIBRARY="$(find /usr/lib -name 'libprotoc.so*' -print -quit)" \
    -DgRPC_BUILD_GRPC_CPP_PLUGIN=OFF -DgRPC_BUILD_GRPC_CSHARP_PLUGIN=OFF -DgRPC_BUILD_GRPC_NODE_PLUGIN=OFF \
    -DgRPC_BUILD_GRPC_OBJECTIVE_C_PLUGIN=OFF -DgRPC_BUILD_GRPC_PHP_PLUGIN=OFF \
    -DgRPC_BUILD_GRPC_PYTHON_PLUGIN=OFF -DgRPC_BUILD_GRPC_RUBY_PLUGIN=OFF > /dev/null
  cmake --build "$WORK/grpc-build" -j "$(nproc)" --target grpc++
  for lib in grpc++ grpc gpr upb address_sorting; do cp -a "$WORK/grpc-build/lib$lib.so".* "$OUT/lib/"; done
  echo "$GRPC" > "$OUT/lib/.grpc"
fi
echo "instrumented abseil $ABSEIL, protobuf $PROTOBUF and grpc $GRPC in $OUT/lib"
