# Helpers the bench scripts share (source it after `cd` to the repository):
#   BIN          the built binaries (GNN_BUILD_DIR, default build)
#   bench_work P a fresh work folder /tmp/P-XXXXXX in $WORK, its processes
#                killed and the folder removed on exit (GNN_KEEP keeps it)
#   port         a free loopback port
#   field KEY    KEY of the JSON summary on stdin's last line
#   median X...  the median of the numbers
BIN="$(pwd)/${GNN_BUILD_DIR:-build}/apps"
bench_work() {
  WORK="$(mktemp -d "/tmp/$1-XXXXXX")"
  trap 'pkill -9 -f "$WORK" 2>/dev/null || true; [ -n "${GNN_KEEP:-}" ] || rm -rf "$WORK"' EXIT
}
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }
median() { /usr/bin/python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
