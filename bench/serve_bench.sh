#!/usr/bin/env bash
# gnn-serve benchmark (issue 50, item 3): online predictions of a 2-partition
# graph served by 2 machines (network namespaces on a bridge, CURVE on: the
# job's keys derive from a cluster secret, per-node gnn-launch per machine).
#
#   1. gnn-partition: 1 part (training) and 2 parts (serving, offline inference)
#   2. gnn-train --standalone, 1 epoch: the model
#   3. offline reference per fan-out: gnn-train --inference of every node on
#      the 2 machines (full: layer-wise over every neighbour; 10,25: --fan_out
#      10,25, each node from its sample): nodes_written / inference_time_s
#   4. per fan-out in FANOUTS ("full" = every neighbour, and 10,25): gnn-serve
#      on both machines (gnn-launch's trainer command), then
#        open    RATE single-node requests/s, open loop, to machine 0 for
#                `seconds`: p50/p90/p99/max latency from the scheduled send time
#        closed  CLIENTS concurrent clients x REQ_NODES-node requests back to
#                back, spread over both machines (batching on: gnn-serve's
#                defaults): requests/s and nodes/s
#        memory  (fan-out MEM_FANOUT only) machine 0's gnn-serve RSS before
#                and after MEM_REQUESTS single-node requests (MEM_CLIENTS
#                keep-alive clients), from /metrics and /proc
#      and stops the job (SIGINT to gnn-launch).
#   5. a summary table and the targets: fan-out 10,25 p99 <= 20 ms at 100
#      requests/s; fan-out 10,25 nodes/s >= 0.5x the offline nodes/s at
#      fan-out 10,25 (and full-neighbourhood serving against the layer-wise
#      pass);
#      RSS after MEM_REQUESTS requests not above before (+1%).
# The load generator is bench/serve_load.py (/usr/bin/python3, standard
# library only); the host is the client, on the bridge (10.78.1.1). Without
# root (no network namespaces) both machines run on 127.0.0.1 (printed).
#
# Usage: bash bench/serve_bench.sh [dataset] [seconds]
#   dataset  default synthetic:products
#   seconds  per open / closed phase, default 30
# Environment: FANOUTS ("full 10,25"), RATE (100), OPEN_CLIENTS (16),
#   CLIENTS (32), REQ_NODES (1000), MEM_REQUESTS (100000), MEM_CLIENTS (32),
#   MEM_FANOUT (10,25; "none" skips the memory check), SERVE_FLAGS (extra
#   gnn-serve flags, e.g. "--num_omp_threads 1"), OFFLINE_FLAGS (extra
#   flags of the offline reference's gnn-train), FULL_SERVE_FLAGS (the
#   full-neighbourhood phase's own, "--deadline_ms 300000": a batch of 8
#   1000-node full-neighbourhood requests takes ~30 s on synthetic:products,
#   over gnn-serve's 10 s default deadline), PEER_GRACE_S (gnn-launch
#   --peer_grace_s, 120: with gnn-launch's 10 s, busy gnn-servers miss the
#   launchers' pings and the launchers stop the job), LOAD_TIMEOUT_S (the load
#   generator's socket timeout, 300), HTTP_PORT (8000), BINARY (1: the
#   clients ask for logits as Triton's binary tensor data, as tritonclient
#   does by default; 0: as JSON numbers), USE_NETNS (auto; 0:
#   loopback), TASK (node; edge_class or link: the model is trained with
#   --task TASK, which needs a graph with edge labels for edge_class, e.g.
#   synthetic:edges; requests then ask random pairs, "nodes" in the figures
#   are pairs, and the offline reference is gnn-train --inference of every
#   edge (edge_class) or of every node's last-layer rows (link)), WORK (a folder to keep; its partitions and model are reused;
#   default a temporary folder, whose partitions and model are removed at the
#   end, logs and results kept), GNN_BUILD_DIR (build).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="$ROOT/${GNN_BUILD_DIR:-build}/apps"
PY=/usr/bin/python3
LOAD="$ROOT/bench/serve_load.py"
DATASET=${1:-synthetic:products}
PHASE_S=${2:-30}
FANOUTS=${FANOUTS:-full 10,25}
RATE=${RATE:-100}
OPEN_CLIENTS=${OPEN_CLIENTS:-16}
CLIENTS=${CLIENTS:-32}
REQ_NODES=${REQ_NODES:-1000}
MEM_REQUESTS=${MEM_REQUESTS:-100000}
MEM_CLIENTS=${MEM_CLIENTS:-32}
MEM_FANOUT=${MEM_FANOUT:-10,25}
SERVE_FLAGS=${SERVE_FLAGS:-}
OFFLINE_FLAGS=${OFFLINE_FLAGS:-}
FULL_SERVE_FLAGS=${FULL_SERVE_FLAGS:---deadline_ms 300000}
PEER_GRACE_S=${PEER_GRACE_S:-120}
LOAD_TIMEOUT_S=${LOAD_TIMEOUT_S:-300}
HTTP_PORT=${HTTP_PORT:-8000}
BINARY=${BINARY:-1}
USE_NETNS=${USE_NETNS:-auto}
TASK=${TASK:-node}
case $TASK in
  node) TRAIN_TASK=() OFFLINE_OUT="--save_prediction_path" LOAD_TASK=() ;;
  edge_class) TRAIN_TASK=(--task edge_class) OFFLINE_OUT="--node_mask all --save_prediction_path"
    LOAD_TASK=(--edges) ;;
  link) TRAIN_TASK=(--task link) OFFLINE_OUT="--embed_layer 2 --save_embed_path"
    LOAD_TASK=(--edges --output score) ;;
  *) echo "serve_bench: TASK must be node, edge_class or link, not $TASK" >&2; exit 2 ;;
esac
KEEP_WORK=1
if [ -z "${WORK:-}" ]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/gnn-serve-bench-XXXXXX")
  KEEP_WORK=0
fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
RESULTS="$WORK/results"
mkdir -p "$RESULTS"
log() { echo "[serve_bench $(date +%T)] $*" >&2; }
for b in gnn-partition gnn-train gnn-launch gnn-server gnn-serve; do
  [ -x "$BIN/$b" ] || { log "$BIN/$b is missing (build first)"; exit 1; }
done

# --- two machines: network namespaces on a bridge, the host on it too -----
NS=gnnserve
netns_down() {
  local i
  for i in 0 1; do ip netns delete "$NS$i" 2>/dev/null || true; done
  ip link delete "${NS}br" 2>/dev/null || true
}
netns_up() {
  netns_down
  ip link add "${NS}br" type bridge &&
    ip link set "${NS}br" up &&
    ip addr add 10.78.1.1/24 dev "${NS}br" || return 1
  local i
  for i in 0 1; do
    ip netns add "$NS$i" &&
      ip link add "${NS}v$i" type veth peer name "gs$i" &&
      ip link set "gs$i" netns "$NS$i" &&
      ip link set "${NS}v$i" master "${NS}br" &&
      ip link set "${NS}v$i" up &&
      ip netns exec "$NS$i" ip addr add "10.78.1.$((10 + i))/24" dev "gs$i" &&
      ip netns exec "$NS$i" ip link set "gs$i" up &&
      ip netns exec "$NS$i" ip link set lo up || return 1
  done
}
NETNS=0
declare -a LPID=()  # LPID[machine] = its gnn-launch (ip netns exec execs it: same pid)
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ ${#LPID[@]} -gt 0 ] && { log "stopping the running job"; stop_job; }
  [ "$NETNS" = 1 ] && netns_down
  # A temporary folder keeps its logs and results (small); the graph goes.
  [ "$KEEP_WORK" = 0 ] && rm -rf "$WORK/one" "$WORK/two" "$WORK/pred" "$WORK/m.pt"
  log "logs and results in $WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

WHY_NOT="USE_NETNS=0"
if [ "$USE_NETNS" != 0 ] && [ "$(id -u)" != 0 ]; then
  WHY_NOT="not root"
elif [ "$USE_NETNS" != 0 ]; then
  NETNS=1  # from here on, cleanup removes what netns_up made
  netns_up 2>"$WORK/netns.err" ||
    { WHY_NOT="'ip netns' failed: $(head -c 200 "$WORK/netns.err")"; netns_down; NETNS=0; }
fi
if [ "$NETNS" = 1 ]; then
  printf '10.78.1.10 31050\n10.78.1.11 31050\n' > "$WORK/ip_config.txt"
  MASTER_PORT=29600
  URLS=("http://10.78.1.10:$HTTP_PORT" "http://10.78.1.11:$HTTP_PORT")
  NET_NOTE="2 machines = network namespaces $NS""0/1 (10.78.1.10/11 on bridge ${NS}br; the client is the host, 10.78.1.1)"
else
  printf '127.0.0.1 %s\n127.0.0.1 %s\n' "$(free_port)" "$(free_port)" > "$WORK/ip_config.txt"
  MASTER_PORT=$(free_port)
  # Machines that share a host listen at --http_port + their index on it.
  URLS=("http://127.0.0.1:$HTTP_PORT" "http://127.0.0.1:$((HTTP_PORT + 1))")
  NET_NOTE="NOTE: no network namespaces ($WHY_NOT): both machines on loopback 127.0.0.1"
  log "$NET_NOTE"
fi

# Per-node gnn-launch on each machine (as real machines would run it); every
# machine's launcher reads the same cluster secret: CURVE with the job's keys.
[ -f "$WORK/cluster.secret" ] ||
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/cluster.secret")
launch() {  # tag command: both machines' launchers, in the background
  local tag=$1 cmd=$2 i
  local job="servebench-$tag-$$"
  for i in 1 0; do
    local pre=()
    [ "$NETNS" = 1 ] && pre=(ip netns exec "$NS$i")
    ${pre[@]+"${pre[@]}"} "$BIN/gnn-launch" --machine_id "$i" --workspace "$WORK" \
      --secret_file cluster.secret --ip_config ip_config.txt --part_config "$TWO" \
      --num_trainers 1 --num_servers 1 --num_samplers 0 --master_port "$MASTER_PORT" \
      --peer_grace_s "$PEER_GRACE_S" --job_id "$job" --log_dir "$WORK/logs/$tag-m$i" --quiet "$cmd" \
      > "$WORK/$tag-m$i.out" 2> "$WORK/$tag-m$i.err" &
    LPID[$i]=$!
  done
}
# SIGINT to both launchers (they stop their processes), then wait; a launcher
# still there after 60 s gets SIGTERM.
stop_job() {
  local i p t
  for p in ${LPID[@]+"${LPID[@]}"}; do kill -INT "$p" 2>/dev/null || true; done
  for p in ${LPID[@]+"${LPID[@]}"}; do
    for ((t = 0; t < 600; t++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && { log "gnn-launch $p still running after 60 s: SIGTERM"; kill -TERM "$p" 2>/dev/null || true; }
    wait "$p" 2>/dev/null || true
  done
  LPID=()
}
# Waits for both launchers; fails with their last lines when one fails.
wait_job() {  # tag
  local i rc=0
  for i in 0 1; do wait "${LPID[$i]}" || rc=$?; done
  LPID=()
  if [ "$rc" != 0 ]; then
    log "job $1 failed (exit $rc):"
    tail -n 5 "$WORK/$1"-m*.err >&2
    return 1
  fi
}

# Both machines answer GET /v2/health/ready; fails when a launcher exits first.
wait_ready() {  # tag timeout_s
  local tag=$1 deadline=$((SECONDS + $2)) i
  while ((SECONDS < deadline)); do
    for i in 0 1; do
      if ! kill -0 "${LPID[$i]}" 2>/dev/null; then
        log "machine $i's gnn-launch exited before gnn-serve was ready:"
        tail -n 5 "$WORK/$tag-m$i.err" >&2
        return 1
      fi
    done
    "$PY" "$LOAD" ready --url "${URLS[0]}" --url "${URLS[1]}" --timeout_s 0 >/dev/null 2>&1 && return 0
    sleep 1
  done
  log "gnn-serve not ready after $2 s"
  return 1
}
serve_pid() { pgrep -P "${LPID[$1]}" -x gnn-serve | head -1; }  # machine
vmrss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }  # pid -> bytes

# --- data, model, offline reference -----------------------------------------
NCORES=$(nproc)
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
OTHERS=$(pgrep -c 'gnn-' || true)
log "dataset $DATASET, $PHASE_S s per phase, $NCORES cores, load average $LOAD_AT_START, work $WORK"
[ "$OTHERS" != 0 ] && log "note: $OTHERS gnn-* processes not started by this script are running"
for parts in 1 2; do
  dir="$WORK/$([ $parts = 1 ] && echo one || echo two)"
  if ! ls "$dir"/*.json >/dev/null 2>&1; then
    log "gnn-partition $DATASET into $parts part(s)"
    "$BIN/gnn-partition" --dataset "$DATASET" --num_parts "$parts" --output "$dir" --quiet >/dev/null
  fi
done
ONE=$(ls "$WORK"/one/*.json | head -1)
TWO=$(ls "$WORK"/two/*.json | head -1)
read -r GRAPH NUM_NODES < <("$PY" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["graph_name"], c["num_nodes"])' "$TWO")
if [ ! -f "$WORK/m.pt" ]; then
  log "gnn-train --standalone, 1 epoch: the model"
  "$BIN/gnn-train" --standalone --part_config "$ONE" --num_epochs 1 --eval_every 0 \
    "${TRAIN_TASK[@]}" --save_model "$WORK/m.pt" --quiet > "$WORK/train.out"
fi

# The offline reference of each fan-out: gnn-train --inference of every node
# on the same 2 machines, layer-wise over every neighbour ("full") or each
# node from its sampled neighbourhood (--fan_out, as gnn-serve samples).
for fo in $FANOUTS; do
  otag="offline-${fo//,/-}"
  extra=""
  # An edge model's inference takes every neighbour (layer-wise) whatever
  # the fan-out; a link model's node rows follow --fan_out as a node model's.
  [ "$fo" != full ] && [ "$TASK" != edge_class ] && extra="--fan_out $fo"
  log "offline inference (gnn-train --inference $extra, 2 machines)"
  rm -rf "$WORK/pred"
  launch "$otag" "$BIN/gnn-train --inference --restore_model_path $WORK/m.pt $OFFLINE_OUT $WORK/pred $extra $OFFLINE_FLAGS"
  wait_job "$otag"
  tail -n 1 "$WORK/$otag-m0.out" > "$RESULTS/$otag-m0.json"
  tail -n 1 "$WORK/$otag-m1.out" > "$RESULTS/$otag-m1.json"
  rm -rf "$WORK/pred"
done

# --- serving phases ----------------------------------------------------------
# One load step of a phase: bench/serve_load.py's JSON line into
# $RESULTS/<tag>-<step>.json. A step that fails, or a job that is gone after
# it, ends the phase (its later steps are skipped; the summary says so).
PHASE_OK=1
load_step() {  # tag step serve_load.py arguments...
  local tag=$1 step=$2 i
  shift 2
  [ "$PHASE_OK" = 1 ] || return 0
  if ! "$PY" "$LOAD" "$@" > "$RESULTS/$tag-$step.json"; then
    log "fan-out $tag: the $step step failed"
    rm -f "$RESULTS/$tag-$step.json"
    PHASE_OK=0
  fi
  for i in 0 1; do
    if ! kill -0 "${LPID[$i]}" 2>/dev/null; then
      log "machine $i's job stopped during the $step step:"
      tail -n 3 "$WORK/$tag-m$i.err" "$WORK/logs/$tag-m$i"/*.log >&2 || true
      echo "machine $i's job stopped during the $step step: $(tail -n 1 "$WORK/$tag-m$i.err")" \
        >> "$RESULTS/$tag-failed.txt"
      PHASE_OK=0
    fi
  done
}
for fo in $FANOUTS; do
  tag="serve-${fo//,/-}"
  flags="$SERVE_FLAGS"
  if [ "$fo" = full ]; then flags="$FULL_SERVE_FLAGS $flags"; else flags="--fan_out $fo $flags"; fi
  log "fan-out $fo: gnn-serve on both machines ($flags)"
  start=$SECONDS
  PHASE_OK=1
  launch "$tag" "$BIN/gnn-serve --restore_model_path $WORK/m.pt --http_port $HTTP_PORT $flags"
  wait_ready "$tag" 600
  ready_s=$((SECONDS - start))
  common=(--model "$GRAPH" --num_nodes "$NUM_NODES" --metrics --label "$fo" --timeout_s "$LOAD_TIMEOUT_S"
    "${LOAD_TASK[@]}")
  [ "$BINARY" = 1 ] && common+=(--binary)
  echo "{\"fanout\":\"$fo\",\"flags\":\"$flags\",\"ready_s\":$ready_s,\"rss_ready\":[$(vmrss "$(serve_pid 0)"),$(vmrss "$(serve_pid 1)")]}" \
    > "$RESULTS/$tag-start.json"

  log "fan-out $fo: open loop, $RATE single-node requests/s for $PHASE_S s to machine 0"
  load_step "$tag" open open --url "${URLS[0]}" "${common[@]}" --rate "$RATE" \
    --seconds "$PHASE_S" --clients "$OPEN_CLIENTS" --warmup 200

  log "fan-out $fo: closed loop, $CLIENTS clients x $REQ_NODES nodes for $PHASE_S s, both machines"
  load_step "$tag" closed closed --url "${URLS[0]}" --url "${URLS[1]}" "${common[@]}" \
    --clients "$CLIENTS" --nodes_per_request "$REQ_NODES" --seconds "$PHASE_S"

  if [ "$fo" = "$MEM_FANOUT" ] && [ "$PHASE_OK" = 1 ]; then
    log "fan-out $fo: memory, $MEM_REQUESTS single-node requests ($MEM_CLIENTS clients) to machine 0"
    pid=$(serve_pid 0)
    before=$(vmrss "$pid")
    load_step "$tag" count count --url "${URLS[0]}" "${common[@]}" --requests "$MEM_REQUESTS" \
      --clients "$MEM_CLIENTS" --rss_every $((MEM_REQUESTS / 10 > 0 ? MEM_REQUESTS / 10 : 1))
    [ "$PHASE_OK" = 1 ] &&
      echo "{\"vmrss_before\":$before,\"vmrss_after\":$(vmrss "$pid")}" > "$RESULTS/$tag-vmrss.json"
  fi
  log "fan-out $fo: stopping"
  stop_job
  grep -h -i -E "error|warn|fail" "$WORK/$tag"-m*.err "$WORK/logs/$tag"-m*/*.log 2>/dev/null |
    head -n 10 > "$RESULTS/$tag-errors.txt" || true
done

# --- summary -------------------------------------------------------------------
"$PY" - "$RESULTS" "$DATASET" "$PHASE_S" "$NCORES" "$LOAD_AT_START" "$NET_NOTE" "$FANOUTS" \
  "$RATE" "$CLIENTS" "$REQ_NODES" "$MEM_FANOUT" "$MEM_REQUESTS" "$MEM_CLIENTS" "$PEER_GRACE_S" "$BINARY" \
  "$TASK" <<'PY'
import json, os, sys
(res, dataset, phase_s, cores, loadavg, net, fanouts, rate, clients, req_nodes, mem_fo,
 mem_req, mem_clients, peer_grace, binary, task) = sys.argv[1:]
fanouts = fanouts.split()
def load(name):
    p = os.path.join(res, name)
    return json.load(open(p)) if os.path.exists(p) else None
def text(name):
    p = os.path.join(res, name)
    return open(p).read().strip() if os.path.exists(p) else ""
tag = lambda fo: "serve-" + fo.replace(",", "-")
def offline(fo):
    """The offline reference at fan-out fo: (nodes, seconds, nodes/s)."""
    off = [load(f"offline-{fo.replace(',', '-')}-m{i}.json") for i in (0, 1)]
    secs = max(o["inference_time_s"] for o in off)
    n = off[0].get("nodes_written", off[0].get("edges_written"))
    return n, secs, n / secs
mib = lambda b: b / 2**20
f = lambda v, d=1: "-" if v is None else f"{v:,.{d}f}"
errs = lambda e: ", ".join(f"{k}:{v}" for k, v in sorted(e.items())) or "0"

print()
print(f"gnn-serve benchmark: {dataset}, 2 parts, CURVE on, {cores} cores (shared by both machines "
      f"and the client), load average at start {loadavg}, now {' '.join(open('/proc/loadavg').read().split()[:3])}")
print(net + f"; gnn-launch per machine, --peer_grace_s {peer_grace}")
if task != "node":
    print(f"--task {task} model: requests ask random pairs, and 'nodes' below are pairs; offline "
          f"{'writes every edge' if task == 'edge_class' else 'writes every node'}")
print(f"{phase_s} s per open/closed run; batching: gnn-serve's defaults (max_batch_nodes 8192, "
      f"max_wait_ms 1, max_queue 128); logits asked "
      f"{'as binary tensor data (tritonclient default)' if binary == '1' else 'as JSON numbers'}")
for fo in fanouts:
    n, secs, rate_ = offline(fo)
    how = ("every neighbour, layer-wise" if fo == "full" or task == "edge_class"
           else f"--fan_out {fo}, each node sampled")
    print(f"offline inference (gnn-train --inference, {how}, 2 machines): "
          f"{n:,} nodes in {secs:.2f} s = {rate_:,.0f} nodes/s")
print()
print(f"open loop: {rate} single-node requests/s to machine 0, latency from the scheduled send time")
print("| fan-out | gnn-serve flags | ready s | ok/sent | achieved req/s | p50 ms | p90 ms | p99 ms "
      "| max ms | errors |")
print("|---|---|---|---|---|---|---|---|---|---|")
for fo in fanouts:
    st, o = load(tag(fo) + "-start.json"), load(tag(fo) + "-open.json")
    if not (st and o):
        print(f"| {fo} | {st['flags'] if st else '-'} | (did not run: {text(tag(fo) + '-failed.txt') or 'see the log'}) |")
        continue
    print(f"| {fo} | {st['flags'].strip() or '-'} | {st['ready_s']} | {o['ok']}/{o['sent']} "
          f"| {o['achieved_rate']:.1f} | {f(o['p50_ms'], 2)} | {f(o['p90_ms'], 2)} "
          f"| {f(o['p99_ms'], 2)} | {f(o['max_ms'], 2)} | {errs(o['errors'])} |")
print()
print(f"closed loop: {clients} clients x {req_nodes}-node requests, spread over both machines")
print("| fan-out | requests/s | nodes/s | vs offline nodes/s | p50 ms | p99 ms | requests per model "
      "run (m0, m1) | errors |")
print("|---|---|---|---|---|---|---|---|")
closed = {}
for fo in fanouts:
    c = load(tag(fo) + "-closed.json")
    if not c:
        print(f"| {fo} | (did not run: {text(tag(fo) + '-failed.txt') or 'see the log'}) |")
        continue
    closed[fo] = c
    qpb = [s["queries_per_batch"] for s in c.get("server", {}).values()]
    print(f"| {fo} | {c['requests_per_s']:.2f} | {c['nodes_per_s']:,.0f} "
          f"| {c['nodes_per_s'] / offline(fo)[2]:.3f}x | {f(c['p50_ms'], 0)} | {f(c['p99_ms'], 0)} "
          f"| {', '.join(f(q, 1) for q in qpb) or '-'} | {errs(c['errors'])} |")
print()
for fo in fanouts:
    for kind in ("open", "closed", "count"):
        r = load(f"{tag(fo)}-{kind}.json")
        if r and r["error_samples"]:
            print(f"errors, fan-out {fo} {kind}: {r['error_samples']}")
    o = load(f"{tag(fo)}-open.json")
    if o:
        print(f"keep-alive, fan-out {fo} open loop: {o['connects']} connections opened for "
              f"{o['sent'] + o.get('warmup', 0)} requests (warm-up included), "
              f"{o['server_closes']} answers said Connection: close")
    if text(tag(fo) + "-failed.txt"):
        print(f"fan-out {fo}: {text(tag(fo) + '-failed.txt')}")
    if text(tag(fo) + "-errors.txt"):
        print(f"error/warning lines in fan-out {fo}'s logs:")
        print("\n".join("    " + l for l in text(tag(fo) + "-errors.txt").splitlines()))
print()
print("targets:")
o = load(tag("10,25") + "-open.json")
if o:
    p99 = o["p99_ms"]
    print(f"  fan-out 10,25 p99 at {rate} requests/s: {f(p99, 2)} ms (target <= 20 ms): "
          f"{'MET' if p99 is not None and p99 <= 20 and not o['errors'] else 'NOT MET'}")
if "10,25" in closed and task == "node":
    c = closed["10,25"]
    off_rate = offline("10,25")[2]
    r = c["nodes_per_s"] / off_rate
    print(f"  fan-out 10,25 throughput: {c['nodes_per_s']:,.0f} nodes/s = {r:.3f}x offline's "
          f"{off_rate:,.0f} nodes/s at the same fan-out (target >= 0.5x): "
          f"{'MET' if r >= 0.5 and not c['errors'] else 'NOT MET'}")
if "full" in closed:
    c = closed["full"]
    print(f"  like for like, full neighbourhood: serve {c['nodes_per_s']:,.0f} nodes/s = "
          f"{c['nodes_per_s'] / offline('full')[2]:.3f}x offline")
m, v = load(tag(mem_fo) + "-count.json"), load(tag(mem_fo) + "-vmrss.json")
if m and v:
    b, a = m["rss_before_bytes"], m["rss_after_bytes"]
    vb, va = v["vmrss_before"], v["vmrss_after"]
    grow = va - vb
    print(f"  memory, fan-out {mem_fo}: machine 0's gnn-serve over {m['ok']:,}/{int(mem_req):,} "
          f"single-node requests ({mem_clients} clients, {m['requests_per_s']:,.0f} requests/s, "
          f"p50 {f(m['p50_ms'], 1)} ms, p99 {f(m['p99_ms'], 1)} ms, errors {errs(m['errors'])}):")
    print(f"    VmRSS {mib(vb):.1f} -> {mib(va):.1f} MiB ({grow / 2**20:+.1f} MiB, {100 * grow / vb:+.2f}%); "
          f"/metrics process_resident_memory_bytes {mib(b):.1f} -> {mib(a):.1f} MiB")
    print("    /metrics samples (answered: MiB): " + ", ".join(
        f"{s['answered']}: {mib(s['rss_bytes']):.1f}" for s in m["rss_samples"]))
    print(f"    no growth (VmRSS after <= before + 1%): "
          f"{'MET' if grow <= 0.01 * vb and not m['errors'] else 'NOT MET'}")
elif mem_fo != "none":
    print(f"  memory, fan-out {mem_fo}: did not run")
PY
log "results (JSON lines): $RESULTS"
