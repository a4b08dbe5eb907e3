#!/usr/bin/env bash
# The GPU path, checked on a machine with a GPU and torch 2.11+cu130 but no
# network (the device machines this project is sometimes lent), in stages
# of at most a few minutes each:
#
#   here:  bash bench/gpu_check.sh pack
#          builds ./build-cuda (scripts/build-cuda.sh, without PT-Scotch) and
#          gathers build-cuda/gpu: the binaries and the Debian libraries they
#          need that are not torch's, CUDA's or the C library's (libzmq,
#          libsodium, METIS, ...): at most 60 MiB, to carry to the GPU machine.
#   there: bash bench/gpu_check.sh tests
#          the GPU unit tests (CUDA aggregations against the CPU's, values and
#          gradients, float and double, bit for bit), standalone GraphSAGE on
#          synthetic:small for 3 seeds on the CPU, on the GPU and on the GPU
#          with its feature cache (test accuracy mean and sd of each; the
#          GPU's means within one CPU sd; the cache's hit rates), and a
#          1-machine gnn-launch job with one GPU trainer.
#   there: bash bench/gpu_check.sh bench
#          seeds/s of standalone training, CPU against GPU and GPU with the
#          feature cache, on synthetic:small and synthetic:products (medians
#          of 3 alternating runs, no evaluation).
#   there: bash bench/gpu_check.sh gat
#          GAT (4 heads of 16, compare_dgl.sh's flags): the GPU attention op's
#          unit test, standalone test accuracy on synthetic:small for 3 seeds
#          on the CPU and on the GPU (the GPU's mean within one CPU sd), and
#          seeds/s CPU against GPU without and with the feature cache on
#          synthetic:products (medians of 3 alternating runs of
#          GNN_GPU_PRODUCTS_EPOCHS epochs).
#   there: bash bench/gpu_check.sh typed
#          RGCN and RGAT (rgcn_bench.sh's flags) standalone on
#          synthetic:mag-small, 3 seeds on the CPU and on the GPU: test
#          accuracy (the GPU's mean within one CPU sd) and seeds/s.
#   there: bash bench/gpu_check.sh tasks
#          round 4's tasks and edge data on the GPU against the CPU,
#          standalone, seeds 0-2 (GNN_GPU_SEEDS), after the GPU unit tests
#          (edge-weighted sums among them): multi-label GraphSAGE on
#          synthetic:proteins-small (node features from edge means, test
#          ROC-AUC), GraphSAGE and GAT with edge features in the message,
#          GCN with edge weights, node regression (test RMSE), edge
#          classification and edge regression (GraphSAGE's MLP decoder,
#          target edges excluded), link prediction (link AUC) and RGCN
#          edge classification on synthetic:mag-small (2 epochs, batches of
#          1024): each metric's GPU
#          mean within one CPU sd, and seeds/s. GNN_GPU_CASES: some cases
#          only (names as the stage prints them).
#   there: bash bench/gpu_check.sh tasksdist
#          edge classification through gnn-launch on one machine (1
#          server, 2 gnn-sampler processes, 1 trainer: edge batches with
#          the first layer summed at the owners and the target edges
#          excluded there) with the trainer on the CPU and on the GPU,
#          seeds 0-2: test accuracy and seeds/s.
#   there: bash bench/gpu_check.sh tasksbench
#          seeds/s of standalone training, CPU against GPU (gnn-train's
#          default feature cache), on the issues' benchmark graphs:
#          multi-label GraphSAGE on synthetic:proteins and edge
#          classification on synthetic:edges (compare_dgl.sh's flags;
#          medians of 3 alternating runs of GNN_GPU_PRODUCTS_EPOCHS epochs,
#          no evaluation).
#   there: bash bench/gpu_check.sh typeddist
#          RGCN through gnn-launch on one machine (1 server, 2 gnn-sampler
#          processes, 1 trainer): the distributed typed path (batches with
#          the first layer's per-relation means summed at the owner, typed
#          sampler processes, the NCCL group) with the trainer on the CPU
#          and on the GPU, seeds 0-2: test accuracy (the GPU's mean within
#          one CPU sd) and seeds/s. GNN_GPU_SEEDS: other seeds.
#
# "GPU" runs pass --gpu_cache_mb 0 (gnn-train's default, -1, caches up to
# half the GPU's free memory). On a machine without a GPU the stages after
# pack say so and stop (exit 3).
# Environment: GNN_GPU_WORK (scratch folder, default /tmp/gnn-gpu-check),
# GNN_GPU_EPOCHS (training epochs, default 5; synthetic:products trains
# GNN_GPU_PRODUCTS_EPOCHS, default 1), GNN_GPU_SMALL_CACHE_MB and
# GNN_GPU_PRODUCTS_CACHE_MB (--gpu_cache_mb of the cached runs, default 4
# and -1, gnn-train's default: up to half the GPU's free memory), OUT (a folder: logs and the
# figures are written there too).
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE="${1:-}"
BUNDLE=build-cuda/gpu
BINARIES=(gnn-train gnn-partition gnn-server gnn-launch gnn-sampler gnn-copy)
WORK="${GNN_GPU_WORK:-/tmp/gnn-gpu-check}"
EPOCHS="${GNN_GPU_EPOCHS:-5}"
PRODUCTS_EPOCHS="${GNN_GPU_PRODUCTS_EPOCHS:-1}"
SMALL_CACHE_MB="${GNN_GPU_SMALL_CACHE_MB:-4}"
PRODUCTS_CACHE_MB="${GNN_GPU_PRODUCTS_CACHE_MB:--1}"
LOG_DIR="${OUT:-$WORK}"
mkdir -p "$WORK" "$LOG_DIR"

say() { echo "gpu_check: $*" | tee -a "$LOG_DIR/gpu_check.txt" >&2; }

# torch's libraries and the CUDA ones its wheel carries, for a C++ program.
torch_library_path() {
  python3 - <<'PY'
import glob, os, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
dirs += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
print(":".join(d for d in dirs if os.path.isdir(d)))
PY
}

pack() {
  local build="${GNN_CUDA_BUILD_DIR:-build-cuda}"
  GNN_CUDA_BUILD_DIR="$build" GNN_TARGETS="${BINARIES[*]} gnn_train_unit_tests" \
    bash scripts/build-cuda.sh -DGNN_WITH_PTSCOTCH=OFF
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
  for b in "${BINARIES[@]}"; do
    cp "$build/apps/$b" "$BUNDLE/bin/"
  done
  cp "$build/tests/gnn_train_unit_tests" "$BUNDLE/bin/"
  strip "$BUNDLE"/bin/*
  # Every library the binaries load that the GPU machine's torch, CUDA or C
  # library does not provide.
  LD_LIBRARY_PATH="$(cat "$build/torch_library_path")" ldd "$BUNDLE"/bin/* |
    awk '/=> \// {print $3}' | sort -u |
    grep -v -E '/(torch|nvidia|cuda)/|/lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+)\.so|ld-linux|/lib(resolv|util|nsl|anl)\.so' |
    while read -r lib; do cp -L "$lib" "$BUNDLE/lib/"; done
  local mib
  mib=$(du -sm "$BUNDLE" | cut -f1)
  if [ "$mib" -gt 60 ]; then
    echo "gpu_check: $BUNDLE is $mib MiB, over the 60 MiB a device call carries" >&2
    exit 1
  fi
  say "packed $BUNDLE ($mib MiB): carry it (run's carry: [\"$BUNDLE\"])"
}

# The bundle's binaries on their library path; stops without a GPU.
prepare_run() {
  [ -x "$BUNDLE/bin/gnn-train" ] || {
    echo "gpu_check: no $BUNDLE/bin/gnn-train: run 'bash bench/gpu_check.sh pack' on the build machine and carry $BUNDLE" >&2
    exit 2
  }
  export LD_LIBRARY_PATH="$PWD/$BUNDLE/lib:$(torch_library_path)"
  export PATH="$PWD/$BUNDLE/bin:$PATH"
  if ! nvidia-smi -L >"$WORK/gpus.txt" 2>&1 || ! grep -q GPU "$WORK/gpus.txt"; then
    say "no GPU on this machine ($(head -1 "$WORK/gpus.txt")): nothing to check"
    exit 3
  fi
  say "$(head -1 "$WORK/gpus.txt")"
}

partition() {  # dataset -> config path (made once)
  local name
  name=$(echo "$1" | sed 's/^synthetic:/synthetic-/')
  if [ ! -f "$WORK/$name/$name.json" ]; then
    gnn-partition --dataset "$1" --num_parts 1 --output "$WORK/$name" --overwrite --quiet >/dev/null
  fi
  echo "$WORK/$name/$name.json"
}

# The JSON summary's fields $2 (comma-separated) of a standalone run with
# flags $3..., space-separated. EVAL: --eval_every (default: the last epoch).
train_fields() {
  local config=$1 fields=$2
  shift 2
  gnn-train --standalone --part_config "$config" --num_epochs "$EPOCHS" \
    --eval_every "${EVAL:-$EPOCHS}" --log_every 1000000 "$@" 2>>"$LOG_DIR/train.log" | tail -1 |
    python3 -c "import json, sys; d = json.load(sys.stdin); print(*(d[f] for f in '$fields'.split(',')))"
}

mean_sd() { python3 -c "import statistics as s, sys; v = [float(x) for x in sys.argv[1:]]; print(f'{s.mean(v):.4f} {s.stdev(v) if len(v) > 1 else 0.0:.4f}')" "$@"; }
median() { python3 -c "import statistics as s, sys; print(f'{s.median(map(float, sys.argv[1:])):.0f}')" "$@"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }

# Fails the stage unless mean $1 is within one sd $3 of mean $2 (sd floor 1e-3).
within_sd() { python3 -c "import sys; sys.exit(0 if abs($1 - $2) <= max($3, 1e-3) else 1)"; }

tests() {
  prepare_run
  gnn_train_unit_tests "*(GPU)*" 2>&1 | tee "$LOG_DIR/gpu_unit.txt"
  if grep -q "SKIPPED" "$LOG_DIR/gpu_unit.txt"; then
    say "the GPU unit tests skipped: this binary or machine has no CUDA"
    exit 1
  fi
  local config cpu=() gpu=() cached=() hit rate=() acc
  config=$(partition synthetic:small)
  for seed in 0 1 2; do
    cpu+=("$(train_fields "$config" test_acc --seed "$seed" --num_gpus -1)")
    gpu+=("$(train_fields "$config" test_acc --seed "$seed" --num_gpus 1 --gpu_cache_mb 0)")
    read -r acc hit <<<"$(train_fields "$config" test_acc,gpu_cache_hit_rate --seed "$seed" \
      --num_gpus 1 --gpu_cache_mb "$SMALL_CACHE_MB")"
    cached+=("$acc")
    rate+=("$hit")
  done
  read -r cm cs <<<"$(mean_sd "${cpu[@]}")"
  read -r gm gs <<<"$(mean_sd "${gpu[@]}")"
  read -r km ks <<<"$(mean_sd "${cached[@]}")"
  say "synthetic:small standalone test accuracy, seeds 0-2: CPU $cm +- $cs, GPU $gm +- $gs," \
    "GPU with --gpu_cache_mb $SMALL_CACHE_MB $km +- $ks (hit rates ${rate[*]})"
  within_sd "$gm" "$cm" "$cs" || { say "GPU accuracy is not within one CPU sd"; exit 1; }
  within_sd "$km" "$cm" "$cs" || { say "GPU accuracy with the cache is not within one CPU sd"; exit 1; }
  # One machine, one server, one GPU trainer, through gnn-launch.
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  echo "127.0.0.1 $port" >"$WORK/ip_config.txt"
  mkdir -p "$WORK/ws"
  cp -r "$(dirname "$config")" "$WORK/ws/"
  cp "$WORK/ip_config.txt" "$WORK/ws/"
  gnn-launch --workspace "$WORK/ws" --num_trainers 1 --num_samplers 0 --num_servers 1 \
    --part_config "$(basename "$(dirname "$config")")/$(basename "$config")" \
    --ip_config ip_config.txt "gnn-train --num_epochs 2 --num_gpus 1" \
    2>"$LOG_DIR/launch.log" | tail -1 >"$LOG_DIR/launch.json"
  say "gnn-launch with one GPU trainer: $(cat "$LOG_DIR/launch.json")"
  # GCN reads the rows themselves (no means): with the cache, block 0's
  # input is assembled on the GPU from the same values, so training must
  # end with the same parameters.
  local p1 p2
  p1=$(train_fields "$config" param_checksum --seed 0 --num_gpus 1 --model gcn --gpu_cache_mb 0)
  p2=$(train_fields "$config" param_checksum --seed 0 --num_gpus 1 --model gcn \
    --gpu_cache_mb "$SMALL_CACHE_MB")
  say "GCN on the GPU, seed 0: parameter checksum $p1 without the cache, $p2 with it"
  [ "$p1" = "$p2" ] || { say "the GPU feature cache changed GCN's parameters"; exit 1; }
}

# seeds/s: CPU, GPU, and GPU with the feature cache, 3 alternating runs each.
bench() {
  prepare_run
  local spec config mb c g k hit cpu gpu cached rate
  for spec in synthetic:small synthetic:products; do
    config=$(partition "$spec")
    mb=$SMALL_CACHE_MB
    if [ "$spec" = synthetic:products ]; then
      EPOCHS=$PRODUCTS_EPOCHS
      mb=$PRODUCTS_CACHE_MB
    fi
    cpu=()
    gpu=()
    cached=()
    rate=()
    for seed in 0 1 2; do
      cpu+=("$(EVAL=0 train_fields "$config" seeds_per_s --seed "$seed" --num_gpus -1)")
      gpu+=("$(EVAL=0 train_fields "$config" seeds_per_s --seed "$seed" --num_gpus 1 --gpu_cache_mb 0)")
      read -r k hit <<<"$(EVAL=0 train_fields "$config" seeds_per_s,gpu_cache_hit_rate \
        --seed "$seed" --num_gpus 1 --gpu_cache_mb "$mb")"
      cached+=("$k")
      rate+=("$hit")
    done
    c=$(median "${cpu[@]}")
    g=$(median "${gpu[@]}")
    k=$(median "${cached[@]}")
    say "$spec standalone seeds/s (median of 3, $EPOCHS epochs, no evaluation): CPU $c," \
      "GPU $g ($(ratio "$g" "$c")x), GPU with --gpu_cache_mb $mb $k ($(ratio "$k" "$c")x;" \
      "hit rates ${rate[*]})"
  done
}

# GAT on the GPU against the CPU: the op's unit test, accuracy, seeds/s.
GAT_FLAGS=(--model gat --num_heads 4 --num_out_heads 1 --attn_drop 0.1 --num_hidden 64
  --num_layers 2 --fan_out 10,25 --batch_size 1000 --lr 0.003 --dropout 0.5)
gat() {
  prepare_run
  gnn_train_unit_tests "*(GPU)*" 2>&1 | tee "$LOG_DIR/gat_unit.txt"
  if grep -q "SKIPPED" "$LOG_DIR/gat_unit.txt" || ! grep -q "All tests passed" "$LOG_DIR/gat_unit.txt"; then
    say "the GPU unit tests did not pass"
    exit 1
  fi
  local config cpu=() gpu=() c g verdict=0
  config=$(partition synthetic:small)
  for seed in 0 1 2; do
    cpu+=("$(train_fields "$config" test_acc --seed "$seed" --num_gpus -1 "${GAT_FLAGS[@]}")")
    gpu+=("$(train_fields "$config" test_acc --seed "$seed" --num_gpus 1 --gpu_cache_mb 0 "${GAT_FLAGS[@]}")")
  done
  read -r cm cs <<<"$(mean_sd "${cpu[@]}")"
  read -r gm gs <<<"$(mean_sd "${gpu[@]}")"
  say "GAT synthetic:small standalone test accuracy, seeds 0-2, $EPOCHS epochs: CPU $cm +- $cs" \
    "(${cpu[*]}), GPU $gm +- $gs (${gpu[*]})"
  # Judged after the timing runs, which run either way.
  within_sd "$gm" "$cm" "$cs" || verdict=1
  config=$(partition synthetic:products)
  EPOCHS=$PRODUCTS_EPOCHS
  cpu=()
  gpu=()
  local auto=() rate=() k hit
  for seed in 0 1 2; do
    cpu+=("$(EVAL=0 train_fields "$config" seeds_per_s --seed "$seed" --num_gpus -1 "${GAT_FLAGS[@]}")")
    gpu+=("$(EVAL=0 train_fields "$config" seeds_per_s --seed "$seed" --num_gpus 1 \
      --gpu_cache_mb 0 "${GAT_FLAGS[@]}")")
    read -r k hit <<<"$(EVAL=0 train_fields "$config" seeds_per_s,gpu_cache_hit_rate --seed "$seed" \
      --num_gpus 1 --gpu_cache_mb "$PRODUCTS_CACHE_MB" "${GAT_FLAGS[@]}")"
    auto+=("$k")
    rate+=("$hit")
    say "GAT synthetic:products seed $seed seeds/s: CPU ${cpu[-1]}, GPU ${gpu[-1]}," \
      "GPU with --gpu_cache_mb $PRODUCTS_CACHE_MB $k (hit rate $hit)"
  done
  c=$(median "${cpu[@]}")
  g=$(median "${gpu[@]}")
  k=$(median "${auto[@]}")
  say "GAT synthetic:products standalone seeds/s (median of 3, $EPOCHS epochs, no evaluation):" \
    "CPU $c, GPU without a feature cache $g ($(ratio "$g" "$c")x), GPU with" \
    "--gpu_cache_mb $PRODUCTS_CACHE_MB $k ($(ratio "$k" "$c")x; hit rates ${rate[*]})"
  [ "$verdict" = 0 ] || { say "GAT's GPU accuracy is not within one CPU sd"; exit 1; }
}

# Says the test accuracy (mean and sd) and median seeds/s of the caller's
# arrays cpu, gpu, cpu_sps and gpu_sps under the label $1; fails unless the
# GPU's mean accuracy is within one CPU sd.
cpu_gpu_summary() {
  local cm cs gm gs c g
  read -r cm cs <<<"$(mean_sd "${cpu[@]}")"
  read -r gm gs <<<"$(mean_sd "${gpu[@]}")"
  c=$(median "${cpu_sps[@]}")
  g=$(median "${gpu_sps[@]}")
  say "$1: test accuracy CPU $cm +- $cs, GPU $gm +- $gs; seeds/s (median) CPU $c, GPU $g" \
    "($(ratio "$g" "$c")x)"
  within_sd "$gm" "$cm" "$cs"
}

# RGCN and RGAT (typed graphs; rgcn_bench.sh's flags) on the GPU against the
# CPU: test accuracy and seeds/s on synthetic:mag-small, 3 seeds each.
typed() {
  prepare_run
  local config model acc sps verdict=0
  config="$WORK/synthetic-mag-small/synthetic-mag-small.json"
  if [ ! -f "$config" ]; then
    gnn-partition --dataset synthetic:mag-small --undirected --balance_train --num_parts 1 \
      --output "$WORK/synthetic-mag-small" --overwrite --quiet >/dev/null
  fi
  for model in rgcn rgat; do
    local flags=(--model "$model" --fan_out 25,10 --num_hidden 64 --lr 0.01 --dropout 0.5
      --sparse_lr 0.06 --batch_size 256)
    if [ "$model" = rgcn ]; then flags+=(--num_bases 2); else flags+=(--num_heads 4 --attn_drop 0); fi
    local cpu=() gpu=() cpu_sps=() gpu_sps=()
    for seed in 0 1 2; do
      read -r acc sps <<<"$(train_fields "$config" test_acc,seeds_per_s --seed "$seed" \
        --num_gpus -1 "${flags[@]}")"
      cpu+=("$acc")
      cpu_sps+=("$sps")
      read -r acc sps <<<"$(train_fields "$config" test_acc,seeds_per_s --seed "$seed" \
        --num_gpus 1 --gpu_cache_mb 0 "${flags[@]}")"
      gpu+=("$acc")
      gpu_sps+=("$sps")
    done
    cpu_gpu_summary "$model synthetic:mag-small standalone, seeds 0-2, $EPOCHS epochs" ||
      { say "$model's GPU accuracy is not within one CPU sd"; verdict=1; }
  done
  [ "$verdict" = 0 ] || exit 1
}

# Trains through gnn-launch on one machine (1 server, 2 gnn-sampler
# processes, 1 trainer) in workspace $3 with part config $4 (relative to
# it) and gnn-train flags $5, per seed the trainer on the CPU, then on the
# GPU; says each run under the label $1 and logs to $LOG_DIR/$2.log. Fills
# the caller's arrays cpu, gpu (test accuracy), cpu_sps and gpu_sps.
launch_cpu_gpu() {
  local label=$1 log=$2 ws=$3 part=$4 flags=$5 seed dev port line acc sps
  for seed in ${GNN_GPU_SEEDS:-0 1 2}; do
    for dev in -1 1; do
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      echo "127.0.0.1 $port" >"$ws/ip_config.txt"
      line=$(gnn-launch --workspace "$ws" --num_trainers 1 --num_samplers 2 --num_servers 1 \
        --part_config "$part" --ip_config ip_config.txt \
        "gnn-train $flags --seed $seed --num_gpus $dev --gpu_cache_mb 0" \
        2>>"$LOG_DIR/$log.log" | tail -1)
      read -r acc sps <<<"$(echo "$line" | python3 -c "import json, sys; d = json.load(sys.stdin); print(d['test_acc'], d['seeds_per_s'])")"
      say "$label gnn-launch seed $seed --num_gpus $dev: test accuracy $acc, seeds/s $sps"
      if [ "$dev" = -1 ]; then cpu+=("$acc"); cpu_sps+=("$sps"); else gpu+=("$acc"); gpu_sps+=("$sps"); fi
    done
  done
}

# RGCN through gnn-launch (typed samplers, means at the owner) on the CPU
# and on the GPU.
typeddist() {
  prepare_run
  local config
  config="$WORK/synthetic-mag-small/synthetic-mag-small.json"
  if [ ! -f "$config" ]; then
    gnn-partition --dataset synthetic:mag-small --undirected --balance_train --num_parts 1 \
      --output "$WORK/synthetic-mag-small" --overwrite --quiet >/dev/null
  fi
  mkdir -p "$WORK/tws"
  cp -r "$(dirname "$config")" "$WORK/tws/"
  local flags="--model rgcn --num_bases 2 --fan_out 25,10 --num_hidden 64 --lr 0.01 --dropout 0.5"
  flags+=" --sparse_lr 0.06 --batch_size 256 --num_epochs $EPOCHS --eval_every $EPOCHS --log_every 1000000"
  local cpu=() gpu=() cpu_sps=() gpu_sps=()
  launch_cpu_gpu rgcn typeddist "$WORK/tws" synthetic-mag-small/synthetic-mag-small.json "$flags"
  cpu_gpu_summary "rgcn synthetic:mag-small through gnn-launch (2 samplers), seeds ${GNN_GPU_SEEDS:-0 1 2}, $EPOCHS epochs" ||
    { say "rgcn's distributed GPU accuracy is not within one CPU sd"; exit 1; }
}

# A 1-part partitioning of dataset $2 named $1 with gnn-partition flags
# $3..., made once; prints its config.
partition_as() {
  local name=$1 spec=$2
  shift 2
  if [ ! -f "$WORK/$name/done" ]; then
    gnn-partition --dataset "$spec" --num_parts 1 --output "$WORK/$name" --overwrite --quiet "$@" \
      >/dev/null
    touch "$WORK/$name/done"
  fi
  ls "$WORK/$name"/*.json
}

# One case of `tasks`: $1 its name, $2 the summary's metric, $3 the config,
# then gnn-train's flags; CPU and GPU runs per seed, the GPU's mean metric
# within one CPU sd. Sets verdict=1 when not.
task_case() {
  local name=$1 metric=$2 config=$3 seed m sps
  shift 3
  if [ -n "${GNN_GPU_CASES:-}" ] && [[ " $GNN_GPU_CASES " != *" $name "* ]]; then return 0; fi
  local cpu=() gpu=() cpu_sps=() gpu_sps=()
  for seed in ${GNN_GPU_SEEDS:-0 1 2}; do
    read -r m sps <<<"$(train_fields "$config" "$metric,seeds_per_s" --seed "$seed" --num_gpus -1 "$@")"
    cpu+=("$m")
    cpu_sps+=("$sps")
    read -r m sps <<<"$(train_fields "$config" "$metric,seeds_per_s" --seed "$seed" --num_gpus 1 \
      --gpu_cache_mb 0 "$@")"
    gpu+=("$m")
    gpu_sps+=("$sps")
  done
  local cm cs gm gs
  read -r cm cs <<<"$(mean_sd "${cpu[@]}")"
  read -r gm gs <<<"$(mean_sd "${gpu[@]}")"
  local c g
  c=$(median "${cpu_sps[@]}")
  g=$(median "${gpu_sps[@]}")
  say "$name: $metric CPU $cm +- $cs (${cpu[*]}), GPU $gm +- $gs (${gpu[*]}); seeds/s (median)" \
    "CPU $c, GPU $g ($(ratio "$g" "$c")x)"
  within_sd "$gm" "$cm" "$cs" || { say "$name: the GPU's $metric is not within one CPU sd"; verdict=1; }
}

# Round 4's tasks and edge data (issues 52 and 54) on the GPU.
tasks() {
  prepare_run
  local verdict=0 proteins weighted regression edges eregression tiny mag
  gnn_train_unit_tests "*(GPU)*" 2>&1 | tee "$LOG_DIR/tasks_unit.txt"
  if grep -q "SKIPPED" "$LOG_DIR/tasks_unit.txt" || ! grep -q "All tests passed" "$LOG_DIR/tasks_unit.txt"; then
    say "the GPU unit tests did not pass"
    verdict=1
  fi
  local sage=(--model graphsage --batch_size 256 --num_hidden 64 --lr 0.01)
  proteins=$(partition_as proteins-small synthetic:proteins-small)
  weighted=$(partition_as proteins-small-weighted synthetic:proteins-small --edge_weight mean)
  regression=$(partition_as regression \
    "synthetic:nodes=20000,edges=200000,feat=16,classes=4,task=regression")
  edges=$(partition_as edges-small synthetic:edges-small)
  eregression=$(partition_as edges-regression \
    "synthetic:nodes=5000,edges=40000,feat=16,classes=8,train=0.2,valid=0.1,etask=regression")
  tiny=$(partition_as tiny-link synthetic:tiny --val_edges 0.1)
  mag=$(partition_as mag-edges synthetic:mag-small,etask=class --undirected)
  task_case multilabel test_rocauc "$proteins" "${sage[@]}"
  task_case sage-edgefeat-concat test_rocauc "$proteins" "${sage[@]}" --edge_feat_mp_op concat
  task_case gat-edgefeat-mul test_rocauc "$proteins" "${GAT_FLAGS[@]}" --edge_feat_mp_op mul
  task_case gcn-edge-weight test_rocauc "$weighted" --model gcn --batch_size 256 --num_hidden 64 \
    --lr 0.01
  task_case node-regression test_rmse "$regression" "${sage[@]}" --task node_regression
  local edge=(--num_hidden 32 --num_layers 2 --fan_out 10,25 --batch_size 1000 --lr 0.01
    --dropout 0.5 --model graphsage)
  task_case edge-class test_acc "$edges" --task edge_class "${edge[@]}"
  task_case edge-regression test_rmse "$eregression" --task edge_regression "${edge[@]}"
  task_case link link_auc "$tiny" --task link --model graphsage --batch_size 256
  EPOCHS=2 task_case rgcn-edge-class test_acc "$mag" --task edge_class --model rgcn --num_bases 2 \
    --fan_out 25,10 --num_hidden 64 --lr 0.01 --dropout 0.5 --sparse_lr 0.06 --batch_size 1024
  [ "$verdict" = 0 ] || exit 1
}

# seeds/s CPU against GPU on synthetic:proteins and synthetic:edges.
tasksbench() {
  prepare_run
  local config name c g cpu gpu rate k hit
  local common=(--num_layers 2 --fan_out 10,25 --batch_size 1000 --dropout 0.5 --model graphsage)
  EPOCHS=$PRODUCTS_EPOCHS
  for name in proteins edges; do
    config=$(partition_as "$name" "synthetic:$name")
    local flags=(--num_hidden 16 --lr 0.003 "${common[@]}")
    [ "$name" = edges ] && flags=(--task edge_class --num_hidden 32 --lr 0.01 "${common[@]}")
    cpu=()
    gpu=()
    rate=()
    for seed in 0 1 2; do
      cpu+=("$(EVAL=0 train_fields "$config" seeds_per_s --seed "$seed" --num_gpus -1 "${flags[@]}")")
      read -r k hit <<<"$(EVAL=0 train_fields "$config" seeds_per_s,gpu_cache_hit_rate \
        --seed "$seed" --num_gpus 1 "${flags[@]}")"
      gpu+=("$k")
      rate+=("$hit")
      say "synthetic:$name seed $seed seeds/s: CPU ${cpu[-1]}, GPU $k (cache hit rate $hit)"
    done
    c=$(median "${cpu[@]}")
    g=$(median "${gpu[@]}")
    say "synthetic:$name standalone seeds/s (median of 3, $EPOCHS epochs, no evaluation): CPU $c," \
      "GPU with the default feature cache $g ($(ratio "$g" "$c")x; hit rates ${rate[*]})"
  done
}

# Edge classification through gnn-launch, the trainer on the CPU and the GPU.
tasksdist() {
  prepare_run
  local config
  config=$(partition_as edges-small synthetic:edges-small)
  mkdir -p "$WORK/ews"
  cp -r "$(dirname "$config")" "$WORK/ews/"
  local flags="--task edge_class --num_hidden 32 --num_layers 2 --fan_out 10,25 --batch_size 1000"
  flags+=" --lr 0.01 --dropout 0.5 --model graphsage --num_epochs $EPOCHS --eval_every $EPOCHS"
  flags+=" --log_every 1000000"
  local cpu=() gpu=() cpu_sps=() gpu_sps=()
  launch_cpu_gpu edge_class tasksdist "$WORK/ews" \
    "$(basename "$(dirname "$config")")/$(basename "$config")" "$flags"
  cpu_gpu_summary "edge_class synthetic:edges-small through gnn-launch (2 samplers), seeds ${GNN_GPU_SEEDS:-0 1 2}, $EPOCHS epochs" ||
    { say "edge_class's distributed GPU accuracy is not within one CPU sd"; exit 1; }
}

case "$STAGE" in
  pack) pack ;;
  tests) tests ;;
  bench) bench ;;
  gat) gat ;;
  typed) typed ;;
  typeddist) typeddist ;;
  tasks) tasks ;;
  tasksdist) tasksdist ;;
  tasksbench) tasksbench ;;
  *)
    echo "usage: bash bench/gpu_check.sh pack|tests|bench|gat|typed|typeddist|tasks|tasksdist|tasksbench (see the header)" >&2
    exit 2
    ;;
esac
