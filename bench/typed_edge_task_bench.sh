#!/usr/bin/env bash
# A typed graph's edge task (--model rgcn --task edge_class on
# synthetic:mag-small,etask=class by default, --undirected):
#   1. standalone: train edges per second and test accuracy with the batch's
#      edges kept out of its neighbourhoods (--exclude_target_edges true,
#      the default) and left in (false), the median of ROUNDS (3) rounds
#      that alternate the two;
#   2. 2 loopback machines through gnn-launch (1 trainer, 2 servers each):
#      train edges per second, wire bytes per step and test accuracy, one
#      run without and one with a gnn-sampler process per trainer.
# Usage: bash bench/typed_edge_task_bench.sh [dataset] [epochs]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
DATASET="${1:-synthetic:mag-small,etask=class}"
EPOCHS="${2:-2}"
ROUNDS="${ROUNDS:-3}"
bench_work gnn-typed-task

"$BIN/gnn-partition" --dataset "$DATASET" --undirected --num_parts 1 --output "$WORK/one" --quiet >/dev/null
"$BIN/gnn-partition" --dataset "$DATASET" --undirected --num_parts 2 --output "$WORK/two" --quiet >/dev/null
ONE=$(ls "$WORK"/one/*.json)
TWO=$(ls "$WORK"/two/*.json)
FLAGS="--model rgcn --task edge_class --num_hidden 32 --batch_size 512 --fan_out 10,10 --lr 0.01 --num_epochs $EPOCHS --eval_every $EPOCHS"

echo "standalone rgcn edge_class on $DATASET, $EPOCHS epochs, median of $ROUNDS alternating rounds"
declare -A rate acc
for r in $(seq "$ROUNDS"); do
  for ex in true false; do
    out=$("$BIN/gnn-train" --standalone --quiet --part_config "$ONE" $FLAGS --exclude_target_edges "$ex" 2>/dev/null)
    rate[$ex]="${rate[$ex]:-} $(echo "$out" | field edges_per_s)"
    acc[$ex]="${acc[$ex]:-} $(echo "$out" | field test_acc)"
  done
done
printf "%-22s %14s %10s\n" exclude_target_edges edges/s test_acc
for ex in true false; do
  printf "%-22s %14.0f %10.4f\n" "$ex" "$(median ${rate[$ex]})" "$(median ${acc[$ex]})"
done

echo "2 loopback machines (gnn-launch, 1 trainer and 2 servers each), $EPOCHS epochs, one run each"
printf "%-10s %14s %16s %10s\n" samplers edges/s wire_bytes/step test_acc
for samplers in 0 1; do
  p1=$(port); p2=$(port); mp=$(port)
  printf "127.0.0.1 %s\n127.0.0.1 %s\n" "$p1" "$p2" > "$WORK/ip.txt"
  out=$("$BIN/gnn-launch" --workspace "$WORK" --num_trainers 1 --num_samplers "$samplers" --num_servers 2 \
    --part_config "$TWO" --ip_config "$WORK/ip.txt" --master_port "$mp" --grace_s 3 \
    "$BIN/gnn-train $FLAGS --num_omp_threads 1" 2>/dev/null | tail -1)
  printf "%-10s %14.0f %16.0f %10.4f\n" "$samplers" "$(echo "$out" | field edges_per_s)" \
    "$(echo "$out" | field wire_bytes_per_step)" "$(echo "$out" | field test_acc)"
done
