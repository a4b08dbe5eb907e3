#!/usr/bin/env bash
# A machine's memory with 1 and with 4 gnn-servers of one heterogeneous
# partition: PSS (proportional set size: a shared page counts 1/n in each of
# its n mappers) summed over the machine's processes, read from
# /proc/<pid>/smaps_rollup.
#   1. servers alone (started by hand, --insecure), once all serve; with
#      GNN_OLD_SERVER=<path of another gnn-server binary> that binary too,
#      side by side (e.g. a build from before typed partitions lived in
#      shared memory);
#   2. a whole gnn-launch job on one machine (servers + 1 RGCN trainer):
#      the largest sum sampled every 0.2 s over its first GNN_JOB_S (90)
#      seconds, which must include training steps.
# Usage: bash bench/typed_shm_mem.sh [dataset]   (default synthetic:mag)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
export PATH="$BIN:$PATH"
DATASET="${1:-synthetic:mag}"
WORK="$(mktemp -d /tmp/gnn-typed-shm-XXXXXX)"
cleanup() {
  pkill -9 -f "$WORK" 2>/dev/null || true
  [ -n "${GNN_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Process $1 and all its descendants.
tree() {
  local pid
  echo "$1"
  for pid in $(pgrep -P "$1" || true); do tree "$pid"; done
}

# Sum of Pss (kB) over the given processes.
pss_kb() {
  local total=0 pid kb
  for pid in "$@"; do
    kb=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
    total=$((total + ${kb:-0}))
  done
  echo "$total"
}

gnn-partition --dataset "$DATASET" --undirected --balance_train --num_parts 1 \
  --output "$WORK/p1" --quiet > /dev/null
config=$(ls "$WORK"/p1/*.json)
part_mb=$(du -sm "$WORK/p1/part0" | cut -f1)

# Servers alone: $1 = binary, $2 = servers. Prints the summed PSS in MiB.
servers_alone() {
  local bin="$1" n="$2" ip="$WORK/ip-$RANDOM.txt" job="mem-$RANDOM" pids=() s
  echo "127.0.0.1 $(port)" > "$ip"
  for s in $(seq 0 $((n - 1))); do
    "$bin" --ip_config "$ip" --part_config "$config" --machine_id 0 --server_id "$s" \
      --num_servers "$n" --num_threads 1 --job_id "$job" --insecure \
      > "$WORK/srv-$job-$s.log" 2>&1 &
    pids+=($!)
  done
  for s in $(seq 0 $((n - 1))); do
    for _ in $(seq 1 600); do
      grep -q "serving partition" "$WORK/srv-$job-$s.log" && break
      sleep 0.2
    done
    grep -q "serving partition" "$WORK/srv-$job-$s.log" ||
      { echo "server $s did not start:" >&2; cat "$WORK/srv-$job-$s.log" >&2; exit 1; }
  done
  sleep 1
  echo $(( $(pss_kb "${pids[@]}") / 1024 ))
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
}

# A whole job: $1 = servers. Prints the largest summed PSS in MiB over the
# job's first $JOB_S seconds (loading, then training steps), after which
# the job is stopped (gnn-launch stops everything on SIGTERM).
JOB_S="${GNN_JOB_S:-90}"
whole_job() {
  local n="$1" ip="ip-job$1.txt" peak=0 now start=$SECONDS
  echo "127.0.0.1 $(port)" > "$WORK/$ip"
  gnn-launch --workspace "$WORK" --num_trainers 1 --num_samplers 0 --num_servers "$n" \
    --part_config "$config" --ip_config "$ip" --master_port "$(port)" \
    "gnn-train --model rgcn --num_bases 2 --num_epochs 1 --batch_size 1024 --fan_out 10,10 \
     --num_hidden 64 --num_omp_threads 1 --eval_every 0 --log_every 1" \
    > "$WORK/job$n.out" 2> "$WORK/job$n.err" &
  local launcher=$!
  while kill -0 "$launcher" 2>/dev/null && [ $((SECONDS - start)) -lt "$JOB_S" ]; do
    now=$(pss_kb $(tree "$launcher"))
    [ "$now" -gt "$peak" ] && peak=$now
    sleep 0.2
  done
  kill -TERM "$launcher" 2>/dev/null || true
  wait "$launcher" 2>/dev/null || true
  grep -q "Epoch" "$WORK/job$n.err" ||
    { echo "job with $n servers trained no step in ${JOB_S} s:" >&2; tail -5 "$WORK/job$n.err" >&2; exit 1; }
  echo $((peak / 1024))
}

echo "$DATASET, 1 partition: part0/ holds $part_mb MiB of files"
printf '%-44s %12s %12s %8s\n' "PSS summed over the machine's processes" "1 server" "4 servers" "4 / 1"
row() { printf '%-44s %9s MiB %9s MiB %8s\n' "$1" "$2" "$3" "$(awk -v a="$2" -v b="$3" 'BEGIN{printf "%.2fx", b/a}')"; }
if [ -n "${GNN_OLD_SERVER:-}" ]; then
  row "servers alone, $(basename "$GNN_OLD_SERVER") (other build)" \
    "$(servers_alone "$GNN_OLD_SERVER" 1)" "$(servers_alone "$GNN_OLD_SERVER" 4)"
fi
row "servers alone (this build)" "$(servers_alone "$BIN/gnn-server" 1)" "$(servers_alone "$BIN/gnn-server" 4)"
row "job: servers + 1 RGCN trainer, first ${JOB_S} s" "$(whole_job 1)" "$(whole_job 4)"
