#!/usr/bin/env bash
# Cluster tools on this host: gnn-copy throughput (first copy, then an
# unchanged re-run) and gnn-launch's overhead (servers up, rendezvous,
# teardown) = its wall time minus the trainers' own epoch time.
# Usage: bash bench/launch_bench.sh [dataset] [epochs]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
export PATH="$BIN:$PATH"
DATASET="${1:-synthetic:small}"
EPOCHS="${2:-2}"
WORK="$(mktemp -d /tmp/gnn-launch-bench-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
now() { date +%s.%N; }
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

gnn-partition --dataset "$DATASET" --num_parts 2 --output "$WORK/data" --quiet >/dev/null
config=$(ls "$WORK"/data/*.json)
graph=$(basename "$config" .json)
printf '127.0.0.1 %s\n127.0.0.1 %s\n' "$(port)" "$(port)" > "$WORK/ip_config.txt"
bytes=$(du -sb "$WORK/data" | cut -f1)

copy() { gnn-copy --ip_config "$WORK/ip_config.txt" --workspace "$WORK/ws/m{machine}" \
  --rel_data_path "$graph" --part_config "$config" "$@" > "$WORK/copy.out"; }
t0=$(now); copy; t1=$(now); copy; t2=$(now)
echo "dataset $DATASET, 2 partitions, $((bytes / 1000000)) MB on disk"
/usr/bin/python3 - "$t0" "$t1" "$t2" "$bytes" <<'PY'
import sys
t0, t1, t2, b = map(float, sys.argv[1:])
print(f"gnn-copy local, first copy : {t1 - t0:6.2f} s  ({b / 1e6 / (t1 - t0):7.1f} MB/s incl. hashing and verify)")
print(f"gnn-copy local, re-run     : {t2 - t1:6.2f} s  (nothing changed: hash only)")
PY

t0=$(now)
gnn-launch --workspace "$WORK/ws/m{machine}" --num_trainers 1 --num_samplers 1 --num_servers 1 \
  --part_config "$graph/$graph.json" --ip_config ip_config.txt --master_port "$(port)" \
  "gnn-train --num_epochs $EPOCHS --eval_every 0 --num_omp_threads 1" 2> "$WORK/launch.err" > "$WORK/launch.out"
t1=$(now)
/usr/bin/python3 - "$t0" "$t1" "$WORK/launch.out" <<'PY'
import json, sys
t0, t1 = float(sys.argv[1]), float(sys.argv[2])
s = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
train = s["mean_epoch_time_s"] * s["epochs_run"]
print(f"gnn-launch 2 machines x (1 server, 1 trainer, 1 sampler), {s['epochs_run']} epochs:")
print(f"  wall {t1 - t0:6.2f} s (launcher's own wall_time_s {s['wall_time_s']:.2f}), "
      f"trainer epochs {train:6.2f} s, overhead {t1 - t0 - train:5.2f} s "
      f"(start, server ready, rendezvous, evaluation, teardown)")
PY
