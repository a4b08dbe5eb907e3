#!/usr/bin/env bash
# The main job on a built-in default, on this one machine: generate a small
# synthetic graph and partition it with METIS, printing the partition report.
# (Later stages of the pipeline -- launch and train -- join here as they land.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
BUILD_DIR="${GNN_BUILD_DIR:-build}"
WORK="${GNN_WORK_DIR:-$(mktemp -d /tmp/gnn-quickstart-XXXXXX)}"
DATASET="${GNN_DATASET:-synthetic:small}"
NUM_PARTS="${GNN_NUM_PARTS:-2}"
echo "== gnn-partition --dataset $DATASET --num_parts $NUM_PARTS (output in $WORK/data)"
"$BUILD_DIR/apps/gnn-partition" --dataset "$DATASET" --num_parts "$NUM_PARTS" \
  --balance_train --balance_edges --output "$WORK/data" --overwrite
