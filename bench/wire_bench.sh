#!/usr/bin/env bash
# What crosses the network in distributed training, with the first layer
# sampled and aggregated at the owners (gnn-train --aggregate_at_owner 1,
# the default) and without (0: neighbour lists and every input row, DGL's
# wire), the neighbours a destination's owner does not hold summed at their
# own owners (--remote_sums 1, the default) or pulled as rows (0), with
# rows and partial sums as bfloat16 (--wire_dtype), ids as varints
# (--wire_ids), and with
# the machines' hot-row caches (--cache_mb, -1 = 5% of the graph's feature
# bytes): DGL's wire, then everything on and each mechanism off in turn,
# so their shares show. Two machines on loopback (one server and one trainer each, the
# trainer sampling in-process), DGL's default model (fan_out 10,25, batch
# 1000, hidden 16), METIS and random partitions; the settings run
# alternately, RUNS times each, and the medians are printed: bytes each
# trainer's batches sent and received per step (rank 0's DistGraph
# counters), seeds/s, test accuracy (mean and sd over the runs; run n
# trains with --seed n, every setting the same seeds).
# Usage: bash bench/wire_bench.sh [dataset-spec] [epochs] [runs]
# Environment: GNN_BENCH_TRAIN_ARGS (the model's gnn-train flags instead of
# DGL's defaults, e.g. "--config configs/cora.toml"), GNN_BENCH_METHODS
# (default "metis random"), GNN_BENCH_PARTS (machines and partitions,
# default 2), GNN_BENCH_SETTINGS (the settings compared, each
# aggregate_at_owner:wire_dtype:cache_mb[:remote_sums[:wire_ids]], remote_sums
# 1 and wire_ids varint when left out).
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC="${1:-synthetic:small}"
EPOCHS="${2:-3}"
RUNS="${3:-3}"
BIN="${GNN_BUILD_DIR:-build}/apps"
[ -n "${GNN_SKIP_BUILD:-}" ] || bash scripts/build.sh >/dev/null
WORK="${GNN_BENCH_DIR:-/tmp/gnn-bench-wire}"
mkdir -p "$WORK"
NAME=$(basename "$SPEC" | sed 's/^synthetic:/synthetic-/')
METHODS=${GNN_BENCH_METHODS:-metis random}
PARTS=${GNN_BENCH_PARTS:-2}
# 2 parts keep the old folder names (earlier runs' partitions are reused).
GRAPH=$NAME
[ "$PARTS" = 2 ] || NAME="$NAME-p$PARTS"
for method in $METHODS; do
  if [ ! -f "$WORK/$NAME-$method/$GRAPH.json" ]; then
    "$BIN/gnn-partition" --dataset "$SPEC" --num_parts "$PARTS" --part_method "$method" \
      --balance_train --balance_edges --output "$WORK/$NAME-$method" --overwrite --quiet >/dev/null
  fi
done
# DGL's default model, or the flags given (a config file's keys lose to flags).
# shellcheck disable=SC2206
MODEL=(${GNN_BENCH_TRAIN_ARGS:---fan_out 10,25 --batch_size 1000 --num_hidden 16 --num_layers 2}
  --num_epochs "$EPOCHS" --eval_every "$EPOCHS" --log_every 1000000 --num_samplers 0)
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export GNN_SECRET_FILE="$WORK/job.secret"
[ -f "$GNN_SECRET_FILE" ] || (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$GNN_SECRET_FILE")

# The settings compared: aggregate_at_owner:wire_dtype:cache_mb[:remote_sums[:wire_ids]];
# the first is DGL's wire.
SETTINGS=(${GNN_BENCH_SETTINGS:-0:float32:0:1:int64 1:bfloat16:-1 1:bfloat16:-1:1:int64 1:bfloat16:-1:0 0:bfloat16:-1 1:bfloat16:0 1:float32:-1})

# run METHOD SETTING RUN: one 2-machine job; rank 0's summary in $WORK/METHOD-SETTING-RUN.json
run() {
  local method=$1 setting=$2 n=$3 job="wire-$$-$1-${2//:/_}-$3" cfg="$WORK/$NAME-$1/$GRAPH.json"
  local agg dtype cache sums ids
  IFS=: read -r agg dtype cache sums ids <<< "$setting"
  sums=${sums:-1}
  ids=${ids:-varint}
  local ip="$WORK/ip.txt" pids=() tpids=()
  : > "$ip"
  for ((m = 0; m < PARTS; m++)); do echo "127.0.0.1 $(free_port)" >> "$ip"; done
  local master; master=$(free_port)
  for ((m = 0; m < PARTS; m++)); do
    "$BIN/gnn-server" --ip_config "$ip" --part_config "$cfg" --machine_id $m --job_id "$job" \
      2> "$WORK/server$m.err" &
    pids+=($!)
  done
  for ((m = 0; m < PARTS; m++)); do
    "$BIN/gnn-train" --ip_config "$ip" --part_config "$cfg" --machine_id $m --job_id "$job" \
      --master_port "$master" "${MODEL[@]}" --seed "$n" --aggregate_at_owner "$agg" --remote_sums "$sums" \
      --wire_dtype "$dtype" --wire_ids "$ids" --cache_mb "$cache" \
      --request_timeout_ms 120000 --quiet > "$WORK/t$m.out" 2> "$WORK/t$m.err" &
    tpids+=($!)
  done
  local rc=0
  for p in "${tpids[@]}"; do wait "$p" || rc=1; done
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  [ $rc -eq 0 ] || { echo "$job failed:"; tail -n 3 "$WORK"/t*.err; exit 1; }
  tail -1 "$WORK/t0.out" > "$WORK/$NAME-$method-$setting-$n.json"
}

uptime
for method in $METHODS; do
  for ((n = 0; n < RUNS; n++)); do
    for setting in "${SETTINGS[@]}"; do run "$method" "$setting" "$n"; done
  done
done
/usr/bin/python3 - "$WORK/$NAME" "$RUNS" "$METHODS" "${SETTINGS[@]}" <<'PY'
import json, statistics, sys
prefix, runs, methods, settings = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
def describe(setting):
    agg, dtype, cache, *rest = setting.split(":")
    first = "rows (DGL)" if agg != "1" else "at owner" if rest[:1] != ["0"] else "owner+rows"
    ids = rest[1] if len(rest) > 1 else "varint"
    return "%s, %s, %s ids, cache %s" % (first, dtype, ids,
                                         "auto" if cache == "-1" else cache + " MB")
print("%-7s %-44s %12s %7s %10s %9s %16s" % ("parts", "first layer, wire, cache", "wire MB/step",
                                             "bytes", "hit rate", "seeds/s", "test acc"))
for method in methods:
    base = None
    for setting in settings:
        s = [json.load(open(f"{prefix}-{method}-{setting}-{n}.json")) for n in range(runs)]
        wire = statistics.median(x["wire_bytes_per_step"] for x in s)
        base = base or wire
        acc = [x["final_test_acc"] for x in s]
        sd = statistics.stdev(acc) if len(acc) > 1 else 0.0
        print("%-7s %-44s %12.3f %6.2fx %10.3f %9.0f %9.4f±%.4f" % (
            method, describe(setting), wire / 1e6, wire / base,
            statistics.median(x.get("cache_hit_rate", 0) for x in s),
            statistics.median(x["seeds_per_s"] for x in s), statistics.mean(acc), sd))
PY
