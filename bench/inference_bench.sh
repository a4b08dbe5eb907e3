#!/usr/bin/env bash
# gnn-train --inference: full-graph layer-wise inference of every node,
# standalone (1 partition) against 2 machines on this host (gnn-launch,
# 2 partitions, 1 trainer per machine), alternating, 3 runs each; prints
# each run's inference_time_s (the summary's: the layers and the shards'
# exchange, not the start or the file writes) and the medians' ratio.
# Usage: bash bench/inference_bench.sh [dataset] [model] [runs]
#   e.g. bash bench/inference_bench.sh synthetic:small graphsage 3
# GNN_INFER_FLAGS adds flags to both inference runs, e.g.
#   GNN_INFER_FLAGS="--fan_out 10,25" for sampled inference.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
export PATH="$BIN:$PATH"
DATASET="${1:-synthetic:small}"
MODEL="${2:-graphsage}"
RUNS="${3:-3}"
FLAGS="${GNN_INFER_FLAGS:-}"
WORK="$(mktemp -d /tmp/gnn-infer-bench-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
last() { tail -n 1 "$1"; }
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

gnn-partition --dataset "$DATASET" --num_parts 1 --output "$WORK/one" --quiet >/dev/null
gnn-partition --dataset "$DATASET" --num_parts 2 --output "$WORK/two" --quiet >/dev/null
one=$(ls "$WORK"/one/*.json)
two=$(ls "$WORK"/two/*.json)
printf '127.0.0.1 %s\n127.0.0.1 %s\n' "$(port)" "$(port)" > "$WORK/ip_config.txt"
gnn-train --standalone --part_config "$one" --model "$MODEL" --num_epochs 1 --eval_every 0 \
  --save_model "$WORK/m.pt" --quiet > /dev/null
echo "dataset $DATASET, --model $MODEL, ${FLAGS:-full-neighbour}, $(nproc) cores; inference_time_s per run:"

alone=() ; dist=()
for run in $(seq "$RUNS"); do
  rm -rf "$WORK/p1" "$WORK/p2"
  gnn-train --standalone --part_config "$one" --inference --restore_model_path "$WORK/m.pt" \
    --save_prediction_path "$WORK/p1" $FLAGS --quiet > "$WORK/alone.out"
  alone+=("$(field "$(last "$WORK/alone.out")" inference_time_s)")
  gnn-launch --workspace "$WORK" --num_trainers 1 --num_samplers 0 --num_servers 1 \
    --part_config "$two" --ip_config ip_config.txt --master_port "$(port)" --quiet \
    "gnn-train --inference --restore_model_path $WORK/m.pt --save_prediction_path $WORK/p2 $FLAGS" \
    > "$WORK/dist.out" 2> "$WORK/dist.err"
  dist+=("$(field "$(last "$WORK/dist.out")" inference_time_s)")
  echo "  run $run: standalone ${alone[-1]} s, 2 machines ${dist[-1]} s"
done
/usr/bin/python3 - "${alone[*]}" "${dist[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
d = [float(x) for x in sys.argv[2].split()]
ma, md = statistics.median(a), statistics.median(d)
print(f"median: standalone {ma:.3f} s, 2 machines {md:.3f} s, 2 machines / standalone {md / ma:.2f}x")
PY
