#include "cluster/launcher.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/guardian.h"
#include "net/ip_config.h"
#include "cluster/job_secret.h"
#include "cluster/launch_plan.h"
#include "cluster/peer_watch.h"
#include "cluster/remote.h"
#include "cluster/supervisor.h"
#include "common/error.h"
#include "common/sha256.h"
#include "partition/config.h"
#include "server/server.h"
#include "server/shm_partition.h"

namespace gnn {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

}  // namespace

void LaunchOptions::Validate() const {
  if (num_trainers < 1) throw ConfigError("--num_trainers must be >= 1");
  if (num_samplers < 0) throw ConfigError("--num_samplers must be >= 0");
  if (num_servers < 1) throw ConfigError("--num_servers must be >= 1");
  if (part_config.empty()) throw ConfigError("--part_config is required");
  if (ip_config.empty()) throw ConfigError("--ip_config is required");
  ssh.Validate();
  if (machine_id < -1) throw ConfigError("--machine_id must be >= 0");
  if (!(server_ready_timeout_s > 0)) throw ConfigError("--server_ready_timeout_s must be > 0");
  if (machine_id >= 0 && ssh.force) throw ConfigError("--machine_id (per-node mode, no ssh) and --force_ssh exclude each other");
  if (!(peer_timeout_s > 0)) throw ConfigError("--peer_timeout_s must be > 0");
  if (!(peer_grace_s >= 0)) throw ConfigError("--peer_grace_s must be >= 0");
  if (master_port < 1 || master_port > 65535) throw ConfigError("--master_port out of range [1, 65535]");
  if (grace_s < 0) throw ConfigError("--grace_s must be >= 0");
  if (FirstWord(command, nullptr).empty()) throw ConfigError("the trainer command is missing");
}

namespace {

// what they all read (ip_config, partition config) and the master port.
std::string PerNodeJobId(const LaunchOptions& o, const std::string& ip_path, const std::string& part_path) {
  Sha256 h;
  for (const std::string& part : {Sha256File(ip_path), Sha256File(part_path), std::to_string(o.master_port)}) {
    h.Update(part.data(), part.size());
    h.Update("|", 1);
  }
  return "job-" + h.HexDigest().substr(0, 16);
}

// Pings server 0 of every machine but `self` about 3 times a second from its own
// thread (self < 0: watches nothing) and remembers since when each has

}  // namespace

int RunLaunch(const LaunchOptions& o, const std::atomic<int>& signal) {
  const auto t0 = Clock::now();
  const std::string ip_path = LauncherPath(o, o.ip_config);
  const std::string part_path = LauncherPath(o, o.part_config);
  const bool per_node = o.machine_id >= 0;
  const std::string job_id = !o.job_id.empty() ? o.job_id : per_node ? PerNodeJobId(o, ip_path, part_path)
                             : "job-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::chrono::system_clock::now().time_since_epoch().count() /
                                                  1000000);
  const std::vector<MachineAddress> machines = ReadIpConfig(ip_path);
  // Machines this launcher starts processes on: all, or only its own.
  auto mine = [&](size_t m) { return !per_node || static_cast<int>(m) == o.machine_id; };
  const PartitionConfig config = LoadPartitionConfig(part_path);
  const std::vector<MachinePlan> plans = PlanMachines(o, machines);
  std::string log_dir;
  {
    std::error_code ec;
    const MachinePlan& home = plans[static_cast<size_t>(std::max(o.machine_id, 0))];
    const std::string base =
        home.local && fs::is_directory(home.workspace, ec) ? home.workspace : fs::current_path().string();
    // A derived per-node job id repeats across runs: keep each run's logs.
    const std::string run = per_node && o.job_id.empty() ? job_id + "-" + std::to_string(::time(nullptr)) : job_id;
    log_dir = o.log_dir.empty() ? base + "/logs/" + run : InWorkspace(base, ExpandHome(o.log_dir));
  }
  fs::create_directories(log_dir);
  const std::string server_bin = ServerBinary(o);
  std::string rest;
  const std::string word = FirstWord(o.command, &rest);
  const std::string master_addr = machines[0].host;

  std::vector<std::string> shm_names;
  for (size_t m = 0; m < plans.size(); ++m) {
    if (!plans[m].local || !mine(m)) continue;
    try {
      shm_names.push_back(
          JobShmName(config.graph_name, Sha256File(plans[m].part_config), job_id, static_cast<int>(m)));
    } catch (const std::exception&) {
    }
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned grandchildren come to us to be reaped
  Guardian guardian(o.grace_s, shm_names);  // before any thread exists
  // However RunLaunch ends (also by an exception), the job's shared memory
  // goes after its processes: declared before `job`, destroyed after it.
  struct ShmCleanup {
    const std::vector<std::string>& names;
    ~ShmCleanup() {
      for (const auto& name : names) RemoveShmSegment(name);
    }
  } shm_cleanup{shm_names};
  std::vector<bool> mine_list(plans.size());
  for (size_t m = 0; m < plans.size(); ++m) mine_list[m] = mine(m);
  // Its files go after the processes that read them: declared before `job`.
  const JobSecret secret(o, plans, mine_list, job_id);
  Job job(&guardian);

  // Every process watches its stdin: EOF means the launcher (or its ssh
  // connection) is gone, and the process stops by itself.
  auto start = [&](int m, const std::string& role, int rank, const std::string& local_cmd,
                   const std::string& remote_cmd, std::vector<std::string> env) {
    const MachinePlan& p = plans[static_cast<size_t>(m)];
    env.push_back("GNN_WATCH_STDIN=1");
    env.push_back("GNN_IP_CONFIG=" + p.ip_config);
    env.push_back("GNN_PART_CONFIG=" + p.part_config);
    env.push_back("GNN_MACHINE_ID=" + std::to_string(m));
    env.push_back("GNN_JOB_ID=" + job_id);
    env.push_back(secret.EnvFor(static_cast<size_t>(m)));
    if (p.local) {
      const char* path = std::getenv("PATH");
      env.push_back("PATH=" + p.workspace + "/bin" + (path ? std::string(":") + path : ""));
      job.Start(m, role, rank, {"/bin/sh", "-c", "exec " + local_cmd}, env, p.workspace, log_dir, false);
    } else {
      for (const auto& v : NumericLibraryEnvironment()) env.push_back(v);
      job.Start(m, role, rank, SshArgv(o.ssh, p.address.host, RemoteCommand(p.workspace, env, remote_cmd)), {},
                "", log_dir, true);
    }
  };

  // What happens when the job ends early; returns the exit code.
  // What happens when the job ends early; returns the exit code. Processes
  // that fail on their own within a second of the first (a trainer whose
  // peer died fails on the collective) are reported too, in exit order, so
  // the cause is in the report whichever exit was seen first.
  auto fail = [&](Proc* failed) {
    std::vector<Proc*> failures;
    if (failed) {
      const auto until = Clock::now() + std::chrono::seconds(1);
      while (Clock::now() < until) job.Pump(50);
      for (const auto& p : job.procs()) {
        if (p->Failed()) failures.push_back(p.get());
      }
      // A server that ended while it was needed counts even with status 0.
      if (std::find(failures.begin(), failures.end(), failed) == failures.end()) failures.push_back(failed);
      std::sort(failures.begin(), failures.end(), [](Proc* a, Proc* b) { return a->exit_seq < b->exit_seq; });
    }
    job.Stop(o.grace_s);
    for (Proc* f : failures) {
      std::string how = DescribeWaitStatus(f->status);
      if (f->remote && WIFEXITED(f->status)) {
        const int code = WEXITSTATUS(f->status);
        if (code == 255) how += " (ssh: connection lost or refused)";
        if (code > 128 && code < 160) how = "was killed by signal " + std::to_string(code - 128) + " (remote)";
      }
      std::cerr << "gnn-launch: " << f->Name() << " (pid " << f->pid << (f->remote ? ", ssh" : "") << ") " << how
                << "; log " << f->log_path << "; last lines:\n";
      for (const auto& line : f->tail) std::cerr << "  " << line << "\n";
    }
    if (!failures.empty()) return 1;
    std::cerr << "gnn-launch: stopped by signal " << signal.load() << "\n";
    return 128 + signal.load();
  };
  auto cleanup_shm = [&] {
    for (const auto& name : shm_names) RemoveShmSegment(name);
  };

  std::cerr << "gnn-launch: job " << job_id << ", " << machines.size() << " machines, logs in " << log_dir
            << "\n";
  for (size_t m = 0; m < machines.size(); ++m) {
    if (!mine(m)) continue;
    for (int s = 0; s < o.num_servers; ++s) {
      std::vector<std::string> env = {"GNN_SERVER_ID=" + std::to_string(s),
                                      "GNN_NUM_SERVERS=" + std::to_string(o.num_servers)};
      start(static_cast<int>(m), "server", s, ShellQuote(server_bin), "gnn-server", env);
    }
  }

  // Servers are ready when each answers a Ping: this launcher's own within
  // --server_ready_timeout_s; in per-node mode the other machines' within
  // --peer_timeout_s (their launchers may start later), with progress lines.
  {
    zmq::context_t ctx;
    const auto own_deadline = DeadlineAfter(o.server_ready_timeout_s);
    const auto peer_deadline = DeadlineAfter(std::max(o.server_ready_timeout_s, o.peer_timeout_s));
    auto next_note = DeadlineAfter(5);
    std::vector<size_t> order;
    for (size_t m = 0; m < machines.size(); ++m) {
      if (mine(m)) order.push_back(m);
    }
    for (size_t m = 0; m < machines.size(); ++m) {
      if (!mine(m)) order.push_back(m);
    }
    for (size_t m : order) {
      const auto deadline = mine(m) ? own_deadline : peer_deadline;
      for (int s = 0; s < o.num_servers; ++s) {
        while (true) {
          if (signal.load()) {
            int rc = fail(nullptr);
            cleanup_shm();
            return rc;
          }
          job.Pump(0);
          if (Proc* f = job.FirstFailure(true)) {
            int rc = fail(f);
            cleanup_shm();
            return rc;
          }
          if (Ping(ctx, secret.keys(), machines[m], static_cast<int>(m), s, 200)) break;
          if (Clock::now() > next_note) {
            std::cerr << "gnn-launch: waiting for machine " << m << " server " << s << " at "
                      << Endpoint(machines[m], s) << " ("
                      << std::lround(std::chrono::duration<double>(Clock::now() - t0).count()) << " s)\n";
            next_note = DeadlineAfter(5);
          }
          if (Clock::now() > deadline) {
            job.Stop(o.grace_s);
            cleanup_shm();
            std::cerr << "gnn-launch: machine " << m << " server " << s << " at " << Endpoint(machines[m], s)
                      << " did not answer within "
                      << (mine(m) ? o.server_ready_timeout_s : std::max(o.server_ready_timeout_s, o.peer_timeout_s))
                      << " s" << (mine(m) ? "" : " (is gnn-launch running on that machine?)") << "\n";
            return kExitTimeout;
          }
        }
      }
    }
  }

  // Per-node mode: a thread pings every other machine's server 0; a machine
  // that stops answering while our trainers still run has failed (its
  // launcher tore its job down) or is gone.
  PeerWatch peers(machines, per_node ? o.machine_id : -1, secret.keys());

  for (size_t m = 0; m < machines.size(); ++m) {
    if (!mine(m)) continue;
    std::string local_trainer = plans[m].local ? ResolveBinary(word, plans[m].workspace) : "";
    if (local_trainer.empty()) local_trainer = word;  // let the shell say what is wrong
    for (int t = 0; t < o.num_trainers; ++t) {
      std::vector<std::string> env = {
          "GNN_TRAINER_ID=" + std::to_string(t),          "GNN_NUM_TRAINERS=" + std::to_string(o.num_trainers),
          "GNN_NUM_SERVERS=" + std::to_string(o.num_servers), "GNN_NUM_SAMPLERS=" + std::to_string(o.num_samplers),
          "GNN_MASTER_ADDR=" + master_addr,                "GNN_MASTER_PORT=" + std::to_string(o.master_port)};
      start(static_cast<int>(m), "trainer", t, ShellQuote(local_trainer) + rest, o.command, env);
    }
  }

  while (true) {
    job.Pump(100);
    if (signal.load()) {
      int rc = fail(nullptr);
      cleanup_shm();
      return rc;
    }
    if (Proc* f = job.FirstFailure(!job.TrainersDone())) {
      if (f->role == "trainer" || !job.TrainersDone()) {
        // A trainer that failed because of a peer (exit 6, peer; 5,
        // timeout) points at another machine: give the watch a few seconds
        // to see which one went silent, then say so. A machine whose own
        // process died tears down at once.
        const bool victim = WIFEXITED(f->status) && (WEXITSTATUS(f->status) == kExitPeer ||
                                                     WEXITSTATUS(f->status) == kExitTimeout);
        std::string peer = peers.Silent(0);
        for (int i = 0; per_node && victim && peer.empty() && i < 80; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          peer = peers.Silent(0);
        }
        int rc = fail(f);
        if (!peer.empty()) std::cerr << "gnn-launch: before that, " << peer << "\n";
        cleanup_shm();
        return rc;
      }
    }
    if (job.TrainersDone()) break;
    // A peer silent for longer than the grace, while our trainers still
    // run: a trainer that finished normally would have ended by now.
    std::string peer = job.AnyTrainerSucceeded() ? "" : peers.Silent(o.peer_grace_s);
    if (!peer.empty()) {
      job.Stop(o.grace_s);
      cleanup_shm();
      std::cerr << "gnn-launch: " << peer << "; stopping this machine's job\n";
      return kExitPeer;
    }
  }
  peers.Stop();

  // Every trainer exited 0: stop the servers.
  job.Stop(o.grace_s);
  cleanup_shm();
  std::string summary;
  for (const auto& p : job.procs()) {
    if (p->role == "trainer" && p->machine == (per_node ? o.machine_id : 0) && p->rank == 0) {
      summary = p->last_stdout;
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  try {
    nlohmann::json j = nlohmann::json::parse(summary);
    if (!j.is_object()) throw std::runtime_error("not an object");
    j["wall_time_s"] = wall;
    std::cout << j.dump() << std::endl;
  } catch (const std::exception&) {
    nlohmann::json j = {{"wall_time_s", wall}, {"trainer_output", summary}};
    if (per_node) j["machine_id"] = o.machine_id;
    std::cout << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace gnn
