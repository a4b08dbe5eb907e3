#!/usr/bin/env bash
# Inference of every node, gnn against DGL, standalone, on the same graph:
# gnn-train --inference (layer-wise full-neighbour, the summary's
# inference_time_s: the layers, not the start or the file writes) against
# DGL's layer-wise full-neighbour inference from its distributed GraphSAGE
# example (bench/dgl_peer.py train --inference_only: DistNodeDataLoader with
# NeighborSampler([-1]) per layer into DistTensors, timed around the
# layers), on gnn's 1-partition output converted to DGL's format byte for
# byte (dgl_peer.py convert). Alternating runs; prints each run and the
# medians' ratio. DGL comes from DGL_VENV (bench/compare_dgl.sh makes it).
# Usage: bash bench/compare_dgl_inference.sh [dataset] [model] [runs]
#   e.g. bash bench/compare_dgl_inference.sh synthetic:small graphsage 3
set -euo pipefail
cd "$(dirname "$0")/.."
HERE="$(pwd)/bench"
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
DATASET="${1:-synthetic:small}"
MODEL="${2:-graphsage}"
RUNS="${3:-3}"
DGL_VENV=${DGL_VENV:-/opt/dgl/venv}
PY=$DGL_VENV/bin/python
if [ ! -x "$PY" ] || ! "$PY" -c "import dgl" 2>/dev/null; then
  echo "compare_dgl_inference: no DGL in $DGL_VENV (bash bench/compare_dgl.sh installs it)" >&2
  exit 2
fi
export DGLBACKEND=pytorch
WORK="$(mktemp -d /tmp/gnn-infer-dgl-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

"$BIN/gnn-partition" --dataset "$DATASET" --num_parts 1 --output "$WORK/one" --quiet >/dev/null
one=$(ls "$WORK"/one/*.json)
"$BIN/gnn-train" --standalone --part_config "$one" --model "$MODEL" --num_epochs 1 --eval_every 0 \
  --save_model "$WORK/m.pt" --quiet > /dev/null
"$PY" "$HERE/dgl_peer.py" convert "$one" "$WORK/dgl" >&2
dgl_config=$(ls "$WORK"/dgl/*.json)
echo "127.0.0.1 30050" > "$WORK/ip-local.txt"
echo "dataset $DATASET, --model $MODEL, $(nproc) cores; inference_time_s per run:"
gnn=(); dgl=()
for run in $(seq "$RUNS"); do
  rm -rf "$WORK/p"
  "$BIN/gnn-train" --standalone --part_config "$one" --inference --restore_model_path "$WORK/m.pt" \
    --save_prediction_path "$WORK/p" --quiet > "$WORK/gnn.out"
  gnn+=("$(field "$(tail -n 1 "$WORK/gnn.out")" inference_time_s)")
  DGL_DIST_MODE=standalone RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$((20000 + RANDOM % 20000)) \
    "$PY" "$HERE/dgl_peer.py" train --part_config "$dgl_config" --ip_config "$WORK/ip-local.txt" \
    --model "$MODEL" --inference_only 2> "$WORK/dgl.log" | grep "^{" | tail -1 > "$WORK/dgl.out" ||
    { tail -20 "$WORK/dgl.log" >&2; exit 1; }
  dgl+=("$(field "$(cat "$WORK/dgl.out")" inference_time_s)")
  echo "  run $run: gnn ${gnn[-1]} s, DGL ${dgl[-1]} s"
done
/usr/bin/python3 - "${gnn[*]}" "${dgl[*]}" <<'PY'
import statistics, sys
g = [float(x) for x in sys.argv[1].split()]
d = [float(x) for x in sys.argv[2].split()]
mg, md = statistics.median(g), statistics.median(d)
print(f"median: gnn {mg:.3f} s, DGL {md:.3f} s, DGL / gnn {md / mg:.2f}x")
PY
