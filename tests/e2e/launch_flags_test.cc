// gnn-launch's exit codes (one table with every binary: README "Errors and
// exit codes"), DGL launch.py's flags, --quiet and the ssh connect
// timeout, with the real binaries on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cluster_util.h"
#include "common/error.h"
#include "common/process.h"
#include "launch_util.h"
#include "process_util.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::ChildProcess;
using test::JobProcesses;
using test::LastLine;
using test::Setup;
using test::WithFlag;

namespace {

using Clock = std::chrono::steady_clock;

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A trainer command that runs `script` in a shell (single quotes inside
// are not allowed).
std::string ShellTrainer(const std::string& script) { return "/bin/sh -c '" + script + "'"; }

// The environment of process `pid`, one "NAME=value" a line.
std::string EnvironOf(pid_t pid) {
  std::string env = test::ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/environ");
  for (char& c : env) {
    if (c == '\0') c = '\n';
  }
  return "\n" + env;
}

// A loopback port that accepts TCP connections but never says anything
// (an ssh server that hangs before its banner). Closed on destruction.
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

// gnn-copy of `s`'s partitions to `ws` with `extra` flags.
std::vector<std::string> CopyArgs(const Setup& s, const std::string& ws,
                                  const std::vector<std::string>& extra) {
  std::vector<std::string> a = {
      test::Bin("gnn-copy"), "--ip_config", s.dir / s.ip, "--workspace", ws,
      "--part_config",       s.config};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST_CASE("gnn-launch exits with the class of the process that failed the job", "[e2e]") {
  // Every trainer exits with `code` after the servers are up: the launcher
  // passes 2-6 on and makes anything else 1.
  for (int code :
       std::vector<int>{kExitConfig, kExitData, kExitProtocol, kExitTimeout, kExitPeer, 1, 9}) {
    DYNAMIC_SECTION("trainer exit " << code) {
      Setup s("code" + std::to_string(code));
      const std::string trainer = ShellTrainer(
          "echo \"gnn-train: error: failing on purpose\" >&2; exit " + std::to_string(code));
      auto r = test::RunProcess(s.Args(trainer), 90);
      INFO(r.err);
      CHECK(r.exit_code == (code >= kExitConfig && code <= kExitPeer ? code : kExitError));
      CHECK(r.err.find("trainer 0] (pid") != std::string::npos);
      CHECK(r.err.find("exited with status " + std::to_string(code)) != std::string::npos);
      CHECK(JobProcesses(s.job).empty());
    }
  }
}

TEST_CASE("gnn-launch: a real gnn-train's data error is exit 3, a killed trainer exit 6", "[e2e]") {
  SECTION("an unreadable checkpoint (gnn-train exits 3)") {
    Setup s("code-data");
    std::filesystem::create_directories(s.dir / "ck");
    std::ofstream(s.dir / "ck/checkpoint.pt") << "not a checkpoint";
    auto r = test::RunProcess(s.Args(s.Train("--num_epochs 2 --checkpoint_dir ck --resume")), 90);
    INFO(r.err);
    CHECK(r.exit_code == kExitData);
    CHECK(r.err.find("trainer 0] (pid") != std::string::npos);
  }
  SECTION("a trainer killed by a signal (a process of the job failed)") {
    Setup s("code-kill");
    ChildProcess launcher(s.Args(s.Train("--num_epochs 100000")), s.dir / "launcher");
    const pid_t trainer = s.WaitTrainer(launcher);
    s.WaitTraining(launcher);
    REQUIRE(::kill(trainer, SIGKILL) == 0);
    auto code = launcher.Wait(std::chrono::seconds(30));
    REQUIRE(code.has_value());
    INFO(launcher.Stderr());
    CHECK(*code == kExitPeer);
    s.RequireNothingLeft(launcher.pid());
  }
}

TEST_CASE("gnn-launch checks: each problem's class, the first one's is the exit code", "[e2e]") {
  Setup s("classes");
  auto errors = [](const test::ProcessResult& r) { return CountOf(r.err, "gnn-launch: error: "); };

  SECTION("malformed ip_config: 2") {
    std::ofstream(s.dir / "bad_ip.txt") << "127.0.0.1 notaport\n";
    auto r = test::RunProcess(WithFlag(s.Args(s.Train("")), "--ip_config", "bad_ip.txt"), 60);
    INFO(r.err);
    CHECK(r.exit_code == kExitConfig);
    CHECK(errors(r) == 1);
  }
  SECTION("a partition folder missing: 3, as gnn-copy says for a missing file") {
    const std::string folder = (std::filesystem::path(s.config).parent_path() / "part1").string();
    std::filesystem::rename(folder, folder + ".gone");
    auto r = test::RunProcess(s.Args(s.Train("")), 60);
    INFO(r.err);
    CHECK(r.exit_code == kExitData);
    CHECK(errors(r) == 1);
    auto c = test::RunProcess(CopyArgs(s, s.dir / "copy/m{machine}", {}), 60);
    INFO(c.err);
    CHECK(c.exit_code == kExitData);
  }
  SECTION("ssh refused: 6 from gnn-launch and from gnn-copy") {
    const std::string closed = std::to_string(test::FreeLoopbackPortRanges(1, 1)[0]);
    auto r = test::RunProcess(s.Args(s.Train(""), {"--force_ssh", "--ssh_port", closed}), 60);
    INFO(r.err);
    CHECK(r.exit_code == kExitPeer);
    CHECK(r.err.find("machine 0 (127.0.0.1): ssh failed") != std::string::npos);
    auto c = test::RunProcess(
        CopyArgs(s, s.dir / "copy/m{machine}", {"--force_ssh", "--ssh_port", closed}), 60);
    INFO(c.err);
    CHECK(c.exit_code == kExitPeer);
    CHECK(c.exit_code == r.exit_code);
  }
  SECTION("a typo in the trainer's flags: gnn-train's own 2") {
    auto r = test::RunProcess(s.Args(s.Train("--num_epoch 2")), 60);
    INFO(r.err);
    CHECK(r.exit_code == kExitConfig);
    CHECK(errors(r) == 1);
  }
  CHECK(JobProcesses(s.job).empty());
}

TEST_CASE("gnn-launch: an ip_config it cannot open is one line naming it with errno's words",
          "[e2e]") {
  test::TempDir dir;
  const std::string config = test::MakePartitions(dir, "synthetic:tiny", 1, "data");
  const std::string ws = dir / "ws";
  std::filesystem::create_directories(ws);
  std::string ip;
  std::string why;
  SECTION("missing") {
    ip = dir / "none.txt";
    why = "No such file or directory";
  }
  SECTION("a folder") {
    ip = dir / "data";
    why = "Is a directory";
  }
  auto r = test::RunProcess({test::Bin("gnn-launch"), "--ip_config", ip, "--part_config", config,
                             "--workspace", ws, "--insecure", "true"},
                            60);
  INFO(r.err);
  CHECK(r.exit_code == kExitConfig);
  CHECK(r.err == "gnn-launch: error: ip_config: cannot open " + ip + ": " + why + "\n");
  CHECK(std::filesystem::is_empty(ws));  // no log folder, nothing started
}

TEST_CASE("gnn-launch: a log folder that cannot be made or written is one line, exit 3", "[e2e]") {
  Setup s("logdir");
  std::string dir;
  SECTION("its parent is a file") {
    std::ofstream(s.dir / "afile") << "x";
    dir = s.dir / "afile/logs";
  }
  SECTION("a read-only folder") {
    const std::string ro = s.dir / "ro";
    std::filesystem::create_directories(ro);
    REQUIRE(::chmod(ro.c_str(), 0555) == 0);
    // root writes into any mode-0555 folder; /sys refuses it new folders.
    dir = ::geteuid() == 0 ? "/sys/gnn-launch-test-logs" : ro + "/logs";
  }
  auto r = test::RunProcess(s.Args(s.Train(""), {"--log_dir", dir}), 60);
  ::chmod((s.dir / "ro").c_str(), 0755);
  INFO(r.err);
  CHECK(r.exit_code == kExitData);
  CHECK(CountOf(r.err, "gnn-launch: error: log folder " + dir) == 1);
  CHECK(CountOf(r.err, "error") == 1);
  CHECK(r.err.find("filesystem error") == std::string::npos);
  CHECK(JobProcesses(s.job).empty());
}

TEST_CASE("gnn-launch --quiet prints only the summary and errors, and a normal stop says nothing",
          "[e2e]") {
  Setup s("quiet");
  ChildProcess launcher(s.Args(s.Train("--num_epochs 1"), {"--quiet"}), s.dir / "launcher");
  auto code = launcher.Wait(std::chrono::seconds(120));
  REQUIRE(code.has_value());
  INFO(launcher.Stderr());
  REQUIRE(*code == 0);
  CHECK(json::parse(LastLine(launcher.Stdout())).contains("test_acc"));
  CHECK(launcher.Stderr().empty());
  const std::string logs = s.dir / ("logs/" + s.job);
  CHECK(test::ReadFileOrEmpty(logs + "/trainer-0-0.log").find("Epoch") != std::string::npos);
  // The servers were stopped by their launcher, not left by it.
  for (const char* f : {"server-0-0.log", "server-1-0.log"}) {
    INFO(f);
    const std::string log = test::ReadFileOrEmpty(logs + "/" + f);
    CHECK(log.find("stopped") != std::string::npos);
    CHECK(log.find("launcher gone") == std::string::npos);
  }
  s.RequireNothingLeft(launcher.pid());

  // A failure is still reported.
  auto r = test::RunProcess(s.Args(ShellTrainer("echo broken >&2; exit 3"), {"--quiet"}), 90);
  INFO(r.err);
  CHECK(r.exit_code == kExitData);
  CHECK(r.err.find("trainer 0] (pid") != std::string::npos);
  CHECK(r.err.find("broken") != std::string::npos);
  CHECK(r.err.find("gnn-launch: job") == std::string::npos);
}

TEST_CASE("a gnn-server told to stop by its launcher (stdin) stops without a 'gone' line",
          "[e2e]") {
  Setup s("stdin-stop");
  CommandResult r =
      RunCommand({"/usr/bin/env", "GNN_WATCH_STDIN=1", test::Bin("gnn-server"), "--ip_config",
                  s.dir / s.ip, "--part_config", s.config, "--machine_id", "0", "--job_id", s.job},
                 60, "@gnn stop\n");
  INFO(r.err);
  CHECK(!r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("launcher gone") == std::string::npos);
  CHECK(r.err.find("stopped") != std::string::npos);
  CHECK(s.ShmLeft().empty());
}

TEST_CASE("gnn-launch takes DGL launch.py's flags, and a repeated flag its last value", "[e2e]") {
  Setup s("dgl-flags");
  // The trainers print their environment; the servers live until they end.
  // DGL's spelling of --extra_envs: several words (argparse nargs='+').
  ChildProcess launcher(
      s.Args(ShellTrainer("env; sleep 2"),
             {"--num_omp_threads", "5", "--num_omp_threads", "3", "--num_server_threads", "2",
              "--extra_envs", "TEST_A=1", "TEST_B=x,y,TEST_C=2", "PATH=/opt/gnn-test:/usr/bin:/bin",
              "--keep_alive", "--graph_format", "csc"}),
      s.dir / "launcher");
  std::string server_env;
  CHECK(test::WaitUntil(
      [&] {
        for (pid_t p : JobProcesses(s.job, 0, "gnn-server")) server_env = EnvironOf(p);
        return !server_env.empty() || !launcher.Running();
      },
      std::chrono::seconds(60)));
  auto code = launcher.Wait(std::chrono::seconds(60));
  REQUIRE(code.has_value());
  const std::string err = launcher.Stderr();
  INFO(err);
  REQUIRE(*code == 0);
  for (const char* m : {"0", "1"}) {
    const std::string trainer = std::string("[") + m + " trainer 0] ";
    CHECK(err.find(trainer + "OMP_NUM_THREADS=3\n") != std::string::npos);
    CHECK(err.find(trainer + "GNN_NUM_OMP_THREADS=3\n") != std::string::npos);
    CHECK(err.find(trainer + "TEST_A=1\n") != std::string::npos);
    CHECK(err.find(trainer + "TEST_B=x,y\n") != std::string::npos);
    CHECK(err.find(trainer + "TEST_C=2\n") != std::string::npos);
    // A PATH of the user's keeps the workspace's bin/ first.
    CHECK(err.find(trainer + "PATH=" + s.dir.path() + "/bin:/opt/gnn-test:/usr/bin:/bin\n") !=
          std::string::npos);
    CHECK(err.find("[" + std::string(m) + " server 0] ") != std::string::npos);
  }
  CHECK(server_env.find("\nTEST_A=1\n") != std::string::npos);
  CHECK(server_env.find("\nTEST_C=2\n") != std::string::npos);
  CHECK(server_env.find("\nGNN_NUM_SERVER_THREADS=2\n") != std::string::npos);
  CHECK(err.find("with 2 worker threads") != std::string::npos);
  CHECK(CountOf(err, "gnn-launch: warning: --keep_alive is ignored") == 1);
  CHECK(CountOf(err, "gnn-launch: warning: --graph_format csc is ignored") == 1);
  s.RequireNothingLeft(launcher.pid());
}

TEST_CASE("gnn-train takes --num_omp_threads from gnn-launch's GNN_NUM_OMP_THREADS", "[e2e]") {
  // The variable is read (a bad value is named), the flag on the command wins.
  auto r = test::RunProcess({"/usr/bin/env", "GNN_NUM_OMP_THREADS=many", test::Bin("gnn-train"),
                             "--standalone", "--part_config", "/nonexistent.json"},
                            60);
  INFO(r.err);
  CHECK(r.exit_code == kExitConfig);
  CHECK(r.err.find("GNN_NUM_OMP_THREADS='many' is not an integer (for --num_omp_threads)") !=
        std::string::npos);
  r = test::RunProcess(
      {"/usr/bin/env", "GNN_NUM_OMP_THREADS=many", test::Bin("gnn-train"), "--standalone",
       "--num_omp_threads", "1", "--part_config", "/nonexistent.json"},
      60);
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("GNN_NUM_OMP_THREADS") == std::string::npos);
}

TEST_CASE("gnn-launch --extra_envs: one line for an entry it cannot take, nothing started",
          "[e2e]") {
  Setup s("extra-envs");
  for (const auto& [value, says] : std::vector<std::pair<std::string, std::string>>{
           {"GNN_JOB_ID=x", "--extra_envs: GNN_JOB_ID is gnn-launch's own variable"},
           {"no_value", "--extra_envs: 'no_value' is not NAME=value"},
           {"1A=x", "--extra_envs: '1A=x' is not NAME=value"}}) {
    DYNAMIC_SECTION(value) {
      auto r = test::RunProcess(s.Args(s.Train(""), {"--extra_envs", value}), 60);
      INFO(r.err);
      CHECK(r.exit_code == kExitConfig);
      CHECK(CountOf(r.err, "gnn-launch: error: " + says) == 1);
      CHECK(CountOf(r.err, "\n") == 1);
    }
  }
  CHECK(JobProcesses(s.job).empty());
}

TEST_CASE("gnn-launch and gnn-copy give up on a silent ssh server after --ssh_connect_timeout_s",
          "[e2e]") {
  Setup s("ssh-timeout");
  SilentListener silent;
  const std::string port = std::to_string(silent.port);
  // The last of two values counts: 1 s, not 60.
  const std::vector<std::string> ssh = {"--force_ssh",
                                        "--ssh_port",
                                        port,
                                        "--ssh_connect_timeout_s",
                                        "60",
                                        "--ssh_connect_timeout_s",
                                        "1"};
  SECTION("gnn-launch") {
    const auto start = Clock::now();
    auto r = test::RunProcess(s.Args(s.Train(""), ssh), 60);
    INFO(r.err);
    CHECK(r.exit_code == kExitPeer);
    CHECK(r.err.find("machine 0 (127.0.0.1): ssh failed") != std::string::npos);
    CHECK(Clock::now() - start < std::chrono::seconds(8));
  }
  SECTION("gnn-copy") {
    std::vector<std::string> flags = ssh;
    flags.insert(flags.end(), {"--timeout_s", "60"});
    const auto start = Clock::now();
    auto r = test::RunProcess(CopyArgs(s, s.dir / "copy/m{machine}", flags), 60);
    INFO(r.err);
    CHECK(r.exit_code == kExitPeer);
    CHECK(r.err.find("ssh failed") != std::string::npos);
    CHECK(Clock::now() - start < std::chrono::seconds(8));
  }
  SECTION("a bad value") {
    auto r = test::RunProcess(s.Args(s.Train(""), {"--ssh_connect_timeout_s", "0"}), 60);
    CHECK(r.exit_code == kExitConfig);
    CHECK(r.err.find("--ssh_connect_timeout_s must be > 0") != std::string::npos);
  }
}
