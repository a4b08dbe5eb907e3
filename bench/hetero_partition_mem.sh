#!/usr/bin/env bash
# Heterogeneous partitioner memory (issue 31, item 4): gnn-partition's peak
# RSS (/usr/bin/time's "Maximum resident set size") against the bytes of
# the partition files it writes (every file of the output folder, config
# included), and their ratio; target: ratio <= 2 on synthetic:mag.
# Usage: bash bench/hetero_partition_mem.sh [dataset...]
#   defaults: synthetic:mag-small synthetic:mag
#   METHODS (default "random metis"), PARTS (default "4"), FLAGS (default
#   "--undirected --balance_train": DGL's RGCN setting, as in PERFORMANCE.md),
#   GNN_PARTITION: the binary to measure (default $GNN_BUILD_DIR/apps/gnn-partition,
#   built beforehand; name an older build's binary for a before/after).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${GNN_PARTITION:-${GNN_BUILD_DIR:-build}/apps/gnn-partition}"
[ -x "$BIN" ] || { echo "no gnn-partition at $BIN: build first (scripts/build.sh)" >&2; exit 1; }
METHODS="${METHODS:-random metis}"
PARTS="${PARTS:-4}"
FLAGS="${FLAGS:---undirected --balance_train}"
WORK="${GNN_BENCH_DIR:-/tmp/gnn-bench-hetero-mem}"
mkdir -p "$WORK"
[ $# -gt 0 ] || set -- synthetic:mag-small synthetic:mag

echo "binary: $BIN ($("$BIN" --version 2>/dev/null | head -1))"
echo "flags: $FLAGS"
printf "%-20s %-7s %5s %14s %14s %6s %8s %7s\n" dataset method parts peak_rss_B written_B ratio wall_s cut_%
for dataset in "$@"; do
  for method in $METHODS; do
    for parts in $PARTS; do
      out="$WORK/out"
      # shellcheck disable=SC2086  # FLAGS is a list of flags
      /usr/bin/time -f "%M %e" -o "$WORK/time.txt" "$BIN" --dataset "$dataset" \
        --num_parts "$parts" --part_method "$method" $FLAGS --output "$out" --overwrite \
        --quiet >/dev/null 2>"$WORK/err.txt" || { cat "$WORK/err.txt" >&2; exit 1; }
      read -r rss_kib wall <"$WORK/time.txt"
      written=$(find "$out" -type f -printf '%s\n' | awk '{s += $1} END {printf "%d", s}')
      cut=$(sed -n 's/.*"edge_cut_fraction": *\([0-9.e-]*\).*/\1/p' "$out"/*.json | head -1)
      awk -v d="$dataset" -v m="$method" -v p="$parts" -v r="$((rss_kib * 1024))" \
        -v w="$written" -v t="$wall" -v c="${cut:-0}" \
        'BEGIN {printf "%-20s %-7s %5d %14.0f %14.0f %6.2f %8.1f %7.2f\n", d, m, p, r, w, r / w, t, 100 * c}'
    done
  done
done
