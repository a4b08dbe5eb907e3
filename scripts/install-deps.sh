#!/usr/bin/env bash
# Installs every Debian package that gnn's build, tests and benchmarks need.
# Idempotent and quiet: packages already present are skipped without touching
# apt. Needs root (or sudo) on Debian 12.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  zlib1g-dev
  libmetis-dev libptscotch-dev libopenmpi-dev openmpi-bin
  libzmq3-dev cppzmq-dev
  libcereal-dev nlohmann-json3-dev libcli11-dev catch2 libcpp-httplib-dev
  libtorch-dev libgloo-dev libopenblas0-openmp
  python3-numpy python3-scipy python3-torch python3-matplotlib python3-venv
  openssh-server openssh-client rsync iproute2 time procps
  clang-format
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
