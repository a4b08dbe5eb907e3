// Automatic recovery (gnn-launch --max_restarts): a job whose trainer,
// server or sampler is SIGKILLed mid-epoch starts again from rank 0's
// newest checkpoint and ends with the same model as an uninterrupted run;
// a configuration error is not restarted; the restart budget holds.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "common/sha256.h"
#include "launch_util.h"
#include "process_util.h"
#include "server/server.h"
#include "ssh_util.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"
#include "test_util.h"

using namespace gnn;
using nlohmann::json;
using test::ChildProcess;
using test::JobProcesses;
using test::LastLine;
using test::Setup;

namespace {

using Clock = std::chrono::steady_clock;

// 150 epochs (300 steps) of synthetic:tiny on 2 machines, one evaluation at the end,
// a checkpoint every 3 steps into `ck` (in machine 0's workspace).
std::string Command(const Setup& s, const std::string& ck) {
  return s.Train("--num_epochs 150 --eval_every 150 --seed 3 --checkpoint_dir " + ck +
                 " --checkpoint_every 3");
}

std::vector<std::string> Args(const Setup& s, const std::string& ck, const std::string& run,
                              int max_restarts) {
  return test::WithFlag(s.Args(Command(s, ck), {"--max_restarts", std::to_string(max_restarts),
                                                "--restart_backoff_s", "0.5"}),
                        "--job_id", s.job + "-" + run);
}

json Summary(ChildProcess& launcher) {
  auto code = launcher.Wait(std::chrono::seconds(180));
  REQUIRE(code.has_value());
  INFO(launcher.Stderr());
  REQUIRE(*code == 0);
  return json::parse(LastLine(launcher.Stdout()));
}

// Waits for rank 0's first checkpoint of the run, then a little more, and
// kill -9s the first process named `comm` of job `job`.
void KillMidTraining(const Setup& s, ChildProcess& launcher, const std::string& ck,
                     const std::string& job, const std::string& comm) {
  INFO(launcher.Stderr());
  REQUIRE(test::WaitUntil(
      [&] {
        return !launcher.Running() || access((s.dir / (ck + "/checkpoint.pt")).c_str(), F_OK) == 0;
      },
      std::chrono::seconds(120)));
  REQUIRE(launcher.Running());
  // Mid-run: a checkpoint written after the first one.
  REQUIRE(test::WaitForRewrites(s.dir / (ck + "/checkpoint.pt"), 1, std::chrono::seconds(120),
                                [&] { return launcher.Running(); }));
  std::vector<pid_t> victims = JobProcesses(job, 0, comm);
  REQUIRE(!victims.empty());
  REQUIRE(kill(victims[0], SIGKILL) == 0);
}

}  // namespace

TEST_CASE(
    "a job whose trainer, server or sampler dies mid-epoch restarts and ends with the "
    "uninterrupted run's model",
    "[e2e]") {
  Setup s("recover");
  ChildProcess straight(Args(s, "ck-straight", "straight", 0), s.dir / "straight");
  const json want = Summary(straight);
  CHECK(want.at("restarts") == 0);
  CHECK(want.at("steps_replayed") == 0);

  for (const std::string comm : {"gnn-train", "gnn-server", "gnn-sampler"}) {
    DYNAMIC_SECTION(comm << " killed") {
      const std::string ck = "ck-" + comm;
      const std::string job = s.job + "-" + comm;
      ChildProcess launcher(Args(s, ck, comm, 2), s.dir / comm);
      KillMidTraining(s, launcher, ck, job, comm);
      const json got = Summary(launcher);
      const std::string err = launcher.Stderr();
      INFO(err);
      CHECK(got.at("restarts") == 1);
      CHECK(got.at("param_checksum") == want.at("param_checksum"));
      CHECK(got.at("final_test_acc") == want.at("final_test_acc"));
      CHECK(got.at("steps") == want.at("steps"));
      CHECK(got.at("epochs_run").get<int>() < want.at("epochs_run").get<int>() + 1);
      CHECK(got.at("steps_replayed").get<int>() >= 0);
      REQUIRE(got.at("recovery_s").size() == 1);
      CHECK(got.at("recovery_s")[0].get<double>() > 0.5);  // at least the backoff
      // One restart line naming the cause and the checkpoint used.
      const size_t line = err.find("gnn-launch: restart 1 of 2 in 0.5 s: ");
      REQUIRE(line != std::string::npos);
      const std::string restart = err.substr(line, err.find('\n', line) - line);
      CHECK(restart.find(comm == "gnn-sampler" ? "gnn-sampler 0 was killed by signal 9"
                                               : "was killed by signal 9") != std::string::npos);
      CHECK(restart.find("resuming from " + (s.dir / (ck + "/checkpoint.pt"))) !=
            std::string::npos);
      CHECK(restart.find("steps to replay") != std::string::npos);
      // Run 1 logs in its own folder.
      CHECK(!test::ReadFileOrEmpty(s.dir / ("logs/" + job + "/restart-1/trainer-0-0.log")).empty());
      s.RequireNothingLeft(launcher.pid(), std::chrono::seconds(5), 2);
    }
  }
}

TEST_CASE("gnn-launch does not restart a job whose trainer has a configuration error", "[e2e]") {
  Setup s("norestart");
  // A checkpoint rank 0 cannot read: a data error after the job started
  // (flag errors never start it: gnn-launch checks the flags first).
  std::filesystem::create_directories(s.dir / "ck");
  std::ofstream(s.dir / "ck/checkpoint.pt") << "not a checkpoint";
  ChildProcess launcher(s.Args(s.Train("--num_epochs 2 --checkpoint_dir ck --resume"),
                               {"--max_restarts", "3", "--restart_backoff_s", "0"}),
                        s.dir / "launcher");
  auto code = launcher.Wait(std::chrono::seconds(60));
  REQUIRE(code.has_value());
  const std::string err = launcher.Stderr();
  INFO(err);
  CHECK(*code != 0);
  CHECK(err.find("not restarting: a configuration or data error would recur") != std::string::npos);
  CHECK(err.find("gnn-launch: restart 1") == std::string::npos);
  s.RequireNothingLeft(launcher.pid());
}

TEST_CASE("gnn-launch gives up after --max_restarts restarts and leaves nothing behind", "[e2e]") {
  Setup s("budget");
  ChildProcess launcher(
      test::WithFlag(s.Args(Command(s, "ck"), {"--max_restarts", "1", "--restart_backoff_s", "0"}),
                     "--num_samplers", "0"),
      s.dir / "launcher");
  // Run 0: kill a trainer once it checkpointed; run 1: kill one again.
  KillMidTraining(s, launcher, "ck", s.job, "gnn-train");
  INFO(launcher.Stderr());
  REQUIRE(test::WaitUntil(
      [&] {
        return !launcher.Running() || (!JobProcesses(s.job + "-r1", 0, "gnn-train").empty() &&
                                       launcher.Stderr().find("[0 trainer 0] ") !=
                                           launcher.Stderr().rfind("gnn-launch: restart 1"));
      },
      std::chrono::seconds(60)));
  REQUIRE(launcher.Running());
  // The restarted run trains on: its next checkpoint.
  REQUIRE(test::WaitForRewrites(s.dir / "ck/checkpoint.pt", 1, std::chrono::seconds(120),
                                [&] { return launcher.Running(); }));
  std::vector<pid_t> victims = JobProcesses(s.job + "-r1", 0, "gnn-train");
  REQUIRE(!victims.empty());
  REQUIRE(kill(victims[0], SIGKILL) == 0);
  auto code = launcher.Wait(std::chrono::seconds(60));
  REQUIRE(code.has_value());
  CHECK(*code == kExitPeer);  // the last run's cause: a trainer killed by a signal
  const std::string err = launcher.Stderr();
  CHECK(err.find("gnn-launch: restart 1 of 1") != std::string::npos);
  CHECK(err.find("gnn-launch: restart 2") == std::string::npos);
  s.RequireNothingLeft(launcher.pid(), std::chrono::seconds(5), 2);
}

TEST_CASE("per-node launchers restart together after one node's trainer dies, to the same model",
          "[e2e]") {
  Setup s("pernode-recover");
  ChildProcess straight(Args(s, "ck-straight", "straight", 0), s.dir / "straight");
  const json want = Summary(straight);

  const std::vector<std::string> extra = {
      "--job_id", s.job, "--max_restarts", "2", "--restart_backoff_s", "0.5"};
  const std::string train = Command(s, "ck");
  ChildProcess m0(test::PerNodeArgs(s.dir.path(), s.config, 0, s.ports[2], train, extra),
                  s.dir / "m0");
  ChildProcess m1(test::PerNodeArgs(s.dir.path(), s.config, 1, s.ports[2], train, extra),
                  s.dir / "m1");
  // Machine 1's trainer dies once rank 0 (machine 0) has checkpointed.
  INFO(m0.Stderr());
  INFO(m1.Stderr());
  REQUIRE(test::WaitUntil(
      [&] {
        return !m0.Running() || !m1.Running() ||
               access((s.dir / "ck/checkpoint.pt").c_str(), F_OK) == 0;
      },
      std::chrono::seconds(120)));
  REQUIRE(test::WaitForRewrites(s.dir / "ck/checkpoint.pt", 1, std::chrono::seconds(120),
                                [&] { return m0.Running() && m1.Running(); }));
  pid_t victim = -1;
  for (pid_t t : JobProcesses(s.job, 0, "gnn-train")) {
    std::string env = test::ReadFileOrEmpty("/proc/" + std::to_string(t) + "/environ");
    if (env.find(std::string("GNN_MACHINE_ID=1") + '\0') != std::string::npos) victim = t;
  }
  REQUIRE(victim > 0);
  REQUIRE(kill(victim, SIGKILL) == 0);
  const json got0 = Summary(m0);
  const json got1 = Summary(m1);
  CHECK(got0.at("restarts") == 1);
  CHECK(got1.at("restarts") == 1);
  CHECK(got0.at("param_checksum") == want.at("param_checksum"));
  CHECK(got0.at("steps") == want.at("steps"));
  CHECK(m1.Stderr().find("gnn-launch: restart 1 of 2 in 0.5 s: [1 trainer 0] was killed by "
                         "signal 9; rank 0 resumes from the newest checkpoint on machine 0") !=
        std::string::npos);
  CHECK(m0.Stderr().find("gnn-launch: restart 1 of 2") != std::string::npos);
  s.RequireNothingLeft(m0.pid(), std::chrono::seconds(5), 2);
  s.RequireNothingLeft(m1.pid(), std::chrono::seconds(5), 2);
}

TEST_CASE("more machines than partitions: machine m serves partition m mod P and trains its share",
          "[e2e]") {
  Setup s("spare");
  const std::vector<int> ports = test::FreeLoopbackPortRanges(1, 1);
  std::ofstream(s.dir / "ip3.txt") << "127.0.0.1 " << s.ports[0] << "\n127.0.0.1 " << s.ports[1]
                                   << "\n127.0.0.1 " << ports[0] << "\n";
  ChildProcess launcher(test::WithFlag(s.Args(s.Train("--num_epochs 30 --eval_every 30 --seed 3")),
                                       "--ip_config", "ip3.txt"),
                        s.dir / "launcher");
  const json got = Summary(launcher);
  const std::string err = launcher.Stderr();
  INFO(err);
  CHECK(got.at("num_trainers") == 3);
  CHECK(got.at("test_acc").get<double>() > 0.45);  // 2 machines: 0.54
  CHECK(err.find("machine 2 server 0 serving partition 0") != std::string::npos);
  CHECK(err.find("machine 1 server 0 serving partition 1") != std::string::npos);
  // The training nodes are split over all three trainers, none twice.
  int64_t shares = 0;
  for (const std::string rank : {"Part 0: ", "Part 1: ", "Part 2: "}) {
    const size_t at = err.find(rank);
    REQUIRE(at != std::string::npos);
    shares += std::stoll(err.substr(at + rank.size()));
  }
  CHECK(shares == 400);
  s.RequireNothingLeft(launcher.pid());
}

namespace {

// Three "hosts" on loopback (127.0.0.1-3, 2 partitions: machines 0 and 2
// hold partition 0, machine 1 partition 1), all reached through one real
// sshd; machine `lost` goes for good mid-training: ssh can no longer reach
// it (ProxyCommand false) and every process of it dies. Returns the
// launcher's stderr after checking the job finished on the 2 others.
std::string LoseMachine(const test::SshServer& sshd, int lost, bool part_source,
                        const std::string& tag) {
  Setup s(tag);
  const int third = test::FreeLoopbackPortRanges(1, 1)[0];
  std::ofstream(s.dir / "ip3.txt") << "127.0.0.1 " << s.ports[0] << "\n127.0.0.2 " << s.ports[1]
                                   << "\n127.0.0.3 " << third << "\n";
  const std::string lost_host = "127.0.0." + std::to_string(lost + 1);
  const std::string client = test::ReadFileOrEmpty(sshd.client_config());
  const std::string ssh_config = s.dir / "ssh_config";
  auto write_ssh_config = [&](bool gone) {
    std::ofstream out(ssh_config, std::ios::trunc);
    if (gone) out << "Host " << lost_host << "\n  ProxyCommand false\n";
    out << "Host 127.0.0.2 127.0.0.3\n  HostName 127.0.0.1\n" << client;
  };
  write_ssh_config(false);
  const std::vector<std::string> ssh = {"--ssh_config", ssh_config, "--ssh_port",
                                        std::to_string(sshd.port()), "--force_ssh"};
  const std::string ws = s.dir / "remote/m{machine}";
  std::vector<std::string> copy = {
      test::Bin("gnn-copy"), "--ip_config", s.dir / "ip3.txt", "--workspace", ws,
      "--rel_data_path",     "tiny",        "--part_config",   s.config,      "--ship_binaries"};
  copy.insert(copy.end(), ssh.begin(), ssh.end());
  test::ProcessResult r = test::RunProcess(copy, 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(access((s.dir / "remote/m2/tiny/part1/feat.npy").c_str(), F_OK) != 0);

  std::vector<std::string> extra = {"--max_restarts", "1",           "--restart_backoff_s", "0.5",
                                    "--log_dir",      s.dir / "logs"};
  if (part_source) extra.insert(extra.end(), {"--part_source", s.config});
  std::vector<std::string> args = s.Args(
      "gnn-train --batch_size 100 --num_omp_threads 1 --num_epochs 150 --eval_every 150 --seed 3 "
      "--checkpoint_dir ck --checkpoint_every 3",
      extra);
  args.insert(args.end() - 1, ssh.begin(), ssh.end());
  args = test::WithFlag(test::WithFlag(test::WithFlag(std::move(args), "--workspace", ws),
                                       "--part_config", "tiny/synthetic-tiny.json"),
                        "--ip_config", "ip3.txt");
  ChildProcess launcher(args, s.dir / "launcher");
  INFO(launcher.Stderr());
  REQUIRE(test::WaitUntil(
      [&] {
        return !launcher.Running() ||
               access((s.dir / "remote/m0/ck/checkpoint.pt").c_str(), F_OK) == 0;
      },
      std::chrono::seconds(120)));
  REQUIRE(launcher.Running());
  write_ssh_config(true);
  int killed = 0;
  const std::string machine_env = "GNN_MACHINE_ID=" + std::to_string(lost) + '\0';
  for (pid_t p : JobProcesses(s.job)) {
    std::string env = test::ReadFileOrEmpty("/proc/" + std::to_string(p) + "/environ");
    if (env.find(machine_env) != std::string::npos) killed += kill(p, SIGKILL) == 0;
  }
  REQUIRE(killed >= 2);  // its server and trainer (and sampler)
  const json got = Summary(launcher);
  const std::string err = launcher.Stderr();
  CHECK(got.at("restarts") == 1);
  CHECK(got.at("num_trainers") == 2);
  CHECK(got.at("steps").get<int>() > 0);
  CHECK(err.find("machine " + std::to_string(lost) + " (" + lost_host + ") does not answer") !=
        std::string::npos);
  CHECK(err.find("[1 server 0] machine 1 server 0 serving partition 1") != std::string::npos);
  // The killed server's segment stays on "its" host (here, this one):
  // remove it; every other segment of both runs must be gone.
  // (The killed server's partition, and its machine's hot-row cache.)
  for (const std::string& lost_shm :
       {JobShmName(s.graph_name, Sha256File(s.config), s.job, lost),
        RowCacheName(s.graph_name, Sha256File(s.config), s.job, lost)}) {
    unlink(ShmSegmentPath(lost_shm).c_str());
    unlink(ShmLockPath(lost_shm).c_str());
  }
  s.RequireNothingLeft(launcher.pid(), std::chrono::seconds(10), 2);
  // Machine 2's workspace holds partition 1 only if it was moved there.
  CHECK(access((s.dir / "remote/m2/tiny/part1/feat.npy").c_str(), F_OK) == (lost == 1 ? 0 : -1));
  return err;
}

}  // namespace

TEST_CASE(
    "a machine lost for good: the restart moves its partition to a spare and finishes on "
    "fewer machines",
    "[e2e]") {
  std::string why;
  auto sshd = test::SshServer::Start(&why);
  if (!sshd) GNN_SKIP("no sshd here: " << why);
  const std::string err = LoseMachine(*sshd, 1, true, "failover");
  CHECK(err.find("run 1 on 2 machines: machine 0 = 127.0.0.1 (was 0) partition 0, machine 1 = "
                 "127.0.0.3 (was 2) partition 1") != std::string::npos);
  CHECK(err.find("copied") != std::string::npos);  // gnn-copy's verified copy
}

TEST_CASE("a lost spare needs no --part_source: the machines left hold every partition", "[e2e]") {
  std::string why;
  auto sshd = test::SshServer::Start(&why);
  if (!sshd) GNN_SKIP("no sshd here: " << why);
  const std::string err = LoseMachine(*sshd, 2, false, "lostspare");
  CHECK(err.find("run 1 on 2 machines: machine 0 = 127.0.0.1 (was 0) partition 0, machine 1 = "
                 "127.0.0.2 (was 1) partition 1") != std::string::npos);
}
