#!/usr/bin/env bash
# Partitioning benchmark (issue: gnn-partition). Prints figures for
# docs/PERFORMANCE.md:
#   1. write synthetic:products as an OGB raw folder (gnn-dataset --write_ogb)
#   2. partition it into 4 parts with --balance_train --balance_edges, parsing
#      the raw CSV (cold: no cache) -> parse MB/s, stage times, peak RSS
#   3. the same again from the .npy cache
# Usage: bash bench/partition_bench.sh [dataset-spec] [num_parts]
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC="${1:-synthetic:products}"
PARTS="${2:-4}"
BUILD_DIR="${GNN_BUILD_DIR:-build}"
bash scripts/build.sh >/dev/null
WORK="${GNN_BENCH_DIR:-/tmp/gnn-bench-partition}"
mkdir -p "$WORK"
NAME="$(echo "$SPEC" | tr ':=,' '___')"
OGB="$WORK/$NAME"

if [ ! -f "$OGB/raw/edge.csv.gz" ]; then
  echo "== generating $SPEC and writing it as an OGB raw folder"
  /usr/bin/time -f "generate+write: %e s wall, peak RSS %M KiB" \
    "$BUILD_DIR/apps/gnn-dataset" --dataset "$SPEC" --write_ogb "$OGB" --quiet
fi
rm -rf "$OGB/processed"
raw_bytes=$(for f in "$OGB"/raw/*.csv.gz "$OGB"/split/*/*.csv.gz; do gzip -dc "$f" | wc -c; done | awk '{s+=$1} END {printf "%d", s}')
echo "uncompressed CSV: $raw_bytes bytes"

run() {
  local label="$1"
  /usr/bin/time -v "$BUILD_DIR/apps/gnn-partition" --dataset "$OGB" --num_parts "$PARTS" \
    --balance_train --balance_edges --output "$WORK/out" --overwrite \
    >"$WORK/$label.out" 2>"$WORK/$label.err"
  local rss_kib wall
  rss_kib=$(grep "Maximum resident set size" "$WORK/$label.err" | awk '{print $NF}')
  wall=$(grep "Elapsed (wall clock)" "$WORK/$label.err" | awk '{print $NF}')
  echo "== $label: wall $wall, peak RSS $((rss_kib / 1024)) MiB"
  grep -E "parsed raw files|loaded from cache" "$WORK/$label.err" | sed 's/^/   /' || true
  sed 's/^/   /' "$WORK/$label.out"
}
run cold
run cached

/usr/bin/python3 - "$WORK/out" "$WORK/cold.err" "$raw_bytes" <<'PY'
import json, glob, re, sys
out, err, raw = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = json.load(open(glob.glob(out + "/*.json")[0]))
r = cfg["partition_report"]
n, e, f = cfg["num_nodes"], cfg["num_edges"], cfg["feature_dim"]
graph_bytes = (n + 1) * 8 + e * 8 + n * f * 4
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(err).read()).group(1)) * 1024
st = r["stage_seconds"]
metis = st.get("metis", 0.0)
load = st.get("load", 0.0)
total = r["total_seconds"]
print("in-memory graph (CSC int64 + float32 features): %.2f GiB" % (graph_bytes / 2**30))
print("cold run: total %.1f s = load %.1f + symmetrize %.1f + metis %.1f + relabel %.1f + write %.1f"
      % (total, load, st.get("symmetrize", 0), metis, st.get("relabel", 0), st.get("write", 0)))
print("total / (metis + load) = %.2f   (target <= 1.25)" % (total / (metis + load)))
print("peak RSS / in-memory graph = %.2f   (target <= 2.5)" % (rss / graph_bytes))
print("parse throughput: %.0f MB/s of uncompressed CSV (2 cores)" % (raw / load / 1e6))
print("edge cut %.2f%%, imbalance %s" % (100 * r["edge_cut_fraction"], r["imbalance"]))
PY
