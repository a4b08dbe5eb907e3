// ShmPartition across threads and real (forked) processes: contents equal
// LoadLocalPartition's bit for bit, attach waits with a deadline, and no
// /dev/shm entry outlives its last user, even when the creator is SIGKILLed.
#include "store/shm_partition.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "partition/config.h"
#include "partition/hetero_local.h"
#include "partition/local_partition.h"
#include "partition/partition.h"
#include "store/row_cache.h"
#include "test_util.h"

using namespace gnn;
using namespace std::chrono_literals;

namespace {

// A partitioned dataset in a temp folder. Kept in function statics so it is
// built once per test binary and removed at exit (forked children _exit and
// leave it to the parent).
struct Parts {
  test::TempDir dir;
  PartitionConfig config;
};

std::unique_ptr<Parts> MakeParts(const std::string& dataset, const std::string& sub) {
  auto p = std::make_unique<Parts>();
  PartitionOptions o;
  o.data.dataset = dataset;
  o.data.seed = 5;
  o.num_parts = 2;
  o.part_method = "random";
  o.output = p->dir / sub;
  o.num_threads = 2;
  LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kWarn);
  p->config = LoadPartitionConfig(RunPartition(o).config_path);
  SetLogLevel(level);
  return p;
}

const Parts& Tiny() {
  static const std::unique_ptr<Parts> p = MakeParts("synthetic:tiny", "tiny");
  return *p;
}

std::string UniqueName(const std::string& tag) {
  static std::atomic<int> counter{0};
  return "/gnn-test-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

bool SegmentExists(const std::string& name) { return PathExists(ShmSegmentPath(name)); }
bool LockExists(const std::string& name) { return PathExists(ShmLockPath(name)); }

// Removes the segment and lock file however the test ends.
struct ShmGuard {
  std::string name;
  ~ShmGuard() { RemoveShmSegment(name); }
};

template <typename T>
bool SameBytes(const T* a, const std::vector<T>& b) {
  return std::memcmp(a, b.data(), b.size() * sizeof(T)) == 0;
}

// Plain bool (no Catch macros), so forked children can use it too.
bool SameAsLocal(const PartitionView& v, const LocalPartition& p, int64_t num_classes) {
  return v.part_id == p.part_id && v.node_start == p.node_start && v.num_nodes == p.num_nodes &&
         v.num_edges == static_cast<int64_t>(p.indices.size()) && v.feature_dim == p.feature_dim &&
         v.num_classes == num_classes && SameBytes(v.indptr, p.indptr) &&
         SameBytes(v.indices, p.indices) && SameBytes(v.features, p.features) &&
         SameBytes(v.labels, p.labels) && SameBytes(v.train_mask, p.train_mask) &&
         SameBytes(v.valid_mask, p.valid_mask) && SameBytes(v.test_mask, p.test_mask) &&
         SameBytes(v.orig_nids, p.orig_nids);
}

// A forked child running `body`; its return value is the exit code (100 if it
// throws). Killed and reaped if the test ends while it still runs.
class Child {
 public:
  explicit Child(const std::function<int()>& body) {
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int code = 100;
      try {
        code = body();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
      } catch (...) {
      }
      _exit(code);  // no destructors of the parent's objects, no Catch teardown
    }
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void Kill() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Exit code, or -signal; -1000 if it did not end within `timeout`.
  int Wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1000;
      std::this_thread::sleep_for(5ms);
    }
  }

 private:
  pid_t pid_ = -1;
};

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { REQUIRE(pipe2(fd, O_CLOEXEC) == 0); }
  ~Pipe() {
    close(fd[0]);
    close(fd[1]);
  }
  void Send(const std::string& s) const {
    if (write(fd[1], s.data(), s.size()) != static_cast<ssize_t>(s.size())) _exit(101);
  }
  // Reads what is there after waiting up to `timeout` for the first byte;
  // "" on timeout.
  std::string Receive(std::chrono::milliseconds timeout) const {
    pollfd p = {fd[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
    char buf[256];
    ssize_t n = read(fd[0], buf, sizeof(buf));
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
};

long VmRssKb() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

TEST_CASE("shm partition equals LoadLocalPartition in this process and a child", "[integration]") {
  const Parts& parts = Tiny();
  const PartitionConfig& config = parts.config;
  LocalPartition local = LoadLocalPartition(config, 1, true);

  std::string scheme = ShmSegmentName(config, 1);
  CHECK(scheme.rfind("/gnn-synthetic-tiny-", 0) == 0);
  CHECK(scheme.size() <= 100);
  CHECK(scheme.substr(scheme.size() - 3) == "-p1");
  CHECK(ShmSegmentName(std::string(300, 'g') + "/x y", std::string(64, 'a'), 12345).size() <= 100);
  CHECK(ShmSegmentName("a/b c", "0123456789abcdef0123", 0) == "/gnn-a_b_c-0123456789abcdef-p0");

  const std::string name = UniqueName("basic");
  ShmGuard guard{name};
  auto creator = ShmPartition::Create(name, config, 1, true);
  CHECK(creator->is_creator());
  CHECK(creator->creator_pid() == getpid());
  CHECK(creator->graph_name() == "synthetic-tiny");
  CHECK(creator->config_digest() == PartitionConfigDigest(config));
  CHECK(creator->mapped_bytes() % 4096 == 0);
  CHECK(SameAsLocal(creator->view(), local, config.num_classes));
  CHECK(SegmentExists(name));
  CHECK(LockExists(name));

  auto attached = ShmPartition::Attach(name, config, 1, 1000ms);
  CHECK_FALSE(attached->is_creator());
  CHECK(attached->creator_pid() == getpid());
  CHECK(attached->mapped_bytes() == creator->mapped_bytes());
  CHECK(SameAsLocal(attached->view(), local, config.num_classes));
  CscView csc = attached->view().csc();
  CHECK(csc.indptr == attached->view().indptr);
  CHECK(csc.indices == attached->view().indices);
  CHECK(csc.node_start == config.parts[1].node_start);
  CHECK(csc.num_nodes == config.parts[1].num_nodes());
  CHECK(csc.rng_keys == attached->view().orig_nids);

  Child child([&] {
    auto mine = ShmPartition::Attach(name, config, 1, 5000ms);
    return SameAsLocal(mine->view(), local, config.num_classes) ? 0 : 1;
  });
  CHECK(child.Wait(20000ms) == 0);

  // The segment belongs to this partition of this config only.
  CHECK_THROWS_WITH(ShmPartition::Attach(name, config, 0, 100ms),
                    Catch::Contains(name) && Catch::Contains("expected partition 0"));
  CHECK_THROWS_AS(ShmPartition::Attach(name, config, 0, 100ms), DataError);
  // A second server 0 is refused while the first is alive.
  CHECK_THROWS_AS(ShmPartition::Create(name, config, 1, false), ConfigError);
  CHECK_THROWS_WITH(ShmPartition::Create(name, config, 1, false),
                    Catch::Contains(name) && Catch::Contains("in use"));
  CHECK_THROWS_AS(ShmPartition::Create(name, config, 2, false), ConfigError);
  CHECK_THROWS_AS(ShmPartition::Create("no-slash", config, 1, false), ConfigError);
  CHECK_THROWS_AS(ShmPartition::Attach("/a/b", 0ms), ConfigError);

  creator.reset();  // the attacher keeps it alive
  CHECK(SegmentExists(name));
  CHECK(SameAsLocal(attached->view(), local, config.num_classes));
  attached.reset();
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));
}

TEST_CASE("shm Create validates the files and leaves nothing behind on error", "[integration]") {
  test::TempDir dir;
  PartitionOptions o;
  o.data.dataset = "synthetic:tiny";
  o.num_parts = 2;
  o.part_method = "random";
  o.output = dir / "p";
  LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kWarn);
  PartitionConfig config = LoadPartitionConfig(RunPartition(o).config_path);
  SetLogLevel(level);
  const std::string name = UniqueName("bad");
  ShmGuard guard{name};

  // One flipped feature bit: only the checksum can tell.
  const std::string feat = config.FilePath(0, "feat.npy");
  {
    std::fstream f(feat, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    char c = 0;
    f.read(&c, 1);
    f.seekp(200);
    c ^= 1;
    f.write(&c, 1);
  }
  CHECK_THROWS_WITH(ShmPartition::Create(name, config, 0, true),
                    Catch::Contains(feat) && Catch::Contains("checksum mismatch"));
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));
  CHECK_NOTHROW(ShmPartition::Create(name, config, 0, false));
  CHECK_FALSE(SegmentExists(name));

  // An out-of-range neighbour id is caught without checksums too.
  const std::string indices = config.FilePath(0, "indices.npy");
  {
    std::fstream f(indices, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-8, std::ios::end);
    int64_t v = config.num_nodes + 7;
    f.write(reinterpret_cast<const char*>(&v), 8);
  }
  CHECK_THROWS_WITH(
      ShmPartition::Create(name, config, 0, false),
      Catch::Contains(indices) &&
          Catch::Contains("node id " + std::to_string(config.num_nodes + 7) + ", outside"));
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));

  // A truncated file is named.
  const std::string label = config.FilePath(1, "label.npy");
  std::filesystem::resize_file(label, std::filesystem::file_size(label) - 8);
  CHECK_THROWS_WITH(ShmPartition::Create(name, config, 1, false), Catch::Contains(label));
  CHECK_FALSE(SegmentExists(name));
}

namespace {

// Every array of a typed view equals the loaded partition's.
bool SameTyped(const HeteroPartitionView& v, const HeteroPartition& p) {
  const HeteroPartitionView w = p.View();
  auto same = [](const auto* a, const auto* b, int64_t n) {
    return n == 0 || std::memcmp(a, b, static_cast<size_t>(n) * sizeof(*a)) == 0;
  };
  if (v.part_id != w.part_id || v.node_start != w.node_start || v.num_nodes != w.num_nodes ||
      v.num_edges != w.num_edges || v.ntype_ranges != w.ntype_ranges ||
      v.feature_dims != w.feature_dims || v.target != w.target)
    return false;
  const int64_t n = v.num_nodes, e = v.num_edges, t = v.num_targets();
  bool ok = same(v.indptr, w.indptr, n + 1) && same(v.indices, w.indices, e) &&
            same(v.etypes, w.etypes, e) && same(v.orig_nids, w.orig_nids, n) &&
            same(v.rng_keys, w.rng_keys, n) && same(v.labels, w.labels, t);
  for (int m = 0; m < 3; ++m) ok = ok && same(v.masks[m], w.masks[m], t);
  for (size_t k = 0; k < v.feature_dims.size(); ++k) {
    const auto [b, end] = v.ntype_ranges[k];
    ok = ok && (v.features[k] == nullptr) == (v.feature_dims[k] == 0) &&
         same(v.features[k], w.features[k], (end - b) * v.feature_dims[k]);
  }
  return ok;
}

}  // namespace

TEST_CASE("shm holds a typed partition as LoadHeteroPartition reads it and a child sees the same",
          "[integration]") {
  test::TempDir dir;
  PartitionOptions o;
  o.data.dataset = "synthetic:mag-small";
  o.num_parts = 2;
  o.undirected = true;
  o.output = dir / "mag";
  LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kWarn);
  PartitionConfig config = LoadPartitionConfig(RunPartition(o).config_path);
  SetLogLevel(level);
  const HeteroPartition loaded = LoadHeteroPartition(config, 1, true);
  const std::string name = UniqueName("typed");
  ShmGuard guard{name};

  auto creator = ShmPartition::Create(name, config, 1, true);
  REQUIRE(creator->hetero_view() != nullptr);
  CHECK(SameTyped(*creator->hetero_view(), loaded));
  CHECK(creator->view().num_nodes == loaded.num_nodes);
  CHECK(creator->view().features == nullptr);
  auto attached = ShmPartition::Attach(name, config, 1, 1000ms);
  REQUIRE(attached->hetero_view() != nullptr);
  CHECK(SameTyped(*attached->hetero_view(), loaded));
  CHECK(attached->hetero_view()->Nodes(0) == loaded.Nodes(0));
  Child child([&] {
    auto mine = ShmPartition::Attach(name, config, 1, 5000ms);
    return mine->hetero_view() && SameTyped(*mine->hetero_view(), loaded) ? 0 : 1;
  });
  CHECK(child.Wait(20000ms) == 0);
  CHECK_THROWS_WITH(ShmPartition::Attach(name, config, 0, 100ms),
                    Catch::Contains("expected partition 0"));
  creator.reset();
  attached.reset();
  CHECK_FALSE(SegmentExists(name));

  // A relation that does not exist is named, and nothing is left.
  const std::string etype = config.FilePath(0, kEtypeFile);
  const int64_t num_rels = static_cast<int64_t>(config.etypes.size());
  {
    std::fstream f(etype, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-8, std::ios::end);
    f.write(reinterpret_cast<const char*>(&num_rels), 8);
  }
  CHECK_THROWS_WITH(
      ShmPartition::Create(name, config, 0, false),
      Catch::Contains(etype) && Catch::Contains("(relation " + std::to_string(num_rels) + ")"));
  CHECK_THROWS_WITH(ShmPartition::Create(name, config, 0, true),
                    Catch::Contains(etype) && Catch::Contains("checksum mismatch"));
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));
}

TEST_CASE("shm Attach waits for a late Create and times out naming the segment", "[integration]") {
  const Parts& parts = Tiny();
  const PartitionConfig& config = parts.config;
  const std::string name = UniqueName("late");
  ShmGuard guard{name};

  std::unique_ptr<ShmPartition> early;
  std::string error;
  std::atomic<bool> waiting{false};
  std::thread waiter([&] {
    try {
      waiting = true;
      early = ShmPartition::Attach(name, config, 0, 10000ms);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  // The segment is made only once the waiter is attaching.
  REQUIRE(test::WaitUntil([&] { return waiting.load(); }, 10000ms));
  auto creator = ShmPartition::Create(name, config, 0, false);
  waiter.join();
  REQUIRE(error.empty());
  REQUIRE(early);
  CHECK(SameAsLocal(early->view(), LoadLocalPartition(config, 0, false), config.num_classes));

  // The same from another process that starts waiting before the segment exists.
  const std::string name2 = UniqueName("late-child");
  ShmGuard guard2{name2};
  int started[2];
  REQUIRE(::pipe(started) == 0);
  Child child([&] {
    const char byte = 1;
    if (::write(started[1], &byte, 1) != 1) return 2;  // "attaching now"
    auto mine = ShmPartition::Attach(name2, 10000ms);
    return mine->view().part_id == 1 ? 0 : 1;
  });
  ::close(started[1]);
  pollfd pfd{started[0], POLLIN, 0};
  REQUIRE(::poll(&pfd, 1, 10000) == 1);  // the child is attaching: now make the segment
  ::close(started[0]);
  auto creator2 = ShmPartition::Create(name2, config, 1, false);
  CHECK(child.Wait(20000ms) == 0);

  const std::string never = UniqueName("never");
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(ShmPartition::Attach(never, 300ms), TimeoutError);
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 3000ms);
  CHECK_THROWS_WITH(ShmPartition::Attach(never, 0ms),
                    Catch::Contains(never) && Catch::Contains("timed out"));
  CHECK_FALSE(SegmentExists(never));
  CHECK_FALSE(LockExists(never));

  early.reset();
  creator.reset();
  creator2.reset();
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(SegmentExists(name2));
  CHECK_FALSE(LockExists(name2));
}

TEST_CASE("shm segment of a SIGKILLed creator is removed by its last attacher", "[integration]") {
  const Parts& parts = Tiny();
  const PartitionConfig& config = parts.config;
  LocalPartition local = LoadLocalPartition(config, 1, false);
  const std::string name = UniqueName("crash");
  ShmGuard guard{name};

  Pipe created;
  Child creator([&] {
    auto p = ShmPartition::Create(name, config, 1, false);
    created.Send("r");
    for (;;) pause();
    return 0;
  });
  REQUIRE(created.Receive(20000ms) == "r");

  Pipe attached, go;
  Child backup([&] {
    auto p = ShmPartition::Attach(name, config, 1, 5000ms);
    attached.Send(SameAsLocal(p->view(), local, config.num_classes) ? "a" : "x");
    go.Receive(60000ms);
    // Still readable after the creator died.
    bool same = SameAsLocal(p->view(), local, config.num_classes);
    p.reset();
    return same ? 0 : 2;
  });
  REQUIRE(attached.Receive(20000ms) == "a");

  creator.Kill();
  CHECK(SegmentExists(name));  // the backup still uses it
  CHECK(LockExists(name));
  go.Send("g");
  CHECK(backup.Wait(20000ms) == 0);
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));
}

TEST_CASE("shm Create replaces a stale segment, Attach rejects foreign ones", "[integration]") {
  const Parts& parts = Tiny();
  const PartitionConfig& config = parts.config;
  const std::string name = UniqueName("stale");
  ShmGuard guard{name};

  Pipe created;
  Child creator([&] {
    auto p = ShmPartition::Create(name, config, 0, false);
    created.Send("r");
    for (;;) pause();
    return 0;
  });
  REQUIRE(created.Receive(20000ms) == "r");
  pid_t dead = creator.pid();
  creator.Kill();
  REQUIRE(SegmentExists(name));  // nobody was left to clean up
  REQUIRE(LockExists(name));
  {
    auto fresh = ShmPartition::Create(name, config, 0, true);
    CHECK(fresh->creator_pid() == getpid());
    CHECK(fresh->creator_pid() != dead);
    CHECK(SameAsLocal(fresh->view(), LoadLocalPartition(config, 0, false), config.num_classes));
  }
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));

  // Segments that are not ours, with a lock file beside them.
  auto make_segment = [&](const std::string& bytes) {
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    close(fd);
    int lock = open(ShmLockPath(name).c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(lock >= 0);
    close(lock);
  };
  make_segment(std::string(8192, 'x'));
  CHECK_THROWS_AS(ShmPartition::Attach(name, 1000ms), DataError);
  CHECK_THROWS_WITH(ShmPartition::Attach(name, 1000ms),
                    Catch::Contains(name) && Catch::Contains("bad magic"));

  std::string future(8192, '\0');
  std::memcpy(&future[0], "GNNSHMP1", 8);
  uint32_t version = kShmFormatVersion + 1, ready = kShmReadyValue;
  std::memcpy(&future[8], &version, 4);
  std::memcpy(&future[12], &ready, 4);
  make_segment(future);
  CHECK_THROWS_WITH(ShmPartition::Attach(name, 1000ms), Catch::Contains("format version"));

  // All zeros: a creator that died right after creating it. Not an error,
  // just not there yet.
  make_segment(std::string(8192, '\0'));
  CHECK_THROWS_WITH(ShmPartition::Attach(name, 50ms),
                    Catch::Contains("timed out") && Catch::Contains("not initialized"));
  {
    auto fresh = ShmPartition::Create(name, config, 1, false);
    CHECK(fresh->view().part_id == 1);
  }
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));
}

TEST_CASE("shm attacher's resident memory does not grow with the partition", "[integration]") {
  const std::unique_ptr<Parts> owned =
      MakeParts("synthetic:nodes=20000,edges=100000,feat=64,classes=4", "rss");
  const Parts& parts = *owned;
  const PartitionConfig& config = parts.config;
  const std::string name = UniqueName("rss");
  ShmGuard guard{name};
  auto creator = ShmPartition::Create(name, config, 0, false);
  const long mapped_kb = static_cast<long>(creator->mapped_bytes() / 1024);
  REQUIRE(mapped_kb > 2048);

  Pipe report;
  Child child([&] {
    // Warm up first: code pages (fork does not copy their page tables) and
    // the heap would otherwise count as growth.
    ShmPartition::Attach(name, config, 0, 5000ms).reset();
    VmRssKb();
    long before = VmRssKb();
    auto p = ShmPartition::Attach(name, config, 0, 5000ms);
    long attached = VmRssKb();
    // Now touch every page of every array: the measurement must see that.
    const PartitionView& v = p->view();
    volatile int64_t sum = 0;
    auto touch = [&](const void* data, size_t bytes) {
      const char* c = static_cast<const char*>(data);
      for (size_t i = 0; i < bytes; i += 1024) sum = sum + c[i];
    };
    touch(v.indptr, (v.num_nodes + 1) * 8);
    touch(v.indices, v.num_edges * 8);
    touch(v.features, v.num_nodes * v.feature_dim * 4);
    touch(v.labels, v.num_nodes * 8);
    touch(v.orig_nids, v.num_nodes * 8);
    long touched = VmRssKb();
    report.Send(std::to_string(before) + " " + std::to_string(attached) + " " +
                std::to_string(touched));
    return 0;
  });
  std::string text = report.Receive(20000ms);
  CHECK(child.Wait(20000ms) == 0);
  long before = -1, attached = -1, touched = -1;
  REQUIRE(std::sscanf(text.c_str(), "%ld %ld %ld", &before, &attached, &touched) == 3);
  INFO("mapped " << mapped_kb << " kB; VmRSS before " << before << " kB, after attach " << attached
                 << " kB, after touching " << touched << " kB");
  CHECK(attached - before < mapped_kb / 10);
  CHECK(touched - before > mapped_kb / 2);
}

TEST_CASE("shm sweep removes segments nobody holds and keeps live ones", "[integration]") {
  const Parts& parts = Tiny();
  const PartitionConfig& config = parts.config;
  const std::string dead_name = UniqueName("swept");
  const std::string live_name = UniqueName("kept");
  ShmGuard dead_guard{dead_name};
  ShmGuard live_guard{live_name};

  // A creator SIGKILLed with nobody attached leaves its segment behind.
  Pipe created;
  Child creator([&] {
    auto p = ShmPartition::Create(dead_name, config, 0, false);
    created.Send("r");
    for (;;) pause();
    return 0;
  });
  REQUIRE(created.Receive(20000ms) == "r");
  creator.Kill();
  REQUIRE(SegmentExists(dead_name));
  auto live = ShmPartition::Create(live_name, config, 1, false);

  // Fresh leftovers are left alone (a failing job may be cleaning up);
  // after a minute they are stale. Other tests' segments stay young.
  StaleSweep young = SweepStaleSegments();
  CHECK(SegmentExists(dead_name));
  CHECK(std::find(young.names.begin(), young.names.end(), dead_name.substr(1)) ==
        young.names.end());
  for (const std::string& path : {ShmLockPath(dead_name), ShmLockPath(live_name)}) {
    timespec old_times[2] = {{time(nullptr) - 120, 0}, {time(nullptr) - 120, 0}};
    REQUIRE(utimensat(AT_FDCWD, path.c_str(), old_times, 0) == 0);
  }
  StaleSweep swept = SweepStaleSegments();
  CHECK(!SegmentExists(dead_name));
  CHECK(!LockExists(dead_name));
  CHECK(SegmentExists(live_name));
  CHECK(LockExists(live_name));
  CHECK(std::find(swept.names.begin(), swept.names.end(), dead_name.substr(1)) !=
        swept.names.end());
  CHECK(swept.bytes > 0);
  // The live segment still reads.
  CHECK(live->view().num_nodes == config.parts[1].num_nodes());
}

namespace {

RowCacheKey CacheKey(const std::string& name) { return {name, "g", "digest", 3}; }

// Ids in several of Find's 64-bit words, at their edges too.
std::vector<int64_t> CacheIds() { return {2, 5, 9, 40, 64, 127, 1000}; }

void FillRows(const std::vector<int64_t>& ids, float* rows) {
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int d = 0; d < 3; ++d) rows[i * 3 + d] = static_cast<float>(ids[i] * 10 + d);
  }
}

}  // namespace

TEST_CASE("row cache: the first opener builds it, the others attach, the last removes it",
          "[integration]") {
  const std::string name = UniqueName("cache");
  ShmGuard guard{name};
  constexpr int kOpeners = 4;
  std::atomic<int> built{0}, opening{0};
  std::atomic<bool> all_opening{false};
  auto choose = [&] {
    ++built;
    // The builder goes on once every thread has called Open, so the others
    // arrive while it builds (a deadline well inside Open's own).
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (opening < kOpeners && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    all_opening = opening == kOpeners;
    return CacheIds();
  };
  std::vector<std::unique_ptr<ShmRowCache>> caches(kOpeners);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < caches.size(); ++t) {
    threads.emplace_back([&, t] {
      ++opening;
      caches[t] = ShmRowCache::Open(CacheKey(name), choose, FillRows, 20000ms);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(built == 1);
  CHECK(all_opening);
  int builders = 0;
  for (const auto& c : caches) {
    REQUIRE(c);
    builders += c->is_builder();
    CHECK(c->num_rows() == 7);
    REQUIRE(c->Find(9) != nullptr);
    CHECK(c->Find(9)[2] == 92.0f);
    CHECK(c->Find(2)[0] == 20.0f);
    CHECK(c->Find(40)[1] == 401.0f);
    for (int64_t id : {64, 127, 1000}) {
      REQUIRE(c->Find(id) != nullptr);
      CHECK(c->Find(id)[1] == static_cast<float>(id * 10 + 1));
    }
    for (int64_t id : {-1, 0, 3, 41, 63, 65, 128, 999, 1001, 1 << 20}) {
      CHECK(c->Find(id) == nullptr);
    }
  }
  CHECK(builders == 1);
  // Another graph or width under the same name is refused.
  RowCacheKey other = CacheKey(name);
  other.feature_dim = 4;
  CHECK_THROWS_WITH(ShmRowCache::Open(other, choose, FillRows, 1000ms),
                    Catch::Contains(name) && Catch::Contains("expected 'g'"));
  caches.resize(1);
  CHECK(SegmentExists(name));
  caches.clear();
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));
}

TEST_CASE("row cache of sparse rows: CSR by slot, values kept, checked, and not a dense cache",
          "[integration]") {
  const std::string name = UniqueName("spcache");
  ShmGuard guard{name};
  RowCacheKey key = CacheKey(name);
  key.feature_dim = 100;
  key.sparse = true;
  // Row of id i: columns i % 100 and 99 (one when i % 100 == 99), value i.
  auto fill = [](const std::vector<int64_t>& ids) {
    SparseRows r;
    r.cols = 100;
    for (int64_t id : ids) {
      r.indices.push_back(static_cast<int32_t>(id % 100));
      r.values.push_back(static_cast<float>(id));
      if (id % 100 != 99) {
        r.indices.push_back(99);
        r.values.push_back(static_cast<float>(id));
      }
      r.indptr.push_back(static_cast<int64_t>(r.indices.size()));
    }
    return r;
  };
  auto a = ShmRowCache::OpenSparse(key, CacheIds, fill, 20000ms);
  auto b = ShmRowCache::OpenSparse(key, CacheIds, fill, 20000ms);
  CHECK(a->is_builder());
  CHECK_FALSE(b->is_builder());
  for (const auto* c : {a.get(), b.get()}) {
    REQUIRE(c->sparse());
    CHECK(c->num_rows() == 7);
    const SparseView& v = c->sparse_rows();
    for (int64_t id : CacheIds()) {
      const int64_t slot = c->Slot(id);
      REQUIRE(slot >= 0);
      CHECK(c->ids()[slot] == id);
      CHECK(v.indptr[slot + 1] - v.indptr[slot] == 2);
      CHECK(v.indices[v.indptr[slot]] == id % 100);
      CHECK(v.values[v.indptr[slot]] == static_cast<float>(id));
    }
    CHECK(c->Slot(3) == -1);
    CHECK(c->Find(9) == nullptr);  // no dense rows
  }
  // A dense cache of the same name and width is refused, and the reverse.
  RowCacheKey dense = key;
  dense.sparse = false;
  CHECK_THROWS_WITH(ShmRowCache::Open(dense, CacheIds, FillRows, 1000ms),
                    Catch::Contains("sparse"));
  // A builder whose rows are not sorted leaves nothing behind.
  const std::string bad_name = UniqueName("spbad");
  ShmGuard bad_guard{bad_name};
  RowCacheKey bad = key;
  bad.name = bad_name;
  auto unsorted = [&](const std::vector<int64_t>& ids) {
    SparseRows r = fill(ids);
    std::swap(r.indices[0], r.indices[1]);
    return r;
  };
  CHECK_THROWS_WITH(ShmRowCache::OpenSparse(bad, CacheIds, unsorted, 1000ms),
                    Catch::Contains("row cache " + bad_name) && Catch::Contains("row 0"));
  CHECK_FALSE(SegmentExists(bad_name));
  CHECK_FALSE(LockExists(bad_name));
}

TEST_CASE("row cache: a failed or killed builder leaves nothing, the next opener builds",
          "[integration]") {
  const std::string name = UniqueName("cachefail");
  ShmGuard guard{name};
  auto failing = [](const std::vector<int64_t>&, float*) {
    throw TimeoutError("machine 1 server 0 did not answer");
  };
  CHECK_THROWS_WITH(ShmRowCache::Open(CacheKey(name), CacheIds, failing, 1000ms),
                    Catch::Contains("did not answer"));
  CHECK_FALSE(SegmentExists(name));
  CHECK_FALSE(LockExists(name));

  // A builder SIGKILLed halfway: its lock goes with it, and a waiter builds.
  // A child that starts building cache `n` and hangs in its fill, having
  // said so on `pipe`.
  auto stuck_builder = [](const std::string& n, const Pipe& pipe) {
    return std::make_unique<Child>([&n, &pipe] {
      auto hang = [&](const std::vector<int64_t>&, float*) {
        pipe.Send("b");
        for (;;) pause();
      };
      ShmRowCache::Open(CacheKey(n), CacheIds, hang, 20000ms);
      return 0;
    });
  };
  Pipe building;
  auto builder = stuck_builder(name, building);
  REQUIRE(building.Receive(20000ms) == "b");
  std::unique_ptr<ShmRowCache> c;
  std::thread waiter([&] { c = ShmRowCache::Open(CacheKey(name), CacheIds, FillRows, 20000ms); });
  builder->Kill();  // the waiter was waiting for it
  waiter.join();
  REQUIRE(c);
  CHECK(c->is_builder());
  CHECK(c->Find(5)[0] == 50.0f);
  // Waiting past the deadline for a builder that holds on: a TimeoutError.
  const std::string slow = UniqueName("cacheslow");
  ShmGuard slow_guard{slow};
  Pipe holding;
  auto holder = stuck_builder(slow, holding);
  REQUIRE(holding.Receive(20000ms) == "b");
  CHECK_THROWS_WITH(ShmRowCache::Open(CacheKey(slow), CacheIds, FillRows, 200ms),
                    Catch::Contains("timed out") && Catch::Contains(slow));
}
