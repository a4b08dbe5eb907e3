// The attacks of issue #12 replayed against real servers on real sockets:
// a stranger without the job's secret gets nothing and cannot grow the
// server's memory; a member's oversized pull is refused before it is built;
// the rendezvous listens on the master address only and admits only the job.
#include "net/security.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cluster_util.h"
#include "common/error.h"
#include "net/channel.h"
#include "net/kv_store.h"
#include "net/mesh.h"
#include "net/messages.h"
#include "net/protocol.h"
#include "partition/config.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using net::Millis;
using net::MsgType;

namespace {

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A raw DEALER that asks for Metadata and returns true if anything came back.
bool StrangerGetsAnswer(zmq::context_t& ctx, const std::string& endpoint,
                        const std::function<void(zmq::socket_t&)>& setup) {
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  setup(sock);
  sock.connect(endpoint);
  net::Message m = net::Metadata{}.Encode(1);
  net::Send(sock, m, nullptr, Millis(1000));
  std::vector<zmq::message_t> parts;
  return net::RecvParts(sock, &parts, Millis(1500));
}

// Watches the connections of a socket (zmq_socket_monitor) for their end:
// a failed handshake or a disconnect. Make it before the socket connects.
class ConnectionEnds {
 public:
  ConnectionEnds(zmq::context_t& ctx, zmq::socket_t& sock, const std::string& name)
      : events_(ctx, zmq::socket_type::pair) {
    const std::string endpoint = "inproc://connection-ends-" + name;
    REQUIRE(zmq_socket_monitor(sock.handle(), endpoint.c_str(), kEnds) == 0);
    events_.set(zmq::sockopt::linger, 0);
    events_.connect(endpoint);
  }
  // Waits up to `timeout` for the first end of a connection since the
  // watch began; returns its event, 0 if none came.
  uint16_t First(std::chrono::milliseconds timeout) {
    events_.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout.count()));
    zmq::message_t part;
    do {
      if (!events_.recv(part)) return 0;
    } while (part.size() != 6);  // {uint16 event, uint32 value}, then the endpoint
    uint16_t event;
    std::memcpy(&event, part.data(), sizeof(event));
    return event;
  }

 private:
  static constexpr int kEnds = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED;
  zmq::socket_t events_;
};

bool TcpConnects(const std::string& ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

TEST_CASE("a stranger without the job's secret gets nothing from a server, the job still does",
          "[integration]") {
  test::TempDir dir;
  const std::string job = "sec-" + std::to_string(::getpid());
  std::string cfg = test::MakePartitions(dir, "synthetic:tiny", 2, "data");
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, cfg, 2, 1, job);
  const std::string endpoint = servers.endpoints()[0][0];
  zmq::context_t ctx;

  // Plaintext (what every client could do before).
  CHECK_FALSE(StrangerGetsAnswer(ctx, endpoint, [](zmq::socket_t&) {}));
  // CURVE with keys from another secret (and the right job id).
  const net::JobKeys other = net::JobKeys::Derive(net::NewSecret(), job);
  CHECK_FALSE(StrangerGetsAnswer(ctx, endpoint, [&](zmq::socket_t& s) { other.MakeClient(s); }));
  // The right server key (public keys leak) but its own client key: ZAP refuses it.
  const net::JobKeys mine = test::Keys(job);
  CHECK_FALSE(StrangerGetsAnswer(ctx, endpoint, [&](zmq::socket_t& s) {
    char pub[41], sec[41];
    REQUIRE(zmq_curve_keypair(pub, sec) == 0);
    s.set(zmq::sockopt::curve_serverkey, mine.server_public_z85());
    s.set(zmq::sockopt::curve_publickey, std::string(pub, 40));
    s.set(zmq::sockopt::curve_secretkey, std::string(sec, 40));
  }));
  // A stranger's Shutdown carrying the (guessable) job id does nothing.
  {
    zmq::socket_t sock(ctx, zmq::socket_type::dealer);
    sock.set(zmq::sockopt::linger, 0);
    sock.connect(endpoint);
    net::Message shutdown = net::Shutdown{job}.Encode(7);
    net::Send(sock, shutdown, nullptr, Millis(1000));
    std::vector<zmq::message_t> parts;
    CHECK_FALSE(net::RecvParts(sock, &parts, Millis(1500)));
  }
  // The job's own keys: answered (and the server is still up).
  CHECK(StrangerGetsAnswer(ctx, endpoint, [&](zmq::socket_t& s) { mine.MakeClient(s); }));
}

TEST_CASE("unfinished 4 MiB frames from a stranger do not grow the server's memory",
          "[integration]") {
  test::TempDir dir;
  const std::string job = "secmem-" + std::to_string(::getpid());
  std::string cfg = test::MakePartitions(dir, "synthetic:tiny", 2, "data");
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  test::ServerThreads servers(ip, cfg, 2, 1, job);
  const long before = RssKiB();
  {
    zmq::context_t ctx;
    zmq::socket_t sock(ctx, zmq::socket_type::dealer);
    sock.set(zmq::sockopt::linger, 0);
    sock.set(zmq::sockopt::sndtimeo, 200);
    ConnectionEnds ends(ctx, sock, job);
    sock.connect(servers.endpoints()[0][0]);
    std::string frame(4 << 20, 'x');
    for (int i = 0; i < 64; ++i) {
      // Flagged "more" and never finished: 256 MiB if the server buffered it.
      sock.send(zmq::buffer(frame), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    }
    // The server ends the stranger's connection at the handshake (no CURVE
    // keys: a ZMTP mechanism mismatch), after which ZeroMQ drops the
    // unfinished message and does not reconnect: once the connection has
    // ended, the server has taken all of the flood it ever will.
    const uint16_t ended = ends.First(std::chrono::seconds(10));
    INFO("connection event " << ended);
    CHECK(ended != 0);
  }
  const long grown_mib = (RssKiB() - before) >> 10;
  INFO("the test process (servers inside) grew by " << grown_mib << " MiB");
  // The bound: the client's own queued frames may stay in its process for a
  // while; the server holds none of it (no handshake, nothing read).
  CHECK(grown_mib < 64);
  // And the server still serves the job.
  zmq::context_t ctx;
  net::Connection c(ctx, servers.endpoints()[0][0], "machine 0 server 0", test::Keys(job));
  CHECK_NOTHROW(net::Pong::Decode(c.Call(net::Ping{}.Encode(0), Millis(5000))));
}

TEST_CASE("a PullFeatures whose reply would pass the cap is refused before it is built",
          "[integration]") {
  test::TempDir dir;
  const std::string job = "seccap-" + std::to_string(::getpid());
  std::string cfg = test::MakePartitions(dir, "synthetic:tiny", 2, "data");
  std::string ip = test::WriteLoopbackIpConfig(dir, 2);
  PartitionConfig config = LoadPartitionConfig(cfg);
  test::ServerThreads servers(ip, cfg, 2, 1, job);
  zmq::context_t ctx;
  net::Connection c(ctx, servers.endpoints()[0][0], "machine 0 server 0", test::Keys(job));
  const size_t row = static_cast<size_t>(config.feature_dim) * sizeof(float);
  const size_t n = static_cast<size_t>(net::kMaxPullReplyBytes) / row + 1;
  REQUIRE(n * sizeof(int64_t) < static_cast<size_t>(net::kMaxRequestBytes));
  std::vector<int64_t> ids(n, config.parts[0].node_start);
  const long before = RssKiB();
  CHECK_THROWS_WITH(c.Call(net::PullFeatures{ids}.Encode(0), Millis(10000)),
                    Catch::Contains("reply limit"));
  CHECK(((RssKiB() - before) >> 10) < 48);  // the 64 MiB reply was never made
  // Just under the cap is served.
  const net::PullFeatures fewer{std::vector<int64_t>(n - 1, config.parts[0].node_start)};
  CHECK(net::PullFeaturesReply::Decode(c.Call(fewer.Encode(0), Millis(10000)), fewer,
                                       config.feature_dim, "s")
            .rows.size() == (n - 1) * row);
}

TEST_CASE("the rendezvous listens on the master address only and admits only the job",
          "[integration]") {
  const int port = test::FreeLoopbackPortRanges(1, 1)[0];
  const std::string job = "seckv-" + std::to_string(::getpid());
  const net::JobKeys keys = test::Keys(job);
  net::KvServer server("tcp://127.0.0.1:" + std::to_string(port), keys);
  CHECK(TcpConnects("127.0.0.1", port));
  CHECK_FALSE(TcpConnects("127.0.0.2", port));  // not *:PORT

  net::KvClient member("tcp://127.0.0.1:" + std::to_string(port), keys, "the rendezvous");
  member.Set("gloo/rank0", "10.0.0.1:4242");
  CHECK(member.Get("gloo/rank0", Millis(1000)) == "10.0.0.1:4242");
  CHECK(member.Add("counter", 3) == 3);
  CHECK(member.Add("counter", -1) == 2);
  CHECK(member.Check({"gloo/rank0", "counter"}));
  CHECK_FALSE(member.Check({"gloo/rank1"}));

  net::KvClient stranger("tcp://127.0.0.1:" + std::to_string(port),
                         net::JobKeys::Derive(net::NewSecret(), job), "the rendezvous");
  stranger.set_timeout(Millis(1000));
  CHECK_THROWS_AS(stranger.Set("gloo/rank0", "6.6.6.6:1"), TimeoutError);
  CHECK(member.Get("gloo/rank0", Millis(1000)) == "10.0.0.1:4242");  // not overwritten
}

TEST_CASE("a secret file others may read is refused, naming the file and the fix",
          "[integration]") {
  test::TempDir dir;
  const std::string path = dir / "s.secret";
  net::WriteSecretFile(path, net::NewSecret());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(net::ReadSecretFile(path).size() == 64);
  ::chmod(path.c_str(), 0644);
  CHECK_THROWS_WITH(net::ReadSecretFile(path),
                    Catch::Contains(path) && Catch::Contains("chmod 600"));
  ::chmod(path.c_str(), 0600);
  std::ofstream(path) << "short";
  CHECK_THROWS_WITH(net::ReadSecretFile(path), Catch::Contains("at least 32"));
  CHECK_THROWS_AS(net::ResolveJobKeys("", false, "job", "gnn-server"), ConfigError);
  CHECK_FALSE(net::ResolveJobKeys("", true, "job", "gnn-server").secure());
}

TEST_CASE(
    "the trainers' mesh: every rank gets every buffer (all-gather, all-to-all), strangers get "
    "nothing in or out",
    "[integration]") {
  const std::string job = "mesh-" + std::to_string(::getpid());
  const net::JobKeys keys = test::Keys(job);
  constexpr int kWorld = 3;
  std::vector<std::string> who = {"rank 0", "rank 1", "rank 2"};
  std::vector<std::unique_ptr<net::Mesh>> mesh;
  std::vector<std::string> endpoints;
  for (int r = 0; r < kWorld; ++r) {
    mesh.push_back(std::make_unique<net::Mesh>(r, kWorld, "127.0.0.1", keys, who,
                                               std::chrono::milliseconds(20000)));
    endpoints.push_back(mesh.back()->endpoint());
  }
  for (auto& m : mesh) m->Connect(endpoints);
  // A stranger without the secret, and one in plaintext, each send a piece
  // of the first collective to rank 0: no handshake completes, so rank 0
  // never sees them and the collectives below are exactly the ranks'.
  zmq::context_t ctx;
  const net::JobKeys other = net::JobKeys::Derive(std::string(64, 'x'), job);
  std::vector<std::unique_ptr<zmq::socket_t>> strangers;
  for (const net::JobKeys* k : {&other, static_cast<const net::JobKeys*>(nullptr)}) {
    auto s = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
    s->set(zmq::sockopt::linger, 0);
    if (k) k->MakeClient(*s);
    s->connect(endpoints[0]);
    net::Message forged =
        net::MakeMessage(net::MsgType::kMeshPart, 1,
                         {{net::Key::kSource, 1}, {net::Key::kPiece, 0}, {net::Key::kPieces, 1}});
    net::AddArray(&forged, std::string("forged").data(), 6);
    net::Send(*s, forged, nullptr, net::Millis(1000));
    strangers.push_back(std::move(s));
  }
  // Sizes: empty, small, and one that travels in pieces.
  for (size_t size : {size_t{0}, size_t{1000}, net::kMeshPieceBytes + 12345}) {
    std::vector<std::vector<std::string>> got(kWorld);
    std::vector<std::thread> threads;
    for (int r = 0; r < kWorld; ++r) {
      threads.emplace_back([&, r] {
        std::string mine(size, static_cast<char>('a' + r));
        if (size) mine[size / 2] = static_cast<char>(r);
        got[r] = mesh[r]->Allgather(mine);
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < kWorld; ++r) {
      REQUIRE(got[r].size() == kWorld);
      for (int src = 0; src < kWorld; ++src) {
        INFO("rank " << r << " from " << src << ", size " << size);
        REQUIRE(got[r][src].size() == size);
        if (size) {
          CHECK(got[r][src][0] == static_cast<char>('a' + src));
          CHECK(got[r][src][size / 2] == static_cast<char>(src));
          CHECK(got[r][src][size - 1] == static_cast<char>('a' + src));
        }
      }
    }
  }
  // All-to-all: rank r sends rank d a buffer of its own (one in pieces),
  // then an all-gather follows on the same sequence of collectives.
  {
    auto payload = [](int src, int dst) {
      const size_t size = src == 2 && dst == 0 ? net::kMeshPieceBytes + 777 : 10 * src + dst;
      std::string s(size, static_cast<char>('A' + 3 * src + dst));
      if (size) s[size - 1] = static_cast<char>(src * 16 + dst);
      return s;
    };
    std::vector<std::vector<std::string>> got(kWorld), after(kWorld);
    std::vector<std::thread> threads;
    for (int r = 0; r < kWorld; ++r) {
      threads.emplace_back([&, r] {
        std::vector<std::string> to;
        for (int d = 0; d < kWorld; ++d) to.push_back(payload(r, d));
        got[r] = mesh[r]->Alltoall(to);
        after[r] = mesh[r]->Allgather(std::string(1, static_cast<char>('0' + r)));
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < kWorld; ++r) {
      REQUIRE(got[r].size() == kWorld);
      for (int src = 0; src < kWorld; ++src) {
        INFO("all-to-all: rank " << r << " from " << src);
        CHECK(got[r][src] == payload(src, r));
        CHECK(after[r][src] == std::string(1, static_cast<char>('0' + src)));
      }
    }
    CHECK_THROWS_AS(mesh[0]->Alltoall({"x"}), Error);
  }
  // A rank that never takes part is named when the others give up.
  net::Mesh a(0, 2, "127.0.0.1", keys, {"machine 0 trainer 0", "machine 1 trainer 0"},
              std::chrono::milliseconds(300));
  net::Mesh b(1, 2, "127.0.0.1", keys, {"machine 0 trainer 0", "machine 1 trainer 0"},
              std::chrono::milliseconds(300));
  a.Connect({a.endpoint(), b.endpoint()});
  CHECK_THROWS_WITH(a.Allgather("x"),
                    Catch::Contains("machine 1 trainer 0") && Catch::Contains("did not answer"));
}
