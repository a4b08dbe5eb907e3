#!/usr/bin/env bash
# Data-plane benchmark (issue: DistGraph throughput). Prints figures for
# docs/PERFORMANCE.md:
#   1. partition the dataset into 2 and 4 parts with gnn-partition
#      (--balance_train --balance_edges, as DGL's products example), cached
#      under $GNN_BENCH_DIR (default /tmp/gnn-bench-dataplane) and reused
#   2. for each partitioning run gnn-dataplane-bench, which starts real
#      gnn-server processes on loopback (1 and 2 servers per partition) and
#      measures the standalone, local shared-memory and remote loopback paths
#      plus a raw ZeroMQ transfer of the same bytes, in the same run.
# Usage: bash bench/dataplane_bench.sh [dataset-spec]
# Environment: GNN_BUILD_DIR (default build), GNN_BENCH_DIR, GNN_BENCH_PARTS
# (default "2 4"), GNN_BENCH_SERVERS (default 1,2), GNN_BENCH_CLIENTS
# (default 1,2), GNN_BENCH_ARGS (extra gnn-dataplane-bench flags),
# GNN_SKIP_BUILD=1 to use the binaries as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC="${1:-synthetic:products}"
BUILD_DIR="${GNN_BUILD_DIR:-build}"
WORK="${GNN_BENCH_DIR:-/tmp/gnn-bench-dataplane}"
PARTS_LIST="${GNN_BENCH_PARTS:-2 4}"
SERVERS="${GNN_BENCH_SERVERS:-1,2}"
CLIENTS="${GNN_BENCH_CLIENTS:-1,2}"
if [ -z "${GNN_SKIP_BUILD:-}" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target gnn-dataplane-bench gnn-server gnn-partition >/dev/null
fi
mkdir -p "$WORK"
NAME="$(echo "$SPEC" | tr ':=,' '___')"

for n in $PARTS_LIST; do
  out="$WORK/${NAME}_p$n"
  if ! ls "$out"/*.json >/dev/null 2>&1; then
    echo "== partitioning $SPEC into $n parts (cached in $out; ~2-3 min for products)"
    /usr/bin/time -f "partitioned in %e s wall, peak RSS %M KiB" \
      "$BUILD_DIR/apps/gnn-partition" --dataset "$SPEC" --num_parts "$n" \
      --balance_train --balance_edges --output "$out" --quiet >"$WORK/partition_p$n.out"
  fi
done

echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM; $(uptime)"
for n in $PARTS_LIST; do
  out="$WORK/${NAME}_p$n"
  config="$(ls "$out"/*.json | head -1)"
  echo
  echo "== $n partitions; $(uptime)"
  # CURVE (the default) and plaintext (--insecure) in one run: the ratio is
  # what encryption and authentication cost.
  for sec in ${GNN_BENCH_SECURITY:-curve insecure}; do
    flag=""
    [ "$sec" = insecure ] && flag="--insecure"
    echo "== security: $sec"
    # shellcheck disable=SC2086
    "$BUILD_DIR/bench/gnn-dataplane-bench" --part_config "$config" --servers "$SERVERS" \
      --clients "$CLIENTS" --work_dir "$WORK/run_p$n" $flag ${GNN_BENCH_ARGS:-} | tee "$WORK/result_p${n}_$sec.txt"
  done
done
echo
echo "== done; $(uptime)"
