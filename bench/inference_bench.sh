#!/usr/bin/env bash
# gnn-train --inference: full-graph layer-wise inference of every node,
# standalone (1 partition) against 2 machines on this host (2 partitions,
# 1 trainer and 1 server per machine), alternating, 3 runs each; prints
# each run's inference_time_s (the summary's: the layers and the shards'
# exchange, not the start or the file writes) and the medians' ratio.
# Usage: bash bench/inference_bench.sh [dataset] [model] [runs]
#   e.g. bash bench/inference_bench.sh synthetic:small graphsage 3
# GNN_INFER_FLAGS adds flags to both inference runs, e.g.
#   GNN_INFER_FLAGS="--fan_out 10,25" for sampled inference.
# MACHINES says what a machine is on this one host:
#   pinned (the default): each machine gets its own half of the cores
#     (taskset; one gnn-launch --machine_id per machine, over loopback) and
#     standalone gets one half too, so "2 machines against 1" compares
#     machines of the same size, as a cluster's do;
#   shared: one gnn-launch starts both machines on every core, so they
#     compete with each other for the cores standalone has alone.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
export PATH="$BIN:$PATH"
DATASET="${1:-synthetic:small}"
MODEL="${2:-graphsage}"
RUNS="${3:-3}"
FLAGS="${GNN_INFER_FLAGS:-}"
MACHINES="${MACHINES:-pinned}"
CORES=$(nproc)
case "$MACHINES" in
  pinned)
    [ "$CORES" -ge 2 ] || { echo "MACHINES=pinned needs 2 cores or more; this host has $CORES" >&2; exit 2; }
    HALF=$((CORES / 2))
    PIN=(taskset -c "0-$((HALF - 1))" "$HALF-$((2 * HALF - 1))") ;;
  shared) ;;
  *) echo "MACHINES must be pinned or shared, got '$MACHINES'" >&2; exit 2 ;;
esac
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
if [ "$MACHINES" = pinned ]; then
  where="each machine and standalone on $HALF of the $CORES cores"
else
  where="both machines and standalone on all $CORES cores"
fi
echo "dataset $DATASET, --model $MODEL, ${FLAGS:-full-neighbour}, MACHINES=$MACHINES ($where); inference_time_s per run:"
# The 2-machine job: one gnn-launch per machine, each pinned to its half
# of the cores (pinned), or one gnn-launch for both (shared).
dist_run() {
  local train="gnn-train --inference --restore_model_path $WORK/m.pt --save_prediction_path $WORK/p2 $FLAGS"
  local common=(--workspace "$WORK" --num_trainers 1 --num_samplers 0 --num_servers 1
    --part_config "$two" --ip_config ip_config.txt --master_port "$(port)" --quiet)
  if [ "$MACHINES" = shared ]; then
    gnn-launch "${common[@]}" "$train" > "$WORK/dist.out" 2> "$WORK/dist.err"
    return
  fi
  local job="infer$RANDOM" pids=() i rc=0
  for i in 1 0; do
    "${PIN[0]}" "${PIN[1]}" "${PIN[2 + i]}" gnn-launch --machine_id "$i" --job_id "$job" --insecure \
      "${common[@]}" "$train" > "$WORK/dist$i.out" 2> "$WORK/dist$i.err" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  [ "$rc" = 0 ] || { cat "$WORK"/dist*.err >&2; return "$rc"; }
  cp "$WORK/dist0.out" "$WORK/dist.out"
}
alone_run() {
  if [ "$MACHINES" = shared ]; then "$@"; else "${PIN[0]}" "${PIN[1]}" "${PIN[2]}" "$@"; fi
}

alone=() ; dist=()
for run in $(seq "$RUNS"); do
  rm -rf "$WORK/p1" "$WORK/p2"
  alone_run gnn-train --standalone --part_config "$one" --inference --restore_model_path "$WORK/m.pt" \
    --save_prediction_path "$WORK/p1" $FLAGS --quiet > "$WORK/alone.out"
  alone+=("$(field "$(last "$WORK/alone.out")" inference_time_s)")
  dist_run
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
