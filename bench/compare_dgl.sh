#!/usr/bin/env bash
# gnn beside DGL on byte-identical data, measured in one run (never run by CI).
#
#   bash bench/compare_dgl.sh                       # synthetic:small and synthetic:products
#   GRAPHS=small MODES=standalone bash bench/compare_dgl.sh
#   GRAPHS="cora citeseer small" SEEDS="$(seq -s' ' 0 9)" bash bench/compare_dgl.sh   # accuracy
#
# For each graph: gnn-partition writes a 1-partition copy; DGL rebuilds the
# very same graph from it (bench/dgl_peer.py) and partitions it with its own
# partition_graph; gnn-partition makes gnn's 2-partition copy with the same
# balancing. Then both systems train with the same model and flags, once
# per seed, gnn and DGL interleaved:
#   standalone  one process, one partition, every core
#   dist2       2 machines = network namespaces gnncmp0/1 (10.78.0.10/11 on a
#               bridge), 1 server + 1 trainer each, 1 LibTorch thread per
#               trainer; DGL's machines each get a private /dev/shm (DGL's
#               shared-memory names are the same on every machine); gnn runs
#               one per-node gnn-launch per machine.
# Graphs: small, products, proteins, proteins-small (synthetic:*, DGL's
# defaults: fan_out 10,25, batch 1000, hidden 16, 2 layers, lr 0.003,
# dropout 0.5; the proteins presets are multi-label: BCE, and test ROC-AUC
# in the accuracy column, as OGB's evaluator computes it), cora, citeseer
# (../shared/datasets, with configs/<graph>.toml's flags), proteins-weighted
# and proteins-small-weighted (the proteins presets partitioned with
# gnn-partition --edge_weight mean: each edge's mean feature is its weight,
# for gcn's EdgeWeightNorm('both') in both systems), small-weighted
# (synthetic:small's shape with a 1-wide edge feature: gcn and graphsage
# weigh messages by it in both systems, DGL's GraphConv after
# EdgeWeightNorm('both') and SAGEConv's edge_weight), bow and bow-dense
# (synthetic:bow, 10,000 bag-of-words columns with 0.3 % set: gnn keeps
# them sparse, or dense with --feature_format dense for the dense path of
# the same binary; DGL stores them dense either way), edges and edges-small
# (synthetic:edges*, edge classification: DistEdgeDataLoader with
# exclude='reverse_id' and an MLP decoder over both ends' embeddings in
# DGL, gnn-train --task edge_class; seeds are train edges; both systems
# read gnn's partitions, converted for DGL with the edge labels; MODELS
# graphsage). EDGE_EXCLUDE (true, the default, or false) is both systems'
# --exclude_target_edges: DGL 2.1's DistGraph ignores DistEdgeDataLoader's
# exclude, so with true dgl_peer.py removes the batch's edges and their
# reverses from each layer's draw itself (as DGL does on a local graph);
# with false neither system excludes them (what DGL's loader does as it
# ships). EDGE_DROPOUT (default 0.5) is both systems' --dropout there.
# Prints one table: s/epoch, seeds/s, test accuracy after the last epoch
# (mean and standard deviation over seeds) and gnn/DGL ratios; dist2 rows
# also give what crossed the network: bytes sent per machine per epoch and
# bytes per training seed, read from the namespaces' interface counters
# (tx_bytes of both machines over the whole job: start-up, every epoch and
# the final evaluation), medians over the seeds.
#
# What crosses the network, mechanism by mechanism: GNN_VARIANTS (dist2
# only) runs gnn once per variant, each NAME:FLAGS with '=' for the space
# in a flag and '+' between flags, e.g.
#   GNN_VARIANTS="all:--wire_dtype=bfloat16
#     no-pushdown:--wire_dtype=bfloat16+--aggregate_at_owner=0
#     no-cache:--wire_dtype=bfloat16+--cache_mb=0 no-narrow:--wire_dtype=float32"
# (default "all:", gnn's defaults); the variants and DGL alternate per seed.
# MODELS (default graphsage): graphsage gat gcn, each run by both systems
# with the same flags (model_flags below; cora/citeseer take
# configs/<graph>_<model>.toml when there is one); gat and gcn's DGL
# partitions get a self-loop on every node (DGL's examples'
# dgl.add_self_loop; gnn adds one to every block).
# DGL_SPLIT (dist2 only; default dgl): dgl has DGL's partition_graph split
# the graph; gnn gives DGL gnn-partition's own 2-partition output converted
# to DGL's format (dgl_peer.py convert: the same split and ids for both
# systems), for graphs DGL cannot split in this machine's memory
# (synthetic:products).
# LINK_RATE (e.g. 100mbit, 1gbit; default none) limits each machine's link
# with a token bucket (tc qdisc ... tbf rate R burst 1mb latency 50ms on the
# namespace's side of its veth).
#
# Environment: GRAPHS (small products), MODES (standalone dist2), SEEDS
# (0 1 2), PART_METHOD_<graph> (metis; random: the 2-part copies of both
# systems, e.g. where DGL's METIS partitioning does not fit in memory),
# EPOCHS_<graph> (small 10, products 2, cora/citeseer: the
# config's), DGL_VENV (/opt/dgl/venv: created from PyPI when missing), WORK
# (a temporary folder; partitions there are reused), GNN_BUILD_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
GRAPHS=${GRAPHS:-small products}
MODES=${MODES:-standalone dist2}
SEEDS=${SEEDS:-0 1 2}
DGL_VENV=${DGL_VENV:-/opt/dgl/venv}
BIN=${GNN_BUILD_DIR:-$ROOT/build}/apps
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/compare_dgl.XXXXXX")}
PY=$DGL_VENV/bin/python
mkdir -p "$WORK"
log() { echo "compare_dgl: $*" >&2; }

if [ ! -x "$PY" ] || ! "$PY" -c "import dgl" 2>/dev/null; then
  log "installing DGL 2.1.0 + torch 2.2.1 into $DGL_VENV (PyPI)"
  python3 -m venv "$DGL_VENV"
  "$PY" -m pip install -q torch==2.2.1 dgl==2.1.0 "numpy<2" scipy networkx requests tqdm psutil \
    torchdata==0.7.1 pandas pydantic pyyaml
fi
[ -x "$BIN/gnn-train" ] || bash "$ROOT/scripts/build.sh" >&2
export DGLBACKEND=pytorch

# --- two machines: network namespaces on a bridge -------------------------
netns_up() {
  netns_down
  ip link add gnncmpbr type bridge
  ip link set gnncmpbr up
  for i in 0 1; do
    ip netns add gnncmp$i
    ip link add gnncmpv$i type veth peer name gl$i
    ip link set gl$i netns gnncmp$i
    ip link set gnncmpv$i master gnncmpbr
    ip link set gnncmpv$i up
    ip netns exec gnncmp$i ip addr add 10.78.0.$((10 + i))/24 dev gl$i
    ip netns exec gnncmp$i ip link set gl$i up
    ip netns exec gnncmp$i ip link set lo up
    if [ -n "${LINK_RATE:-}" ]; then
      ip netns exec gnncmp$i tc qdisc add dev gl$i root tbf rate "$LINK_RATE" burst 1mb latency 50ms
    fi
  done
}
# Bytes both machines have sent so far (their links' tx counters).
tx_bytes() {
  local total=0 i
  for i in 0 1; do
    total=$((total + $(ip netns exec gnncmp$i cat /sys/class/net/gl$i/statistics/tx_bytes)))
  done
  echo "$total"
}
netns_down() {
  for i in 0 1; do ip netns delete gnncmp$i 2>/dev/null || true; done
  ip link delete gnncmpbr 2>/dev/null || true
}
# SHM_HUGE (never, advise, within_size or always; default: as mounted):
# /dev/shm remounted with huge=$SHM_HUGE for the run, and DGL's private
# /dev/shm mounted so too; the mount as it was comes back at the end. With
# advise only memory that asks for 2 MiB pages gets them (gnn's partition
# segments do, DGL's do not); with always both systems' do.
SHM_HUGE_BEFORE=""
if [ -n "${SHM_HUGE:-}" ]; then
  case $SHM_HUGE in
    never | advise | within_size | always) ;;
    *)
      echo "compare_dgl: SHM_HUGE=$SHM_HUGE: must be never, advise, within_size or always" >&2
      exit 2
      ;;
  esac
  SHM_HUGE_BEFORE=$(awk '$2 == "/dev/shm" {h = "never"; n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] ~ /^huge=/) h = substr(o[i], 6)} END {print h}' /proc/mounts)
  mount -o remount,huge="$SHM_HUGE" /dev/shm
  echo "compare_dgl: /dev/shm huge=$SHM_HUGE for this run (was $SHM_HUGE_BEFORE)" >&2
fi
cleanup() {
  netns_down
  if [ -n "$SHM_HUGE_BEFORE" ]; then mount -o remount,huge="$SHM_HUGE_BEFORE" /dev/shm; fi
}
trap cleanup EXIT

# --- per graph: dataset, flags, epochs ---------------------------------------
dataset_of() {
  case $1 in
    small|products|tiny|proteins|proteins-small) echo "synthetic:$1" ;;
    proteins-weighted|proteins-small-weighted) echo "synthetic:${1%-weighted}" ;;
    # synthetic:small's shape with one number per edge: gcn and graphsage
    # weigh messages by it in both systems (edge weights).
    small-weighted) echo "synthetic:nodes=100000,edges=1000000,feat=32,classes=8,train=0.1,valid=0.05,efeat=1" ;;
    # Bag-of-words features (10,000 words, 0.3 % set): gnn keeps them
    # sparse (bow) or, for the comparison, dense (bow-dense).
    bow|bow-dense) echo "synthetic:bow" ;;
    # Labelled edges (edge classification): both systems read gnn's
    # partitions (converted for DGL, with the edge labels).
    edges|edges-small) echo "synthetic:$1" ;;
    *) echo "$ROOT/../shared/datasets/$1" ;;
  esac
}
# The recipe of a graph and model: configs/<graph>_<model>.toml, else
# configs/<graph>.toml.
toml_of() {  # graph model
  if [ -f "$ROOT/configs/$1_$2.toml" ]; then echo "$ROOT/configs/$1_$2.toml"; else echo "$ROOT/configs/$1.toml"; fi
}
# Flags of a recipe (key = value lines) as --key=value.
toml_flags() {  # graph model
  sed -n 's/^\([a-z_]*\) *= *"*\([^"]*\)"*$/--\1=\2/p' "$(toml_of "$1" "$2")" |
    grep -v -e '^--log_every' -e '^--num_epochs' -e '^--eval_every' -e '^--model'
}
epochs_of() {
  local v="EPOCHS_${1//-/_}"
  if [ -n "${!v:-}" ]; then echo "${!v}"; return; fi
  case $1 in
    small|tiny|small-weighted|bow|bow-dense|edges-small) echo 10 ;;
    products|proteins|proteins-small|proteins-weighted|proteins-small-weighted|edges) echo 2 ;;
    *) sed -n 's/^num_epochs *= *//p' "$(toml_of "$1" "$MODEL")" ;;
  esac
}
# The model's own flags on the synthetic graphs (GAT: 4 heads of 16).
model_flags() {
  case $1 in
    gat) echo --model gat --num_heads 4 --num_out_heads 1 --attn_drop 0.1 ;;
    gcn) echo --model gcn ;;
    *) echo --model graphsage ;;
  esac
}
flags_of() {  # graph (the model is $MODEL)
  case $1 in
    small|products|tiny|proteins|proteins-small|small-weighted|proteins-weighted|proteins-small-weighted|bow|bow-dense)
      local hidden=16
      [ "$MODEL" = gat ] && hidden=64
      echo --num_hidden $hidden --num_layers 2 --fan_out 10,25 --batch_size 1000 --lr 0.003 \
        --dropout 0.5 $(model_flags "$MODEL") ;;
    edges|edges-small)
      echo --task edge_class --num_hidden 32 --num_layers 2 --fan_out 10,25 --batch_size 1000 \
        --lr 0.01 --dropout "${EDGE_DROPOUT:-0.5}" --exclude_target_edges "${EDGE_EXCLUDE:-true}" \
        $(model_flags "$MODEL") ;;
    *) echo $(toml_flags "$1" "$MODEL" | tr '\n' ' ') --model "$MODEL" ;;
  esac
}
# DGL's partitions of a graph for the model: with self-loops for gat/gcn.
dgl_dir() {  # graph parts
  local conv=""
  [ "$2" = 2 ] && [ "${DGL_SPLIT:-dgl}" = gnn ] && conv=-conv
  edge_graph "$1" && conv=-conv
  case $MODEL in gat|gcn) echo "$WORK/$1-dgl$2$conv-sl" ;; *) echo "$WORK/$1-dgl$2$conv" ;; esac
}
# gnn-partition's flags of a graph beyond --dataset: the *-weighted
# proteins keep each edge's mean feature as its weight (node features are
# still the means of all 8, as in the unweighted presets).
part_flags_of() {  # graph
  case $1 in
    *-weighted) [[ $1 == proteins* ]] && echo --edge_weight mean ;;
    bow-dense) echo --feature_format dense ;;
  esac
  return 0
}
# Graphs with edge labels: DGL reads gnn's partitions converted (its own
# partition_graph would renumber the edges the labels and reverses name).
edge_graph() {  # graph
  case $1 in edges|edges-small) return 0 ;; *) return 1 ;; esac
}
config_of() {  # folder -> the partition config JSON in it
  ls "$1"/*.json | head -1
}

gnn_standalone() {  # graph seed epochs
  "$BIN/gnn-train" --standalone --part_config "$(config_of "$WORK/$1-gnn1")" $(flags_of "$1") \
    --num_epochs "$3" --eval_every "$3" --seed "$2" --quiet | tail -1
}

dgl_standalone() {
  printf '127.0.0.1 30050\n' > "$WORK/ip-local.txt"
  DGL_DIST_MODE=standalone RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$((20000 + RANDOM % 20000)) \
    "$PY" "$HERE/dgl_peer.py" train --part_config "$(config_of "$(dgl_dir "$1" 1)")" \
    --ip_config "$WORK/ip-local.txt" $(flags_of "$1") --num_epochs "$3" --eval_every "$3" \
    --seed "$2" 2> "$WORK/dgl-standalone.log" | grep "^{" | tail -1
}

gnn_dist2() {  # graph seed epochs [gnn-train flags of the variant]
  printf '10.78.0.10 31050\n10.78.0.11 31050\n' > "$WORK/ip-ns.txt"
  local train="$BIN/gnn-train --num_omp_threads 1 $(flags_of "$1") --num_epochs $3 --eval_every $3 --seed $2 ${4:-}"
  local pids=() i job="cmp-$1-$2-$RANDOM"  # one id for both machines (a variant's own run)
  # Per-node launchers share one cluster secret (gnn-copy --secret_file ships it between real machines).
  [ -f "$WORK/cluster.secret" ] || (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/cluster.secret")
  # A variant with --insecure runs the whole job in plaintext (the cost of CURVE).
  local secret=(--secret_file cluster.secret)
  [[ " ${4:-} " == *" --insecure "* ]] && secret=(--insecure)
  for i in 1 0; do
    ip netns exec gnncmp$i "$BIN/gnn-launch" --machine_id $i --workspace "$WORK" "${secret[@]}" \
      --ip_config ip-ns.txt --part_config "$(config_of "$WORK/$1-gnn2")" --num_trainers 1 \
      --num_servers 1 --num_samplers 0 --master_port 29600 --job_id "$job" \
      --log_dir "$WORK/gnn-logs-m$i" "$train" > "$WORK/gnn-m$i.out" 2> "$WORK/gnn-m$i.err" &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  [ "$rc" = 0 ] || { log "gnn dist2 failed, see $WORK/gnn-m*.err"; tail -n 3 "$WORK"/gnn-m*.err >&2; return 1; }
  tail -1 "$WORK/gnn-m0.out"
}

dgl_dist2() {
  printf '10.78.0.10 30050\n10.78.0.11 30050\n' > "$WORK/ip-ns-dgl.txt"
  local cfg port=$((20000 + RANDOM % 20000)) i pids=()
  cfg=$(config_of "$(dgl_dir "$1" 2)")
  local env="DGL_IP_CONFIG=$WORK/ip-ns-dgl.txt DGL_CONF_PATH=$cfg DGL_NUM_SERVER=1 DGL_NUM_CLIENT=2"
  env+=" DGL_GRAPH_FORMAT=csc DGLBACKEND=pytorch"
  local args="--part_config $cfg --ip_config $WORK/ip-ns-dgl.txt $(flags_of "$1") --num_epochs $3"
  args+=" --eval_every $3 --seed $2 --num_omp_threads 1"
  for i in 0 1; do
    cat > "$WORK/dgl-machine$i.sh" <<EOF
mount -t tmpfs ${SHM_HUGE:+-o huge=$SHM_HUGE} tmpfs /dev/shm
env $env DGL_ROLE=server DGL_SERVER_ID=$i OMP_NUM_THREADS=1 "$PY" "$HERE/dgl_peer.py" train $args > "$WORK/dgl-server$i.log" 2>&1 &
env $env DGL_DIST_MODE=distributed DGL_ROLE=client DGL_NUM_SAMPLER=0 GLOO_SOCKET_IFNAME=gl$i \
  DGL_GROUP_ID=0 MASTER_ADDR=10.78.0.10 MASTER_PORT=$port RANK=$i WORLD_SIZE=2 LOCAL_RANK=0 \
  "$PY" "$HERE/dgl_peer.py" train $args > "$WORK/dgl-trainer$i.out" 2> "$WORK/dgl-trainer$i.log"
rc=\$?; wait; exit \$rc
EOF
    ip netns exec gnncmp$i unshare -m bash "$WORK/dgl-machine$i.sh" &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  [ "$rc" = 0 ] || { log "DGL dist2 failed, see $WORK/dgl-*.log"; return 1; }
  grep "^{" "$WORK/dgl-trainer0.out" | tail -1
}

# --- data -------------------------------------------------------------------
prepare() {  # graph
  local g=$1 ds; ds=$(dataset_of "$1")
  [ -d "$WORK/$g-gnn1" ] ||
    "$BIN/gnn-partition" --dataset "$ds" $(part_flags_of "$g") --num_parts 1 \
      --output "$WORK/$g-gnn1" --quiet >&2
  local loops=""
  case $MODEL in gat|gcn) loops=self_loops ;; esac
  if [[ " $MODES " == *" standalone "* ]] && [ ! -d "$(dgl_dir "$g" 1)" ] && edge_graph "$g"; then
    log "gnn's partition of $ds in DGL's format, edge labels included"
    "$PY" "$HERE/dgl_peer.py" convert "$(config_of "$WORK/$g-gnn1")" "$(dgl_dir "$g" 1)" >&2
  elif [[ " $MODES " == *" standalone "* ]] && [ ! -d "$(dgl_dir "$g" 1)" ]; then
    log "DGL partitions $ds (1 part${loops:+, self-loops})"
    "$PY" "$HERE/dgl_peer.py" partition "$(config_of "$WORK/$g-gnn1")" 1 "$(dgl_dir "$g" 1)" \
      metis $loops >&2
  fi
  if [[ " $MODES " == *" dist2 "* ]]; then
    local method_var="PART_METHOD_${g//-/_}"
    local method=${!method_var:-metis}
    [ -d "$WORK/$g-gnn2" ] ||
      "$BIN/gnn-partition" --dataset "$ds" $(part_flags_of "$g") --num_parts 2 --part_method "$method" \
        --balance_train --balance_edges --output "$WORK/$g-gnn2" --quiet >&2
    if [ ! -d "$(dgl_dir "$g" 2)" ] && { [ "${DGL_SPLIT:-dgl}" = gnn ] || edge_graph "$g"; }; then
      log "gnn's 2 partitions of $ds in DGL's format${loops:+ (self-loops)}"
      "$PY" "$HERE/dgl_peer.py" convert "$(config_of "$WORK/$g-gnn2")" "$(dgl_dir "$g" 2)" $loops >&2
    elif [ ! -d "$(dgl_dir "$g" 2)" ]; then
      log "DGL partitions $ds (2 parts, $method${loops:+, self-loops})"
      "$PY" "$HERE/dgl_peer.py" partition "$(config_of "$WORK/$g-gnn1")" 2 "$(dgl_dir "$g" 2)" \
        "$method" $loops >&2
    fi
  fi
}

# One run of a system: its summary line, with "tx_bytes" (both machines'
# links over the run) added for dist2.
measure() {  # sys mode graph seed epochs [flags]
  local before line
  [ "$2" = dist2 ] && before=$(tx_bytes)
  line=$("${1}_${2}" "$3" "$4" "$5" "${6:-}") || return 1
  if [ "$2" = dist2 ]; then
    line=$(/usr/bin/python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["tx_bytes"]=int(sys.argv[2]); print(json.dumps(r))' \
      "$line" "$(($(tx_bytes) - before))")
  fi
  echo "$line"
}
GNN_VARIANTS=${GNN_VARIANTS:-all:}

RESULTS="$WORK/results.jsonl"
: > "$RESULTS"
# The runs happen in command substitutions (subshells): the namespaces are
# made here, once, and removed on exit.
[[ " $MODES " == *" dist2 "* ]] && netns_up
MODELS=${MODELS:-graphsage}
for MODEL in $MODELS; do
for g in $GRAPHS; do
  prepare "$g"
  epochs=$(epochs_of "$g")
  for mode in $MODES; do
    variants="all:"
    [ "$mode" = dist2 ] && variants=$GNN_VARIANTS
    for seed in $SEEDS; do
      for run in $variants dgl; do
        sys=gnn name=${run%%:*} flags=${run#*:}
        [ "$run" = dgl ] && sys=dgl name=dgl flags=
        log "$g $MODEL $mode $name seed $seed ($epochs epochs${LINK_RATE:+, link $LINK_RATE})"
        flags=${flags//+/ }
        line=$(measure "$sys" "$mode" "$g" "$seed" "$epochs" "${flags//=/ }") || {
          log "$sys $mode on $g, seed $seed failed (logs in $WORK)"
          exit 1
        }
        echo "{\"graph\":\"$g\",\"model\":\"$MODEL\",\"mode\":\"$mode\",\"sys\":\"$name\",\"seed\":$seed,\"epochs\":$epochs,\"r\":$line}" >> "$RESULTS"
      done
    done
  done
done
done

/usr/bin/python3 - "$RESULTS" "$WORK" <<'EOF'
import glob, json, statistics, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
work = sys.argv[2]
agg = defaultdict(lambda: defaultdict(list))
order = []
for r in rows:
    s = r["r"]
    key = (r["graph"], r.get("model", "graphsage"), r["mode"], r["sys"])
    if key not in order:
        order.append(key)
    k = agg[key]
    k["t"].append(s["mean_epoch_time_s"])
    k["v"].append(s["seeds_per_s"])
    k["a"].append(next(s[f] for f in ("final_test_acc", "test_acc", "final_test_rocauc",
                                      "test_rocauc", "final_test_rmse", "test_rmse") if f in s))
    if "tx_bytes" in s:
        cfg = glob.glob(f"{work}/{r['graph']}-gnn2/*.json")[0]
        c = json.load(open(cfg))
        # Seeds: train nodes, or the train edges of an edge task.
        train = sum(c[f"part-{p}"].get("num_train_edges", c[f"part-{p}"]["num_train"])
                    for p in range(c["num_parts"]))
        k["mb_epoch"].append(s["tx_bytes"] / 2 / r["epochs"] / 1e6)
        k["b_seed"].append(s["tx_bytes"] / (train * r["epochs"]))
med = lambda v: statistics.median(v) if v else float("nan")
mean = lambda v: sum(v) / len(v) if v else float("nan")
sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
name = lambda g: "synthetic:" + g if g in ("tiny", "small", "products", "proteins",
                                            "proteins-small", "proteins-weighted",
                                            "proteins-small-weighted", "edges",
                                            "edges-small") else g
print("| graph | model | mode | system | s/epoch | seeds/s | vs DGL seeds/s | MB sent/machine/epoch "
      "| bytes/seed | vs DGL bytes | test acc (ROC-AUC) | seeds |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for g, model, m, sysname in order:
    k = agg[(g, model, m, sysname)]
    dgl = agg.get((g, model, m, "dgl"), {})
    speed = med(k["v"]) / med(dgl["v"]) if dgl and dgl["v"] else float("nan")
    net = (f"{med(k['mb_epoch']):.1f} | {med(k['b_seed']):,.0f} | "
           f"{med(k['b_seed']) / med(dgl['b_seed']):.2f}x" if k["b_seed"] and dgl else "- | - | -")
    label = sysname if sysname == "dgl" else "gnn" + ("" if sysname == "all" else " " + sysname)
    print(f"| {name(g)} | {model} | {m} | {label} | {med(k['t']):.4f} | {med(k['v']):,.0f} | {speed:.2f}x "
          f"| {net} | {mean(k['a']):.4f} ± {sd(k['a']):.4f} | {len(k['v'])} |")
EOF
log "raw results: $RESULTS"
