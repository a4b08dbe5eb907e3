#!/usr/bin/env bash
# The main job on a built-in default, on this one machine:
#   1. gnn-partition: generate synthetic:small (100K nodes, 1M edges) and
#      split it into 2 METIS partitions, printing the partition report;
#   2. gnn-train --standalone on a 1-partition copy (DGL's default model);
#   3. the same model trained by 2 trainers on 2 "machines" of loopback
#      addresses: 2 gnn-server processes, 2 gnn-train processes (each with
#      a gnn-sampler child), gradients all-reduced through Gloo.
# (gnn-launch will start step 3's processes for you when it lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
WORK="${GNN_WORK_DIR:-$(mktemp -d /tmp/gnn-quickstart-XXXXXX)}"
DATASET="${GNN_DATASET:-synthetic:small}"
EPOCHS="${GNN_EPOCHS:-20}"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== 1. gnn-partition --dataset $DATASET --num_parts 2 --balance_train --balance_edges"
"$BIN/gnn-partition" --dataset "$DATASET" --num_parts 2 --balance_train --balance_edges \
  --output "$WORK/data" --overwrite --quiet
config=$(ls "$WORK"/data/*.json)

echo
echo "== 2. gnn-train --standalone (DGL's defaults: fan_out 10,25, batch 1000, hidden 16; $EPOCHS epochs)"
"$BIN/gnn-partition" --dataset "$DATASET" --num_parts 1 --output "$WORK/data1" --overwrite \
  --quiet >/dev/null
"$BIN/gnn-train" --standalone --part_config "$(ls "$WORK"/data1/*.json)" --num_epochs "$EPOCHS" \
  --eval_every 5 --metrics_file "$WORK/standalone.jsonl" 2> "$WORK/standalone.log"
grep -E "Val Acc" "$WORK/standalone.log" | tail -1

echo
echo "== 3. 2 servers + 2 trainers on loopback (per-trainer batch 500 = the same global batch)"
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
printf '127.0.0.1 %s\n127.0.0.1 %s\n' "$(port)" "$(port)" > "$WORK/ip_config.txt"
JOB="quickstart-$$"
for m in 0 1; do
  "$BIN/gnn-server" --ip_config "$WORK/ip_config.txt" --part_config "$config" --machine_id $m \
    --job_id "$JOB" 2> "$WORK/server$m.log" &
  PIDS+=($!)
done
MASTER=$(port)
for m in 1 0; do
  "$BIN/gnn-train" --ip_config "$WORK/ip_config.txt" --part_config "$config" --machine_id $m \
    --job_id "$JOB" --master_port "$MASTER" --num_samplers 1 --num_epochs "$EPOCHS" \
    --batch_size 500 --eval_every 5 --metrics_file "$WORK/dist.jsonl" \
    > "$WORK/trainer$m.out" 2> "$WORK/trainer$m.log" &
  PIDS+=($!)
done
wait "${PIDS[2]}" "${PIDS[3]}"
grep -E "Val Acc" "$WORK/trainer0.log" | tail -1
cat "$WORK/trainer0.out"
echo "(logs and outputs in $WORK)"
