// What one peer can make a gnn-server hold: a real server process, peers
// that ask for large replies and never read them, the server's anonymous
// memory (RssAnon: its shared-memory partition does not count) measured
// throughout, and a well-behaved client on the same server that keeps
// getting correct answers within its deadline.
#include "net/peer_window.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "client/dist_graph.h"
#include "cluster_util.h"
#include "common/error.h"
#include "net/channel.h"
#include "net/messages.h"
#include "partition/config.h"
#include "partition/local_partition.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using Clock = std::chrono::steady_clock;

TEST_CASE("PeerWindows: a peer's untaken replies stay within its window", "[unit]") {
  net::PeerWindows w(100, 2);
  uint64_t untaken = 0;
  w.OnRequest("a", 0);
  CHECK(w.Admit("a", 150, &untaken));  // nothing outstanding: even a large reply goes
  CHECK(untaken == 0);
  CHECK_FALSE(w.Admit("a", 1, &untaken));
  CHECK(untaken == 150);
  w.Count("a", 10);  // the small error sent instead
  CHECK(w.Untaken("a") == 160);
  w.OnRequest("a", 160);  // it read everything
  CHECK(w.Untaken("a") == 0);
  CHECK(w.Admit("a", 60));
  CHECK(w.Admit("a", 40));
  CHECK_FALSE(w.Admit("a", 1));
  w.OnRequest("a", 100);  // a stale (smaller) count changes nothing
  CHECK(w.Untaken("a") == 100);
  // Another peer has its own window.
  w.OnRequest("b", 5000);  // its first count is its zero
  CHECK(w.Admit("b", 80));
  CHECK(w.Untaken("b") == 80);
  w.OnRequest("b", 5080);
  CHECK(w.Untaken("b") == 0);
  // Beyond max_peers the least recently heard is forgotten.
  w.OnRequest("c", 0);
  CHECK(w.peers() == 2);
  CHECK(w.Untaken("a") == 0);
}

namespace {

long RssAnonKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long kb = -1;
  while (in >> key) {
    if (key == "RssAnon:") {
      in >> kb;
      break;
    }
    std::getline(in, key);
  }
  return kb;
}

// A peer that asks `requests` times for the rows of `ids` and never reads
// (its socket takes one reply, then TCP pushes back to the server).
class Flooder {
 public:
  Flooder(zmq::context_t& ctx, const std::string& endpoint, const net::JobKeys& keys)
      : sock_(ctx, zmq::socket_type::dealer) {
    sock_.set(zmq::sockopt::linger, 0);
    sock_.set(zmq::sockopt::rcvhwm, 1);
    sock_.set(zmq::sockopt::rcvbuf, 64 << 10);
    sock_.set(zmq::sockopt::sndhwm, 100000);
    sock_.set(zmq::sockopt::maxmsgsize, net::kMaxReplyBytes);
    keys.MakeClient(sock_);
    sock_.connect(endpoint);
  }
  void Flood(const std::vector<int64_t>& ids, int requests) {
    for (int r = 0; r < requests; ++r) {
      net::Message m = net::PullFeatures{ids}.Encode(static_cast<uint64_t>(r + 1));
      net::Send(sock_, m);
    }
  }
  // Reads every reply now: how many carried rows and how many were kErrBusy.
  void Drain(int requests, int* rows, int* busy, std::string* busy_text) {
    for (int r = 0; r < requests; ++r) {
      std::vector<zmq::message_t> parts;
      if (!net::RecvParts(sock_, &parts, net::Millis(20000))) break;
      net::Message m = net::Decode(std::move(parts));
      if (m.header.msg_type() == net::MsgType::kPullFeaturesReply) ++*rows;
      if (m.header.msg_type() == net::MsgType::kError &&
          net::ErrorReply::Decode(m).code == net::kErrBusy) {
        ++*busy;
        *busy_text = m.header.text;
      }
    }
  }

 private:
  zmq::socket_t sock_;
};

}  // namespace

TEST_CASE("peers that never read their replies cannot grow a server past its reply windows",
          "[integration][slow]") {
  test::TempDir dir;
  const std::string job = "flood-" + std::to_string(::getpid());
  const std::string cfg = test::MakePartitions(dir, "synthetic:small", 1, "one");
  const PartitionConfig config = LoadPartitionConfig(cfg);
  const LocalPartition part = LoadLocalPartition(config, 0, false);
  const std::vector<int> ports = test::FreeLoopbackPortRanges(1, 1);
  const std::string ip = dir / "ip.txt";
  std::ofstream(ip) << "127.0.0.1 " << ports[0] << "\n";
  constexpr int kWindowMb = 16;
  test::ChildProcess server(
      {test::Bin("gnn-server"), "--ip_config", ip, "--part_config", cfg, "--machine_id", "0",
       "--job_id", job, "--num_threads", "2", "--peer_window_mb", std::to_string(kWindowMb)},
      dir / "server");
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(ports[0]);
  zmq::context_t ctx;
  {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (true) {
      net::Connection c(ctx, endpoint, "server", test::Keys(job));
      try {
        net::Pong::Decode(c.Call(net::Ping{}.Encode(0), net::Millis(200)));
        break;
      } catch (const std::exception&) {
        INFO(server.Describe());
        REQUIRE(server.Running());
        REQUIRE(Clock::now() < deadline);
      }
    }
  }
  // A ~4 MiB reply per request: 32768 rows of 32 floats.
  const int64_t dim = config.feature_dim;
  std::vector<int64_t> ids(32768);
  std::mt19937_64 rng(1);
  for (auto& v : ids) v = static_cast<int64_t>(rng() % config.num_nodes);
  const uint64_t reply_bytes = ids.size() * dim * sizeof(float);

  // The well-behaved client: pulls and checks rows throughout.
  std::atomic<bool> stop{false};
  std::atomic<int> good{0}, bad{0};
  std::string client_error;
  std::thread client([&] {
    try {
      DistGraphOptions o;
      o.part_config = cfg;
      o.ip_config = ip;
      o.job_id = job;
      o.keys = test::Keys(job);
      o.timeout = std::chrono::milliseconds(10000);
      DistGraph g(o);
      std::mt19937_64 r(2);
      std::vector<int64_t> mine(2000);
      NoInitVector<float> rows;
      while (!stop) {
        for (auto& v : mine) v = static_cast<int64_t>(r() % config.num_nodes);
        g.PullFeatures(mine, &rows);
        bool same = true;
        for (size_t i = 0; i < mine.size() && same; ++i) {
          same = std::memcmp(&rows[i * dim], &part.features[mine[i] * dim], dim * 4) == 0;
        }
        (same ? good : bad)++;
      }
    } catch (const std::exception& e) {
      client_error = e.what();
      bad++;
    }
  });

  const long before = RssAnonKb(server.pid());
  REQUIRE(before > 0);
  long peak = before;
  auto watch = [&](std::chrono::milliseconds for_how_long) {
    const auto end = Clock::now() + for_how_long;
    while (Clock::now() < end) {
      peak = std::max(peak, RssAnonKb(server.pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  // One peer, then ten at once: 100 requests each (400 MiB asked per peer).
  constexpr int kRequests = 100;
  std::vector<std::unique_ptr<Flooder>> flooders;
  for (int round : {1, 10}) {
    const size_t first = flooders.size();
    for (int f = 0; f < round; ++f) {
      flooders.push_back(std::make_unique<Flooder>(ctx, endpoint, test::Keys(job)));
    }
    for (size_t f = first; f < flooders.size(); ++f) flooders[f]->Flood(ids, kRequests);
    watch(std::chrono::milliseconds(3000));
  }
  const int good_during = good;
  // Bound: per flooder its window plus one reply (and ZeroMQ's and the
  // allocator's slack); without it each would park 400 MiB.
  const long bound_kb = static_cast<long>(flooders.size()) *
                            static_cast<long>((kWindowMb << 20) + reply_bytes) / 1024 +
                        64 * 1024;
  INFO("RssAnon before " << before << " kB, peak " << peak << " kB, bound " << bound_kb
                         << " kB; client " << good << " good, " << bad << " bad: " << client_error);
  WARN("server RssAnon grew " << (peak - before) / 1024 << " MiB under " << flooders.size()
                              << " flooders (bound " << bound_kb / 1024 << " MiB)");
  CHECK(peak - before <= bound_kb);
  CHECK(good_during > 0);
  CHECK(bad == 0);
  // The flooders, reading at last: a window's worth of rows, then errors
  // naming the bound.
  int rows = 0, busy = 0;
  std::string busy_text;
  flooders[0]->Drain(kRequests, &rows, &busy, &busy_text);
  INFO(busy_text);
  CHECK(rows >= 1);
  CHECK(rows <= static_cast<int>((kWindowMb << 20) / reply_bytes) + 2);
  CHECK(rows + busy == kRequests);
  CHECK(busy_text.find("window is 16 MiB") != std::string::npos);
  stop = true;
  client.join();
  CHECK(bad == 0);
  CHECK(server.Running());
  server.Signal(SIGTERM);
  CHECK(server.Wait(std::chrono::seconds(20)).has_value());
}
