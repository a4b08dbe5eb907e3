#!/usr/bin/env bash
# RGCN: gnn-train --model rgcn beside DGL's distributed RGCN example
# (bench/dgl_rgcn_peer.py) on byte-identical data, measured in one run
# (never run by CI).
#
#   bash bench/compare_dgl_rgcn.sh                                  # mag-small, 10 epochs, seeds 1 2 3
#   GRAPH=mag EPOCHS=1 SEEDS="1" bash bench/compare_dgl_rgcn.sh     # ogbn-mag's size
#   MODES=dist2 bash bench/compare_dgl_rgcn.sh                      # 2 machines (root)
#
# The graph (synthetic:$GRAPH) is written once as an OGB heterogeneous raw
# folder (gnn-dataset --write_ogb); gnn-partition reads that folder (with
# --undirected: a reverse relation per relation), and DGL reads the same
# folder with pandas into a dgl.heterograph with the same reverses; the
# script first proves DGL's graph equal to gnn's partition (every typed
# edge, the feature, label and mask bytes: dgl_rgcn_peer.py check).
# Both then train the same model with the same settings, pinned here: DGL's
# entity_classify_dist.py ogbn-mag command and gnn-train --model rgcn's
# defaults: hidden 64, 2 layers, 2 bases, self-loop, dropout 0.5, Adam
# 0.01, sparse Adam 0.06 on the featureless types' embeddings (uniform
# -1..1 at the start), fan-out 25,10 per relation (input layer first),
# batch 1024, evaluation (validation and test, sampled with the training
# fan-outs, batch 1024) every epoch; test accuracy at the best validation
# epoch. gnn and DGL alternate per seed (which goes first alternates too),
# one process each, each system's own thread defaults (DGL: sampling in the
# training loop, torch's threads = the cores; gnn: its sampling threads and
# LibTorch threads).
# MODES=dist2: 2 machines = network namespaces gnnrg0/1 (10.79.0.10/11 on
# a bridge; needs root), 1 server + 1 trainer each, 1 LibTorch thread per
# trainer, BATCH seeds per trainer per step in both systems; each system
# partitions the graph its own way into 2 (gnn-partition --balance_train;
# DGL's partition_graph, METIS balanced on training papers and edges).
# gnn runs one per-node gnn-launch per machine; DGL's server and trainer
# get the DGL_* environment its launcher sets, each machine a private
# /dev/shm (DGL's shared-memory names are the same on every machine).
# Prints seeds/s per run and its median per system (training seeds over
# training time; evaluation excluded), the ratio of the medians gnn/DGL,
# test accuracy mean +- sd per system, and the load average around each run
# (the machine may be shared).
#
# Environment: MODES (standalone; dist2; or both), GRAPH (mag-small), EPOCHS (10), SEEDS (1 2 3), BATCH (1024),
# DGL_VENV (/opt/dgl/venv), WORK (a temporary folder; the dataset and
# partitions there are reused), GNN_BUILD_DIR (build), GNN_FLAGS (more
# gnn-train flags, e.g. "--aggregate_at_owner 0"), LINK_RATE (dist2: each
# machine's link limited by a token bucket, e.g. 100mbit, 1gbit: tc qdisc
# ... tbf rate R burst 1mb latency 50ms on its interface; default none).
# dist2 also prints the bytes both machines sent over their links per run
# (the interfaces' tx counters: everything, training and evaluation).
# DGL_MAX_STEPS (0): DGL stops each epoch after that many steps (a speed
# figure where DGL's whole epoch would take too long, as on synthetic:mag;
# gnn runs whole epochs; DGL then does not evaluate); EVAL_EVERY (1):
# evaluate every N epochs (0: never; test accuracy then reads 0);
# SYSTEMS ("gnn dgl"): which systems run (the summary compares only both).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
GRAPH=${GRAPH:-mag-small}
EPOCHS=${EPOCHS:-10}
SEEDS=${SEEDS:-1 2 3}
BATCH=${BATCH:-1024}
DGL_VENV=${DGL_VENV:-/opt/dgl/venv}
BIN=$(cd "${GNN_BUILD_DIR:-$ROOT/build}/apps" && pwd)
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/compare_dgl_rgcn.XXXXXX")}
PY=$DGL_VENV/bin/python
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
log() { echo "compare_dgl_rgcn: $*" >&2; }
export DGLBACKEND=pytorch

[ -x "$PY" ] && "$PY" -c "import dgl" 2>/dev/null ||
  { log "no DGL in $DGL_VENV (see ../shared/peers/dgl/README.md)"; exit 1; }

# The settings both systems train with.
COMMON="--num_epochs $EPOCHS --eval_every ${EVAL_EVERY:-1} --fan_out 25,10 --num_hidden 64 --num_layers 2 \
  --num_bases 2 --lr 0.01 --sparse_lr 0.06 --dropout 0.5 --batch_size $BATCH --batch_size_eval $BATCH"

data=$WORK/$GRAPH
if [ ! -d "$data" ]; then
  log "writing synthetic:$GRAPH as an OGB raw folder"
  "$BIN/gnn-dataset" --dataset "synthetic:$GRAPH" --write_ogb "$data" --quiet > "$WORK/dataset.json"
fi
g1=$WORK/g1-$GRAPH
if [ ! -d "$g1" ]; then
  log "gnn-partition: 1 partition"
  "$BIN/gnn-partition" --dataset "$data" --undirected --balance_train --num_parts 1 \
    --output "$g1" --quiet > /dev/null
fi
cfg=$(ls "$g1"/*.json)
if [ ! -f "$WORK/check-$GRAPH.json" ]; then
  log "checking DGL's graph against gnn's partition"
  "$PY" "$HERE/dgl_rgcn_peer.py" check "$data" "$cfg" 2> "$WORK/check.err" > "$WORK/check-$GRAPH.json.tmp"
  mv "$WORK/check-$GRAPH.json.tmp" "$WORK/check-$GRAPH.json"
fi
log "identical: $(cat "$WORK/check-$GRAPH.json")"
load() { cut -d' ' -f1 /proc/loadavg; }
MODES=${MODES:-standalone}

# --- two machines: network namespaces on a bridge -------------------------
netns_down() {
  for i in 0 1; do ip netns delete gnnrg$i 2>/dev/null || true; done
  ip link delete gnnrgbr 2>/dev/null || true
}
netns_up() {
  netns_down
  ip link add gnnrgbr type bridge
  ip link set gnnrgbr up
  for i in 0 1; do
    ip netns add gnnrg$i
    ip link add gnnrgv$i type veth peer name gr$i
    ip link set gr$i netns gnnrg$i
    ip link set gnnrgv$i master gnnrgbr
    ip link set gnnrgv$i up
    ip netns exec gnnrg$i ip addr add 10.79.0.$((10 + i))/24 dev gr$i
    ip netns exec gnnrg$i ip link set gr$i up
    ip netns exec gnnrg$i ip link set lo up
    if [ -n "${LINK_RATE:-}" ]; then
      ip netns exec gnnrg$i tc qdisc add dev gr$i root tbf rate "$LINK_RATE" burst 1mb latency 50ms
    fi
  done
}
link_tx() {  # bytes both machines have sent over their links
  local total=0 i
  for i in 0 1; do
    total=$((total + $(ip netns exec gnnrg$i cat /sys/class/net/gr$i/statistics/tx_bytes)))
  done
  echo "$total"
}

run_gnn_standalone() {  # seed
  "$BIN/gnn-train" --standalone --part_config "$cfg" --model rgcn $COMMON --seed "$1" --quiet ${GNN_FLAGS:-} \
    > "$WORK/gnn-standalone-s$1.out" 2> "$WORK/gnn-standalone-s$1.err"
}
run_dgl_standalone() {  # seed
  "$PY" "$HERE/dgl_rgcn_peer.py" train --dataset "$data" $COMMON --seed "$1" --max_steps "${DGL_MAX_STEPS:-0}" \
    $([ "${DGL_MAX_STEPS:-0}" = 0 ] || echo --eval_every 0) \
    > "$WORK/dgl-standalone-s$1.out" 2> "$WORK/dgl-standalone-s$1.err"
}
run_gnn_dist2() {  # seed
  printf '10.79.0.10 31150\n10.79.0.11 31150\n' > "$WORK/ip-ns.txt"
  [ -f "$WORK/cluster.secret" ] ||
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/cluster.secret")
  local train="$BIN/gnn-train --model rgcn $COMMON --num_omp_threads 1 --seed $1 --quiet ${GNN_FLAGS:-}"
  local pids=() i job="rg-$1-$RANDOM" rc=0
  for i in 1 0; do
    ip netns exec gnnrg$i "$BIN/gnn-launch" --machine_id $i --workspace "$WORK" \
      --secret_file cluster.secret --ip_config ip-ns.txt --part_config "$cfg2" --num_trainers 1 \
      --num_servers 1 --num_samplers 0 --master_port 29700 --job_id "$job" \
      --log_dir "$WORK/gnn-logs-m$i" "$train" > "$WORK/gnn-m$i.out" 2> "$WORK/gnn-m$i.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  [ "$rc" = 0 ] || { log "gnn dist2 failed, see $WORK/gnn-m*.err"; return 1; }
  tail -1 "$WORK/gnn-m0.out" > "$WORK/gnn-dist2-s$1.out"
}
run_dgl_dist2() {  # seed
  printf '10.79.0.10 30150\n10.79.0.11 30150\n' > "$WORK/ip-ns-dgl.txt"
  local dcfg port=$((20000 + RANDOM % 20000)) i pids=() rc=0
  dcfg=$(ls "$WORK"/dgl2-$GRAPH/*.json)
  local env="DGL_IP_CONFIG=$WORK/ip-ns-dgl.txt DGL_CONF_PATH=$dcfg DGL_NUM_SERVER=1 DGL_NUM_CLIENT=2"
  env+=" DGL_GRAPH_FORMAT=csc DGLBACKEND=pytorch"
  local args="--part_config $dcfg --ip_config $WORK/ip-ns-dgl.txt $COMMON --seed $1 --num_omp_threads 1"
  args+=" --max_steps ${DGL_MAX_STEPS:-0}"
  [ "${DGL_MAX_STEPS:-0}" = 0 ] || args+=" --eval_every 0"
  for i in 0 1; do
    {
      echo "mount -t tmpfs tmpfs /dev/shm"
      echo "env $env DGL_ROLE=server DGL_SERVER_ID=$i OMP_NUM_THREADS=1 $PY $HERE/dgl_rgcn_peer.py train $args > $WORK/dgl-server$i.log 2>&1 &"
      echo "env $env DGL_DIST_MODE=distributed DGL_ROLE=client DGL_NUM_SAMPLER=0 GLOO_SOCKET_IFNAME=gr$i DGL_GROUP_ID=0 MASTER_ADDR=10.79.0.10 MASTER_PORT=$port RANK=$i WORLD_SIZE=2 LOCAL_RANK=0 $PY $HERE/dgl_rgcn_peer.py train $args > $WORK/dgl-trainer$i.out 2> $WORK/dgl-trainer$i.log"
      echo 'rc=$?; wait; exit $rc'
    } > "$WORK/dgl-machine$i.sh"
    ip netns exec gnnrg$i unshare -m bash "$WORK/dgl-machine$i.sh" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  [ "$rc" = 0 ] || { log "DGL dist2 failed, see $WORK/dgl-*.log"; return 1; }
  grep "^{" "$WORK/dgl-trainer0.out" | tail -1 > "$WORK/dgl-dist2-s$1.out"
}
SYSTEMS=${SYSTEMS:-gnn dgl}
run() {  # system mode seed
  [[ " $SYSTEMS " == *" $1 "* ]] || return 0
  local l0 tx0=0; l0=$(load)
  log "$2 seed $3: $1${LINK_RATE:+ (link $LINK_RATE)}"
  [ "$2" = dist2 ] && tx0=$(link_tx)
  "run_$1_$2" "$3"
  echo "$l0 $(load)" > "$WORK/$1-$2-s$3.load"
  if [ "$2" = dist2 ]; then echo $(($(link_tx) - tx0)) > "$WORK/$1-$2-s$3.tx"; fi
}

if [[ " $MODES " == *" dist2 "* ]]; then
  cfg2=$WORK/g2-$GRAPH
  if [ ! -d "$cfg2" ]; then
    log "gnn-partition: 2 partitions"
    "$BIN/gnn-partition" --dataset "$data" --undirected --balance_train --num_parts 2 \
      --output "$cfg2" --quiet > /dev/null
  fi
  cfg2=$(ls "$cfg2"/*.json)
  if [ ! -d "$WORK/dgl2-$GRAPH" ]; then
    log "DGL partition_graph: 2 partitions"
    "$PY" "$HERE/dgl_rgcn_peer.py" partition "$data" 2 "$WORK/dgl2-$GRAPH" metis \
      > "$WORK/dgl2-partition.json" 2> "$WORK/dgl2-partition.err"
  fi
  trap netns_down EXIT
  netns_up
fi
for mode in $MODES; do
  i=0
  for seed in $SEEDS; do
    if [ $((i % 2)) = 0 ]; then run gnn "$mode" "$seed"; run dgl "$mode" "$seed"
    else run dgl "$mode" "$seed"; run gnn "$mode" "$seed"; fi
    i=$((i + 1))
  done
done

[[ " $SYSTEMS " == *" gnn "* && " $SYSTEMS " == *" dgl "* ]] || exit 0
for mode in $MODES; do
python3 - "$WORK" "$GRAPH" "$EPOCHS" "$BATCH" "$mode" $SEEDS <<'PY'
import json, os, statistics, sys
work, graph, epochs, batch, mode, seeds = *sys.argv[1:6], sys.argv[6:]
def row(system, seed):
    r = json.loads(open(f"{work}/{system}-{mode}-s{seed}.out").read().strip().splitlines()[-1])
    l0, l1 = open(f"{work}/{system}-{mode}-s{seed}.load").read().split()
    try:
        r["link_mb"] = int(open(f"{work}/{system}-{mode}-s{seed}.tx").read()) / 1e6
    except OSError:
        r["link_mb"] = 0.0
    return r, f"{l0}->{l1}"
print(f"RGCN {mode} on synthetic:{graph}, {epochs} epochs, batch {batch} per trainer, "
      f"seeds {' '.join(seeds)}")
print(f"{'seed':>4} {'system':>6} {'seeds/s':>9} {'s/epoch':>8} {'test acc':>9} {'load avg':>12} {'link MB':>9}")
res = {"gnn": [], "dgl": []}
for s in seeds:
    for system in ("gnn", "dgl"):
        r, l = row(system, s)
        res[system].append(r)
        print(f"{s:>4} {system:>6} {r['seeds_per_s']:>9.1f} {r['mean_epoch_time_s']:>8.2f} "
              f"{r['test_acc']:>9.4f} {l:>12} {r['link_mb']:>9.1f}")
med = {k: statistics.median(r["seeds_per_s"] for r in v) for k, v in res.items()}
acc = {k: [r["test_acc"] for r in v] for k, v in res.items()}
sd = lambda x: statistics.stdev(x) if len(x) > 1 else 0.0
print(f"median seeds/s: gnn {med['gnn']:.1f}, DGL {med['dgl']:.1f}, gnn/DGL {med['gnn'] / med['dgl']:.2f}x")
print("per-seed ratios: " + " ".join(f"{g['seeds_per_s'] / d['seeds_per_s']:.2f}x"
                                     for g, d in zip(res["gnn"], res["dgl"])))
# A system that never evaluated (DGL_MAX_STEPS, EVAL_EVERY=0) has no accuracy.
evaluated = {k: all(r.get("val_acc", 0) >= 0 and r.get("test_acc_epoch", 1) != 0 for r in v)
             for k, v in res.items()}
for k in ("gnn", "dgl"):
    if not evaluated[k]:
        print(f"test acc {k}: not evaluated")
        continue
    print(f"test acc {k}: {statistics.mean(acc[k]):.4f} +- {sd(acc[k]):.4f} ({' '.join(f'{a:.4f}' for a in acc[k])})")
if all(evaluated.values()):
    diff = abs(statistics.mean(acc["gnn"]) - statistics.mean(acc["dgl"]))
    print(f"accuracy gap {diff:.4f} vs one sd (larger of the two) {max(sd(acc['gnn']), sd(acc['dgl'])):.4f}")
if mode == "dist2":
    link = {k: statistics.median(r["link_mb"] for r in v) for k, v in res.items()}
    cut = os.environ.get("DGL_MAX_STEPS", "0") not in ("", "0")
    print(f"median link MB per run: gnn {link['gnn']:.1f}, DGL {link['dgl']:.1f}"
          + (" (not comparable: DGL ran only its first steps)" if cut else
             f", gnn/DGL {link['gnn'] / link['dgl']:.2f}x" if link['dgl'] else ""))
PY
done
