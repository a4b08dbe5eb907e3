#!/usr/bin/env bash
# RGCN on a synthetic:mag-shaped graph (gnn-train --model rgcn, DGL's
# entity_classify_dist.py settings scaled to the graph): accuracy on 1, 2
# and 4 partitions (loopback machines under gnn-launch; 1 = standalone)
# over several seeds, throughput, and bytes on the wire per step. The
# global batch is fixed (each of P trainers takes BATCH/P seeds), so every
# partition count takes the same number of steps per epoch; the accuracy
# is the test accuracy at the best validation epoch (evaluated each epoch).
# Usage: bash bench/rgcn_bench.sh [dataset] [epochs] [seeds] [parts...]
#   defaults: synthetic:mag-small 10 "1 2 3" 1 2 4   (GNN_BATCH: global batch, 256;
#   MODEL=rgat: RGAT, 4 heads, the same skeleton, instead of RGCN;
#   GNN_TRAIN_FLAGS: more gnn-train flags, e.g. "--wire_dtype float32")
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
export PATH="$BIN:$PATH"
DATASET="${1:-synthetic:mag-small}"
EPOCHS="${2:-10}"
BATCH="${GNN_BATCH:-256}"
SEEDS="${3:-1 2 3}"
shift $(( $# < 3 ? $# : 3 ))
PARTS="${*:-1 2 4}"
WORK="$(mktemp -d /tmp/gnn-rgcn-bench-XXXXXX)"
trap 'pkill -9 -f "gnn-launch.*$WORK" 2>/dev/null || true; [ -n "${GNN_KEEP:-}" ] || rm -rf "$WORK"' EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MODEL="${MODEL:-rgcn}"
MODEL_FLAGS="--num_bases 2"
[ "$MODEL" = rgat ] && MODEL_FLAGS="--num_heads 4 --attn_drop 0"
TRAIN="--model $MODEL $MODEL_FLAGS --num_epochs $EPOCHS --eval_every 1 --fan_out 25,10 \
  --num_hidden 64 --lr 0.01 --dropout 0.5 --sparse_lr 0.06 --num_omp_threads 1 ${GNN_TRAIN_FLAGS:-}"

for p in $PARTS; do
  gnn-partition --dataset "$DATASET" --undirected --balance_train --num_parts "$p" \
    --output "$WORK/p$p" --quiet > /dev/null
  config=$(ls "$WORK"/p$p/*.json)
  batch="--batch_size $(( BATCH / p ))"
  for seed in $SEEDS; do
    if [ "$p" = 1 ]; then
      gnn-train --standalone --part_config "$config" $TRAIN $batch --seed "$seed" --quiet \
        > "$WORK/p$p-s$seed.out"
    else
      : > "$WORK/ip$p.txt"
      for m in $(seq 1 "$p"); do echo "127.0.0.1 $(port)" >> "$WORK/ip$p.txt"; done
      gnn-launch --workspace "$WORK" --num_trainers 1 --num_samplers 0 --num_servers 1 \
        --part_config "$config" --ip_config "ip$p.txt" --master_port "$(port)" \
        "gnn-train $TRAIN $batch --seed $seed --quiet" > "$WORK/p$p-s$seed.out" 2> "$WORK/p$p-s$seed.err"
    fi
  done
done

/usr/bin/python3 - "$WORK" "$DATASET" "$EPOCHS" "$SEEDS" "$PARTS" "$BATCH" "$MODEL" "$MODEL_FLAGS ${GNN_TRAIN_FLAGS:-}" <<'PY'
import json, statistics, sys
work, dataset, epochs, seeds, parts, batch = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5].split(), sys.argv[6]
model, model_flags = sys.argv[7], sys.argv[8]
print(f"{model.upper()} on {dataset}, {epochs} epochs, seeds {' '.join(seeds)} (gnn-train --model {model} "
      f"{model_flags}, global batch {batch}, fan-out 25,10, hidden 64, Adam 0.01, SparseAdam 0.06)")
print(f"{'parts':>5} {'test acc (mean of seeds)':>25} {'per seed':>24} {'seeds/s':>9} "
      f"{'s/epoch':>8} {'wire MB/step/trainer':>21}")
base = None
for p in parts:
    rows = [json.loads(open(f"{work}/p{p}-s{s}.out").read().strip().splitlines()[-1]) for s in seeds]
    acc = [r["test_acc"] for r in rows]
    mean = statistics.mean(acc)
    base = mean if base is None else base
    print(f"{p:>5} {mean:>25.4f} {' '.join(f'{a:.4f}' for a in acc):>24} "
          f"{statistics.mean(r['seeds_per_s'] for r in rows):>9.0f} "
          f"{statistics.mean(r['mean_epoch_time_s'] for r in rows):>8.2f} "
          f"{statistics.mean(r.get('wire_bytes_per_step', 0) for r in rows) / 1e6:>21.2f}"
          f"   (vs 1 part: {100 * (mean - base):+.2f} points)")
PY
