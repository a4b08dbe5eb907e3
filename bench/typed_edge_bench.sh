#!/usr/bin/env bash
# What typed edge features cost RGCN (and RGAT): a typed graph with K
# features on every relation's edges (default synthetic:mag-small,efeat=4,
# --undirected), trained with --edge_feat_mp_op none, add, mul and concat,
#   1. standalone: seconds per epoch and final test accuracy, the median of
#      ROUNDS (3) rounds that alternate the ops;
#   2. 2 loopback machines through gnn-launch (1 trainer, 2 servers each):
#      wire bytes per step and seconds per epoch, none (the first layer
#      summed at the owners) against add (rows and each sampled edge's
#      features shipped).
# Usage: bash bench/typed_edge_bench.sh [dataset] [epochs]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
DATASET="${1:-synthetic:mag-small,efeat=4}"
EPOCHS="${2:-2}"
ROUNDS="${ROUNDS:-3}"
MODEL="${MODEL:-rgcn}"
bench_work gnn-typed-edge

"$BIN/gnn-partition" --dataset "$DATASET" --undirected --num_parts 1 --output "$WORK/one" --quiet >/dev/null
"$BIN/gnn-partition" --dataset "$DATASET" --undirected --num_parts 2 --output "$WORK/two" --quiet >/dev/null
ONE=$(ls "$WORK"/one/*.json)
TWO=$(ls "$WORK"/two/*.json)
OPS="none add mul concat"
[ "$MODEL" = rgat ] && OPS="none add mul"
FLAGS="--model $MODEL --num_hidden 32 --batch_size 512 --fan_out 10,10 --lr 0.01 --num_epochs $EPOCHS --eval_every $EPOCHS"
[ "$MODEL" = rgat ] && FLAGS="$FLAGS --num_heads 2"

echo "standalone $MODEL on $DATASET, $EPOCHS epochs, median of $ROUNDS alternating rounds"
declare -A secs acc
for r in $(seq "$ROUNDS"); do
  for op in $OPS; do
    out=$("$BIN/gnn-train" --standalone --quiet --part_config "$ONE" $FLAGS --edge_feat_mp_op "$op" 2>/dev/null)
    secs[$op]="${secs[$op]:-} $(echo "$out" | field mean_epoch_time_s)"
    acc[$op]="${acc[$op]:-} $(echo "$out" | field final_test_acc)"
  done
done
printf "%-8s %12s %10s %12s\n" op s/epoch vs_none test_acc
base=$(median ${secs[none]})
for op in $OPS; do
  s=$(median ${secs[$op]})
  printf "%-8s %12.3f %9.2fx %12.4f\n" "$op" "$s" "$(/usr/bin/python3 -c "print($s / $base)")" "$(median ${acc[$op]})"
done

echo "2 loopback machines (gnn-launch, 1 trainer and 2 servers each), $EPOCHS epochs, one run each"
printf "%-8s %16s %12s %12s\n" op wire_bytes/step s/epoch test_acc
for op in none add; do
  p1=$(port); p2=$(port); mp=$(port)
  printf "127.0.0.1 %s\n127.0.0.1 %s\n" "$p1" "$p2" > "$WORK/ip.txt"
  out=$("$BIN/gnn-launch" --workspace "$WORK" --num_trainers 1 --num_samplers 0 --num_servers 2 \
    --part_config "$TWO" --ip_config "$WORK/ip.txt" --master_port "$mp" --grace_s 3 \
    "$BIN/gnn-train $FLAGS --num_omp_threads 1 --edge_feat_mp_op $op" 2>/dev/null | tail -1)
  printf "%-8s %16.0f %12.3f %12.4f\n" "$op" "$(echo "$out" | field wire_bytes_per_step)" \
    "$(echo "$out" | field mean_epoch_time_s)" "$(echo "$out" | field final_test_acc)"
done
