#!/usr/bin/env bash
# Installs every Debian package vfsynth needs to build, test and run the demo.
# A no-op (no apt call at all) when everything is already present.
#   deploy/install-deps.sh               build + test + demo tools (what tests/run.sh needs)
#   deploy/install-deps.sh --build-only  only what compiling the binaries needs (docker/Dockerfile)
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libtorch-dev libopenblas0-openmp
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libssl-dev openssl libsodium-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libcpp-httplib-dev libpq-dev
)
# Tests and demo: report rendering (chromium), compose validation (docker-compose),
# network-namespace e2e (iproute2), fuzzers (clang with libFuzzer and sanitizer runtimes),
# the generalisation suite's tables (R data packages, deploy/suite/convert-tables.sh),
# the MST baseline (numpy, pandas, scipy: deploy/quality.sh --privacy mst), the scale case's
# peak memory (GNU time: tests/bench/scale.sh), the PostgreSQL tests' throw-away server
# (tests/postgres/with_postgres.sh).
TOOL_PACKAGES=(
  chromium
  docker-compose iproute2
  clang-14 libclang-rt-14-dev llvm-14
  r-base-core r-cran-aer r-cran-cardata r-cran-mlbench
  python3-numpy python3-pandas python3-scipy
  time
  postgresql
)

# The Kubernetes manifests' offline checks (tests/e2e/k8s_manifests.sh): python3-yaml, and
# Debian's kubectl (kubernetes-client) only where none is on PATH (a newer one installed
# by hand renders deploy/k8s the same).
TOOL_PACKAGES+=(python3-yaml)
command -v kubectl > /dev/null || TOOL_PACKAGES+=(kubernetes-client)

PACKAGES=("${BUILD_PACKAGES[@]}")
case "${1:-}" in
  --build-only) ;;
  "") PACKAGES+=("${TOOL_PACKAGES[@]}") ;;
  *) echo "usage: $0 [--build-only]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
