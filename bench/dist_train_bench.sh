#!/usr/bin/env bash
# Distributed-training benchmark (issue: distributed gnn-train). On
# synthetic:products with DGL's default model (fan_out 10,25, batch 1000,
# hidden 16, 2 layers) it runs, in one go on this machine:
#   standalone      1 partition, gnn-train --standalone
#   2 parts x 1     2 machines (loopback), 1 trainer each, 1 server each
#   1 part  x 2     1 machine, 2 trainers, 1 server
# and prints seeds/s, the per-epoch split (sample wait, forward, backward,
# all-reduce, update) and bytes all-reduced per step, from each run's
# metrics file. Usage: bash bench/dist_train_bench.sh [epochs] [dataset]
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS="${1:-2}"
SPEC="${2:-synthetic:products}"
BIN="${GNN_BUILD_DIR:-build}/apps"
bash scripts/build.sh >/dev/null
WORK="${GNN_BENCH_DIR:-/tmp/gnn-bench-train}"
mkdir -p "$WORK"
NAME=$(echo "$SPEC" | sed 's/^synthetic:/synthetic-/')
for parts in 1 2; do
  if [ ! -f "$WORK/products$parts/$NAME.json" ]; then
    "$BIN/gnn-partition" --dataset "$SPEC" --num_parts "$parts" --balance_train --balance_edges \
      --output "$WORK/products$parts" --overwrite --quiet >/dev/null
  fi
done
MODEL=(--num_epochs "$EPOCHS" --eval_every 0 --log_every 1000000 --fan_out 10,25 --batch_size 1000 --num_hidden 16 --num_layers 2)
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_standalone() {
  "$BIN/gnn-train" --standalone --part_config "$WORK/products1/$NAME.json" "${MODEL[@]}" \
    --metrics_file "$WORK/standalone.jsonl" --quiet > "$WORK/standalone.out"
}

# run_cluster LABEL PARTS TRAINERS_PER_MACHINE
run_cluster() {
  local label=$1 parts=$2 trainers=$3 job="bench-$$-$1"
  local ip="$WORK/ip_$label.txt" cfg="$WORK/products$parts/$NAME.json" pids=()
  : > "$ip"
  for ((m = 0; m < parts; m++)); do echo "127.0.0.1 $(free_port)" >> "$ip"; done
  local master; master=$(free_port)
  # The job's secret, as gnn-launch would hand it to every process.
  export GNN_SECRET_FILE="$WORK/job.secret"
  [ -f "$GNN_SECRET_FILE" ] || (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$GNN_SECRET_FILE")
  for ((m = 0; m < parts; m++)); do
    "$BIN/gnn-server" --ip_config "$ip" --part_config "$cfg" --machine_id $m --job_id "$job" \
      2> "$WORK/${label}_server$m.err" &
    pids+=($!)
  done
  local tpids=()
  for ((m = 0; m < parts; m++)); do
    for ((t = 0; t < trainers; t++)); do
      "$BIN/gnn-train" --ip_config "$ip" --part_config "$cfg" --machine_id $m --trainer_id $t \
        --num_trainers "$trainers" --job_id "$job" --master_port "$master" "${MODEL[@]}" \
        --metrics_file "$WORK/$label.jsonl" --request_timeout_ms 120000 --quiet \
        > "$WORK/${label}_t$m$t.out" 2> "$WORK/${label}_t$m$t.err" &
      tpids+=($!)
    done
  done
  local rc=0
  for p in "${tpids[@]}"; do wait "$p" || rc=1; done
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  [ $rc -eq 0 ] || { echo "$label failed:"; tail -n 3 "$WORK/${label}"_t*.err; exit 1; }
}

uptime
run_standalone
run_cluster 2x1 2 1
run_cluster 1x2 1 2
/usr/bin/python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
def load(label):
    rows = [json.loads(l) for l in open(f"{work}/{label}.jsonl")]
    ep = [r for r in rows if r["type"] == "epoch"]
    s = [r for r in rows if r["type"] == "summary"][-1]["summary"]
    n = len(ep)
    avg = lambda k: sum(r.get(k, 0.0) for r in ep) / n
    return s, {k: avg(k) for k in ["epoch_time_s", "sample_s", "forward_s", "backward_s", "allreduce_s", "update_s"]}
print("%-12s %9s %8s %8s %8s %8s %8s %8s %12s %7s" % ("config", "seeds/s", "epoch_s", "wait_s", "fwd_s", "bwd_s", "allred_s", "upd_s", "AR bytes/st", "vs 1x1"))
base = None
for label, name in [("standalone", "1 part x1"), ("2x1", "2 parts x1"), ("1x2", "1 part x2")]:
    s, e = load(label)
    base = base or s["seeds_per_s"]
    print("%-12s %9.0f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %12d %7.2f" % (name, s["seeds_per_s"], e["epoch_time_s"], e["sample_s"], e["forward_s"], e["backward_s"], e["allreduce_s"], e["update_s"], s.get("allreduce_bytes_per_step", 0), s["seeds_per_s"] / base))
PY
