#!/usr/bin/env bash
# The main job on a built-in default, on this one machine, the way a
# cluster runs it:
#   1. gnn-partition: generate synthetic:small (100K nodes, 1M edges) and
#      split it into 2 METIS partitions, printing the partition report;
#   2. gnn-train --standalone on a 1-partition copy, for comparison;
#   3. gnn-copy: ship partition i to "machine" i's workspace (two machines
#      on 127.0.0.1 with two ports, two workspaces), verifying checksums;
#   4. gnn-launch: start a gnn-server per machine, then a gnn-train per
#      machine (each with a gnn-sampler child), train to a printed
#      accuracy and tear everything down; its last line is the JSON summary;
#   5. gnn-serve: the standalone model of step 2 answers a prediction
#      request over HTTP (the Open Inference Protocol), then stops.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the binaries it runs (the test command builds the tests), with
# cmake's progress: one line per target built.
echo "== 0. build the binaries (the first build takes a few minutes)"
BUILD_LOG="$(mktemp /tmp/gnn-quickstart-build-XXXXXX.log)"
set +e
GNN_TARGETS="gnn-partition gnn-copy gnn-launch gnn-server gnn-sampler gnn-train gnn-serve" \
  bash scripts/build.sh 2>&1 | tee "$BUILD_LOG" |
  grep --line-buffered -E '^\[ *[0-9]+%\] Built target gnn-'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  tail -30 "$BUILD_LOG" >&2
  echo "quickstart: the build failed (whole log: $BUILD_LOG)" >&2
  exit "$status"
fi
rm -f "$BUILD_LOG"
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
export PATH="$BIN:$PATH"
WORK="${GNN_WORK_DIR:-$(mktemp -d /tmp/gnn-quickstart-XXXXXX)}"
DATASET="${GNN_DATASET:-synthetic:small}"
EPOCHS="${GNN_EPOCHS:-20}"

echo "== 1. gnn-partition --dataset $DATASET --num_parts 2 --balance_train --balance_edges"
gnn-partition --dataset "$DATASET" --num_parts 2 --balance_train --balance_edges \
  --output "$WORK/data" --overwrite --quiet
config=$(ls "$WORK"/data/*.json)
graph=$(basename "$config" .json)

echo
echo "== 2. gnn-train --standalone (DGL's defaults: fan_out 10,25, batch 1000, hidden 16; $EPOCHS epochs)"
gnn-partition --dataset "$DATASET" --num_parts 1 --output "$WORK/data1" --overwrite --quiet >/dev/null
gnn-train --standalone --part_config "$(ls "$WORK"/data1/*.json)" --num_epochs "$EPOCHS" \
  --eval_every 5 --save_model "$WORK/model.pt" 2> "$WORK/standalone.log" | tail -1

echo
echo "== 3. gnn-copy to 2 machines (127.0.0.1, two ports, workspaces $WORK/ws/m{machine})"
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
printf '127.0.0.1 %s\n127.0.0.1 %s\n' "$(port)" "$(port)" > "$WORK/ip_config.txt"
gnn-copy --ip_config "$WORK/ip_config.txt" --workspace "$WORK/ws/m{machine}" \
  --rel_data_path "$graph" --part_config "$config"

echo
echo "== 4. gnn-launch: 1 server + 1 trainer (1 sampler) per machine; per-trainer batch 500 = the same global batch"
gnn-launch --workspace "$WORK/ws/m{machine}" --num_trainers 1 --num_samplers 1 --num_servers 1 \
  --part_config "$graph/$graph.json" --ip_config ip_config.txt --master_port "$(port)" \
  "gnn-train --num_epochs $EPOCHS --batch_size 500 --eval_every 5" 2> "$WORK/launch.log" \
  > "$WORK/launch.out" || { tail -20 "$WORK/launch.log"; exit 1; }
grep -E "\[0 trainer 0\].*Val Acc" "$WORK/launch.log" | tail -1
tail -1 "$WORK/launch.out"
echo "(logs in $WORK/launch.log and $WORK/ws/m0/logs)"

echo
echo "== 5. gnn-serve: the saved model answers predictions over HTTP (Open Inference Protocol v2)"
sport=$(port)
gnn-serve --standalone --part_config "$(ls "$WORK"/data1/*.json)" \
  --restore_model_path "$WORK/model.pt" --http_port "$sport" --quiet &
serve_pid=$!
trap 'kill -INT $serve_pid 2>/dev/null || true' EXIT
/usr/bin/python3 - "$sport" "$graph" <<'PY'
import json, sys, time, urllib.request
port, graph = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}/v2"
for _ in range(300):
    try:
        if urllib.request.urlopen(base + "/health/ready", timeout=1).status == 200:
            break
    except OSError:
        time.sleep(0.1)
body = {"id": "quickstart", "inputs": [{"name": "node_ids", "datatype": "INT64", "shape": [3],
                                        "data": [0, 1, 2]}], "outputs": [{"name": "pred"}]}
req = urllib.request.Request(f"{base}/models/{graph}/infer", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
print(f"POST {base}/models/{graph}/infer node_ids [0, 1, 2] ->", urllib.request.urlopen(req).read().decode())
PY
kill -INT "$serve_pid"
wait "$serve_pid"
trap - EXIT
