#!/usr/bin/env bash
# Builds gnn against a CUDA LibTorch (PyPI's torch 2.11.0, a CUDA 13 build
# whose wheel carries LibTorch's headers and CMake package) with nvcc, into
# ./build-cuda (or $GNN_CUDA_BUILD_DIR): gnn-train --num_gpus and the CUDA
# kernels of lib/kernels. Debian's LibTorch stays the CPU build of ./build
# (scripts/build.sh); nothing here changes it.
#
# Which torch: $GNN_TORCH_PYTHON when set; else a python3 on PATH (or
# /usr/bin/python3) whose torch is a 2.11 CUDA build (the GPU machines have
# one); else the venv $GNN_TORCH_VENV (default ~/.cache/gnn/torch-2.11),
# made with `pip install torch==2.11.0` when missing (about 4.6 GB).
# Usage: bash scripts/build-cuda.sh [extra cmake arguments]
# Environment: GNN_JOBS (parallel jobs, default nproc), GNN_SKIP_DEPS=1 (do
# not run scripts/install-deps.sh: a machine without network), GNN_TARGETS
# (space-separated targets to build, default all).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
if ! command -v nvcc >/dev/null; then
  echo "build-cuda.sh: nvcc not found on PATH or in /usr/local/cuda/bin: install the CUDA toolkit" >&2
  exit 2
fi
[ -n "${GNN_SKIP_DEPS:-}" ] || bash scripts/install-deps.sh
BUILD_DIR="${GNN_CUDA_BUILD_DIR:-build-cuda}"
JOBS="${GNN_JOBS:-$(nproc)}"

# A torch 2.11 with CUDA: "2.11.0+cu130 13.0" -> ok.
cuda_torch() {
  "$1" -c 'import sys, torch; v = torch.__version__; sys.exit(0 if v.startswith("2.11") and torch.version.cuda else 1)' \
    2>/dev/null
}
PY="${GNN_TORCH_PYTHON:-}"
if [ -n "$PY" ]; then
  cuda_torch "$PY" || {
    echo "build-cuda.sh: GNN_TORCH_PYTHON=$PY has no torch 2.11 CUDA build" >&2
    exit 2
  }
else
  for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null && cuda_torch "$candidate"; then
      PY="$candidate"
      break
    fi
  done
fi
if [ -z "$PY" ]; then
  VENV="${GNN_TORCH_VENV:-$HOME/.cache/gnn/torch-2.11}"
  if ! cuda_torch "$VENV/bin/python"; then
    echo "build-cuda.sh: installing torch==2.11.0 into $VENV (PyPI, about 4.6 GB)" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet torch==2.11.0
  fi
  PY="$VENV/bin/python"
  cuda_torch "$PY" || {
    echo "build-cuda.sh: $PY has no torch 2.11 CUDA build after pip install" >&2
    exit 2
  }
fi
# The torch folder first (its lib/libtorch.so before Debian's), then its
# CMake packages.
ROOT=$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
echo "build-cuda.sh: LibTorch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null) from $ROOT" >&2
# torch's own libraries and the CUDA ones its wheel carries (nvidia/*/lib):
# Python preloads them; a C++ program finds them here, at link time (the
# libraries libtorch_cuda needs) and when the test lists are read.
LIBS=$("$PY" - <<'PY' 2>/dev/null
import glob, os, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
dirs += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
print(":".join(d for d in dirs if os.path.isdir(d)))
PY
)
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Hopper (H100, H200) unless told otherwise: one architecture compiles fast.
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$ROOT;$ROOT/share/cmake" \
  -DGNN_REQUIRE_TORCH_CUDA=ON "$@" >/dev/null
# shellcheck disable=SC2086  # a list of target names
cmake --build "$BUILD_DIR" -j "$JOBS" ${GNN_TARGETS:+--target $GNN_TARGETS}
# What a run of these binaries needs on its library path.
echo "$LIBS" > "$BUILD_DIR/torch_library_path"
echo "build-cuda.sh: built into $BUILD_DIR; run its binaries with LD_LIBRARY_PATH=\$(cat $BUILD_DIR/torch_library_path)" >&2
