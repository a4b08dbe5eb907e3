#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test suite through ctest.
# Extra arguments go to ctest, e.g. `bash scripts/test.sh -L unit` or
# `bash scripts/test.sh -R partition`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR="${GNN_BUILD_DIR:-build}"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 -j "${GNN_TEST_JOBS:-2}" "$@"
