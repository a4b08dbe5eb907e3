// gnn-launch end to end on loopback: a whole job (2 machines, servers,
// trainers, samplers) to its JSON summary; failures, signals and bad input
// that end it with nothing left behind.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/launcher.h"
#include "cluster/preflight.h"
#include "cluster/slurm.h"
#include "cluster_util.h"
#include "common/error.h"
#include "common/sha256.h"
#include "launch_util.h"
#include "net/ip_config.h"
#include "partition/config.h"
#include "process_util.h"
#include "server/server.h"
#include "ssh_util.h"
#include "store/shm_partition.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::ChildProcess;
using test::JobProcesses;
using test::LastLine;
using test::PerNodeArgs;
using test::Setup;
using test::WithFlag;

namespace {

using Clock = std::chrono::steady_clock;

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("gnn-launch runs 2 machines on loopback to a JSON summary and leaves nothing behind",
          "[e2e]") {
  Setup s("ok");
  ChildProcess launcher(s.Args(s.Train("--num_epochs 2")), s.dir / "launcher");
  auto code = launcher.Wait(std::chrono::seconds(120));
  REQUIRE(code.has_value());
  INFO(launcher.Stderr());
  REQUIRE(*code == 0);
  json summary = json::parse(LastLine(launcher.Stdout()));
  CHECK(summary.contains("test_acc"));
  CHECK(summary.contains("wall_time_s"));
  CHECK(summary["wall_time_s"].get<double>() > 0);
  // The machines' hot-row caches (--cache_mb -1 by default) held some of
  // the other partition's rows the batches read.
  CHECK(summary["cache_hit_rate"].get<double>() > 0);
  CHECK(summary["cache_hit_rate"].get<double>() <= 1);
  CHECK(launcher.Stderr().find("hot-row cache") != std::string::npos);
  const std::string logs = s.dir / ("logs/" + s.job);
  for (const char* f : {"server-0-0.log", "server-1-0.log", "trainer-0-0.log", "trainer-1-0.log"}) {
    INFO(f);
    CHECK(access((logs + "/" + f).c_str(), F_OK) == 0);
  }
  CHECK(!test::ReadFileOrEmpty(logs + "/trainer-0-0.log").empty());
  const std::string err = launcher.Stderr();
  CHECK(err.find("[0 server 0] ") != std::string::npos);
  CHECK(err.find("[1 server 0] ") != std::string::npos);
  CHECK(err.find("[0 trainer 0] ") != std::string::npos);
  CHECK(err.find("[1 trainer 0] ") != std::string::npos);
  // One prefix per line, and DGL's training line exactly: machine 1's
  // trainer is rank 1.
  CHECK(err.find("[1 trainer 0] Part 1, Epoch Time(s): ") != std::string::npos);
  CHECK(err.find("] [trainer") == std::string::npos);
  CHECK(err.find("] [server") == std::string::npos);
  // The launcher stopped its servers: none says its launcher is gone.
  CHECK(err.find("launcher gone") == std::string::npos);
  s.RequireNothingLeft(launcher.pid());
}

TEST_CASE("gnn-launch stops the job and names the trainer that fails", "[e2e]") {
  Setup s("fail");
  // Flags that check out (gnn-launch checks them first) and a checkpoint
  // rank 0 cannot read: trainer 0 fails after the job started.
  std::filesystem::create_directories(s.dir / "ck");
  std::ofstream(s.dir / "ck/checkpoint.pt") << "not a checkpoint";
  auto t0 = Clock::now();
  ChildProcess launcher(s.Args(s.Train("--num_epochs 2 --checkpoint_dir ck --resume")),
                        s.dir / "launcher");
  auto code = launcher.Wait(std::chrono::seconds(30));
  REQUIRE(code.has_value());
  CHECK(Clock::now() - t0 < std::chrono::seconds(15));
  INFO(launcher.Stderr());
  CHECK(*code != 0);
  CHECK(launcher.Stderr().find("trainer 0] (pid") != std::string::npos);
  CHECK(launcher.Stderr().find("exited with status") != std::string::npos);
  s.RequireNothingLeft(launcher.pid());
}

TEST_CASE("SIGINT to gnn-launch stops the job with exit 130", "[e2e]") {
  Setup s("sigint");
  ChildProcess launcher(s.Args(s.Train("--num_epochs 100000")), s.dir / "launcher");
  s.WaitTraining(launcher);
  launcher.Signal(SIGINT);
  auto code = launcher.Wait(std::chrono::seconds(15));
  REQUIRE(code.has_value());
  INFO(launcher.Stderr());
  CHECK(*code == 130);
  s.RequireNothingLeft(launcher.pid());
}

namespace {

// kill -9 `victim` of a running job: the launcher ends it within 15 s with
// a report line naming `named`, and nothing is left behind.
void KillAndExpectTeardown(const Setup& s, ChildProcess& launcher, pid_t victim,
                           const std::string& named) {
  s.WaitTraining(launcher);
  REQUIRE(kill(victim, SIGKILL) == 0);
  auto t0 = Clock::now();
  auto code = launcher.Wait(std::chrono::seconds(30));
  REQUIRE(code.has_value());
  CHECK(Clock::now() - t0 < std::chrono::seconds(15));
  INFO(launcher.Stderr());
  CHECK(*code != 0);
  // The report line of the launcher, not a streamed "[m role r]" line.
  const std::string err = launcher.Stderr();
  const size_t report = err.find("gnn-launch: [");
  REQUIRE(report != std::string::npos);
  CHECK(err.find(named, report) != std::string::npos);
  s.RequireNothingLeft(launcher.pid());
}

// Starts a job and kill -9s its first process named `comm` mid-training.
void KillOneAndExpectTeardown(const std::string& tag, const std::string& comm,
                              const std::string& named) {
  Setup s(tag);
  ChildProcess launcher(s.Args(s.Train("--num_epochs 100000")), s.dir / "launcher");
  s.WaitTrainer(launcher);
  std::vector<pid_t> victims;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (victims.empty() && Clock::now() < deadline) {
    victims = JobProcesses(s.job, 0, comm);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(!victims.empty());
  KillAndExpectTeardown(s, launcher, victims[0], named);
}

// A listening socket on 127.0.0.1:`port` (closed by the caller).
int ListenOn(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(listen(fd, 4) == 0);
  return fd;
}

}  // namespace

TEST_CASE("gnn-launch stops everything when a trainer is SIGKILLed mid-training", "[e2e]") {
  KillOneAndExpectTeardown("kill9", "gnn-train", "trainer 0] (pid");
}

TEST_CASE("gnn-launch stops everything when a server is SIGKILLed mid-training", "[e2e]") {
  KillOneAndExpectTeardown("kill9server", "gnn-server", "server 0] (pid");
}

TEST_CASE("gnn-launch stops everything when a sampler is SIGKILLed mid-training", "[e2e]") {
  // The sampler's trainer fails naming it; the launcher names the trainer
  // and shows its last lines.
  KillOneAndExpectTeardown("kill9sampler", "gnn-sampler", "gnn-sampler 0 was killed by signal 9");
}

TEST_CASE("the children of a SIGKILLed gnn-launch are gone within 30 s", "[e2e]") {
  Setup s("sigkill");
  ChildProcess launcher(s.Args(s.Train("--num_epochs 100000")), s.dir / "launcher");
  s.WaitTraining(launcher);
  pid_t pid = launcher.pid();
  launcher.Kill();
  s.RequireNothingLeft(pid, std::chrono::seconds(30));
}

TEST_CASE("gnn-launch reports every problem of bad input, one line each, and starts nothing",
          "[e2e]") {
  Setup s("bad");
  auto errors = [](const test::ProcessResult& r) { return CountOf(r.err, "gnn-launch: error: "); };
  auto started = [&] { return access((s.dir / ("logs/" + s.job)).c_str(), F_OK) == 0; };

  SECTION("malformed ip_config line") {
    std::ofstream(s.dir / "bad_ip.txt") << "127.0.0.1 " << s.ports[0] << "\n127.0.0.1 notaport\n";
    auto r = test::RunProcess(WithFlag(s.Args(s.Train("")), "--ip_config", "bad_ip.txt"), 30);
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(errors(r) == 1);
    CHECK(r.err.find("bad_ip.txt:2") != std::string::npos);
  }
  SECTION("fewer machines than partitions") {
    std::ofstream(s.dir / "ip1.txt") << "127.0.0.1 " << s.ports[0] << "\n";
    auto r = test::RunProcess(WithFlag(s.Args(s.Train("")), "--ip_config", "ip1.txt"), 30);
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(errors(r) == 1);
    CHECK(r.err.find("2 partitions") != std::string::npos);
    CHECK(r.err.find("every partition needs one") != std::string::npos);
  }
  SECTION("missing part config and missing trainer binary: one line each, per machine") {
    auto r = test::RunProcess(
        WithFlag(s.Args("/nonexistent/gnn-train --num_epochs 1"), "--part_config", "no/such.json"),
        30);
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(errors(r) == 3);
    CHECK(r.err.find("no/such.json") != std::string::npos);
    CHECK(r.err.find("/nonexistent/gnn-train") != std::string::npos);
  }
  SECTION("a typo in the trainer's flags is said before any server starts") {
    auto r = test::RunProcess(s.Args(s.Train("--num_epoch 2")), 60);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(errors(r) == 1);
    CHECK(r.err.find("trainer command") != std::string::npos);
    CHECK(r.err.find("unknown flag --num_epoch (did you mean --num_epochs?)") != std::string::npos);
  }
  SECTION("a machine's partition folder missing, another's file truncated: one line each") {
    const std::string folder = (std::filesystem::path(s.config).parent_path() / "part1").string();
    std::filesystem::rename(folder, folder + ".gone");
    const std::string feat =
        (std::filesystem::path(s.config).parent_path() / "part0" / "feat.npy").string();
    const auto size = std::filesystem::file_size(feat);
    std::filesystem::resize_file(feat, size - 100);
    auto r = test::RunProcess(s.Args(s.Train("")), 60);
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(errors(r) == 2);
    CHECK(r.err.find("partition 1: cannot open folder " + folder + ": No such file or directory") !=
          std::string::npos);
    CHECK(r.err.find("feat.npy has " + std::to_string(size - 100) + " bytes, not " +
                     std::to_string(size)) != std::string::npos);
  }
  SECTION("busy server port, named with its holder") {
    int fd = ListenOn(s.ports[1]);
    auto r = test::RunProcess(s.Args(s.Train("")), 30);
    close(fd);
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(errors(r) == 1);
    CHECK(r.err.find("port " + std::to_string(s.ports[1])) != std::string::npos);
    CHECK(r.err.find("pid " + std::to_string(getpid())) != std::string::npos);
  }
  CHECK(!started());
  CHECK(JobProcesses(s.job).empty());
}

TEST_CASE("gnn-launch reaches remote machines with one quoted ssh command line", "[e2e]") {
  SshOptions ssh;
  ssh.port = 2222;
  ssh.username = "alice";
  ssh.config = "/etc/gnn/ssh_config";
  auto argv = SshArgv(
      ssh, "10.0.0.2",
      RemoteCommand("~/my ws", {"GNN_JOB_ID=j'1", "GNN_MACHINE_ID=1"}, "gnn-train --num_epochs 2"));
  std::vector<std::string> want = {
      "ssh",
      "-F",
      "/etc/gnn/ssh_config",
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=10",
      "-o",
      "Port=2222",
      "-o",
      "ServerAliveInterval=15",
      "-o",
      "ServerAliveCountMax=4",
      "-o",
      "User=alice",
      "10.0.0.2",
      "cd \"$HOME\"/'my ws' && env PATH=\"$PWD/bin:$PATH\" 'GNN_JOB_ID=j'\\''1' 'GNN_MACHINE_ID=1' "
      "gnn-train --num_epochs 2; rc=$?; if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then echo \"(remote "
      "process "
      "killed by signal $((rc - 128)))\" >&2; fi; exit $rc"};
  CHECK(argv == want);
  // A PATH among the variables (--extra_envs) keeps the workspace's bin/ first.
  CHECK(RemoteCommand("ws", {"PATH=/opt/x"}, "gnn-train")
            .rfind("cd 'ws' && env PATH=\"$PWD/bin:$PATH\" PATH=\"$PWD/bin\":'/opt/x' gnn-train;",
                   0) == 0);
  CHECK(MachineWorkspace("/w/m{machine}/x{machine}", 3) == "/w/m3/x3");
  CHECK(IsLocalHost("127.0.0.1"));
  CHECK(IsLocalHost("localhost"));
  CHECK(IsLocalHost("::1"));
  CHECK(!IsLocalHost("10.255.255.254"));
  ssh.force = true;
  CHECK(!RunsLocally(ssh, "127.0.0.1"));
}

namespace {

// gnn-copy over ssh: partition i, the config, the ip_config and the gnn-*
// binaries (--ship_binaries) into machine i's workspace `ws` (may hold
// {machine}); the config's path relative to the workspace.
std::string CopyOverSsh(const Setup& s, const std::string& ip_config, const std::string& ws,
                        const std::vector<std::string>& ssh_flags) {
  std::vector<std::string> args = {
      test::Bin("gnn-copy"), "--ip_config", ip_config,       "--workspace", ws,
      "--rel_data_path",     "tiny",        "--part_config", s.config,      "--ship_binaries",
      "--force_ssh"};
  args.insert(args.end(), ssh_flags.begin(), ssh_flags.end());
  auto r = test::RunProcess(args, 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("copied") != std::string::npos);
  return "tiny/" + std::filesystem::path(s.config).filename().string();
}

std::vector<std::string> SshFlags(const test::SshServer& sshd) {
  return {"--ssh_config", sshd.client_config(), "--ssh_port", std::to_string(sshd.port())};
}

}  // namespace

TEST_CASE("gnn-launch runs every process through a real sshd and stops them all", "[e2e]") {
  std::string why;
  auto sshd = test::SshServer::Start(&why);
  if (!sshd) GNN_SKIP("no sshd here: " << why);
  Setup s("ssh");
  // The "remote" workspaces get everything through gnn-copy over ssh.
  const std::string ws = s.dir / "remote/m{machine}";
  std::vector<std::string> flags = SshFlags(*sshd);
  const std::string config = CopyOverSsh(s, s.dir / s.ip, ws, flags);
  flags.push_back("--force_ssh");
  // Setup::Args with the copied workspace and config.
  auto relocate = [&](std::vector<std::string> a) {
    a = WithFlag(WithFlag(std::move(a), "--workspace", ws), "--part_config", config);
    a.insert(a.end() - 1, {"--log_dir", s.dir / ("logs/" + s.job)});
    return a;
  };

  SECTION("a whole job to its JSON summary") {
    ChildProcess launcher(
        relocate(s.Args("gnn-train --batch_size 100 --num_omp_threads 1 --num_epochs 2", flags)),
        s.dir / "launcher");
    auto code = launcher.Wait(std::chrono::seconds(120));
    REQUIRE(code.has_value());
    INFO(launcher.Stderr());
    REQUIRE(*code == 0);
    json summary = json::parse(LastLine(launcher.Stdout()));
    CHECK(summary.contains("test_acc"));
    CHECK(launcher.Stderr().find("[1 trainer 0] ") != std::string::npos);
    s.RequireNothingLeft(launcher.pid());
  }
  SECTION("kill -9 of a trainer started over ssh ends the job within 15 s") {
    ChildProcess launcher(
        relocate(
            s.Args("gnn-train --batch_size 100 --num_omp_threads 1 --num_epochs 100000", flags)),
        s.dir / "launcher");
    KillAndExpectTeardown(s, launcher, s.WaitTrainer(launcher), "trainer 0] (pid");
  }
  SECTION("a busy port on a machine reached over ssh is named before anything starts") {
    int fd = ListenOn(s.ports[1]);
    auto r = test::RunProcess(relocate(s.Args("gnn-train --num_epochs 1", flags)), 60);
    close(fd);
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("machine 1 (127.0.0.1): port " + std::to_string(s.ports[1]) +
                     " for server 0 is busy") != std::string::npos);
    CHECK(CountOf(r.err, "gnn-launch: error: ") == 1);
  }
  SECTION(
      "a trainer file missing on one machine reached over ssh is named before anything "
      "starts") {
    // A relative --config is read in each machine's workspace, on its own
    // machine: machine 0 has the file, machine 1 does not.
    std::filesystem::copy_file(std::string(GNN_SOURCE_DIR) + "/configs/cora.toml",
                               MachineWorkspace(ws, 0) + "/mine.toml");
    auto r = test::RunProcess(
        relocate(s.Args("gnn-train --num_epochs 1 --config mine.toml", flags)), 120);
    INFO(r.err);
    CHECK((r.exit_code == kExitConfig || r.exit_code == kExitData));
    CHECK(r.err.find("trainer command (gnn-train) on machine 1: ") != std::string::npos);
    CHECK(r.err.find("mine.toml") != std::string::npos);
    CHECK(r.err.find("on machine 0") == std::string::npos);
    CHECK(CountOf(r.err, "gnn-launch: error: ") == 1);
    CHECK(r.err.find("server 0] ") == std::string::npos);  // nothing started
    CHECK(access((s.dir / ("logs/" + s.job)).c_str(), F_OK) != 0);
  }
  SECTION("SIGKILL of the launcher: the remote processes notice and stop within 30 s") {
    ChildProcess launcher(
        relocate(
            s.Args("gnn-train --batch_size 100 --num_omp_threads 1 --num_epochs 100000", flags)),
        s.dir / "launcher");
    s.WaitTraining(launcher);
    pid_t pid = launcher.pid();
    launcher.Kill();
    s.RequireNothingLeft(pid, std::chrono::seconds(30));
  }
}

TEST_CASE("gnn-launch names an unreachable machine before starting anything", "[e2e]") {
  Setup s("unreachable");
  // Nothing listens on this port: ssh is refused at once.
  const int closed = test::FreeLoopbackPortRanges(1, 1)[0];
  auto r = test::RunProcess(
      s.Args(s.Train(""), {"--force_ssh", "--ssh_port", std::to_string(closed)}), 60);
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code == kExitPeer);
  CHECK(r.err.find("machine 0 (127.0.0.1): ssh failed") != std::string::npos);
  CHECK(r.err.find("machine 1 (127.0.0.1): ssh failed") != std::string::npos);
  CHECK(access((s.dir / ("logs/" + s.job)).c_str(), F_OK) != 0);
}

TEST_CASE("gnn-launch runs a job across two network namespaces over ssh", "[e2e]") {
  std::string why;
  auto net = test::NetnsCluster::Create(2, &why);
  if (!net) GNN_SKIP("no network namespaces here: " << why);
  std::vector<std::unique_ptr<test::SshServer>> sshd;
  for (int i = 0; i < 2; ++i) {
    sshd.push_back(test::SshServer::Start(&why, net->address(i), net->name(i)));
    if (!sshd.back()) GNN_SKIP("no sshd in a network namespace: " << why);
  }
  sshd[1]->Authorize(*sshd[0]);
  Setup s("netns");
  // Two machines with their own addresses and workspaces, filled by
  // gnn-copy over ssh: the whole pipeline across "hosts".
  std::ofstream(s.dir / "ip_config.txt") << net->address(0) << " 30050\n"
                                         << net->address(1) << " 30050\n";
  const std::string config =
      CopyOverSsh(s, s.dir / "ip_config.txt", s.dir / "m{machine}", SshFlags(*sshd[0]));
  CHECK(access((s.dir / "m0/tiny/part0/feat.npy").c_str(), F_OK) == 0);
  CHECK(access((s.dir / "m0/tiny/part1").c_str(), F_OK) != 0);  // only its own partition
  CHECK(access((s.dir / "m1/bin/gnn-train").c_str(), X_OK) == 0);
  std::vector<std::string> args = {test::Bin("gnn-launch"),
                                   "--workspace",
                                   s.dir / "m{machine}",
                                   "--num_trainers",
                                   "1",
                                   "--num_samplers",
                                   "1",
                                   "--num_servers",
                                   "2",
                                   "--part_config",
                                   config,
                                   "--ip_config",
                                   "ip_config.txt",
                                   "--job_id",
                                   s.job,
                                   "--grace_s",
                                   "3",
                                   "--log_dir",
                                   s.dir / "logs",
                                   "--ssh_config",
                                   sshd[0]->client_config(),
                                   "--ssh_port",
                                   std::to_string(sshd[0]->port()),
                                   "gnn-train --batch_size 100 --num_omp_threads 1 --num_epochs 2"};
  ChildProcess launcher(args, s.dir / "launcher");
  auto code = launcher.Wait(std::chrono::seconds(180));
  REQUIRE(code.has_value());
  INFO(launcher.Stderr());
  REQUIRE(*code == 0);
  json summary = json::parse(LastLine(launcher.Stdout()));
  CHECK(summary.contains("test_acc"));
  CHECK(launcher.Stderr().find("[1 server 1] ") != std::string::npos);
  CHECK(launcher.Stderr().find("[1 trainer 0] ") != std::string::npos);
  s.RequireNothingLeft(launcher.pid());
}

namespace {

// "job-..." from the launcher's first line ("gnn-launch: job ID, ...").
std::string JobIdOf(const std::string& err) {
  size_t p = err.find("gnn-launch: job ");
  if (p == std::string::npos) return "";
  p += 16;
  return err.substr(p, err.find(',', p) - p);
}

// Waits for a launcher; its exit code (fails the test on a hang).
int Finish(ChildProcess& launcher, int seconds) {
  auto code = launcher.Wait(std::chrono::seconds(seconds));
  INFO(launcher.Stderr());
  REQUIRE(code.has_value());
  return *code;
}

}  // namespace

TEST_CASE(
    "per-node gnn-launch --machine_id started apart (one already waiting) trains Cora like the ssh "
    "launcher",
    "[e2e]") {
  const std::string cora = test::SharedDataset("cora");
  if (cora.empty()) GNN_SKIP("../shared/datasets/cora not found");
  test::TempDir dir;
  const std::string config = test::MakePartitions(dir, cora, 2, "cora");
  const auto ports = test::FreeLoopbackPortRanges(3, 1);
  std::ofstream(dir / "ip_config.txt")
      << "127.0.0.1 " << ports[0] << "\n127.0.0.1 " << ports[1] << "\n";
  const std::string train = test::Bin("gnn-train") + " --num_omp_threads 1 --seed 1 --config " +
                            std::string(GNN_SOURCE_DIR) + "/configs/cora.toml";

  // The reference: one launcher for both machines, reaching them through a
  // real sshd where one can run (else as local children: the same job).
  std::string why;
  auto sshd = test::SshServer::Start(&why);
  std::vector<std::string> via_ssh;
  if (sshd) {
    std::filesystem::create_directories(dir / "bin");
    std::filesystem::create_symlink(test::Bin("gnn-server"), dir / "bin/gnn-server");
    via_ssh = {"--force_ssh", "--ssh_config", sshd->client_config(), "--ssh_port",
               std::to_string(sshd->port())};
  } else {
    WARN("reference run without ssh: " << why);
  }
  ChildProcess one(PerNodeArgs(dir.path(), config, -1, ports[2], train, via_ssh), dir / "one");
  REQUIRE(Finish(one, 300) == 0);
  json ref = json::parse(LastLine(one.Stdout()));

  // Machine 1 first; machine 0 (with the rendezvous) once machine 1 says
  // it is waiting for it (its first note comes after 5 s).
  ChildProcess m1(PerNodeArgs(dir.path(), config, 1, ports[2], train), dir / "m1");
  REQUIRE(test::WaitUntil(
      [&] { return m1.Stderr().find("waiting for machine 0 server 0") != std::string::npos; },
      std::chrono::seconds(60)));
  REQUIRE(m1.Running());
  ChildProcess m0(PerNodeArgs(dir.path(), config, 0, ports[2], train), dir / "m0");
  REQUIRE(Finish(m0, 300) == 0);
  REQUIRE(Finish(m1, 60) == 0);
  CHECK(m1.Stderr().find("waiting for machine 0 server 0") != std::string::npos);
  CHECK(m0.Stderr().find("[0 trainer 0] ") != std::string::npos);
  CHECK(m0.Stderr().find("[1 trainer 0] ") == std::string::npos);  // machine 1's are not ours
  json s0 = json::parse(LastLine(m0.Stdout()));
  WARN("Cora, 2 machines: one (ssh) launcher test_acc " << ref.at("test_acc") << ", per-node "
                                                        << s0.at("test_acc"));
  CHECK(s0.at("test_acc") == ref.at("test_acc"));
  CHECK(s0.at("param_checksum") == ref.at("param_checksum"));
  CHECK(s0.at("test_acc").get<double>() >= 0.75);
  // Both launchers derived the same job id on their own.
  CHECK(JobIdOf(m0.Stderr()) == JobIdOf(m1.Stderr()));
  CHECK(!JobIdOf(m0.Stderr()).empty());
}

TEST_CASE("kill -9 of one node's trainer ends both per-node launchers within 30 s", "[e2e]") {
  Setup s("pernode-kill");
  const std::string train = s.Train("--num_epochs 100000");
  ChildProcess m0(PerNodeArgs(s.dir.path(), s.config, 0, s.ports[2], train, {"--job_id", s.job}),
                  s.dir / "m0");
  ChildProcess m1(PerNodeArgs(s.dir.path(), s.config, 1, s.ports[2], train, {"--job_id", s.job}),
                  s.dir / "m1");
  // Wait until both trainers run, then kill machine 1's.
  std::vector<pid_t> trainers;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    REQUIRE(m0.Running());
    REQUIRE(m1.Running());
    trainers = JobProcesses(s.job, 0, "gnn-train");
    if (trainers.size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(trainers.size() == 2);
  // Mid-training: an epoch has ended on machine 0.
  REQUIRE(test::WaitUntil([&] { return m0.Stderr().find("Epoch Time(s)") != std::string::npos; },
                          std::chrono::seconds(120)));
  pid_t victim = -1;
  for (pid_t t : trainers) {
    std::string env = test::ReadFileOrEmpty("/proc/" + std::to_string(t) + "/environ");
    if (env.find(std::string("GNN_MACHINE_ID=1") + '\0') != std::string::npos) victim = t;
  }
  REQUIRE(victim > 0);
  REQUIRE(kill(victim, SIGKILL) == 0);
  auto t0 = Clock::now();
  CHECK(Finish(m1, 30) != 0);
  CHECK(Finish(m0, 30) != 0);
  CHECK(Clock::now() - t0 < std::chrono::seconds(30));
  CHECK(m1.Stderr().find("[1 trainer 0] (pid") != std::string::npos);
  INFO(m0.Stderr());
  INFO(m1.Stderr());
  CHECK(m0.Stderr().find("machine 1 (127.0.0.1:" + std::to_string(s.ports[1]) +
                         ") stopped answering") != std::string::npos);
  s.RequireNothingLeft(m0.pid());
  s.RequireNothingLeft(m1.pid());
}

TEST_CASE("gnn-launch --slurm takes machine ids and the ip_config from srun's environment",
          "[e2e]") {
  CHECK(ExpandHostList("node[01-03,7],gpu5") ==
        std::vector<std::string>{"node01", "node02", "node03", "node7", "gpu5"});
  CHECK(ExpandHostList("a") == std::vector<std::string>{"a"});
  CHECK(ExpandHostList("r[1-2]n[8-9]") == std::vector<std::string>{"r1n8", "r1n9", "r2n8", "r2n9"});
  CHECK_THROWS_AS(ExpandHostList("node[3-1]"), ConfigError);
  CHECK_THROWS_AS(ExpandHostList("node[1-2"), ConfigError);
  CHECK_THROWS_WITH(ReadSlurm({{"SLURM_NNODES", "2"}, {"SLURM_JOB_NODELIST", "a,b"}}),
                    Catch::Contains("SLURM_NODEID"));
  CHECK_THROWS_WITH(
      ReadSlurm({{"SLURM_NODEID", "0"}, {"SLURM_NNODES", "3"}, {"SLURM_JOB_NODELIST", "a,b"}}),
      Catch::Contains("names 2 hosts but SLURM_NNODES is 3"));

  // Two "nodes" of a fake allocation: 127.0.0.1 and 127.0.0.2 (both this host).
  Setup s("slurm");
  const int port = s.ports[0];
  auto node = [&](int id) {
    std::vector<std::string> env = {"SLURM_NODEID=" + std::to_string(id),
                                    "SLURM_PROCID=" + std::to_string(id), "SLURM_NNODES=2",
                                    "SLURM_JOB_NODELIST=127.0.0.[1-2]",
                                    "SLURM_JOB_ID=77" + std::to_string(getpid())};
    std::vector<std::string> args = {test::Bin("gnn-launch"),
                                     "--slurm",
                                     "--secret_file",
                                     test::TestSecretFile(),
                                     "--slurm_port",
                                     std::to_string(port),
                                     "--workspace",
                                     s.dir.path(),
                                     "--num_samplers",
                                     "1",
                                     "--part_config",
                                     s.config,
                                     "--ip_config",
                                     "slurm_ip.txt",
                                     "--master_port",
                                     std::to_string(s.ports[2]),
                                     "--log_dir",
                                     s.dir / ("slurm-logs-" + std::to_string(id)),
                                     s.Train("--num_epochs 2")};
    return std::make_unique<ChildProcess>(args, s.dir / ("slurm" + std::to_string(id)), env);
  };
  auto n1 = node(1);
  auto n0 = node(0);
  CHECK(Finish(*n0, 120) == 0);
  CHECK(Finish(*n1, 60) == 0);
  const std::string ip = test::ReadFileOrEmpty(s.dir / "slurm_ip.txt");
  INFO(ip);
  auto machines = ParseIpConfig(ip, "slurm_ip.txt");
  REQUIRE(machines.size() == 2);
  CHECK(machines[0].host == "127.0.0.1");
  CHECK(machines[1].host == "127.0.0.2");
  CHECK(machines[0].port == port);
  CHECK(n0->Stderr().find("gnn-launch: job slurm-77") != std::string::npos);
  CHECK(n1->Stderr().find("[1 trainer 0] ") != std::string::npos);
  CHECK(json::parse(LastLine(n0->Stdout())).contains("test_acc"));
}

TEST_CASE("per-node gnn-launch in two network namespaces forms one job without ssh", "[e2e]") {
  std::string why;
  auto net = test::NetnsCluster::Create(2, &why);
  if (!net) GNN_SKIP("no network namespaces here: " << why);
  Setup s("pernode-netns");
  std::ofstream(s.dir / "ns_ip.txt") << net->address(0) << " 30050\n"
                                     << net->address(1) << " 30050\n";
  const std::string ip = FindOnPath("ip").empty() ? "/usr/sbin/ip" : FindOnPath("ip");
  std::vector<std::unique_ptr<ChildProcess>> nodes;
  for (int m = 1; m >= 0; --m) {
    std::vector<std::string> args = {ip, "netns", "exec", net->name(m)};
    for (const auto& a : WithFlag(PerNodeArgs(s.dir.path(), s.config, m, 29500,
                                              s.Train("--num_epochs 2"), {"--job_id", s.job}),
                                  "--ip_config", "ns_ip.txt")) {
      args.push_back(a);
    }
    nodes.push_back(std::make_unique<ChildProcess>(args, s.dir / ("ns" + std::to_string(m))));
  }
  for (auto& n : nodes) CHECK(Finish(*n, 180) == 0);
  json summary = json::parse(LastLine(nodes[1]->Stdout()));  // machine 0's launcher
  CHECK(summary.contains("test_acc"));
  CHECK(nodes[0]->Stderr().find("[1 trainer 0] ") != std::string::npos);
  s.RequireNothingLeft(nodes[0]->pid());
}

TEST_CASE("a gnn-server whose launcher is gone (stdin EOF) stops cleanly and frees its memory",
          "[e2e]") {
  Setup s("stdin-eof");
  // stdin is an empty pipe that is closed at once, as when the launcher
  // (or the ssh connection to it) dies.
  auto t0 = Clock::now();
  CommandResult r =
      RunCommand({"/usr/bin/env", "GNN_WATCH_STDIN=1", test::Bin("gnn-server"), "--ip_config",
                  s.dir / s.ip, "--part_config", s.config, "--machine_id", "0", "--job_id", s.job},
                 60, "");
  INFO(r.err);
  CHECK(!r.timed_out);
  CHECK(Clock::now() - t0 < std::chrono::seconds(15));
  CHECK(r.err.find("gnn-server: launcher gone (stdin closed), stopping") != std::string::npos);
  CHECK(r.err.find("stopped") != std::string::npos);
  CHECK(s.ShmLeft().empty());
}

TEST_CASE("gnn-launch runs the unsupervised job (--task link) to its JSON summary", "[e2e]") {
  Setup s("link");
  ChildProcess launcher(s.Args(s.Train("--task link --num_epochs 1 --num_hidden 16")),
                        s.dir / "launcher");
  REQUIRE(Finish(launcher, 180) == 0);
  json summary = json::parse(LastLine(launcher.Stdout()));
  CHECK(summary.at("task") == "link");
  CHECK(summary.contains("embedding_lr_test_acc"));
  CHECK(summary.at("edges_per_s").get<double>() > 0);
  CHECK(summary.contains("wall_time_s"));
  s.RequireNothingLeft(launcher.pid());
}

TEST_CASE(
    "two jobs started together with one --master_port: one runs, the other is refused "
    "before anything starts",
    "[e2e]") {
  Setup a("port-a"), b("port-b");
  const std::string train = "--num_epochs 1";
  ChildProcess la(a.Args(a.Train(train)), a.dir / "launcher");
  ChildProcess lb(WithFlag(b.Args(b.Train(train)), "--master_port", std::to_string(a.ports[2])),
                  b.dir / "launcher");
  const int ca = Finish(la, 180), cb = Finish(lb, 180);
  INFO("a: " << la.Stderr() << "\nb: " << lb.Stderr());
  REQUIRE(((ca == 0) != (cb == 0)));
  ChildProcess& refused = ca == 0 ? lb : la;
  const Setup& idle = ca == 0 ? b : a;
  CHECK((ca == 0 ? cb : ca) == kExitConfig);
  const std::string err = refused.Stderr();
  CHECK(err.find("master port " + std::to_string(a.ports[2]) +
                 " on this host is held by another gnn-launch (pid ") != std::string::npos);
  CHECK(CountOf(err, "gnn-launch: error: ") == 1);
  CHECK(err.find("server 0] ") == std::string::npos);  // nothing started
  CHECK(access((idle.dir / ("logs/" + idle.job)).c_str(), F_OK) != 0);
  a.RequireNothingLeft(la.pid());
  b.RequireNothingLeft(lb.pid());

  // Once the job has ended, the port is free again for the next one.
  auto again = test::RunProcess(
      WithFlag(idle.Args(idle.Train(train)), "--master_port", std::to_string(a.ports[2])), 180);
  INFO(again.err);
  CHECK(again.exit_code == 0);
}
