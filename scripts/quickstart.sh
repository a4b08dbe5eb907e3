#!/usr/bin/env bash
# The main job on a built-in default, on this one machine:
#   1. gnn-partition: generate synthetic:small (100K nodes, 1M edges) and
#      split it into 2 METIS partitions, printing the partition report;
#   2. gnn-partition --num_parts 1 + gnn-train --standalone: train GraphSAGE
#      (DGL's default model) and print the final JSON summary.
# (The distributed launch joins here when gnn-launch lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
BIN="${GNN_BUILD_DIR:-build}/apps"
WORK="${GNN_WORK_DIR:-$(mktemp -d /tmp/gnn-quickstart-XXXXXX)}"
DATASET="${GNN_DATASET:-synthetic:small}"
NUM_PARTS="${GNN_NUM_PARTS:-2}"

echo "== gnn-partition --dataset $DATASET --num_parts $NUM_PARTS --balance_train --balance_edges"
"$BIN/gnn-partition" --dataset "$DATASET" --num_parts "$NUM_PARTS" --balance_train \
  --balance_edges --output "$WORK/data" --overwrite --quiet

echo
echo "== gnn-train --standalone on a 1-partition copy (DGL's defaults: 20 epochs, fan_out 10,25, hidden 16)"
"$BIN/gnn-partition" --dataset "$DATASET" --num_parts 1 --output "$WORK/data1" --overwrite \
  --quiet >/dev/null
config=$(ls "$WORK"/data1/*.json)
"$BIN/gnn-train" --standalone --part_config "$config" --eval_every 5 \
  --log_every 20 --metrics_file "$WORK/metrics.jsonl"
echo "(outputs in $WORK)"
