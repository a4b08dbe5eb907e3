// gnn-dataplane-bench: throughput of the distributed data plane (DistGraph)
// against the standalone sampler and a raw ZeroMQ transfer, on one machine.
//
//   gnn-dataplane-bench --part_config /tmp/parts2/synthetic-products.json
//   bash bench/dataplane_bench.sh        # partitions products into 2 and 4
//
// For each "servers per partition" value the program starts a cluster of
// real gnn-server processes (fork/exec, loopback ports, one job id) and
// measures, on the same workload and interleaved so that machine load hits
// every path alike:
//   sampling  SampleNeighbors calls whose seeds are all owned by partition
//             --machine (the per-layer frontiers of DGL mini-batches, cut to
//             the owned nodes): standalone (LoadLocalPartition + the
//             standalone sampler), local (DistGraph reading the partition
//             from shared memory) and remote (DistGraph over loopback TCP).
//   features  rows of owned input nodes: GatherRows on the loaded
//             partition, DistGraph::PullFeatures local and remote, and a raw
//             ZeroMQ DEALER/ROUTER exchange with the same request and reply
//             sizes (a separate process answering from a prebuilt buffer,
//             zero-copy: no gather, no header, no proxy, no copy-out).
//             Two extra rows (not targets, --raw_chunk_mb): the remote pull
//             as consecutive PullFeatures calls on ~4 MB slices, and the raw
//             exchange as ~4 MB replies all in flight at once.
//   batches   DistGraph::MakeBatch for DGL's default mini-batch with the
//             client co-located with partition --machine and fully remote:
//             batches/s and bytes on the wire per batch (wire_bytes).
// Every figure is the best of --reps interleaved repetitions (other work on
// the machine only ever slows a run down); CPU seconds of this process
// (client, including ZeroMQ I/O threads) and of the children (servers or
// echo process) are reported beside it, and the throughput per CPU-second
// (client + children), which descheduling does not distort.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "client/dist_graph.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "net/security.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "sampling/loader.h"
#include "sampling/sampler.h"

namespace {

struct BenchOptions {
  std::string part_config;
  std::string server_bin;  // default: <this binary's dir>/../apps/gnn-server
  std::string servers = "1,2";
  std::string clients = "1";
  int machine = 0;
  std::string fanouts = "10,25";
  int64_t batch_size = 1000;
  int batches = 10;    // mini-batches whose frontiers form the workload
  int reps = 5;        // repetitions per figure (best reported)
  int mb_batches = 8;  // MakeBatch batches per placement
  int server_threads = 0;
  int raw_chunk_mb = 4;  // extra rows: sliced remote pulls, pipelined raw chunks (0: off)
  std::string work_dir;  // server logs and ip_config files
  uint64_t seed = 0;
  bool echo_server = false;  // internal: run the raw ZeroMQ echo process
  bool insecure = false;     // plaintext servers and clients (default: CURVE with a job secret)
};

std::vector<int> ParseInts(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      out.push_back(std::stoi(item));
    } catch (const std::exception&) {
      throw gnn::ConfigError(flag + ": '" + item + "' is not an integer");
    }
  }
  if (out.empty()) throw gnn::ConfigError(flag + ": empty");
  return out;
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw gnn::Error("cannot read /proc/self/exe");
  buf[n] = 0;
  return buf;
}

std::string LoadAvg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

// utime + stime of a child from /proc/<pid>/stat (0 if it is gone).
double ChildCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::stringstream rest(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ---------------------------------------------------------------- children

struct Child {
  pid_t pid = -1;
  std::string what;
  std::string log;
};

// fork + exec with stdout/stderr to `log` (stdout to `stdout_fd` if >= 0).
// The child gets SIGTERM if this process dies.
Child Spawn(const std::vector<std::string>& args, const std::string& what, const std::string& log,
            int stdout_fd = -1) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw gnn::ConfigError("cannot write " + log + ": " + std::strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    throw gnn::Error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    dup2(stdout_fd >= 0 ? stdout_fd : log_fd, 1);
    dup2(log_fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  return {pid, what, log};
}

std::string Tail(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// Throws naming the first child that has exited.
void CheckAlive(const std::vector<Child>& children) {
  for (const auto& c : children) {
    int status = 0;
    if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
      throw gnn::PeerError(c.what + " (pid " + std::to_string(c.pid) + ") exited with status " +
                           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ": " +
                           Tail(c.log) + " (log " + c.log + ")");
    }
  }
}

void StopChildren(std::vector<Child>* children) {
  for (const auto& c : *children) kill(c.pid, SIGTERM);
  for (const auto& c : *children) {
    gnn::Stopwatch w;
    int status = 0;
    while (waitpid(c.pid, &status, WNOHANG) == 0) {
      if (w.Seconds() > 10) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        break;
      }
      usleep(20000);
    }
  }
  children->clear();
}

bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// ------------------------------------------------------ raw ZeroMQ baseline

// The echo process: request [size (uint64), payload], reply one frame of
// `size` bytes sent zero-copy from a prebuilt buffer. Runs until killed.
void RunEchoServer() {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::sndhwm, 0);
  router.set(zmq::sockopt::rcvhwm, 0);
  router.bind("tcp://127.0.0.1:*");
  std::printf("%s\n", router.get(zmq::sockopt::last_endpoint).c_str());
  std::fflush(stdout);
  std::vector<std::unique_ptr<char[]>> buffers;  // never freed while in flight
  size_t capacity = 0;
  while (true) {
    std::vector<zmq::message_t> parts;
    do {
      parts.emplace_back();
      if (!router.recv(parts.back())) break;
    } while (parts.back().more());
    if (parts.size() < 2 || parts[1].size() != sizeof(uint64_t)) continue;
    uint64_t size = 0;
    std::memcpy(&size, parts[1].data(), sizeof(size));
    if (size > capacity) {
      capacity = std::max<size_t>(size, 2 * capacity);
      buffers.emplace_back(new char[capacity]);
      std::memset(buffers.back().get(), 1, capacity);
    }
    zmq::message_t reply(buffers.back().get(), size, nullptr);  // constant: no free, no copy
    router.send(parts[0], zmq::send_flags::sndmore);
    router.send(reply, zmq::send_flags::none);
  }
}

// Starts this binary as the echo process; returns it and its endpoint.
Child StartEcho(const std::string& work_dir, std::string* endpoint) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw gnn::Error("pipe2 failed");
  Child c = Spawn({SelfExe(), "--echo_server"}, "raw ZeroMQ echo process", work_dir + "/echo.log",
                  fds[1]);
  close(fds[1]);
  std::string line;
  pollfd p{fds[0], POLLIN, 0};
  char ch;
  while (poll(&p, 1, 10000) > 0 && read(fds[0], &ch, 1) == 1 && ch != '\n') line += ch;
  close(fds[0]);
  if (line.rfind("tcp://", 0) != 0) {
    throw gnn::PeerError("the echo process did not report an endpoint (log " + c.log + ")");
  }
  *endpoint = line;
  return c;
}

// ------------------------------------------------------------- workload

struct SampleCall {
  std::vector<int64_t> seeds;  // all owned by the local machine
  int fanout = 0;
  uint64_t rng = 0;
};

struct Workload {
  std::vector<std::vector<int64_t>> batch_seeds;  // train seeds of the machine
  std::vector<SampleCall> calls;
  int64_t sample_edges = 0;                    // what the standalone sampler returns for `calls`
  std::vector<std::vector<int64_t>> pull_ids;  // owned input nodes per batch
  int64_t pull_rows = 0;
};

// One run of one measurement.
struct Figure {
  double rate = 0;        // units per second
  double wall = 0;        // seconds
  double client_cpu = 0;  // seconds, this process
  double child_cpu = 0;   // seconds, servers / echo process
  double wire = 0;        // bytes on the wire (DistGraph::wire_bytes)
  double units = 0;       // work done (edges or bytes)
  double PerCpu() const { return units / std::max(1e-9, client_cpu + child_cpu); }
};

// The fastest of the repetitions.
Figure Best(const std::vector<Figure>& v) {
  return *std::max_element(v.begin(), v.end(),
                           [](const Figure& a, const Figure& b) { return a.rate < b.rate; });
}

// Runs fn(client) in `clients` threads (inline for one) and times the whole.
// fn returns the units of work it did and adds its wire bytes.
Figure Timed(int clients, const std::vector<Child>& children,
             const std::function<double(int, double*)>& fn) {
  std::vector<double> units(clients, 0), wire(clients, 0);
  std::vector<std::exception_ptr> errors(clients);
  double cpu0 = ProcessCpuSeconds(), child0 = 0;
  for (const auto& c : children) child0 += ChildCpuSeconds(c.pid);
  gnn::Stopwatch w;
  if (clients == 1) {
    units[0] = fn(0, &wire[0]);
  } else {
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        try {
          units[c] = fn(c, &wire[c]);
        } catch (...) {
          errors[c] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }
  Figure f;
  f.wall = w.Seconds();
  f.client_cpu = ProcessCpuSeconds() - cpu0;
  for (const auto& c : children) f.child_cpu += ChildCpuSeconds(c.pid);
  f.child_cpu -= child0;
  double total = 0;
  for (int c = 0; c < clients; ++c) {
    total += units[c];
    f.wire += wire[c];
  }
  f.units = total;
  f.rate = total / f.wall;
  return f;
}

void PrintRow(int clients, const char* path, const char* what, const Figure& f, double scale,
              const char* unit, const std::string& note = "") {
  std::printf("  %7d  %-38s %-9s %9.3f %9.3f %-9s %6.2f %8.2f %8.2f  %s\n", clients, path, what,
              f.rate / scale, f.PerCpu() / scale, unit, f.wall, f.client_cpu, f.child_cpu,
              note.c_str());
}

std::string Pct(double a, double b) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f%%", 100 * a / b);
  return buf;
}

struct Bench {
  BenchOptions o;
  std::vector<int> fanouts;
  gnn::PartitionConfig config;
  gnn::LocalPartition lp;
  gnn::CscView csc;
  Workload wl;
  std::string echo_endpoint;
  std::vector<Child> echo;
  std::vector<std::string> summary;  // target lines, printed at the end

  bool Owned(int64_t id) const { return id >= lp.node_start && id < lp.node_start + lp.num_nodes; }

  void BuildWorkload() {
    std::vector<int64_t> train = lp.Nodes(lp.train_mask);
    if (train.empty())
      throw gnn::DataError("partition " + std::to_string(o.machine) + " has no train nodes");
    for (int64_t i = static_cast<int64_t>(train.size()) - 1; i > 0; --i) {
      std::swap(train[i], train[gnn::MixSeed(o.seed, i) % static_cast<uint64_t>(i + 1)]);
    }
    const int64_t per_epoch =
        std::max<int64_t>(1, static_cast<int64_t>(train.size()) / o.batch_size);
    for (int k = 0; k < o.batches; ++k) {
      int64_t b = (k % per_epoch) * o.batch_size;
      int64_t e = std::min<int64_t>(b + o.batch_size, train.size());
      wl.batch_seeds.emplace_back(train.begin() + b, train.begin() + e);
    }
    for (int k = 0; k < o.batches; ++k) {
      std::vector<int64_t> frontier = wl.batch_seeds[k];
      for (int l = static_cast<int>(fanouts.size()) - 1; l >= 0; --l) {
        SampleCall call;
        for (int64_t v : frontier) {
          if (Owned(v)) call.seeds.push_back(v);
        }
        call.fanout = fanouts[l];
        call.rng = gnn::MixSeed(gnn::MixSeed(o.seed + 1, k), l);
        std::vector<int64_t> ptr, idx;
        gnn::SampleNeighbors(csc, call.seeds.data(), call.seeds.size(), call.fanout, false,
                             call.rng, 1, &ptr, &idx);
        wl.sample_edges += idx.size();
        gnn::Block block = gnn::ToBlock(call.seeds, std::move(ptr), idx);
        frontier = std::move(block.src_nodes);
        wl.calls.push_back(std::move(call));
      }
      std::vector<int64_t> ids;
      for (int64_t v : frontier) {
        if (Owned(v)) ids.push_back(v);
      }
      wl.pull_rows += ids.size();
      wl.pull_ids.push_back(std::move(ids));
    }
  }

  // ---- the measurements (each does the whole workload once per client)

  double StandaloneSample() const {
    std::vector<int64_t> ptr, idx;
    int64_t edges = 0;
    for (const auto& c : wl.calls) {
      gnn::SampleNeighbors(csc, c.seeds.data(), c.seeds.size(), c.fanout, false, c.rng, 1, &ptr,
                           &idx);
      edges += idx.size();
    }
    return static_cast<double>(edges);
  }
  double DistSample(gnn::DistGraph& g, double* wire) const {
    std::vector<int64_t> ptr, idx;
    int64_t edges = 0;
    uint64_t w0 = g.wire_bytes();
    for (const auto& c : wl.calls) {
      g.SampleNeighbors(c.seeds, c.fanout, false, c.rng, &ptr, &idx);
      edges += idx.size();
    }
    *wire += g.wire_bytes() - w0;
    if (edges != wl.sample_edges) {
      throw gnn::DataError("DistGraph sampled " + std::to_string(edges) +
                           " edges, the standalone sampler " + std::to_string(wl.sample_edges));
    }
    return static_cast<double>(edges);
  }
  double RowBytes() const { return static_cast<double>(config.feature_dim) * sizeof(float); }
  double StandaloneGather(gnn::NoInitVector<float>* out) const {
    for (const auto& ids : wl.pull_ids) {
      gnn::GatherRows(lp.features.data(), lp.node_start, lp.feature_dim, ids, out, 1);
    }
    return wl.pull_rows * RowBytes();
  }
  double DistPull(gnn::DistGraph& g, gnn::NoInitVector<float>* out, double* wire) const {
    uint64_t w0 = g.wire_bytes();
    for (const auto& ids : wl.pull_ids) g.PullFeatures(ids, out);
    *wire += g.wire_bytes() - w0;
    return wl.pull_rows * RowBytes();
  }
  // The same pulls as consecutive PullFeatures calls on slices of about
  // chunk_bytes of reply each, copied into the batch's buffer: what smaller
  // messages alone (no pipelining) change.
  double DistPullSliced(gnn::DistGraph& g, gnn::NoInitVector<float>* out, double* wire,
                        size_t chunk_bytes) const {
    const size_t row = static_cast<size_t>(RowBytes());
    const size_t dim = static_cast<size_t>(config.feature_dim);
    const size_t step = std::max<size_t>(1, chunk_bytes / row);
    std::vector<int64_t> slice;
    gnn::NoInitVector<float> part;
    uint64_t w0 = g.wire_bytes();
    for (const auto& ids : wl.pull_ids) {
      out->resize(ids.size() * dim);
      for (size_t b = 0; b < ids.size(); b += step) {
        size_t n = std::min(step, ids.size() - b);
        slice.assign(ids.begin() + b, ids.begin() + b + n);
        g.PullFeatures(slice, &part);
        std::memcpy(out->data() + b * dim, part.data(), n * row);
      }
    }
    *wire += g.wire_bytes() - w0;
    return wl.pull_rows * RowBytes();
  }

  // One request per batch (as PullFeatures to one partition), or with
  // chunk_bytes > 0 the same ids split into requests whose replies are about
  // chunk_bytes, all sent before the first reply is read.
  double RawEcho(zmq::socket_t& sock, double* wire, size_t chunk_bytes = 0) const {
    const size_t row = static_cast<size_t>(RowBytes());
    for (const auto& ids : wl.pull_ids) {
      const size_t step = chunk_bytes ? std::max<size_t>(1, chunk_bytes / row) : ids.size();
      size_t pending = 0;
      for (size_t b = 0; b < ids.size() || (b == 0 && ids.empty()); b += step) {
        size_t n = std::min(step, ids.size() - b);
        uint64_t size = n * row;
        zmq::message_t head(&size, sizeof(size));
        zmq::message_t body(ids.data() + b, n * sizeof(int64_t));
        *wire += static_cast<double>(body.size() + size);
        sock.send(head, zmq::send_flags::sndmore);
        sock.send(body, zmq::send_flags::none);
        ++pending;
        if (ids.empty()) break;
      }
      for (; pending > 0; --pending) {
        zmq::message_t reply;
        if (!sock.recv(reply) || reply.size() % row != 0) {
          throw gnn::ProtocolError("the echo process sent a reply of the wrong size");
        }
      }
    }
    return wl.pull_rows * RowBytes();
  }

  // Compares one pulled batch with the standalone gather.
  void CheckPull(gnn::DistGraph& g, const char* what) const {
    gnn::NoInitVector<float> a, b;
    const auto& ids = wl.pull_ids.front();
    gnn::GatherRows(lp.features.data(), lp.node_start, lp.feature_dim, ids, &a, 1);
    g.PullFeatures(ids, &b);
    if (a != b) throw gnn::DataError(std::string(what) + " PullFeatures differs from GatherRows");
  }

  // The clients of one measurement: DistGraphs reading the local partition
  // from shared memory or everything over the network, raw echo sockets.
  struct Clients {
    std::vector<std::unique_ptr<gnn::DistGraph>> local, remote;
    std::vector<std::unique_ptr<zmq::context_t>> raw_ctx;
    std::vector<std::unique_ptr<zmq::socket_t>> raw;
    std::vector<gnn::NoInitVector<float>> out;
  };

  // The gnn-server processes of one measurement, and how clients reach them.
  struct Cluster {
    std::vector<Child> servers;
    gnn::DistGraphOptions options;
  };

  // Starts `servers` gnn-server processes per partition on free loopback
  // ports (with the job's secret unless --insecure) and waits until every
  // one answers Hello; prints the section header.
  void StartCluster(int servers, Cluster* cl) {
    const int parts = config.num_parts;
    const std::string job = "dpbench-" + std::to_string(getpid()) + "-" + std::to_string(servers);
    // Ports: one range of `servers` ports per machine, 10 apart.
    int base = 21000 + static_cast<int>(getpid() % 400) * 20;
    for (;; base += 10) {
      if (base + 10 * parts > 32000) throw gnn::ConfigError("no free loopback ports below 32000");
      bool ok = true;
      for (int m = 0; m < parts && ok; ++m) {
        for (int s = 0; s < servers && ok; ++s) ok = PortFree(base + 10 * m + s);
      }
      if (ok) break;
    }
    const std::string ip_config = o.work_dir + "/ip_config_" + std::to_string(servers) + ".txt";
    {
      std::ofstream out(ip_config);
      for (int m = 0; m < parts; ++m) out << "127.0.0.1 " << base + 10 * m << "\n";
    }
    // The job's secret, as gnn-launch would hand it to its servers.
    const std::string secret_file = o.work_dir + "/job.secret";
    if (!o.insecure) gnn::net::WriteSecretFile(secret_file, gnn::net::NewSecret());
    std::vector<Child>& cluster = cl->servers;
    gnn::Stopwatch startup;
    for (int s = 0; s < servers; ++s) {  // server 0 of every machine first: they load
      for (int m = 0; m < parts; ++m) {
        std::string what =
            "gnn-server machine " + std::to_string(m) + " server " + std::to_string(s);
        std::vector<std::string> argv = {o.server_bin,
                                         "--ip_config",
                                         ip_config,
                                         "--part_config",
                                         o.part_config,
                                         "--machine_id",
                                         std::to_string(m),
                                         "--server_id",
                                         std::to_string(s),
                                         "--num_servers",
                                         std::to_string(servers),
                                         "--num_threads",
                                         std::to_string(o.server_threads),
                                         "--job_id",
                                         job,
                                         "--attach_timeout_ms",
                                         "300000"};
        if (o.insecure) {
          argv.push_back("--insecure");
        } else {
          argv.insert(argv.end(), {"--secret_file", secret_file});
        }
        cluster.push_back(Spawn(argv, what,
                                o.work_dir + "/server_" + std::to_string(servers) + "_" +
                                    std::to_string(m) + "_" + std::to_string(s) + ".log"));
      }
    }
    gnn::DistGraphOptions& base_opt = cl->options;
    base_opt.ip_config = ip_config;
    base_opt.part_config = o.part_config;
    base_opt.num_servers = servers;
    base_opt.job_id = job;
    base_opt.keys = o.insecure
                        ? gnn::net::JobKeys::Insecure()
                        : gnn::net::JobKeys::Derive(gnn::net::ReadSecretFile(secret_file), job);
    base_opt.timeout = std::chrono::milliseconds(120000);
    // Ready = every server answers Hello (they answer once the partition is
    // in shared memory).
    while (true) {
      CheckAlive(cluster);
      try {
        gnn::DistGraphOptions probe = base_opt;
        probe.timeout = std::chrono::milliseconds(2000);
        gnn::DistGraph g(probe);
        break;
      } catch (const gnn::TimeoutError&) {
        if (startup.Seconds() > 600) throw gnn::TimeoutError("the cluster did not start in 600 s");
      }
    }
    const double startup_s = startup.Seconds();

    std::printf(
        "\n== %d server%s per partition: %d gnn-server processes (%d worker threads each, %s), "
        "ready in %.1f s; load average %s\n",
        servers, servers > 1 ? "s" : "", parts * servers,
        o.server_threads > 0 ? o.server_threads
                             : static_cast<int>(std::thread::hardware_concurrency()),
        o.insecure ? "PLAINTEXT" : "CURVE", startup_s, LoadAvg().c_str());
    std::printf("  %7s  %-38s %-9s %9s %9s %-9s %6s %8s %8s\n", "clients", "path", "figure",
                "value", "per cpu-s", "unit", "wall s", "cpu self", "cpu srv");
  }

  // One client count's figures: every path, best of --reps interleaved.
  void MeasureClients(int servers, int clients, const std::vector<Child>& all, Clients& cs) {
    auto& local = cs.local;
    auto& remote = cs.remote;
    auto& raw = cs.raw;
    auto& out = cs.out;
    const int parts = config.num_parts;
    // Warm-up: page cache, shared-memory mappings, TCP windows, allocator.
    for (int c = 0; c < clients; ++c) {
      double w = 0;
      DistSample(*local[c], &w);
      DistSample(*remote[c], &w);
      DistPull(*local[c], &out[c], &w);
      DistPull(*remote[c], &out[c], &w);
      RawEcho(*raw[c], &w);
      if (o.raw_chunk_mb > 0) {
        RawEcho(*raw[c], &w, static_cast<size_t>(o.raw_chunk_mb) << 20);
        DistPullSliced(*remote[c], &out[c], &w, static_cast<size_t>(o.raw_chunk_mb) << 20);
      }
      StandaloneGather(&out[c]);
    }
    enum { kSaS, kLoS, kReS, kSaP, kLoP, kReP, kRaw, kReSliced, kRawChunk, kCases };
    const size_t chunk = static_cast<size_t>(o.raw_chunk_mb) << 20;
    std::vector<std::vector<Figure>> f(kCases);
    for (int r = 0; r < o.reps; ++r) {
      f[kSaS].push_back(Timed(clients, all, [&](int, double*) { return StandaloneSample(); }));
      f[kLoS].push_back(
          Timed(clients, all, [&](int c, double* w) { return DistSample(*local[c], w); }));
      f[kReS].push_back(
          Timed(clients, all, [&](int c, double* w) { return DistSample(*remote[c], w); }));
      f[kSaP].push_back(
          Timed(clients, all, [&](int c, double*) { return StandaloneGather(&out[c]); }));
      f[kLoP].push_back(
          Timed(clients, all, [&](int c, double* w) { return DistPull(*local[c], &out[c], w); }));
      f[kReP].push_back(
          Timed(clients, all, [&](int c, double* w) { return DistPull(*remote[c], &out[c], w); }));
      f[kRaw].push_back(Timed(clients, all, [&](int c, double* w) { return RawEcho(*raw[c], w); }));
      if (chunk) {
        f[kReSliced].push_back(Timed(clients, all, [&](int c, double* w) {
          return DistPullSliced(*remote[c], &out[c], w, chunk);
        }));
        f[kRawChunk].push_back(
            Timed(clients, all, [&](int c, double* w) { return RawEcho(*raw[c], w, chunk); }));
      } else {
        f[kReSliced].push_back(Figure{});
        f[kRawChunk].push_back(Figure{});
      }
    }
    std::vector<Figure> m(kCases);
    for (int k = 0; k < kCases; ++k) m[k] = Best(f[k]);
    const double units = clients * static_cast<double>(wl.calls.size());
    char note[160];
    PrintRow(clients, "standalone (LoadLocalPartition)", "sample", m[kSaS], 1e6, "Medges/s");
    PrintRow(clients, "local shm (DistGraph, own machine)", "sample", m[kLoS], 1e6, "Medges/s",
             Pct(m[kLoS].rate, m[kSaS].rate) + " of standalone");
    std::snprintf(note, sizeof(note), "%s of local; %.0f KB wire/call",
                  Pct(m[kReS].rate, m[kLoS].rate).c_str(), m[kReS].wire / units / 1e3);
    PrintRow(clients, "remote loopback (DistGraph, -1)", "sample", m[kReS], 1e6, "Medges/s", note);
    PrintRow(clients, "standalone GatherRows", "features", m[kSaP], 1e9, "GB/s");
    PrintRow(clients, "local shm PullFeatures", "features", m[kLoP], 1e9, "GB/s",
             Pct(m[kLoP].rate, m[kSaP].rate) + " of standalone");
    std::snprintf(note, sizeof(note), "%s of local, %s of raw ZeroMQ",
                  Pct(m[kReP].rate, m[kLoP].rate).c_str(), Pct(m[kReP].rate, m[kRaw].rate).c_str());
    PrintRow(clients, "remote loopback PullFeatures", "features", m[kReP], 1e9, "GB/s", note);
    PrintRow(clients, "raw ZeroMQ DEALER/ROUTER, same sizes", "features", m[kRaw], 1e9, "GB/s",
             "payload (reply) bytes");
    if (chunk) {
      std::snprintf(note, sizeof(note), "(not a target) %d MB slices, one call after another",
                    o.raw_chunk_mb);
      PrintRow(clients, "remote PullFeatures, sliced", "features", m[kReSliced], 1e9, "GB/s", note);
      std::snprintf(note, sizeof(note), "(not a target) the same bytes as %d MB replies, pipelined",
                    o.raw_chunk_mb);
      PrintRow(clients, "raw ZeroMQ, chunked", "features", m[kRawChunk], 1e9, "GB/s", note);
    }
    auto target = [&](const char* what, int a, int b, double want) {
      char line[256];
      double got = m[a].rate / m[b].rate;
      std::snprintf(
          line, sizeof(line),
          "  %d parts, %d server%s/part, %d client%s: %-36s %5.2f  (target >= %.2f: %-6s) "
          "per cpu-s %5.2f",
          parts, servers, servers > 1 ? "s" : "", clients, clients > 1 ? "s" : " ", what, got, want,
          got >= want ? "met" : "MISSED", m[a].PerCpu() / m[b].PerCpu());
      summary.push_back(line);
    };
    target("sampling: remote / local", kReS, kLoS, 0.5);
    target("sampling: local / standalone", kLoS, kSaS, 1 / 1.2);
    target("feature pull: remote / local", kReP, kLoP, 0.5);
    target("feature pull: remote / raw ZeroMQ", kReP, kRaw, 0.7);
  }

  // Whole mini-batches (one client): co-located with the machine, and remote.
  void MeasureMakeBatch(Clients& cs) {
    auto& local = cs.local;
    auto& remote = cs.remote;
    std::printf("\n  MakeBatch, DGL default (fanouts %s, batch %" PRId64
                ", train seeds of partition %d), 1 client:\n",
                o.fanouts.c_str(), o.batch_size, o.machine);
    std::printf("  %-28s %9s %10s %12s %10s %10s %10s %12s\n", "client", "batches/s", "Medges/s",
                "wire MB/bat", "sample MB", "feat MB", "label MB", "input nodes");
    for (int placement : {o.machine, -1}) {
      gnn::DistGraph& g = placement >= 0 ? *local[0] : *remote[0];
      // Today's wire (neighbour lists and rows), then the first layer
      // sampled and aggregated at the owners.
      g.SetAggregateAtOwner(false);
      g.MakeBatch(wl.batch_seeds[0], fanouts, false, 12345);  // warm-up
      double wire = 0, feat = 0, label = 0, edges = 0, inputs = 0;
      gnn::Stopwatch w;
      for (int k = 0; k < o.mb_batches; ++k) {
        const auto& seeds = wl.batch_seeds[k % wl.batch_seeds.size()];
        uint64_t w0 = g.wire_bytes();
        gnn::MiniBatch mb = g.MakeBatch(seeds, fanouts, false, gnn::MixSeed(o.seed + 7, k));
        wire += g.wire_bytes() - w0;
        for (const auto& b : mb.blocks) edges += b.num_edges();
        inputs += mb.input_nodes().size();
        for (int64_t v : mb.input_nodes()) {
          if (placement < 0 || !Owned(v)) feat += 8 + RowBytes();
        }
        for (int64_t v : seeds) {
          if (placement < 0 || !Owned(v)) label += 16;
        }
      }
      double s = w.Seconds();
      const double n = o.mb_batches;
      std::printf("  %-28s %9.2f %10.2f %12.2f %10.2f %10.2f %10.3f %12.0f\n",
                  placement >= 0
                      ? ("co-located (machine " + std::to_string(placement) + ")").c_str()
                      : "remote (local_machine_id -1)",
                  n / s, edges / s / 1e6, wire / n / 1e6, (wire - feat - label) / n / 1e6,
                  feat / n / 1e6, label / n / 1e6, inputs / n);
      g.SetAggregateAtOwner(true);
      g.MakeBatch(wl.batch_seeds[0], fanouts, false, 12345);  // warm-up
      double at_owner_wire = 0;
      gnn::Stopwatch w2;
      for (int k = 0; k < o.mb_batches; ++k) {
        const auto& seeds = wl.batch_seeds[k % wl.batch_seeds.size()];
        uint64_t w0 = g.wire_bytes();
        g.MakeBatch(seeds, fanouts, false, gnn::MixSeed(o.seed + 7, k));
        at_owner_wire += g.wire_bytes() - w0;
      }
      const double s2 = w2.Seconds();
      std::printf("  %-28s %9.2f %10s %12.2f   (%.2fx fewer bytes, %.2fx batches/s)\n",
                  "  aggregated at the owners", n / s2, "", at_owner_wire / n / 1e6,
                  wire / std::max(1.0, at_owner_wire), s / s2);
    }
  }

  void RunCluster(int servers, const std::vector<int>& client_counts) {
    Cluster cl;
    struct Guard {
      std::vector<Child>* c;
      ~Guard() { StopChildren(c); }
    } guard{&cl.servers};
    StartCluster(servers, &cl);
    std::vector<Child> all = cl.servers;
    all.insert(all.end(), echo.begin(), echo.end());
    const gnn::DistGraphOptions& base_opt = cl.options;
    const int max_clients = *std::max_element(client_counts.begin(), client_counts.end());
    Clients cs;
    auto& local = cs.local;
    auto& remote = cs.remote;
    auto& raw_ctx = cs.raw_ctx;
    auto& raw = cs.raw;
    for (int c = 0; c < max_clients; ++c) {
      gnn::DistGraphOptions lo = base_opt;
      lo.local_machine_id = o.machine;
      local.push_back(std::make_unique<gnn::DistGraph>(lo));
      remote.push_back(std::make_unique<gnn::DistGraph>(base_opt));
      raw_ctx.push_back(std::make_unique<zmq::context_t>());
      raw.push_back(std::make_unique<zmq::socket_t>(*raw_ctx.back(), zmq::socket_type::dealer));
      raw.back()->set(zmq::sockopt::linger, 0);
      raw.back()->set(zmq::sockopt::sndhwm, 0);
      raw.back()->set(zmq::sockopt::rcvhwm, 0);
      raw.back()->connect(echo_endpoint);
    }
    CheckPull(*local[0], "local");
    CheckPull(*remote[0], "remote");
    cs.out.resize(max_clients);

    for (int clients : client_counts) MeasureClients(servers, clients, all, cs);
    MeasureMakeBatch(cs);
  }

  void Run() {
    gnn::SetLogRole("dataplane-bench");
    gnn::SetLogLevel(gnn::LogLevel::kWarn);
    fanouts = gnn::ParseFanouts(o.fanouts, "--fanouts");
    std::vector<int> servers = ParseInts(o.servers, "--servers");
    std::vector<int> clients = ParseInts(o.clients, "--clients");
    for (int s : servers) {
      if (s < 1 || s > 10) throw gnn::ConfigError("--servers: each value in [1, 10]");
    }
    for (int c : clients) {
      if (c < 1) throw gnn::ConfigError("--clients: each value >= 1");
    }
    if (o.batch_size <= 0 || o.batches <= 0 || o.reps <= 0 || o.mb_batches <= 0 ||
        o.raw_chunk_mb < 0) {
      throw gnn::ConfigError(
          "--batch_size, --batches, --reps, --mb_batches must be positive, --raw_chunk_mb >= 0");
    }
    if (o.part_config.empty()) throw gnn::ConfigError("--part_config is required");
    std::string self = SelfExe();
    std::string dir = self.substr(0, self.rfind('/'));
    if (o.server_bin.empty()) o.server_bin = dir + "/../apps/gnn-server";
    if (access(o.server_bin.c_str(), X_OK) != 0) {
      throw gnn::ConfigError("--server_bin " + o.server_bin + " is not executable");
    }
    if (o.work_dir.empty()) o.work_dir = "/tmp/gnn-dataplane-bench-" + std::to_string(getpid());
    if (system(("mkdir -p '" + o.work_dir + "'").c_str()) != 0) {
      throw gnn::ConfigError("cannot create --work_dir " + o.work_dir);
    }

    config = gnn::LoadPartitionConfig(o.part_config);
    if (o.machine < 0 || o.machine >= config.num_parts)
      throw gnn::ConfigError("--machine out of range");
    gnn::Stopwatch lw;
    lp = gnn::LoadLocalPartition(config, o.machine, false);
    csc = gnn::CscView{lp.indptr.data(), lp.indices.data(), lp.node_start, lp.num_nodes,
                       lp.orig_nids.data()};
    double load_s = lw.Seconds();
    BuildWorkload();
    int64_t layer_calls = static_cast<int64_t>(wl.calls.size());
    std::printf("gnn-dataplane-bench: %s, %d partitions, %" PRId64 " nodes, %" PRId64
                " in-edges, feature_dim %" PRId64 "\n",
                config.graph_name.c_str(), config.num_parts, config.num_nodes, config.num_edges,
                config.feature_dim);
    std::printf("  local machine %d owns %" PRId64
                " nodes, %zu in-edges (loaded in %.1f s); "
                "%u hardware threads; load average %s\n",
                o.machine, lp.num_nodes, lp.indices.size(), load_s,
                std::thread::hardware_concurrency(), LoadAvg().c_str());
    std::printf(
        "  workload: %d mini-batches of %" PRId64
        " train seeds of partition %d, fanouts %s "
        "(input layer first); each layer's frontier cut to the owned nodes:\n"
        "    sampling %" PRId64
        " SampleNeighbors calls, %.0f seeds and %.0f sampled edges per call;\n"
        "    features %.0f owned input rows per batch (%.1f MB per PullFeatures call)\n",
        o.batches, o.batch_size, o.machine, o.fanouts.c_str(), layer_calls,
        [&] {
          double s = 0;
          for (auto& c : wl.calls) s += c.seeds.size();
          return s / layer_calls;
        }(),
        static_cast<double>(wl.sample_edges) / layer_calls,
        static_cast<double>(wl.pull_rows) / o.batches, wl.pull_rows * RowBytes() / o.batches / 1e6);
    std::printf(
        "  every figure: best of %d interleaved repetitions over the whole workload (per client); "
        "value = work / wall time, per cpu-s = work / (cpu self + cpu srv);\n"
        "  cpu self = this process incl. ZeroMQ I/O threads, cpu srv = servers + echo process\n",
        o.reps);

    echo.push_back(StartEcho(o.work_dir, &echo_endpoint));
    struct Guard {
      std::vector<Child>* c;
      ~Guard() { StopChildren(c); }
    } guard{&echo};
    for (int s : servers) RunCluster(s, clients);

    std::printf(
        "\n== targets (ratios of the best runs measured in this run; 'per cpu-s' = the "
        "same ratio of work per CPU-second)\n");
    for (const auto& line : summary) std::printf("%s\n", line.c_str());
    std::printf("\n  load average at the end %s; peak RSS of this process %.2f GB\n",
                LoadAvg().c_str(), gnn::PeakRssBytes() / 1e9);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Bench b;
  BenchOptions& o = b.o;
  CLI::App app{"Benchmark the distributed data plane (DistGraph) on one machine.",
               "gnn-dataplane-bench"};
  app.add_option("--part_config", o.part_config, "partition config JSON");
  app.add_option("--server_bin", o.server_bin, "gnn-server binary (default: ../apps/gnn-server)");
  app.add_option("--servers", o.servers, "servers per partition, comma-separated list")
      ->capture_default_str();
  app.add_option("--clients", o.clients, "concurrent client threads, comma-separated list")
      ->capture_default_str();
  app.add_option("--machine", o.machine, "the partition the client is co-located with")
      ->capture_default_str();
  app.add_option("--fanouts", o.fanouts, "per-layer fan-outs, input layer first")
      ->capture_default_str();
  app.add_option("--batch_size", o.batch_size, "seeds per mini-batch")->capture_default_str();
  app.add_option("--batches", o.batches, "mini-batches whose frontiers form the workload")
      ->capture_default_str();
  app.add_option("--reps", o.reps, "repetitions per figure (the best is reported)")
      ->capture_default_str();
  app.add_option("--mb_batches", o.mb_batches, "MakeBatch batches per placement")
      ->capture_default_str();
  app.add_option("--server_threads", o.server_threads, "gnn-server --num_threads (0 = all cores)")
      ->capture_default_str();
  app.add_option(
         "--raw_chunk_mb", o.raw_chunk_mb,
         "extra rows (not targets): remote pulls in slices and raw replies of this size (0 = off)")
      ->capture_default_str();
  app.add_option("--work_dir", o.work_dir, "server logs and ip_config files");
  app.add_option("--seed", o.seed, "shuffle and sampling seed")->capture_default_str();
  app.add_flag("--echo_server", o.echo_server, "internal: run the raw ZeroMQ echo process");
  app.add_flag("--insecure", o.insecure,
               "plaintext servers and clients (to measure what CURVE costs)");
  if (argc > 1 && std::string(argv[1]) == "--echo_server") {
    RunEchoServer();
    return 0;
  }
  return gnn::RunMain(app, argc, argv, [&] {
    std::printf("command:");
    for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
    std::printf("\n");
    b.Run();
  });
}
