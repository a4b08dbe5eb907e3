#!/usr/bin/env bash
# RGCN: gnn-train --model rgcn beside DGL's distributed RGCN example
# (bench/dgl_rgcn_peer.py) on byte-identical data, measured in one run
# (never run by CI).
#
#   bash bench/compare_dgl_rgcn.sh                                  # mag-small, 10 epochs, seeds 1 2 3
#   GRAPH=mag EPOCHS=1 SEEDS="1" bash bench/compare_dgl_rgcn.sh     # ogbn-mag's size
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
# Prints seeds/s per run and its median per system (training seeds over
# training time; evaluation excluded), the ratio of the medians gnn/DGL,
# test accuracy mean +- sd per system, and the load average around each run
# (the machine may be shared).
#
# Environment: GRAPH (mag-small), EPOCHS (10), SEEDS (1 2 3), BATCH (1024),
# DGL_VENV (/opt/dgl/venv), WORK (a temporary folder; the dataset and
# partitions there are reused), GNN_BUILD_DIR (build).
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
COMMON="--num_epochs $EPOCHS --eval_every 1 --fan_out 25,10 --num_hidden 64 --num_layers 2 \
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
run_gnn() {  # seed
  local l0; l0=$(load)
  "$BIN/gnn-train" --standalone --part_config "$cfg" --model rgcn $COMMON --seed "$1" --quiet \
    > "$WORK/gnn-s$1.out" 2> "$WORK/gnn-s$1.err"
  echo "$l0 $(load)" > "$WORK/gnn-s$1.load"
}
run_dgl() {  # seed
  local l0; l0=$(load)
  "$PY" "$HERE/dgl_rgcn_peer.py" train --dataset "$data" $COMMON --seed "$1" \
    > "$WORK/dgl-s$1.out" 2> "$WORK/dgl-s$1.err"
  echo "$l0 $(load)" > "$WORK/dgl-s$1.load"
}
i=0
for seed in $SEEDS; do
  if [ $((i % 2)) = 0 ]; then
    log "seed $seed: gnn"; run_gnn "$seed"; log "seed $seed: DGL"; run_dgl "$seed"
  else
    log "seed $seed: DGL"; run_dgl "$seed"; log "seed $seed: gnn"; run_gnn "$seed"
  fi
  i=$((i + 1))
done

python3 - "$WORK" "$GRAPH" "$EPOCHS" "$BATCH" $SEEDS <<'PY'
import json, statistics, sys
work, graph, epochs, batch, seeds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def row(system, seed):
    r = json.loads(open(f"{work}/{system}-s{seed}.out").read().strip().splitlines()[-1])
    l0, l1 = open(f"{work}/{system}-s{seed}.load").read().split()
    return r, f"{l0}->{l1}"
print(f"RGCN standalone on synthetic:{graph}, {epochs} epochs, batch {batch}, seeds {' '.join(seeds)}")
print(f"{'seed':>4} {'system':>6} {'seeds/s':>9} {'s/epoch':>8} {'test acc':>9} {'load avg':>12}")
res = {"gnn": [], "dgl": []}
for s in seeds:
    for system in ("gnn", "dgl"):
        r, l = row(system, s)
        res[system].append(r)
        print(f"{s:>4} {system:>6} {r['seeds_per_s']:>9.1f} {r['mean_epoch_time_s']:>8.2f} "
              f"{r['test_acc']:>9.4f} {l:>12}")
med = {k: statistics.median(r["seeds_per_s"] for r in v) for k, v in res.items()}
acc = {k: [r["test_acc"] for r in v] for k, v in res.items()}
sd = lambda x: statistics.stdev(x) if len(x) > 1 else 0.0
print(f"median seeds/s: gnn {med['gnn']:.1f}, DGL {med['dgl']:.1f}, gnn/DGL {med['gnn'] / med['dgl']:.2f}x")
print("per-seed ratios: " + " ".join(f"{g['seeds_per_s'] / d['seeds_per_s']:.2f}x"
                                     for g, d in zip(res["gnn"], res["dgl"])))
for k in ("gnn", "dgl"):
    print(f"test acc {k}: {statistics.mean(acc[k]):.4f} +- {sd(acc[k]):.4f} ({' '.join(f'{a:.4f}' for a in acc[k])})")
diff = abs(statistics.mean(acc["gnn"]) - statistics.mean(acc["dgl"]))
print(f"accuracy gap {diff:.4f} vs one sd (larger of the two) {max(sd(acc['gnn']), sd(acc['dgl'])):.4f}")
PY
