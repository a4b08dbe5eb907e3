// The real gnn-server and gnn-sampler binaries as processes on loopback:
// serving, sampling into a trainer-side SamplerPool, backup servers on
// shared memory, crashes, busy ports and shutdown. Every process is killed
// and every shared-memory segment of the test's job removed on scope exit,
// also when a check fails.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include "client/dist_graph.h"
#include "client/sampler_service.h"
#include "cluster_util.h"
#include "common/error.h"
#include "common/sha256.h"
#include "net/channel.h"
#include "net/messages.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "partition/local_partition.h"
#include "process_util.h"
#include "server/server.h"
#include "store/shm_partition.h"

using namespace gnn;
using Clock = std::chrono::steady_clock;
using net::Millis;

namespace {

namespace fs = std::filesystem;

// A partitioned graph, an ip_config on free loopback ports and a job id
// unique to this process and test.
struct Deployment {
  test::TempDir dir;
  std::string part_config;
  std::string ip_config;
  PartitionConfig config;
  std::string config_sha;
  std::string job;
  std::vector<int> ports;  // base port per machine
  int num_servers = 1;

  Deployment(const std::string& dataset, int machines, int servers, const std::string& tag)
      : num_servers(servers) {
    part_config = test::MakePartitions(dir, dataset, machines, "data");
    config = LoadPartitionConfig(part_config);
    config_sha = Sha256File(part_config);
    job = "e2e-" + tag + "-" + std::to_string(::getpid());
    // Machine m's servers use ports[m] + s: ranges of num_servers ports.
    ports = test::FreeLoopbackPortRanges(machines, servers);
    ip_config = dir / "ip_config.txt";
    std::ofstream out(ip_config);
    for (int p : ports) out << "127.0.0.1 " << p << "\n";
  }
  std::string Endpoint(int machine, int server) const {
    return "tcp://127.0.0.1:" + std::to_string(ports[machine] + server);
  }
  std::string ShmName(int part) const {
    return JobShmName(config.graph_name, config_sha, job, part);
  }
  bool ShmLeft(int part) const {
    return fs::exists(ShmSegmentPath(ShmName(part))) || fs::exists(ShmLockPath(ShmName(part)));
  }
  net::Hello Hello() const { return {config.graph_name, config_sha, job}; }

  std::unique_ptr<test::ChildProcess> StartServer(int machine, int server) const {
    return std::make_unique<test::ChildProcess>(
        std::vector<std::string>{test::Bin("gnn-server"), "--ip_config", ip_config, "--part_config",
                                 part_config, "--machine_id", std::to_string(machine),
                                 "--server_id", std::to_string(server), "--num_servers",
                                 std::to_string(num_servers), "--num_threads", "2", "--job_id", job,
                                 "--attach_timeout_ms", "20000"},
        dir / ("server" + std::to_string(machine) + "." + std::to_string(server)));
  }
  std::unique_ptr<test::ChildProcess> StartSampler(const std::string& trainer_endpoint,
                                                   int sampler_id, int timeout_ms) const {
    return std::make_unique<test::ChildProcess>(
        std::vector<std::string>{test::Bin("gnn-sampler"),
                                 "--ip_config",
                                 ip_config,
                                 "--part_config",
                                 part_config,
                                 "--machine_id",
                                 "0",
                                 "--num_servers",
                                 std::to_string(num_servers),
                                 "--trainer_endpoint",
                                 trainer_endpoint,
                                 "--trainer_id",
                                 "0",
                                 "--sampler_id",
                                 std::to_string(sampler_id),
                                 "--job_id",
                                 job,
                                 "--timeout_ms",
                                 std::to_string(timeout_ms),
                                 "--idle_timeout_s",
                                 "60"},
        dir / ("sampler" + std::to_string(sampler_id)));
  }
};

// Removes this job's segments at scope exit. Declare it before the
// processes, so they are killed first.
struct ShmGuard {
  const Deployment& d;
  ~ShmGuard() {
    for (int p = 0; p < d.config.num_parts; ++p) RemoveShmSegment(d.ShmName(p));
  }
};

// Sends `m` on c's socket and returns the reply to it, kError included
// (Connection::Call would turn that into an exception and lose the code).
net::Message RawCall(net::Connection& c, net::Message m, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  const uint64_t id = c.Start(std::move(m));
  std::vector<zmq::message_t> parts;
  while (true) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0 || !net::RecvParts(c.socket(), &parts, left)) {
      throw TimeoutError(c.peer() + " did not reply within " + std::to_string(timeout.count()) +
                         " ms");
    }
    net::Message r = net::Decode(std::move(parts));
    if (r.header.request_id == id) return r;
  }
}

// Pings `endpoint` until it answers (the server is serving) or `timeout`
// passes; fails early, with its stderr, if the process exits.
net::Pong PingWhenUp(zmq::context_t& ctx, const std::string& job, const std::string& endpoint,
                     test::ChildProcess& proc, Millis timeout) {
  net::Connection c(ctx, endpoint, proc.name() + " at " + endpoint, test::Keys(job));
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (!proc.Running()) FAIL("server exited before answering Ping: " << proc.Describe());
    try {
      return net::Pong::Decode(c.Call(net::Ping{}.Encode(0), Millis(200)));
    } catch (const TimeoutError&) {
    }
    if (Clock::now() >= deadline) {
      FAIL("no Pong from " << endpoint << " within " << timeout.count()
                           << " ms: " << proc.Describe());
    }
  }
}

// Shutdown with the job id: ShutdownReply, then exit 0.
void ShutdownAndWait(zmq::context_t& ctx, const Deployment& d, int machine, int server,
                     test::ChildProcess& proc) {
  net::Connection c(ctx, d.Endpoint(machine, server), "server", test::Keys(d.job));
  net::Message r = RawCall(c, net::Shutdown{d.job}.Encode(0), Millis(10000));
  CHECK_NOTHROW(net::ShutdownReply::Decode(r));
  auto code = proc.Wait(Millis(15000));
  INFO(proc.Describe());
  REQUIRE(code.has_value());
  CHECK(*code == 0);
}

std::vector<net::SeedBatch> RandomBatches(int count, int64_t num_nodes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<net::SeedBatch> out;
  for (int b = 0; b < count; ++b) {
    net::SeedBatch sb;
    sb.index = b;
    sb.rng_seed = 1000 + b;
    sb.fanouts = {5, 10};
    std::vector<uint8_t> used(num_nodes, 0);
    while (sb.seeds.size() < 64) {
      int64_t v = static_cast<int64_t>(rng() % num_nodes);
      if (!used[v]) {
        used[v] = 1;
        sb.seeds.push_back(v);
      }
    }
    out.push_back(sb);
  }
  return out;
}

void WaitForSamplers(SamplerPool& pool,
                     std::vector<std::unique_ptr<test::ChildProcess>>& samplers) {
  try {
    pool.WaitForSamplers(20000);
  } catch (const std::exception& e) {
    std::string why = e.what();
    for (auto& s : samplers) why += "\n" + s->Describe();
    FAIL(why);
  }
}

// Stops the pool; every gnn-sampler then exits 0 within 10 s.
void StopSamplers(SamplerPool& pool, std::vector<std::unique_ptr<test::ChildProcess>>& samplers) {
  pool.Stop();
  for (auto& s : samplers) {
    auto code = s->Wait(Millis(10000));
    INFO(s->Describe());
    REQUIRE(code.has_value());
    CHECK(*code == 0);
  }
}

}  // namespace

TEST_CASE("gnn-server and gnn-sampler processes stream 20 batches and shut down on the job's word",
          "[e2e]") {
  Deployment d("synthetic:small", 2, 1, "flow");
  ShmGuard guard{d};
  auto m0 = d.StartServer(0, 0);
  auto m1 = d.StartServer(1, 0);
  zmq::context_t ctx;
  CHECK(PingWhenUp(ctx, d.job, d.Endpoint(0, 0), *m0, Millis(30000)) == net::Pong{0, 0});
  CHECK(PingWhenUp(ctx, d.job, d.Endpoint(1, 0), *m1, Millis(30000)) == net::Pong{1, 0});

  // Two samplers for one trainer, each reading partition 0 from shared
  // memory and partition 1 from machine 1's server.
  SamplerPool pool("tcp://127.0.0.1:*", 2, d.Hello(), 2, 20000, test::Keys(d.job));
  std::vector<std::unique_ptr<test::ChildProcess>> samplers;
  for (int s = 0; s < 2; ++s) samplers.push_back(d.StartSampler(pool.endpoint(), s, 10000));
  WaitForSamplers(pool, samplers);

  std::vector<net::SeedBatch> batches = RandomBatches(20, d.config.num_nodes, 7);
  pool.Start(batches);
  int64_t expect = 0;
  while (auto mb = pool.Next()) {
    // DecodeMiniBatch validated the structure; check it is *this* batch.
    REQUIRE(expect < 20);
    CHECK(mb->index == expect);
    CHECK(mb->seeds == batches[expect].seeds);
    REQUIRE(mb->blocks.size() == 2);
    CHECK(mb->labels.size() == mb->seeds.size());
    CHECK(mb->feature_dim == d.config.feature_dim);
    // gnn-sampler sends layer 0's destination rows and their sources' means.
    CHECK(mb->input_means);
    CHECK(mb->features.size() ==
          2 * static_cast<size_t>(mb->blocks.front().num_dst * d.config.feature_dim));
    ++expect;
  }
  CHECK(expect == 20);
  StopSamplers(pool, samplers);

  // A Shutdown from another job is refused and the server keeps serving.
  {
    net::Connection c(ctx, d.Endpoint(0, 0), "machine 0 server 0", test::Keys(d.job));
    net::Message r = RawCall(c, net::Shutdown{d.job + "-other"}.Encode(0), Millis(10000));
    CHECK(net::ErrorReply::Decode(r).code == net::kErrNotAllowed);
    r = RawCall(c, net::Shutdown{""}.Encode(0), Millis(10000));
    CHECK_NOTHROW(net::ErrorReply::Decode(r));
    CHECK(m0->Running());
    r = RawCall(c, net::Ping{}.Encode(0), Millis(10000));
    CHECK_NOTHROW(net::Pong::Decode(r));
  }
  ShutdownAndWait(ctx, d, 0, 0, *m0);
  ShutdownAndWait(ctx, d, 1, 0, *m1);
  CHECK_FALSE(d.ShmLeft(0));
  CHECK_FALSE(d.ShmLeft(1));
}

TEST_CASE("a backup gnn-server attaches to server 0's shared memory instead of copying it",
          "[e2e]") {
  // Wide features make the partition's bytes dwarf a server's own
  // footprint (code, libraries, thread stacks: a few MiB).
  Deployment d("synthetic:nodes=40000,edges=200000,feat=512,classes=4", 2, 2, "backup");
  ShmGuard guard{d};
  auto m0s0 = d.StartServer(0, 0);
  auto m0s1 = d.StartServer(0, 1);  // started at once: it waits for the segment
  auto m1s0 = d.StartServer(1, 0);
  zmq::context_t ctx;
  CHECK(PingWhenUp(ctx, d.job, d.Endpoint(0, 0), *m0s0, Millis(30000)) == net::Pong{0, 0});
  CHECK(PingWhenUp(ctx, d.job, d.Endpoint(0, 1), *m0s1, Millis(30000)) == net::Pong{0, 1});
  PingWhenUp(ctx, d.job, d.Endpoint(1, 0), *m1s0, Millis(30000));

  // Requests alternate between machine 0's two servers; both give the
  // partition's real rows.
  LocalPartition p0 = LoadLocalPartition(d.config, 0, false);
  DistGraphOptions o;
  o.part_config = d.part_config;
  o.ip_config = d.ip_config;
  o.job_id = d.job;
  o.keys = test::Keys(d.job);
  o.timeout = std::chrono::milliseconds(10000);
  o.endpoints = {{d.Endpoint(0, 0), d.Endpoint(0, 1)}, {d.Endpoint(1, 0)}};
  DistGraph g(o);
  const int64_t dim = d.config.feature_dim;
  std::mt19937_64 rng(3);
  for (int round = 0; round < 6; ++round) {
    std::vector<int64_t> ids;
    for (int i = 0; i < 16; ++i) ids.push_back(p0.node_start + rng() % p0.num_nodes);
    NoInitVector<float> rows;
    g.PullFeatures(ids, &rows);
    REQUIRE(rows.size() == ids.size() * dim);
    for (size_t i = 0; i < ids.size(); ++i) {
      REQUIRE(std::memcmp(&rows[i * dim], &p0.features[(ids[i] - p0.node_start) * dim],
                          dim * sizeof(float)) == 0);
    }
    std::vector<int64_t> ptr, idx;
    g.SampleNeighbors(ids, 5, false, round, &ptr, &idx);
    CHECK(ptr.size() == ids.size() + 1);
  }
  // The backup directly: a Metadata request says who answers.
  {
    net::Connection c(ctx, d.Endpoint(0, 1), "machine 0 server 1", test::Keys(d.job));
    net::MetadataReply r =
        net::MetadataReply::Decode(c.Call(net::Metadata{}.Encode(0), Millis(10000)));
    CHECK(r.json.find("\"server_id\":1") != std::string::npos);
  }

  // Memory: the partition is in memory once. Its bytes on disk are what a
  // copy would cost; the backup must stay far below (bound: 40%), while
  // server 0, which filled the segment, holds all of it.
  uint64_t part_bytes = 0;
  for (const auto& e : fs::directory_iterator(fs::path(d.part_config).parent_path() / "part0")) {
    part_bytes += fs::file_size(e.path());
  }
  const int64_t backup_rss = test::ProcStatusBytes(m0s1->pid(), "VmRSS");
  const int64_t server0_rss = test::ProcStatusBytes(m0s0->pid(), "VmRSS");
  INFO("partition 0 bytes " << part_bytes << ", backup VmRSS " << backup_rss << ", backup RssShmem "
                            << test::ProcStatusBytes(m0s1->pid(), "RssShmem") << ", server 0 VmRSS "
                            << server0_rss);
  REQUIRE(part_bytes > (32u << 20));
  REQUIRE(backup_rss > 0);
  CHECK(static_cast<double>(backup_rss) < 0.4 * static_cast<double>(part_bytes));
  CHECK(static_cast<double>(server0_rss) > 0.9 * static_cast<double>(part_bytes));

  ShutdownAndWait(ctx, d, 0, 1, *m0s1);
  ShutdownAndWait(ctx, d, 0, 0, *m0s0);
  ShutdownAndWait(ctx, d, 1, 0, *m1s0);
  CHECK_FALSE(d.ShmLeft(0));
  CHECK_FALSE(d.ShmLeft(1));
}

TEST_CASE("a typed partition's backup gnn-server answers from server 0's shared memory", "[e2e]") {
  Deployment d("synthetic:mag-small", 2, 2, "typedbackup");
  ShmGuard guard{d};
  auto m0s0 = d.StartServer(0, 0);
  auto m0s1 = d.StartServer(0, 1);
  auto m1s0 = d.StartServer(1, 0);
  auto m1s1 = d.StartServer(1, 1);
  zmq::context_t ctx;
  for (int m = 0; m < 2; ++m) {
    for (int s = 0; s < 2; ++s) {
      test::ChildProcess& p = *(m == 0 ? (s == 0 ? m0s0 : m0s1) : (s == 0 ? m1s0 : m1s1));
      CHECK(PingWhenUp(ctx, d.job, d.Endpoint(m, s), p, Millis(30000)) == net::Pong{m, s});
    }
  }
  CHECK(fs::exists(ShmSegmentPath(d.ShmName(0))));
  CHECK(fs::exists(ShmSegmentPath(d.ShmName(1))));

  // Requests alternate between each machine's two servers: the rows and
  // neighbourhoods are the partition files' whoever answers.
  DistGraphOptions o;
  o.part_config = d.part_config;
  o.ip_config = d.ip_config;
  o.job_id = d.job;
  o.keys = test::Keys(d.job);
  o.timeout = std::chrono::milliseconds(10000);
  o.endpoints = {{d.Endpoint(0, 0), d.Endpoint(0, 1)}, {d.Endpoint(1, 0), d.Endpoint(1, 1)}};
  DistGraph g(o);
  const std::vector<std::vector<int>> fanouts = {std::vector<int>(d.config.etypes.size(), -1)};
  for (int part = 0; part < 2; ++part) {
    const HeteroPartition hp = LoadHeteroPartition(d.config, part, false);
    for (size_t t = 0; t < hp.feature_dims.size(); ++t) {
      const int64_t dim = hp.feature_dims[t];
      const auto [first, end] = hp.ntype_ranges[t];
      if (dim == 0 || end == first) continue;
      for (int round = 0; round < 2; ++round) {
        std::vector<int64_t> ids;
        for (int64_t v = first + round; v < end; v += 97) ids.push_back(v);
        std::vector<float> rows;
        g.PullTyped(static_cast<int>(t), ids, &rows);
        REQUIRE(rows.size() == ids.size() * static_cast<size_t>(dim));
        for (size_t i = 0; i < ids.size(); ++i) {
          REQUIRE(std::memcmp(&rows[i * dim], &hp.features[t][(ids[i] - first) * dim],
                              dim * sizeof(float)) == 0);
        }
      }
    }
    // All in-neighbours (fan-out -1), asked twice: once of each server.
    const std::vector<int64_t> seeds = {hp.node_start, hp.node_start + hp.num_nodes / 2};
    for (int round = 0; round < 2; ++round) {
      const std::vector<Block> blocks = g.SampleTypedBlocks(seeds, fanouts, false, round);
      REQUIRE(blocks.size() == 1);
      int64_t want = 0;
      for (int64_t s : seeds)
        want += hp.indptr[s - hp.node_start + 1] - hp.indptr[s - hp.node_start];
      CHECK(blocks[0].num_edges() == want);
    }
  }
  // The backup answers for itself, and refuses the homogeneous first-layer
  // request by name (a typed partition has no single feature table).
  {
    net::Connection c(ctx, d.Endpoint(0, 1), "machine 0 server 1", test::Keys(d.job));
    net::Message r = c.Call(net::Metadata{}.Encode(0), Millis(10000));
    CHECK(net::MetadataReply::Decode(r).json.find("\"server_id\":1") != std::string::npos);
    net::SampleAggregateRequest agg;
    agg.dsts = {0};
    agg.fanout = 2;
    CHECK_THROWS_WITH(c.Call(agg.Encode(1), Millis(10000)),
                      Catch::Contains("serves a heterogeneous partition"));
  }
  for (int m = 0; m < 2; ++m) {
    ShutdownAndWait(ctx, d, m, 1, m == 0 ? *m0s1 : *m1s1);
    ShutdownAndWait(ctx, d, m, 0, m == 0 ? *m0s0 : *m1s0);
    CHECK_FALSE(d.ShmLeft(m));
  }
}

TEST_CASE("after server 0 is SIGKILLed its backup keeps serving and removes the segment on SIGTERM",
          "[e2e]") {
  Deployment d("synthetic:tiny", 2, 2, "crash");
  ShmGuard guard{d};
  auto s0 = d.StartServer(0, 0);
  auto s1 = d.StartServer(0, 1);
  zmq::context_t ctx;
  PingWhenUp(ctx, d.job, d.Endpoint(0, 0), *s0, Millis(30000));
  PingWhenUp(ctx, d.job, d.Endpoint(0, 1), *s1, Millis(30000));
  REQUIRE(fs::exists(ShmSegmentPath(d.ShmName(0))));

  CHECK(s0->Kill() == -SIGKILL);
  // The backup's mapping outlives its creator: it still serves real rows.
  LocalPartition p0 = LoadLocalPartition(d.config, 0, false);
  {
    net::Connection c(ctx, d.Endpoint(0, 1), "machine 0 server 1", test::Keys(d.job));
    const net::PullLabels req{{p0.node_start, p0.node_start + p0.num_nodes - 1}};
    std::vector<int64_t> labels =
        net::PullLabelsReply::Decode(c.Call(req.Encode(0), Millis(10000)), req, c.peer()).labels;
    CHECK(labels == std::vector<int64_t>{p0.labels.front(), p0.labels.back()});
  }
  CHECK(fs::exists(ShmSegmentPath(d.ShmName(0))));  // the backup still holds it

  s1->Signal(SIGTERM);
  auto code = s1->Wait(Millis(10000));
  INFO(s1->Describe());
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  CHECK_FALSE(d.ShmLeft(0));
}

TEST_CASE("a second gnn-server on a busy port fails with one line naming the port and its holder",
          "[e2e]") {
  Deployment d("synthetic:tiny", 2, 1, "busy");
  ShmGuard guard{d};
  auto first = d.StartServer(0, 0);
  zmq::context_t ctx;
  PingWhenUp(ctx, d.job, d.Endpoint(0, 0), *first, Millis(30000));

  test::ProcessResult r = test::RunProcess(
      {test::Bin("gnn-server"), "--ip_config", d.ip_config, "--part_config", d.part_config,
       "--machine_id", "0", "--server_id", "0", "--num_servers", "1", "--job_id", d.job},
      30);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code > 0);
  std::vector<std::string> error_lines;
  size_t pos = 0;
  while (pos < r.err.size()) {
    size_t nl = r.err.find('\n', pos);
    std::string line = r.err.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.find("error") != std::string::npos) error_lines.push_back(line);
    pos = nl == std::string::npos ? r.err.size() : nl + 1;
  }
  REQUIRE(error_lines.size() == 1);
  CHECK(error_lines[0].rfind("gnn-server: error: ", 0) == 0);
  CHECK(error_lines[0].find("127.0.0.1:" + std::to_string(d.ports[0])) != std::string::npos);
  // Naming the holder needs /proc/<pid>/fd of the holder to be readable.
  const std::string fd_dir = "/proc/" + std::to_string(first->pid()) + "/fd";
  if (access(fd_dir.c_str(), R_OK | X_OK) == 0) {
    CHECK(error_lines[0].find("held by pid " + std::to_string(first->pid()) + " (gnn-server)") !=
          std::string::npos);
  } else {
    WARN("cannot read " << fd_dir << ": holder not checked");
  }
  // The loser touched nothing: the first server and its segment are fine.
  CHECK(first->Running());
  CHECK(fs::exists(ShmSegmentPath(d.ShmName(0))));
  net::Connection c(ctx, d.Endpoint(0, 0), "machine 0 server 0", test::Keys(d.job));
  CHECK_NOTHROW(net::Pong::Decode(RawCall(c, net::Ping{}.Encode(0), Millis(10000))));
  ShutdownAndWait(ctx, d, 0, 0, *first);
  CHECK_FALSE(d.ShmLeft(0));
}

TEST_CASE("gnn-server names a part_config or ip_config it cannot open with errno's words",
          "[e2e]") {
  test::TempDir dir;
  const std::string part_config = test::MakePartitions(dir, "synthetic:tiny", 1, "data");
  const std::string ip_config = dir / "ip_config.txt";
  std::ofstream(ip_config) << "127.0.0.1 " << test::FreeLoopbackPortRanges(1, 1)[0] << "\n";
  const std::string job = "e2e-open-" + std::to_string(::getpid());
  auto run = [&](const std::string& ip, const std::string& part) {
    return test::RunProcess({test::Bin("gnn-server"), "--ip_config", ip, "--part_config", part,
                             "--machine_id", "0", "--job_id", job, "--insecure"},
                            30);
  };
  // One error line, the last, and no shared memory of the job left.
  auto expect = [&](const test::ProcessResult& r, int code, const std::string& line) {
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == code);
    CHECK(r.err.find("error") == r.err.rfind("error"));
    CHECK(r.err.size() >= line.size());
    CHECK(r.err.compare(r.err.size() - line.size(), line.size(), line) == 0);
    for (const auto& e : fs::directory_iterator("/dev/shm")) {
      CHECK(e.path().filename().string().find(job) == std::string::npos);
    }
  };
  SECTION("a part_config that is a folder") {
    expect(run(ip_config, dir / "data"), kExitData,
           "gnn-server: error: cannot open " + (dir / "data") + ": Is a directory\n");
  }
  SECTION("a missing part_config") {
    expect(
        run(ip_config, dir / "none.json"), kExitData,
        "gnn-server: error: cannot open " + (dir / "none.json") + ": No such file or directory\n");
  }
  SECTION("a missing ip_config: exit 2") {
    expect(
        run(dir / "none.txt", part_config), kExitConfig,
        "gnn-server: error: cannot open " + (dir / "none.txt") + ": No such file or directory\n");
  }
}

TEST_CASE(
    "a server killed mid-run surfaces as a sampler error naming the machine and is never silent",
    "[e2e]") {
  Deployment d("synthetic:small", 2, 1, "kill");
  ShmGuard guard{d};
  auto m0 = d.StartServer(0, 0);
  auto m1 = d.StartServer(1, 0);
  zmq::context_t ctx;
  PingWhenUp(ctx, d.job, d.Endpoint(0, 0), *m0, Millis(30000));
  PingWhenUp(ctx, d.job, d.Endpoint(1, 0), *m1, Millis(30000));

  const int sampler_timeout_ms = 2000;
  // The pool waits longer than the sampler, so what surfaces is the
  // sampler's report, not the pool's own timeout.
  SamplerPool pool("tcp://127.0.0.1:*", 1, d.Hello(), 2, 20000, test::Keys(d.job));
  std::vector<std::unique_ptr<test::ChildProcess>> samplers;
  samplers.push_back(d.StartSampler(pool.endpoint(), 0, sampler_timeout_ms));
  WaitForSamplers(pool, samplers);
  std::vector<net::SeedBatch> batches = RandomBatches(40, d.config.num_nodes, 11);
  pool.Start(batches);
  for (int b = 0; b < 5; ++b) {
    auto mb = pool.Next();
    REQUIRE(mb.has_value());
    CHECK(mb->index == b);
  }

  CHECK(m1->Kill() == -SIGKILL);
  const auto killed = Clock::now();
  std::string error;
  int good_after_kill = 0;
  try {
    while (auto mb = pool.Next()) {
      ++good_after_kill;  // batches finished before the kill may still arrive
      REQUIRE(good_after_kill <= 3);
    }
  } catch (const PeerError& e) {
    error = e.what();
  } catch (const TimeoutError& e) {
    error = e.what();
  }
  const auto took = std::chrono::duration_cast<Millis>(Clock::now() - killed);
  INFO("error: " << error << "; after " << took.count() << " ms");
  CHECK(error.find("machine 1") != std::string::npos);
  CHECK(took < Millis(sampler_timeout_ms + 4000));

  auto code = samplers[0]->Wait(Millis(10000));
  INFO(samplers[0]->Describe());
  REQUIRE(code.has_value());
  CHECK(*code > 0);
  CHECK(samplers[0]->Stderr().find("gnn-sampler: error: ") != std::string::npos);
  CHECK(samplers[0]->Stderr().find("machine 1") != std::string::npos);

  ShutdownAndWait(ctx, d, 0, 0, *m0);
  CHECK_FALSE(d.ShmLeft(0));
  // Machine 1's segment had only its SIGKILLed creator attached: it stays
  // until the next Create of that name (documented); ShmGuard removes it.
}

TEST_CASE(
    "help texts name the synthetic presets and what -1 means and show defaults and required flags",
    "[e2e]") {
  const test::ProcessResult part = test::RunProcess({test::Bin("gnn-partition"), "--help"}, 20);
  CHECK(part.exit_code == 0);
  for (const char* preset : {"tiny", "small", "products", "mag-small", "mag ", "nodes=N"})
    CHECK_THAT(part.out, Catch::Contains(preset));
  CHECK_THAT(part.out, Catch::Contains("--dataset TEXT") && Catch::Contains("--edges TEXT"));
  const test::ProcessResult server = test::RunProcess({test::Bin("gnn-server"), "--help"}, 20);
  CHECK(server.exit_code == 0);
  CHECK_THAT(server.out, Catch::Contains("--num_servers INT=1"));
  CHECK_THAT(server.out, Catch::Contains("--num_threads INT=0"));
  CHECK_THAT(server.out, Catch::Contains("(required; env GNN_PART_CONFIG)"));
  const test::ProcessResult train = test::RunProcess({test::Bin("gnn-train"), "--help"}, 60);
  CHECK(train.exit_code == 0);
  CHECK_THAT(train.out, Catch::Contains("-1 = all neighbours"));
  CHECK_THAT(train.out, Catch::Contains("GraphSAGE, GAT, GCN"));
  CHECK_THAT(train.out, Catch::Contains("partition config JSON (required"));
}

namespace {

// A process with the job's keys that connects to a trainer's sampler pool
// without being one of its samplers and sends `messages` valid messages of
// `bytes` each, unasked, as fast as TCP takes them. Forked before the test
// makes any ZeroMQ context (the child makes its own); it waits for the
// pool's endpoint on a pipe. Killed and reaped on destruction.
class PoolFlooder {
 public:
  PoolFlooder(const std::string& job, int messages, size_t bytes) {
    REQUIRE(pipe(fd_) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(fd_[1]);
      char buf[256] = {};
      const ssize_t n = read(fd_[0], buf, sizeof(buf) - 1);
      if (n <= 0) _exit(1);
      try {
        zmq::context_t ctx;
        zmq::socket_t s(ctx, zmq::socket_type::dealer);
        s.set(zmq::sockopt::sndhwm, 0);  // everything queued here, pushed as TCP takes it
        test::Keys(job).MakeClient(s);
        s.connect(std::string(buf, static_cast<size_t>(n)));
        const std::vector<char> junk(bytes, 'x');
        for (int i = 0; i < messages; ++i) {
          net::Message m = net::MakeMessage(net::MsgType::kMiniBatch, 1 + i % 3, {});
          net::AddArray(&m, junk);
          net::Send(s, m, nullptr, Millis(60000));
        }
        pause();  // until killed: the queue stays
      } catch (...) {
      }
      _exit(2);
    }
    close(fd_[0]);
  }
  ~PoolFlooder() {
    close(fd_[1]);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  void Go(const std::string& endpoint) {
    REQUIRE(write(fd_[1], endpoint.data(), endpoint.size()) ==
            static_cast<ssize_t>(endpoint.size()));
  }

 private:
  int fd_[2] = {-1, -1};
  pid_t pid_ = -1;
};

// The most this process's anonymous memory reaches over `d`, sampled.
int64_t PeakRssAnon(Millis d) {
  int64_t peak = 0;
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
    peak = std::max(peak, test::ProcStatusBytes(0, "RssAnon"));
    std::this_thread::sleep_for(Millis(50));
  }
  return peak;
}

}  // namespace

TEST_CASE("peers flooding a trainer's sampler socket park a bounded number of bytes there",
          "[e2e]") {
  Deployment d("synthetic:small", 2, 1, "flood");
  ShmGuard guard{d};
  // Forked first: this process has no ZeroMQ threads yet. One peer sends
  // 200 x 8 MiB unasked, then ten more 30 x 8 MiB each (1.6 + 2.4 GB if a
  // trainer queued them all, as it did with a queue of 1000 messages).
  constexpr size_t kJunk = size_t{8} << 20;
  PoolFlooder first(d.job, 200, kJunk);
  std::vector<std::unique_ptr<PoolFlooder>> more;
  for (int i = 0; i < 10; ++i) more.push_back(std::make_unique<PoolFlooder>(d.job, 30, kJunk));

  auto m0 = d.StartServer(0, 0);
  auto m1 = d.StartServer(1, 0);
  zmq::context_t ctx;
  REQUIRE(PingWhenUp(ctx, d.job, d.Endpoint(0, 0), *m0, Millis(30000)) == net::Pong{0, 0});
  REQUIRE(PingWhenUp(ctx, d.job, d.Endpoint(1, 0), *m1, Millis(30000)) == net::Pong{1, 0});
  constexpr int kPrefetch = 2;
  SamplerPool pool("tcp://127.0.0.1:*", 2, d.Hello(), kPrefetch, 20000, test::Keys(d.job));
  std::vector<std::unique_ptr<test::ChildProcess>> samplers;
  for (int s = 0; s < 2; ++s) samplers.push_back(d.StartSampler(pool.endpoint(), s, 10000));
  WaitForSamplers(pool, samplers);

  // Per flooding peer: prefetch + 2 messages queued, one more being read.
  const int64_t per_peer = (kPrefetch + 3) * static_cast<int64_t>(kJunk);
  const int64_t slack = int64_t{48} << 20;
  const int64_t base = test::ProcStatusBytes(0, "RssAnon");
  first.Go(pool.endpoint());
  const int64_t one = PeakRssAnon(Millis(3000)) - base;
  INFO("one flooding peer grew the trainer by " << (one >> 20) << " MiB");
  CHECK(one <= per_peer + slack);
  for (auto& f : more) f->Go(pool.endpoint());
  const int64_t eleven = PeakRssAnon(Millis(4000)) - base;
  INFO("eleven flooding peers grew the trainer by " << (eleven >> 20) << " MiB");
  CHECK(eleven <= 11 * per_peer + slack);

  // The samplers' batches still arrive, correct and in time, while the
  // strangers' messages are dropped as the pool reads past them.
  std::vector<net::SeedBatch> batches = RandomBatches(20, d.config.num_nodes, 11);
  pool.Start(batches);
  int64_t expect = 0;
  const auto started = Clock::now();
  while (auto mb = pool.Next()) {
    REQUIRE(expect < 20);
    CHECK(mb->index == expect);
    CHECK(mb->seeds == batches[expect].seeds);
    ++expect;
  }
  CHECK(expect == 20);
  CHECK(Clock::now() - started < std::chrono::seconds(20));
  CHECK(pool.max_in_flight() <= kPrefetch);
  const int64_t after = PeakRssAnon(Millis(1000)) - base;
  INFO("after reading: " << (after >> 20) << " MiB over the start");
  CHECK(after <= 11 * per_peer + slack);
  StopSamplers(pool, samplers);
  ShutdownAndWait(ctx, d, 0, 0, *m0);
  ShutdownAndWait(ctx, d, 1, 0, *m1);
}
