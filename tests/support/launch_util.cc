#include "launch_util.h"

#include <dirent.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <thread>

#include "cluster_util.h"
#include "common/sha256.h"
#include "partition/config.h"
#include "server/server.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"

namespace gnn::test {

using Clock = std::chrono::steady_clock;

std::string LastLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

nlohmann::json RunStandaloneTrainer(std::vector<std::string> args) {
  args.insert(args.begin(), {Bin("gnn-train"), "--standalone", "--quiet"});
  auto r = RunProcess(args, 600);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(LastLine(r.out));
}

std::vector<pid_t> JobProcesses(const std::string& job, pid_t parent, const std::string& comm) {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  const std::string needle = "\nGNN_JOB_ID=" + job;
  while (dirent* e = readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    std::string env = ReadFileOrEmpty(base + "/environ");
    for (char& c : env) {
      if (c == '\0') c = '\n';
    }
    env = "\n" + env + "\n";
    bool match = false;
    for (size_t at = env.find(needle); at != std::string::npos && !match;
         at = env.find(needle, at + 1)) {
      const std::string after = env.substr(at + needle.size(), 2);
      match = after[0] == '\n' || after == "-r";
    }
    std::string stat = ReadFileOrEmpty(base + "/stat");
    size_t rp = stat.rfind(')');
    if (rp != std::string::npos && stat.size() > rp + 2) {
      if (stat[rp + 2] == 'Z') continue;  // zombies are gone, only not yet reaped
      if (parent > 0) {
        int ppid = std::atoi(stat.c_str() + rp + 4);
        if (ppid == parent) match = true;
      }
    }
    if (!match) continue;
    if (!comm.empty()) {
      std::string c = ReadFileOrEmpty(base + "/comm");
      while (!c.empty() && c.back() == '\n') c.pop_back();
      if (c != comm) continue;
    }
    pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

// `args` with the value after `flag` replaced by `value`.
std::vector<std::string> WithFlag(std::vector<std::string> args, const std::string& flag,
                                  const std::string& value) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) args[i + 1] = value;
  }
  return args;
}

namespace {

// gnn-launch with 1 trainer (1 sampler) and 1 server per machine, a 3 s
// grace, `flags` and then `extra`, running `command`.
std::vector<std::string> LaunchArgs(const std::string& ws, const std::string& config,
                                    const std::string& ip, int master,
                                    const std::vector<std::string>& flags,
                                    const std::vector<std::string>& extra,
                                    const std::string& command) {
  std::vector<std::string> a = {Bin("gnn-launch"),
                                "--workspace",
                                ws,
                                "--num_trainers",
                                "1",
                                "--num_samplers",
                                "1",
                                "--num_servers",
                                "1",
                                "--part_config",
                                config,
                                "--ip_config",
                                ip,
                                "--master_port",
                                std::to_string(master),
                                "--grace_s",
                                "3"};
  a.insert(a.end(), flags.begin(), flags.end());
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back(command);
  return a;
}

}  // namespace

std::vector<std::string> PerNodeArgs(const std::string& ws, const std::string& config, int machine,
                                     int master, const std::string& command,
                                     std::vector<std::string> extra) {
  std::vector<std::string> flags = {"--log_dir", ws + "/logs-m" + std::to_string(machine)};
  // Per-node launchers share the cluster secret (as gnn-copy would ship it).
  if (machine >= 0)
    flags.insert(flags.end(),
                 {"--machine_id", std::to_string(machine), "--secret_file", TestSecretFile()});
  return LaunchArgs(ws, config, "ip_config.txt", master, flags, extra, command);
}

Setup::Setup(const std::string& tag) {
  config = MakePartitions(dir, "synthetic:tiny", 2, "tiny");
  graph_name = LoadPartitionConfig(config).graph_name;
  job = "launch-" + tag + "-" + std::to_string(getpid());
  ports = FreeLoopbackPortRanges(3, 1);
  std::ofstream out(dir / ip);
  out << "127.0.0.1 " << ports[0] << "\n127.0.0.1 " << ports[1] << "\n";
}

std::vector<std::string> Setup::Args(const std::string& command,
                                     std::vector<std::string> extra) const {
  return LaunchArgs(dir.path(), config, ip, ports[2], {"--job_id", job}, extra, command);
}

nlohmann::json Setup::Launch(const std::string& flags, const std::string& log) const {
  ChildProcess launcher(Args(Train(flags)), dir / log);
  auto code = launcher.Wait(std::chrono::seconds(240));
  REQUIRE(code.has_value());
  INFO(launcher.Stderr());
  REQUIRE(*code == 0);
  RequireNothingLeft(launcher.pid());
  return nlohmann::json::parse(LastLine(launcher.Stdout()));
}

std::string Setup::Train(const std::string& flags) const {
  return Bin("gnn-train") + " --batch_size 100 --num_omp_threads 1 " + flags;
}

std::vector<std::string> Setup::ShmLeft(int runs) const {
  std::vector<std::string> left;
  const std::string sha = Sha256File(config);
  for (int run = 0; run < runs; ++run) {
    const std::string id = run == 0 ? job : job + "-r" + std::to_string(run);
    for (int m = 0; m < 2; ++m) {
      for (const std::string& name :
           {JobShmName(graph_name, sha, id, m), RowCacheName(graph_name, sha, id, m)}) {
        for (const std::string& p : {ShmSegmentPath(name), ShmLockPath(name)}) {
          if (access(p.c_str(), F_OK) == 0) left.push_back(p);
        }
      }
    }
  }
  return left;
}

void Setup::RequireNothingLeft(pid_t launcher, std::chrono::seconds timeout, int runs) const {
  auto deadline = Clock::now() + timeout;
  std::vector<pid_t> left;
  std::vector<std::string> shm;
  while (true) {
    left = JobProcesses(job, launcher);
    shm = ShmLeft(runs);
    if ((left.empty() && shm.empty()) || Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string which;
  for (pid_t p : left) {
    which +=
        std::to_string(p) + ": " + ReadFileOrEmpty("/proc/" + std::to_string(p) + "/stat") + "\n";
    kill(p, SIGKILL);
  }
  std::string segments;
  for (const auto& name : shm) segments += name + " ";
  INFO(which);
  INFO("left in /dev/shm: " << segments);
  CHECK(left.empty());
  CHECK(shm.empty());
  for (const auto& s : shm) unlink(s.c_str());
}

pid_t Setup::WaitTrainer(ChildProcess& launcher) const {
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    REQUIRE(launcher.Running());
    auto t = JobProcesses(job, 0, "gnn-train");
    if (!t.empty()) return t[0];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("no trainer started");
  return -1;
}

void Setup::WaitTraining(ChildProcess& launcher) const {
  INFO(launcher.Stderr());
  REQUIRE(WaitUntil(
      [&] {
        return !launcher.Running() || launcher.Stderr().find("Epoch Time(s)") != std::string::npos;
      },
      std::chrono::seconds(120)));
  REQUIRE(launcher.Running());
}

}  // namespace gnn::test
