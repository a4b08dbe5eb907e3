#!/usr/bin/env bash
# Sparse features against the dense path of the same binary (#53): for
# bag-of-words graphs of several densities, gnn-partition writes the graph
# once with --feature_format sparse and once dense; gnn-train --standalone
# then trains on each, the two alternating, RUNS times with the same seeds
# (run n: --seed n). Prints per density and model: the feature files'
# bytes (sparse / dense), seconds per epoch and seeds/s (medians), the
# speed ratio, and test accuracy (mean over runs) of each; what
# feature_format auto would pick is the density against 10 %.
# MACHINES=2 trains each over 2 machines on loopback instead (gnn-launch,
# one server and one trainer a machine, partitions of 2 parts) and prints
# the bytes per step that trainer 0's batches moved (wire_bytes_per_step)
# beside the speeds: the dense path sums its first layer at the owners,
# the sparse one ships rows as they are stored.
# Usage: bash bench/sparse_bench.sh [nodes] [words] [epochs] [runs]
# Environment: DENSITIES (words set per node, space-separated, default
# "30 100 500 1000 2000" of 10,000: 0.3 % to 20 %), MODELS (default
# "graphsage gcn gat"), TRAIN_ARGS (gnn-train flags beyond the model,
# default DGL's synthetic recipe: fan_out 10,25, batch 1000, hidden 16).
set -euo pipefail
cd "$(dirname "$0")/.."
NODES="${1:-50000}"
WORDS="${2:-10000}"
EPOCHS="${3:-2}"
RUNS="${4:-3}"
BIN="${GNN_BUILD_DIR:-build}/apps"
[ -n "${GNN_SKIP_BUILD:-}" ] || bash scripts/build.sh >/dev/null
BIN=$(cd "$BIN" && pwd)  # gnn-launch runs the trainer by its path
WORK="${GNN_BENCH_DIR:-/tmp/gnn-bench-sparse}"
mkdir -p "$WORK"
DENSITIES=${DENSITIES:-30 100 500 1000 2000}
MODELS=${MODELS:-graphsage gcn gat}
TRAIN_ARGS=${TRAIN_ARGS:---num_hidden 16 --num_layers 2 --fan_out 10,25 --batch_size 1000 --lr 0.003 --dropout 0.5}
EDGES=$((NODES * 10))
MACHINES=${MACHINES:-1}
if [ "$MACHINES" != 1 ]; then
  PORT=$((32000 + RANDOM % 20000))
  : > "$WORK/ip_config.txt"
  for m in $(seq 0 $((MACHINES - 1))); do echo "127.0.0.1 $((PORT + 10 * m))" >> "$WORK/ip_config.txt"; done
fi

feature_bytes() {  # config -> bytes of part0's feature files
  /usr/bin/python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
print(sum(f["bytes"] for n, f in c["part-0"]["files"].items() if n.startswith("feat")))' "$1"
}
field() {  # json-line key
  /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mean() { printf '%s\n' "$@" | awk '{s+=$1} END {printf "%.4f", s/NR}'; }

printf '%-6s %-9s %-8s %12s %12s %8s %10s %10s %6s %8s %8s\n' words model auto_pick \
  sparse_B dense_B B_ratio sp_seeds/s de_seeds/s speed sp_acc de_acc
for k in $DENSITIES; do
  spec="synthetic:nodes=$NODES,edges=$EDGES,feat=$WORDS,classes=16,train=0.4,valid=0.1,bow=$k"
  for fmt in sparse dense; do
    out="$WORK/w$k-$fmt-p$MACHINES"
    [ -d "$out" ] || "$BIN/gnn-partition" --dataset "$spec" --num_parts "$MACHINES" --feature_format "$fmt" \
      --output "$out" --quiet >/dev/null
  done
  cfg_s=$(ls "$WORK/w$k-sparse-p$MACHINES"/*.json)
  cfg_d=$(ls "$WORK/w$k-dense-p$MACHINES"/*.json)
  bytes_s=$(feature_bytes "$cfg_s")
  bytes_d=$(feature_bytes "$cfg_d")
  pick=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["partition_report"]["feature_density"] <= 0.10 and "sparse" or "dense")' "$cfg_s")
  for model in $MODELS; do
    sp_sps=() de_sps=() sp_acc=() de_acc=() sp_wire=() de_wire=()
    for run in $(seq 0 $((RUNS - 1))); do
      for fmt in sparse dense; do
        cfg=$cfg_s
        [ "$fmt" = dense ] && cfg=$cfg_d
        if [ "$MACHINES" = 1 ]; then
          line=$("$BIN/gnn-train" --standalone --quiet --part_config "$cfg" --model "$model" \
            --num_epochs "$EPOCHS" --seed "$run" $TRAIN_ARGS | tail -1)
        else
          line=$("$BIN/gnn-launch" --workspace "$WORK" --num_trainers 1 --num_samplers 0 \
            --num_servers 1 --part_config "$cfg" --ip_config "$WORK/ip_config.txt" \
            --master_port $((PORT + 5)) --log_dir "$WORK/logs" \
            "$BIN/gnn-train --quiet --num_omp_threads 1 --model $model --num_epochs $EPOCHS --seed $run $TRAIN_ARGS" \
            2> "$WORK/launch.err" | tail -1)
          [ -n "$line" ] || { tail -n 3 "$WORK/launch.err" >&2; exit 1; }
        fi
        if [ "$fmt" = sparse ]; then
          sp_sps+=("$(field "$line" seeds_per_s)")
          sp_acc+=("$(field "$line" test_acc)")
          [ "$MACHINES" = 1 ] || sp_wire+=("$(field "$line" wire_bytes_per_step)")
        else
          de_sps+=("$(field "$line" seeds_per_s)")
          de_acc+=("$(field "$line" test_acc)")
          [ "$MACHINES" = 1 ] || de_wire+=("$(field "$line" wire_bytes_per_step)")
        fi
      done
    done
    s=$(median "${sp_sps[@]}")
    d=$(median "${de_sps[@]}")
    printf '%-6s %-9s %-8s %12s %12s %8.4f %10.0f %10.0f %6.2f %8s %8s\n' "$k" "$model" "$pick" \
      "$bytes_s" "$bytes_d" "$(awk -v a="$bytes_s" -v b="$bytes_d" 'BEGIN {print a / b}')" "$s" "$d" \
      "$(awk -v a="$s" -v b="$d" 'BEGIN {print a / b}')" "$(mean "${sp_acc[@]}")" "$(mean "${de_acc[@]}")"
    if [ "$MACHINES" != 1 ]; then
      ws=$(median "${sp_wire[@]}")
      wd=$(median "${de_wire[@]}")
      printf '       bytes/step on %s machines: sparse %.0f, dense %.0f (%.4f of the dense path)\n' \
        "$MACHINES" "$ws" "$wd" "$(awk -v a="$ws" -v b="$wd" 'BEGIN {print a / b}')"
    fi
  done
done
