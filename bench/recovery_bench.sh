#!/usr/bin/env bash
# Automatic recovery (gnn-launch --max_restarts) on synthetic:small, 2
# machines on loopback: how long from a process's death to training again
# (recovery_s, measured by gnn-launch: teardown + backoff + servers +
# rendezvous + checkpoint broadcast + the first step), the steps replayed,
# and what checkpointing costs an uninterrupted run. One run per victim.
# Usage: bash bench/recovery_bench.sh [epochs] [checkpoint_every] [backoff_s]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
export PATH="$BIN:$PATH"
EPOCHS="${1:-30}"
EVERY="${2:-20}"
BACKOFF="${3:-1}"
WORK="$(mktemp -d /tmp/gnn-recovery-bench-XXXXXX)"
trap 'pkill -9 -f "gnn-launch.*$WORK" 2>/dev/null || true; [ -n "${GNN_KEEP:-}" ] || rm -rf "$WORK"' EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

gnn-partition --dataset synthetic:small --num_parts 2 --output "$WORK/data" --quiet >/dev/null
config=$(ls "$WORK"/data/*.json)
printf '127.0.0.1 %s\n127.0.0.1 %s\n' "$(port)" "$(port)" > "$WORK/ip_config.txt"

# launch TAG EXTRA_TRAINER_FLAGS: one job in the background (its pid in
# $PID), output in $WORK/TAG.*
launch() {
  gnn-launch --workspace "$WORK" --num_trainers 1 --num_samplers 1 --num_servers 1 \
    --part_config "$config" --ip_config ip_config.txt --master_port "$(port)" --job_id "rb-$1" \
    --max_restarts 2 --restart_backoff_s "$BACKOFF" \
    "gnn-train --num_epochs $EPOCHS --eval_every $EPOCHS --seed 1 --num_omp_threads 1 $2" \
    > "$WORK/$1.out" 2> "$WORK/$1.err" &
  PID=$!
}
# The pid of the first process named $2 of job rb-$1 (or of its runs).
victim() {
  for p in $(pgrep -x "$2"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "GNN_JOB_ID=rb-$1"; then
      echo "$p"; return; fi
  done
}

summary() { tail -1 "$WORK/$1.out"; }
launch plain ""
wait "$PID" || true
launch ckpt "--checkpoint_dir ck-ckpt --checkpoint_every $EVERY"
wait "$PID" || true
for who in gnn-train gnn-server gnn-sampler; do
  launch "kill-$who" "--checkpoint_dir ck-$who --checkpoint_every $EVERY"
  until [ -e "$WORK/ck-$who/checkpoint.pt" ] || ! kill -0 "$PID" 2>/dev/null; do sleep 0.05; done
  sleep 1
  kill -9 "$(victim "kill-$who" "$who")" || echo "no $who to kill: did the job end already?" >&2
  wait "$PID" || true
done

/usr/bin/python3 - "$WORK" "$EPOCHS" "$EVERY" "$BACKOFF" <<'PY'
import json, re, sys
work, epochs, every, backoff = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def summary(tag):
    lines = open(f"{work}/{tag}.out").read().strip().splitlines()
    if not lines:
        sys.exit(f"{tag}: no summary; see its stderr:\n" + open(f"{work}/{tag}.err").read()[-2000:])
    return json.loads(lines[-1])
plain, ckpt = summary("plain"), summary("ckpt")
print(f"synthetic:small, 2 machines x (1 server, 1 trainer, 1 sampler), {epochs} epochs, "
      f"{plain['steps']} steps; checkpoint every {every} steps and every epoch; backoff {backoff} s")
print(f"uninterrupted, no checkpoints : {plain['wall_time_s']:6.2f} s wall, "
      f"{plain['mean_epoch_time_s']:.3f} s/epoch, checksum {plain['param_checksum']}")
print(f"uninterrupted, checkpointing  : {ckpt['wall_time_s']:6.2f} s wall, "
      f"{ckpt['mean_epoch_time_s']:.3f} s/epoch ({ckpt['mean_epoch_time_s'] / plain['mean_epoch_time_s']:.2f}x), "
      f"checksum {ckpt['param_checksum']}")
for who in ["gnn-train", "gnn-server", "gnn-sampler"]:
    s = summary(f"kill-{who}")
    err = open(f"{work}/kill-{who}.err").read()
    line = re.search(r"gnn-launch: restart 1 .*", err)
    same = "same model" if s["param_checksum"] == ckpt["param_checksum"] else "DIFFERENT MODEL"
    rec = ", ".join(f"{r:.2f}" for r in s["recovery_s"])
    print(f"{who:11s} SIGKILLed      : {s['wall_time_s']:6.2f} s wall, restarts {s['restarts']}, "
          f"recovery {rec} s (backoff {backoff} s of it), steps replayed {s['steps_replayed']}, {same}")
    if line: print("   " + line.group(0))
PY
