// gnn-copy end to end: the real binary copying a real partitioning into
// per-machine workspaces, locally and through a real sshd (rsync and scp),
// re-runs that copy only what changed, and bad input.
#include "cluster/copy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cluster_util.h"
#include "common/error.h"
#include "common/sha256.h"
#include "net/security.h"
#include "partition/config.h"
#include "process_util.h"
#include "ssh_util.h"
#include "test_util.h"

using namespace gnn;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// synthetic:tiny in 2 partitions and a 2-machine loopback ip_config.
struct Setup {
  test::TempDir dir;
  std::string config;  // DIR/tiny/synthetic-tiny.json
  std::string ip;      // DIR/ip_config.txt

  Setup() {
    config = test::MakePartitions(dir, "synthetic:tiny", 2, "tiny");
    ip = dir / "ip_config.txt";
    WriteText(ip, "127.0.0.1 30050\n127.0.0.1 30060\n");
  }

  static void WriteText(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }

  std::vector<std::string> Args(const std::string& workspace,
                                std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {test::Bin("gnn-copy"),
                                  "--ip_config",
                                  ip,
                                  "--workspace",
                                  workspace,
                                  "--rel_data_path",
                                  "data",
                                  "--part_config",
                                  config};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

// The "machine M ..." line of gnn-copy's output ("" if none).
std::string MachineLine(const std::string& out, int machine) {
  const std::string prefix = "machine " + std::to_string(machine) + " ";
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// N of "copied N file(s)" (or "would copy N") in machine M's line; -1 if absent.
int Copied(const std::string& out, int machine) {
  const std::string line = MachineLine(out, machine);
  for (const char* key : {"copied ", "would copy "}) {
    size_t p = line.find(key);
    if (p != std::string::npos) return std::atoi(line.c_str() + p + std::strlen(key));
  }
  return -1;
}

// Overwrites one byte in the middle of a file (same size, different sha256).
void Corrupt(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  f.seekg(0, std::ios::end);
  const auto size = static_cast<std::streamoff>(f.tellg());
  REQUIRE(size > 200);
  f.seekg(size / 2);
  char c = 0;
  f.read(&c, 1);
  f.seekp(size / 2);
  c = static_cast<char>(c ^ 0x5a);
  f.write(&c, 1);
}

// Machine m's workspace holds partition m (and only it), the JSON byte for
// byte as `json_text`, and the ip_config; the copied JSON finds and
// verifies partition m.
// `extra`: files shipped besides the partition, config and ip_config.
void CheckWorkspace(const std::string& ws, int m, const std::string& json_text,
                    const std::string& ip, int extra = 0) {
  INFO("workspace " << ws);
  REQUIRE(test::ReadFileOrEmpty(ws + "/data/synthetic-tiny.json") == json_text);
  CHECK(test::ReadFileOrEmpty(ws + "/ip_config.txt") == test::ReadFileOrEmpty(ip));
  CHECK(fs::is_directory(ws + "/data/part" + std::to_string(m)));
  CHECK_FALSE(fs::exists(ws + "/data/part" + std::to_string(1 - m)));
  PartitionConfig copied = LoadPartitionConfig(ws + "/data/synthetic-tiny.json");
  CHECK_NOTHROW(VerifyPartFiles(copied, m));
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(ws)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 2 + extra + static_cast<int>(copied.parts[static_cast<size_t>(m)].files.size()));
}

// A loopback TCP port that accepts connections (the kernel completes the
// handshake from the backlog) but never says anything: an ssh server that
// hangs. Closed on destruction.
struct SilentListener {
  int fd = -1;
  int port = 0;
  SilentListener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~SilentListener() { ::close(fd); }
};

// Pids of live ssh processes to port `port` (-p PORT or -o Port=PORT).
std::vector<int> SshProcessesTo(const std::string& port) {
  std::vector<int> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const int pid = std::atoi(e.path().filename().c_str());
    if (pid <= 0) continue;
    std::string cmdline = test::ReadFileOrEmpty(e.path().string() + "/cmdline");
    std::vector<std::string> args;
    for (size_t b = 0, z; b < cmdline.size(); b = z + 1) {
      z = cmdline.find('\0', b);
      if (z == std::string::npos) z = cmdline.size();
      args.push_back(cmdline.substr(b, z - b));
    }
    if (args.empty() || fs::path(args[0]).filename() != "ssh") continue;
    for (const auto& a : args) {
      if (a == port || a == "Port=" + port) {
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

std::string Joined(const test::ProcessResult& r) {
  return "stdout:\n" + r.out + "\nstderr:\n" + r.err;
}

}  // namespace

TEST_CASE("gnn-copy: local machines get their own partition, re-runs copy only what changed",
          "[e2e]") {
  Setup s;
  const std::string ws = s.dir / "m{machine}";
  const std::string json_text = test::ReadFileOrEmpty(s.config);
  const int per_machine = 2 + static_cast<int>(LoadPartitionConfig(s.config).parts[0].files.size());

  // A dry run plans everything and writes nothing.
  test::ProcessResult r = test::RunProcess(s.Args(ws, {"--dry_run"}), 30);
  INFO(Joined(r));
  REQUIRE(r.exit_code == 0);
  CHECK(Copied(r.out, 0) == per_machine);
  CHECK(Copied(r.out, 1) == per_machine);
  CHECK_FALSE(fs::exists(s.dir / "m0"));
  CHECK_FALSE(fs::exists(s.dir / "m1"));

  r = test::RunProcess(s.Args(ws), 30);
  INFO(Joined(r));
  REQUIRE(r.exit_code == 0);
  CHECK(Copied(r.out, 0) == per_machine);
  CHECK(Copied(r.out, 1) == per_machine);
  CHECK(MachineLine(r.out, 0).find("local") != std::string::npos);
  CheckWorkspace(s.dir / "m0", 0, json_text, s.ip);
  CheckWorkspace(s.dir / "m1", 1, json_text, s.ip);

  r = test::RunProcess(s.Args(ws), 30);
  REQUIRE(r.exit_code == 0);
  CHECK(Copied(r.out, 0) == 0);
  CHECK(Copied(r.out, 1) == 0);
  CHECK(MachineLine(r.out, 1).find(std::to_string(per_machine) + " unchanged") !=
        std::string::npos);

  // One corrupt file on machine 1: a dry run names it and leaves it alone,
  // a real run copies exactly that file.
  const std::string bad = s.dir / "m1/data/part1/feat.npy";
  Corrupt(bad);
  const std::string corrupt_sha = Sha256File(bad);
  r = test::RunProcess(s.Args(ws, {"--dry_run"}), 30);
  REQUIRE(r.exit_code == 0);
  CHECK(Copied(r.out, 1) == 1);
  CHECK(r.out.find("  copy data/part1/feat.npy") != std::string::npos);
  CHECK(Sha256File(bad) == corrupt_sha);
  r = test::RunProcess(s.Args(ws), 30);
  REQUIRE(r.exit_code == 0);
  CHECK(Copied(r.out, 0) == 0);
  CHECK(Copied(r.out, 1) == 1);
  CheckWorkspace(s.dir / "m1", 1, json_text, s.ip);
  // No temporary left next to the files.
  for (const auto& e : fs::recursive_directory_iterator(s.dir / "m1")) {
    CHECK(e.path().filename().string().find(".gnn-copy") == std::string::npos);
  }
}

TEST_CASE("gnn-copy: with more machines than partitions, machine m gets partition m mod P",
          "[e2e]") {
  Setup s;
  Setup::WriteText(s.ip, "127.0.0.1 30050\n127.0.0.1 30060\n127.0.0.1 30070\n");
  const std::string ws = s.dir / "m{machine}";
  test::ProcessResult r = test::RunProcess(s.Args(ws), 30);
  INFO(Joined(r));
  REQUIRE(r.exit_code == 0);
  const std::string json_text = test::ReadFileOrEmpty(s.config);
  CheckWorkspace(s.dir / "m0", 0, json_text, s.ip);
  CheckWorkspace(s.dir / "m1", 1, json_text, s.ip);
  CheckWorkspace(s.dir / "m2", 0, json_text, s.ip);
}

TEST_CASE("gnn-copy: absolute part dirs are rewritten the same for every machine, script folder",
          "[e2e]") {
  Setup s;
  // The config moved away from its partitions, pointing at them by
  // absolute paths: not valid on another machine, so rewritten.
  nlohmann::json j = nlohmann::json::parse(test::ReadFileOrEmpty(s.config));
  for (int i = 0; i < 2; ++i) {
    j["part-" + std::to_string(i)]["part_dir"] = s.dir / ("tiny/part" + std::to_string(i));
  }
  fs::create_directories(s.dir / "moved");
  s.config = s.dir / "moved/synthetic-tiny.json";
  Setup::WriteText(s.config, j.dump(2));
  fs::create_directories(s.dir / "scripts/sub");
  Setup::WriteText(s.dir / "scripts/run.sh", "#!/bin/sh\necho gnn-copy-script-ran\n");
  ::chmod((s.dir / "scripts/run.sh").c_str(), 0755);
  Setup::WriteText(s.dir / "scripts/sub/notes.txt", "notes\n");

  test::ProcessResult r =
      test::RunProcess(s.Args(s.dir / "ws/m{machine}", {"--script_folder", s.dir / "scripts"}), 30);
  INFO(Joined(r));
  REQUIRE(r.exit_code == 0);
  const std::string json0 = test::ReadFileOrEmpty(s.dir / "ws/m0/data/synthetic-tiny.json");
  REQUIRE(json0 == test::ReadFileOrEmpty(s.dir / "ws/m1/data/synthetic-tiny.json"));
  const nlohmann::json shipped = nlohmann::json::parse(json0);
  CHECK(shipped["part-0"]["part_dir"] == "part0");
  CHECK(shipped["part-1"]["part_dir"] == "part1");
  for (int m = 0; m < 2; ++m) {
    const std::string ws = s.dir / ("ws/m" + std::to_string(m));
    CHECK_NOTHROW(VerifyPartFiles(LoadPartitionConfig(ws + "/data/synthetic-tiny.json"), m));
    CHECK(test::ReadFileOrEmpty(ws + "/scripts/sub/notes.txt") == "notes\n");
    test::ProcessResult script = test::RunProcess({ws + "/scripts/run.sh"}, 10);
    CHECK(script.out == "gnn-copy-script-ran\n");
  }
}

TEST_CASE("gnn-copy --secret_file makes a cluster secret once and ships it owner-only", "[e2e]") {
  Setup s;
  const std::string secret = s.dir / "cluster.secret";
  test::ProcessResult r =
      test::RunProcess(s.Args(s.dir / "ws/m{machine}", {"--secret_file", secret}), 30);
  INFO(Joined(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("made a new cluster secret") != std::string::npos);
  const std::string made = test::ReadFileOrEmpty(secret);
  CHECK(made.size() == 65);
  CHECK(r.out.find(made.substr(0, 16)) == std::string::npos);  // never printed
  CHECK(r.err.find(made.substr(0, 16)) == std::string::npos);
  for (int m = 0; m < 2; ++m) {
    const std::string shipped = s.dir / ("ws/m" + std::to_string(m) + "/cluster.secret");
    struct stat st {};
    REQUIRE(::stat(shipped.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(test::ReadFileOrEmpty(shipped) == made);
    // What gnn-launch --secret_file derives there equals what it derives here.
    CHECK(net::JobKeys::Derive(net::ReadSecretFile(shipped), "j").server_public_z85() ==
          net::JobKeys::Derive(net::ReadSecretFile(secret), "j").server_public_z85());
  }
  // Kept, not remade, on the next run; a readable-by-others secret is refused.
  r = test::RunProcess(s.Args(s.dir / "ws/m{machine}", {"--secret_file", secret}), 30);
  CHECK(r.exit_code == 0);
  CHECK(test::ReadFileOrEmpty(secret) == made);
  ::chmod(secret.c_str(), 0644);
  r = test::RunProcess(s.Args(s.dir / "ws/m{machine}", {"--secret_file", secret}), 30);
  CHECK(r.exit_code == kExitConfig);
  CHECK(r.err.find("chmod 600") != std::string::npos);
  // A run that fails its checks (a corrupt partition file) makes no secret.
  Corrupt(s.dir / "tiny/part0/indices.npy");
  r = test::RunProcess(s.Args(s.dir / "ws/m{machine}", {"--secret_file", s.dir / "other.secret"}),
                       30);
  CHECK(r.exit_code != 0);
  CHECK_FALSE(PathExists(s.dir / "other.secret"));
}

TEST_CASE("gnn-copy: bad input is one clear error and nothing is copied", "[e2e]") {
  Setup s;
  const std::string ws = s.dir / "ws/m{machine}";
  auto check_nothing_copied = [&] { CHECK_FALSE(fs::exists(s.dir / "ws")); };

  SECTION("malformed ip_config names the line") {
    Setup::WriteText(s.ip, "127.0.0.1 30050\n127.0.0.1 port\n");
    test::ProcessResult r = test::RunProcess(s.Args(ws), 30);
    INFO(Joined(r));
    CHECK(r.exit_code == kExitConfig);
    CHECK(r.err.find("ip_config.txt:2") != std::string::npos);
    check_nothing_copied();
  }
  SECTION("fewer machines than partitions") {
    Setup::WriteText(s.ip, "127.0.0.1 30050\n");
    test::ProcessResult r = test::RunProcess(s.Args(ws), 30);
    INFO(Joined(r));
    CHECK(r.exit_code == kExitConfig);
    CHECK(r.err.find("2 partitions") != std::string::npos);
    CHECK(r.err.find("1 machine ") != std::string::npos);
    check_nothing_copied();
  }
  SECTION("missing partition file") {
    fs::remove(s.dir / "tiny/part1/label.npy");
    test::ProcessResult r = test::RunProcess(s.Args(ws), 30);
    INFO(Joined(r));
    CHECK(r.exit_code == kExitData);
    CHECK(r.err.find("part1/label.npy") != std::string::npos);
    check_nothing_copied();
  }
  SECTION("missing ip_config: exit 2 and one line naming it with errno's words") {
    fs::remove(s.ip);
    test::ProcessResult r = test::RunProcess(s.Args(ws), 30);
    INFO(Joined(r));
    CHECK(r.exit_code == kExitConfig);
    CHECK(r.err == "gnn-copy: error: cannot open " + s.ip + ": No such file or directory\n");
    check_nothing_copied();
  }
  SECTION("a part_config that is a folder: Is a directory") {
    const std::string folder = s.dir / "tiny";
    std::vector<std::string> args = s.Args(ws);
    std::replace(args.begin(), args.end(), s.config, folder);
    test::ProcessResult r = test::RunProcess(args, 30);
    INFO(Joined(r));
    CHECK(r.exit_code == kExitData);
    CHECK(r.err == "gnn-copy: error: cannot open " + folder + ": Is a directory\n");
    check_nothing_copied();
  }
  SECTION("corrupt source partition file") {
    Corrupt(s.dir / "tiny/part0/indices.npy");
    test::ProcessResult r = test::RunProcess(s.Args(ws), 30);
    INFO(Joined(r));
    CHECK(r.exit_code == kExitData);
    CHECK(r.err.find("part0/indices.npy: checksum mismatch") != std::string::npos);
    check_nothing_copied();
  }
  SECTION("unreachable host names the machine, quickly") {
    const int closed = test::FreeLoopbackPortRanges(1, 1)[0];
    const auto start = Clock::now();
    test::ProcessResult r =
        test::RunProcess(s.Args(ws, {"--force_ssh", "--ssh_port", std::to_string(closed)}), 30);
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    INFO(Joined(r));
    CHECK(r.exit_code == kExitPeer);
    CHECK(r.err.find("machine 0 (127.0.0.1:" + std::to_string(closed) + "): ssh failed") !=
          std::string::npos);
    // Both machines failed: one line, gnn-copy's one prefix, the second
    // machine's error on it.
    CHECK(r.err.find("gnn-copy: error: ") == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find("[copy]") == std::string::npos);
    CHECK(r.err.find("; also: machine 1 (127.0.0.1:" + std::to_string(closed) + "): ssh failed") !=
          std::string::npos);
    CHECK(took < 10);
    check_nothing_copied();
  }
  SECTION("a host that accepts but never answers hits the deadline, naming the machine") {
    SilentListener silent;
    const std::string port = std::to_string(silent.port);
    const auto start = Clock::now();
    test::ProcessResult r =
        test::RunProcess(s.Args(ws, {"--force_ssh", "--ssh_port", port, "--timeout_s", "2"}), 30);
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    INFO(Joined(r));
    CHECK(r.exit_code == kExitTimeout);
    CHECK(r.err.find("machine 0 (127.0.0.1:" + port + "): ssh timed out") != std::string::npos);
    CHECK(took < 8);
    check_nothing_copied();
  }
  SECTION("--ship_binaries without the binaries beside gnn-copy: 2, naming the missing one") {
    const std::string alone = s.dir / "alone/gnn-copy";
    fs::create_directories(s.dir / "alone");
    fs::copy_file(test::Bin("gnn-copy"), alone);
    std::vector<std::string> args = s.Args(ws, {"--ship_binaries"});
    args[0] = alone;
    test::ProcessResult r = test::RunProcess(args, 30);
    INFO(Joined(r));
    CHECK(r.exit_code == kExitConfig);
    CHECK(r.err.find("--ship_binaries: " + (s.dir / "alone/gnn-server")) != std::string::npos);
    check_nothing_copied();
  }
  SECTION("bad flags") {
    test::ProcessResult r = test::RunProcess(s.Args(ws, {"--transfer", "ftp"}), 30);
    CHECK(r.exit_code == kExitConfig);
    CHECK(r.err.find("--transfer") != std::string::npos);
    r = test::RunProcess(s.Args(ws, {"--rel_data_path", "/abs"}), 30);
    CHECK(r.exit_code == kExitConfig);
    CHECK(r.err.find("--rel_data_path") != std::string::npos);
    check_nothing_copied();
  }
}

TEST_CASE("gnn-copy: over a real sshd with rsync and scp, binaries shipped, re-runs copy nothing",
          "[e2e][ssh]") {
  std::string why;
  std::unique_ptr<test::SshServer> sshd = test::SshServer::Start(&why, "127.0.0.1");
  if (!sshd) GNN_SKIP(why);
  Setup s;
  const std::string json_text = test::ReadFileOrEmpty(s.config);
  // The cluster secret rides along: it must land owner-only over rsync and scp too.
  const std::vector<std::string> ssh = {"--force_ssh",
                                        "--ssh_config",
                                        sshd->client_config(),
                                        "--ssh_port",
                                        std::to_string(sshd->port()),
                                        "--secret_file",
                                        s.dir / "cluster.secret"};
  auto args = [&](const std::string& ws, std::vector<std::string> extra) {
    extra.insert(extra.end(), ssh.begin(), ssh.end());
    return s.Args(ws, extra);
  };

  for (const std::string transfer : {"rsync", "scp"}) {
    INFO("--transfer " << transfer);
    const std::string ws = s.dir / (transfer + "/m{machine}");
    test::ProcessResult r = test::RunProcess(args(ws, {"--transfer", transfer}), 30);
    INFO(Joined(r));
    REQUIRE(r.exit_code == 0);
    CHECK(MachineLine(r.out, 1).find("via " + transfer) != std::string::npos);
    CHECK(Copied(r.out, 1) > 0);
    for (int m = 0; m < 2; ++m) {
      CheckWorkspace(s.dir / (transfer + "/m" + std::to_string(m)), m, json_text, s.ip, 1);
      const std::string shipped = s.dir / (transfer + "/m" + std::to_string(m) + "/cluster.secret");
      struct stat st {};
      REQUIRE(::stat(shipped.c_str(), &st) == 0);
      CHECK((st.st_mode & 0777) == 0600);
      CHECK(test::ReadFileOrEmpty(shipped) == test::ReadFileOrEmpty(s.dir / "cluster.secret"));
    }

    r = test::RunProcess(args(ws, {"--transfer", transfer}), 30);
    REQUIRE(r.exit_code == 0);
    CHECK(Copied(r.out, 0) == 0);
    CHECK(Copied(r.out, 1) == 0);

    // A corrupt remote file is found by the remote sha256sum and replaced.
    Corrupt(s.dir / (transfer + "/m0/data/part0/indices.npy"));
    r = test::RunProcess(args(ws, {"--transfer", transfer}), 30);
    REQUIRE(r.exit_code == 0);
    CHECK(Copied(r.out, 0) == 1);
    CHECK(Copied(r.out, 1) == 0);
    CheckWorkspace(s.dir / (transfer + "/m0"), 0, json_text, s.ip, 1);
  }

  // --ship_binaries into the remote home ("~/"): runnable executables in
  // WORKSPACE/bin.
  const std::string home_rel = "gnn-copy-test-" + std::to_string(::getpid());
  const char* home = std::getenv("HOME");
  REQUIRE(home != nullptr);
  struct Cleanup {
    std::string path;
    ~Cleanup() { fs::remove_all(path); }
  } cleanup{std::string(home) + "/" + home_rel};
  test::ProcessResult r =
      test::RunProcess(args("~/" + home_rel + "/m{machine}", {"--ship_binaries"}), 30);
  INFO(Joined(r));
  REQUIRE(r.exit_code == 0);
  CHECK(MachineLine(r.out, 0).find("via rsync") != std::string::npos);  // --transfer auto
  for (int m = 0; m < 2; ++m) {
    const std::string ws = cleanup.path + "/m" + std::to_string(m);
    CHECK(test::ReadFileOrEmpty(ws + "/data/synthetic-tiny.json") == json_text);
    for (const auto& name : kShippedBinaries) {
      INFO(name);
      CHECK(Sha256File(ws + "/bin/" + name) == Sha256File(test::Bin(name)));
      test::ProcessResult help = test::RunProcess({ws + "/bin/" + name, "--help"}, 20);
      CHECK(help.exit_code == 0);
    }
  }
  r = test::RunProcess(args("~/" + home_rel + "/m{machine}", {"--ship_binaries"}), 30);
  REQUIRE(r.exit_code == 0);
  CHECK(Copied(r.out, 0) == 0);
  CHECK(Copied(r.out, 1) == 0);
}

TEST_CASE("gnn-copy: SIGINT stops it at once, its ssh calls with it", "[e2e]") {
  Setup s;
  SilentListener silent;
  const std::string port = std::to_string(silent.port);
  test::ChildProcess copy(
      s.Args(s.dir / "ws/m{machine}", {"--force_ssh", "--ssh_port", port, "--timeout_s", "60"}),
      s.dir / "copy");
  // Wait until both machines' ssh calls hang on the silent port.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (SshProcessesTo(port).size() < 2 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(SshProcessesTo(port).size() == 2);
  const auto start = Clock::now();
  copy.Signal(SIGINT);
  std::optional<int> code = copy.Wait(std::chrono::seconds(5));
  INFO(copy.Describe());
  REQUIRE(code.has_value());
  CHECK(*code == 128 + SIGINT);
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 2);
  CHECK(copy.Stderr().find("interrupted") != std::string::npos);
  CHECK(SshProcessesTo(port).empty());
  CHECK_FALSE(fs::exists(s.dir / "ws"));
}
