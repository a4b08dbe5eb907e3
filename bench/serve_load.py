#!/usr/bin/python3
"""Load generator for gnn-serve (Open Inference Protocol v2, HTTP/JSON).

Python's standard library only; run with /usr/bin/python3. Every load mode
prints one JSON line on stdout (the run's numbers) and a short human line on
stderr. Requests ask for random existing node ids 0..num_nodes-1 (with
--edges, an edge model's pairs of them) and the 'logits' output; every
request carries Content-Type: application/json.

Modes:
  open    open loop: --rate requests/s for --seconds, --nodes_per_request ids
          each (default 1), sent on schedule whatever the answers do, by a
          pool of --clients threads with keep-alive connections; latency is
          measured from the scheduled send time (a request that waits for a
          free thread counts its wait). p50/p90/p99/max ms and errors.
  closed  --clients threads each send --nodes_per_request-node requests back
          to back for --seconds (thread i uses --url number i mod #urls);
          requests/s, nodes/s, latency percentiles.
  count   --requests requests as fast as --clients threads can send them
          (the memory check); with --rss_every N the first --url's
          process_resident_memory_bytes is read every N answers.
  ready   wait until every --url answers GET /v2/health/ready with 200
          (exit 1 after --timeout_s).
  metrics print the gnn-serve counters of every --url as one JSON line.

With --metrics the load modes also give every --url's gnn-serve counters'
change over the run (batches, queries, nodes, busy seconds): requests per
model run shows the batching.

Usage:
  serve_load.py open    --url http://10.78.1.10:8000 --model synthetic-products \
      --num_nodes 2449029 --rate 100 --seconds 30
  serve_load.py closed  --url http://10.78.1.10:8000 --url http://10.78.1.11:8000 \
      --model synthetic-products --num_nodes 2449029 --clients 32 \
      --nodes_per_request 1000 --seconds 30 --metrics
  serve_load.py count   --url http://10.78.1.10:8000 --model synthetic-products \
      --num_nodes 2449029 --requests 100000 --clients 8 --rss_every 10000
  serve_load.py ready   --url http://10.78.1.10:8000 --timeout_s 300
"""

import argparse
import http.client
import json
import queue
import random
import sys
import threading
import time
import urllib.parse

HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
# Errors of a reused keep-alive connection the server closed meanwhile: the
# request is sent again once on a fresh connection.
# --edges (an edge model: each request asks pairs of random nodes) and
# --edge_feature_dim (the features it sends with each pair).
EDGES = {"on": False, "dim": 0, "output": "logits"}
STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
         http.client.CannotSendRequest, http.client.BadStatusLine)
COUNTERS = ("gnn_serve_batches_total", "gnn_serve_queries_total", "gnn_serve_nodes_total",
            "gnn_serve_busy_seconds_total", "process_resident_memory_bytes")


class Client:
    """One keep-alive connection to one gnn-serve."""

    def __init__(self, url, model, timeout, binary):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.path = f"/v2/models/{model}/infer"
        self.timeout = timeout
        self.binary = binary
        self.conn = None
        self.used = 0          # requests on the current connection
        self.connects = 0      # connections opened
        self.server_closes = 0  # answers that said Connection: close

    def _connect(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self.conn.connect()
        self.used = 0
        self.connects += 1

    def body(self, ids):
        out = {"name": EDGES["output"]}
        if self.binary:
            out["parameters"] = {"binary_data": True}
        if not EDGES["on"]:
            return json.dumps({"inputs": [{"name": "node_ids", "datatype": "INT64",
                                           "shape": [len(ids)], "data": ids}],
                               "outputs": [out]})
        # An edge model: consecutive ids pair up as (source, destination).
        k = len(ids) // 2
        inputs = [{"name": "edges", "datatype": "INT64", "shape": [k, 2], "data": ids}]
        if EDGES["dim"] > 0:
            inputs.append({"name": "edge_features", "datatype": "FP32",
                           "shape": [k, EDGES["dim"]],
                           "data": [((i * 7919) % 1000) / 1000.0 for i in range(k * EDGES["dim"])]})
        return json.dumps({"inputs": inputs, "outputs": [out]})

    def get(self, path):
        """GET path on a fresh connection: (status, body text)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def infer(self, ids):
        """POST one request: (HTTP status, response bytes); status 0 with the
        exception's name when no answer came."""
        body = self.body(ids)
        for attempt in (0, 1):
            reused = self.conn is not None and self.conn.sock is not None and self.used > 0
            try:
                if not reused:
                    self._connect()
                self.conn.request("POST", self.path, body, HEADERS)
                r = self.conn.getresponse()
                data = r.read()
                self.used += 1
                if r.will_close:
                    self.server_closes += 1
                    self.conn.close()
                return r.status, data
            except STALE as e:
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt == 0 and reused:
                    continue
                return 0, type(e).__name__
            except (OSError, http.client.HTTPException) as e:
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                return 0, type(e).__name__
        return 0, "retry"


def percentiles(lat_s):
    """p50/p90/p99/max and mean in ms (nearest rank)."""
    if not lat_s:
        return {"p50_ms": None, "p90_ms": None, "p99_ms": None, "max_ms": None, "mean_ms": None}
    v = sorted(lat_s)

    def rank(p):
        return v[min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))] * 1e3

    return {"p50_ms": round(rank(50), 3), "p90_ms": round(rank(90), 3),
            "p99_ms": round(rank(99), 3), "max_ms": round(v[-1] * 1e3, 3),
            "mean_ms": round(sum(v) / len(v) * 1e3, 3)}


def scrape(url, timeout=10.0):
    """The gnn-serve counters of /metrics at url (float values)."""
    status, text = Client(url, "-", timeout, False).get("/metrics")
    if status != 200:
        raise RuntimeError(f"GET {url}/metrics: HTTP {status}")
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        if name in COUNTERS:
            out[name] = float(value)
        elif name.startswith("gnn_serve_requests_total{"):
            out.setdefault("requests", {})[name[len("gnn_serve_requests_total"):]] = float(value)
    return out


def metric_delta(before, after):
    d = {}
    for url in before:
        b, a = before[url], after[url]
        batches = a["gnn_serve_batches_total"] - b["gnn_serve_batches_total"]
        queries = a["gnn_serve_queries_total"] - b["gnn_serve_queries_total"]
        d[url] = {"batches": int(batches), "queries": int(queries),
                  "nodes": int(a["gnn_serve_nodes_total"] - b["gnn_serve_nodes_total"]),
                  "busy_s": round(a["gnn_serve_busy_seconds_total"]
                                  - b["gnn_serve_busy_seconds_total"], 3),
                  "queries_per_batch": round(queries / batches, 2) if batches else None,
                  "rss_bytes": a["process_resident_memory_bytes"]}
    return d


class Tally:
    """Answers of many threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lat = []
        self.ok = 0
        self.nodes = 0
        self.errors = {}
        self.error_samples = []

    def add(self, status, data, lat, nodes):
        with self.lock:
            if status == 200:
                self.ok += 1
                self.nodes += nodes
                self.lat.append(lat)
            else:
                key = str(status) if status else f"conn:{data}"
                self.errors[key] = self.errors.get(key, 0) + 1
                if len(self.error_samples) < 3:
                    msg = data if isinstance(data, str) else data[:200].decode("utf-8", "replace")
                    self.error_samples.append(f"{key}: {msg}")


def check_answer(args):
    """One 2-node request to every --url: a 200 with 2 rows of logits."""
    for url in args.url:
        c = Client(url, args.model, args.timeout_s, False)
        ids = [0, args.num_nodes - 1, args.num_nodes - 1, 0]
        status, data = c.infer(ids)
        if status != 200:
            sys.exit(f"serve_load: {url}: first request answered {status}: {data[:300]!r}")
        out = json.loads(data)["outputs"][0]
        if out["name"] != EDGES["output"] or out["shape"][0] != (2 if EDGES["on"] else 4):
            sys.exit(f"serve_load: {url}: unexpected answer {str(out)[:300]}")


def random_ids(rng, n, k):
    """k random nodes, or with --edges the ends of k random pairs."""
    return [rng.randrange(n) for _ in range(2 * k if EDGES["on"] else k)]


def rows_of(ids):
    """A request's answer rows: its nodes, or its pairs."""
    return len(ids) // 2 if EDGES["on"] else len(ids)


def warm_up(args, clients, rng):
    for i in range(args.warmup):
        clients[i % len(clients)].infer(random_ids(rng, args.num_nodes, args.nodes_per_request))


def conn_stats(clients):
    return {"connects": sum(c.connects for c in clients),
            "server_closes": sum(c.server_closes for c in clients)}


def run_open(args):
    rng = random.Random(args.seed)
    url = args.url[0]
    clients = [Client(url, args.model, args.timeout_s, args.binary) for _ in range(args.clients)]
    warm_up(args, clients, rng)
    before = {u: scrape(u) for u in args.url} if args.metrics else None
    tally = Tally()
    todo = queue.Queue()
    lags = []  # send start - scheduled time

    def worker(client, wrng):
        while True:
            sched = todo.get()
            if sched is None:
                return
            ids = random_ids(wrng, args.num_nodes, args.nodes_per_request)
            start = time.perf_counter()
            status, data = client.infer(ids)
            done = time.perf_counter()
            with tally.lock:
                lags.append(start - sched)
            tally.add(status, data, done - sched, rows_of(ids))

    threads = [threading.Thread(target=worker, args=(c, random.Random(args.seed * 1000 + i)),
                                daemon=True) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    n = int(round(args.rate * args.seconds))
    t0 = time.perf_counter() + 0.05
    sched = t0
    late = 0
    for i in range(n):
        if args.arrivals == "poisson":
            sched += rng.expovariate(args.rate) if i else 0.0
        else:
            sched = t0 + i / args.rate
        delay = sched - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.001:
            late += 1  # the dispatcher itself fell behind (client-side overload)
        todo.put(sched)
    for _ in threads:
        todo.put(None)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    r = {"mode": "open", "url": url, "rate": args.rate, "seconds": args.seconds,
         "nodes_per_request": args.nodes_per_request, "clients": args.clients,
         "arrivals": args.arrivals, "warmup": args.warmup, "sent": n, "ok": tally.ok,
         "errors": tally.errors, "error_samples": tally.error_samples,
         "achieved_rate": round(tally.ok / elapsed, 2), "elapsed_s": round(elapsed, 3),
         "dispatch_late": late,
         "max_send_lag_ms": round(max(lags) * 1e3, 3) if lags else None}
    r.update(percentiles(tally.lat))
    r.update(conn_stats(clients))
    if args.metrics:
        r["server"] = metric_delta(before, {u: scrape(u) for u in args.url})
    print(f"open {args.rate}/s x {args.seconds}s: ok {tally.ok}/{n} p50 {r['p50_ms']} ms "
          f"p99 {r['p99_ms']} ms max {r['max_ms']} ms errors {tally.errors}", file=sys.stderr)
    return r


def run_closed(args):
    rng = random.Random(args.seed)
    clients = [Client(args.url[i % len(args.url)], args.model, args.timeout_s, args.binary)
               for i in range(args.clients)]
    warm_up(args, clients, rng)
    before = {u: scrape(u) for u in args.url} if args.metrics else None
    tally = Tally()
    per_url = {u: 0 for u in args.url}
    barrier = threading.Barrier(args.clients + 1)
    box = {}

    def worker(client, wrng):
        barrier.wait()
        end = box["end"]
        nodes = 0
        while time.perf_counter() < end:
            ids = random_ids(wrng, args.num_nodes, args.nodes_per_request)
            start = time.perf_counter()
            status, data = client.infer(ids)
            tally.add(status, data, time.perf_counter() - start, rows_of(ids))
            if status == 200:
                nodes += rows_of(ids)
        with tally.lock:
            per_url[client_url[id(client)]] += nodes

    client_url = {id(c): args.url[i % len(args.url)] for i, c in enumerate(clients)}
    threads = [threading.Thread(target=worker, args=(c, random.Random(args.seed * 1000 + i)),
                                daemon=True) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    box["end"] = t0 + args.seconds
    barrier.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    r = {"mode": "closed", "urls": args.url, "clients": args.clients,
         "nodes_per_request": args.nodes_per_request, "seconds": args.seconds,
         "ok": tally.ok, "errors": tally.errors, "error_samples": tally.error_samples,
         "elapsed_s": round(elapsed, 3),
         "requests_per_s": round(tally.ok / elapsed, 2),
         "nodes_per_s": round(tally.nodes / elapsed, 1),
         "nodes_per_s_by_url": {u: round(n / elapsed, 1) for u, n in per_url.items()}}
    r.update(percentiles(tally.lat))
    r.update(conn_stats(clients))
    if args.metrics:
        r["server"] = metric_delta(before, {u: scrape(u) for u in args.url})
    print(f"closed {args.clients} x {args.nodes_per_request} nodes x {args.seconds}s: "
          f"{r['requests_per_s']} req/s, {r['nodes_per_s']} nodes/s, p50 {r['p50_ms']} ms "
          f"p99 {r['p99_ms']} ms errors {tally.errors}", file=sys.stderr)
    return r


def run_count(args):
    rng = random.Random(args.seed)
    clients = [Client(args.url[i % len(args.url)], args.model, args.timeout_s, args.binary)
               for i in range(args.clients)]
    warm_up(args, clients, rng)
    before = {u: scrape(u) for u in args.url}
    tally = Tally()
    lock = threading.Lock()
    state = {"next": 0, "done": 0}
    rss = [{"answered": 0, "rss_bytes": before[args.url[0]]["process_resident_memory_bytes"]}]
    stop = threading.Event()

    def worker(client, wrng):
        while True:
            with lock:
                if state["next"] >= args.requests:
                    return
                state["next"] += 1
            ids = random_ids(wrng, args.num_nodes, args.nodes_per_request)
            start = time.perf_counter()
            status, data = client.infer(ids)
            tally.add(status, data, time.perf_counter() - start, rows_of(ids))
            with lock:
                state["done"] += 1

    def monitor():  # the first url's RSS every --rss_every answers
        mark = args.rss_every
        while not stop.is_set():
            stop.wait(0.2)
            with lock:
                done = state["done"]
            if args.rss_every and done >= mark and done < args.requests:
                m = scrape(args.url[0])
                rss.append({"answered": done, "rss_bytes": m["process_resident_memory_bytes"]})
                mark = (done // args.rss_every + 1) * args.rss_every

    threads = [threading.Thread(target=worker, args=(c, random.Random(args.seed * 1000 + i)),
                                daemon=True) for i, c in enumerate(clients)]
    mon = threading.Thread(target=monitor, daemon=True)
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    mon.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    stop.set()
    mon.join()
    after = {u: scrape(u) for u in args.url}
    rss.append({"answered": args.requests,
                "rss_bytes": after[args.url[0]]["process_resident_memory_bytes"]})
    r = {"mode": "count", "urls": args.url, "clients": args.clients,
         "requests": args.requests, "nodes_per_request": args.nodes_per_request,
         "ok": tally.ok, "errors": tally.errors, "error_samples": tally.error_samples,
         "elapsed_s": round(elapsed, 3), "requests_per_s": round(tally.ok / elapsed, 2),
         "rss_before_bytes": rss[0]["rss_bytes"], "rss_after_bytes": rss[-1]["rss_bytes"],
         "rss_samples": rss, "server": metric_delta(before, after)}
    r.update(percentiles(tally.lat))
    r.update(conn_stats(clients))
    print(f"count {args.requests} x {args.nodes_per_request} nodes: {r['requests_per_s']} req/s, "
          f"RSS {rss[0]['rss_bytes'] / 2**20:.1f} -> {rss[-1]['rss_bytes'] / 2**20:.1f} MiB, "
          f"errors {tally.errors}", file=sys.stderr)
    return r


def run_ready(args):
    deadline = time.time() + args.timeout_s
    pending = list(args.url)
    while pending:
        still = []
        for url in pending:
            try:
                status, _ = Client(url, "-", 2.0, False).get("/v2/health/ready")
            except OSError:
                status = 0
            if status != 200:
                still.append(url)
        pending = still
        if not pending:
            break
        if time.time() > deadline:
            print(json.dumps({"mode": "ready", "ready": False, "not_ready": pending}))
            sys.exit(1)
        time.sleep(0.5)
    print(json.dumps({"mode": "ready", "ready": True, "urls": args.url}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["open", "closed", "count", "ready", "metrics"])
    p.add_argument("--url", action="append", required=True,
                   help="gnn-serve base URL, e.g. http://10.78.1.10:8000 (repeatable)")
    p.add_argument("--model", default="", help="the graph name (the model's name in the URL)")
    p.add_argument("--num_nodes", type=int, default=0, help="node ids are 0..num_nodes-1")
    p.add_argument("--rate", type=float, default=100.0, help="open: requests/s")
    p.add_argument("--arrivals", choices=["uniform", "poisson"], default="uniform",
                   help="open: evenly spaced or Poisson send times")
    p.add_argument("--seconds", type=float, default=30.0, help="open/closed: duration")
    p.add_argument("--clients", type=int, default=16, help="threads (one connection each)")
    p.add_argument("--nodes_per_request", type=int, default=1,
                   help="nodes per request (with --edges: pairs per request)")
    p.add_argument("--edges", action="store_true",
                   help="an edge model: requests ask random pairs (source, destination)")
    p.add_argument("--output", default="logits",
                   help="the output each request asks for (a link model's pairs: score)")
    p.add_argument("--edge_feature_dim", type=int, default=0,
                   help="--edges: features sent with each pair (the decoder's edge features)")
    p.add_argument("--requests", type=int, default=100000, help="count: requests to send")
    p.add_argument("--rss_every", type=int, default=0, help="count: read RSS every N answers")
    p.add_argument("--warmup", type=int, default=0, help="requests sent before measuring")
    p.add_argument("--metrics", action="store_true", help="report the servers' counters' change")
    p.add_argument("--binary", action="store_true",
                   help="ask for logits as binary tensor data (Triton's extension), not JSON")
    p.add_argument("--timeout_s", type=float, default=30.0, help="socket timeout / ready wait")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--label", default="", help="copied into the JSON line")
    args = p.parse_args()
    args.url = [u.rstrip("/") for u in args.url]
    EDGES["on"], EDGES["dim"], EDGES["output"] = args.edges, args.edge_feature_dim, args.output
    if args.mode == "ready":
        return run_ready(args)
    if args.mode == "metrics":
        print(json.dumps({"mode": "metrics", "servers": {u: scrape(u) for u in args.url}}))
        return
    if not args.model or args.num_nodes < 1:
        p.error("--model and --num_nodes are required for load modes")
    check_answer(args)
    r = {"open": run_open, "closed": run_closed, "count": run_count}[args.mode](args)
    if args.label:
        r["label"] = args.label
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
