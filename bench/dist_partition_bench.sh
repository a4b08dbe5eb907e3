#!/usr/bin/env bash
# Distributed partitioning (gnn-partition --distributed, PT-Scotch over Open
# MPI) on simulated machines: one network namespace per machine on a bridge,
# mpirun reaching them through `ip netns exec` as its remote shell, ranks
# talking TCP over the veths. Against the single-machine partitioner (METIS)
# on the same chunked graph, it prints per part count P:
#   single: peak RSS, seconds, edge cut
#   distributed: each machine's peak RSS, the largest over (single peak / P)
#   (issue 17 asks <= 1.5), seconds, edge cut over METIS's (asks <= 1.3),
#   bytes each machine sent.
#
#   sudo bash bench/dist_partition_bench.sh            # synthetic:products, P = 2 4
#   GRAPH=small PARTS="2" bash bench/dist_partition_bench.sh
#   GNN_SKIP_BUILD=1 ... reuses build/.
# Needs root (namespaces), iproute2 and mpirun. The chunked graph is cached
# in $WORK (default /tmp/gnn-dist-partition-bench).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/build/apps"
GRAPH="${GRAPH:-products}"
PARTS="${PARTS:-2 4}"
CHUNKS="${CHUNKS:-8}"
FLAGS="${FLAGS:-}"
WORK="${WORK:-/tmp/gnn-dist-partition-bench}"
NET=10.79.0

[ "$(id -u)" -eq 0 ] || { echo "dist_partition_bench: needs root (network namespaces)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "dist_partition_bench: mpirun not found (apt install openmpi-bin)" >&2; exit 1; }
if [ -z "${GNN_SKIP_BUILD:-}" ]; then
  cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  make -C "$ROOT/build" -j"$(nproc)" gnn-partition gnn-dataset >/dev/null
fi
mkdir -p "$WORK"
DATA="$WORK/$GRAPH-chunks$CHUNKS"
if [ ! -f "$DATA/metadata.json" ]; then
  "$BIN/gnn-dataset" --dataset "synthetic:$GRAPH" --write_chunked "$CHUNKS" --output "$DATA" --quiet >/dev/null
fi

# --- machines: namespaces gnnp<i> at $NET.(10+i) on bridge gnnpbr ---------
MAX=0
for p in $PARTS; do [ "$p" -gt "$MAX" ] && MAX=$p; done
netns_down() {
  for i in $(seq 0 15); do ip netns delete "gnnp$i" 2>/dev/null || true; done
  ip link delete gnnpbr 2>/dev/null || true
}
trap netns_down EXIT
netns_down
ip link add gnnpbr type bridge
ip addr add "$NET.1/24" dev gnnpbr
ip link set gnnpbr up
for i in $(seq 0 $((MAX - 1))); do
  ip netns add "gnnp$i"
  ip link add "gnnpv$i" type veth peer name "gp$i"
  ip link set "gp$i" netns "gnnp$i"
  ip link set "gnnpv$i" master gnnpbr
  ip link set "gnnpv$i" up
  ip netns exec "gnnp$i" ip addr add "$NET.$((10 + i))/24" dev "gp$i"
  ip netns exec "gnnp$i" ip link set "gp$i" up
  ip netns exec "gnnp$i" ip link set lo up
done
# mpirun's remote shell: host $NET.(10+i) is namespace gnnp<i>.
AGENT="$WORK/netns-agent.sh"
cat >"$AGENT" <<EOF
#!/bin/sh
host=\$1; shift
exec ip netns exec gnnp\$(( \${host##*.} - 10 )) sh -c "\$*"
EOF
chmod +x "$AGENT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI_FLAGS=(--quiet --bind-to none --mca plm_rsh_agent "$AGENT" --mca rtc '^hwloc' --mca btl tcp,self
           --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24")

report() {  # config -> "cut peak_rss seconds"
  /usr/bin/python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["partition_report"]
print(r["edge_cut"], r["peak_rss_bytes"], r["total_seconds"])
EOF
}

echo "graph synthetic:$GRAPH ($CHUNKS chunks) flags '$FLAGS'"
for P in $PARTS; do
  rm -rf "$WORK/single$P" "$WORK/dist$P"
  # shellcheck disable=SC2086
  "$BIN/gnn-partition" --dataset "$DATA" --num_parts "$P" --output "$WORK/single$P" --quiet $FLAGS >/dev/null
  read -r scut speak ssec < <(report "$WORK/single$P/synthetic-$GRAPH.json")
  hosts=""
  for i in $(seq 0 $((P - 1))); do hosts="$hosts${hosts:+,}$NET.$((10 + i)):1"; done
  # shellcheck disable=SC2086
  mpirun "${MPI_FLAGS[@]}" -np "$P" --host "$hosts" "$BIN/gnn-partition" --distributed \
    --dataset "$DATA" --output "$WORK/dist$P" --quiet $FLAGS >/dev/null
  /usr/bin/python3 - "$WORK/dist$P/synthetic-$GRAPH.json" "$P" "$scut" "$speak" "$ssec" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["partition_report"]
P, scut, speak, ssec = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
mib = lambda b: b / 2**20
m = r["machines"]
peaks = [x["peak_rss_bytes"] for x in m]
print(f"P={P} single (METIS): peak {mib(speak):.0f} MiB, {ssec:.1f} s, cut {scut} "
      f"({100 * scut / r['undirected_edges']:.2f}%)")
print(f"P={P} distributed ({r['part_method']}): per-machine peak "
      + " ".join(f"{mib(p):.0f}" for p in peaks)
      + f" MiB; max / (single / P) = {max(peaks) / (speak / P):.2f}; "
      f"{r['total_seconds']:.1f} s; cut {r['edge_cut']} ({100 * r['edge_cut_fraction']:.2f}%), "
      f"{r['edge_cut'] / max(1, scut):.2f}x METIS; sent per machine "
      + " ".join(f"{mib(x['bytes_sent']):.0f}" for x in m) + " MiB")
print(f"P={P} stages: " + ", ".join(f"{k} {v:.1f}" for k, v in r["stage_seconds"].items())
      + f"; imbalance nodes {r['imbalance']['nodes']:.3f} edges {r['imbalance']['edges']:.3f}")
EOF
done
