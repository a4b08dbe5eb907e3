#!/usr/bin/env bash
# Installs the Debian packages gnn needs (if missing) and builds everything
# into ./build (or $GNN_BUILD_DIR), or only GNN_TARGETS (e.g. the binaries).
# Safe to re-run: only what changed rebuilds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR="${GNN_BUILD_DIR:-build}"
JOBS="${GNN_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${GNN_CMAKE_ARGS:-} >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "$JOBS" ${GNN_TARGETS:+--target $GNN_TARGETS}
