#include "cluster/launcher.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cluster/failover.h"
#include "cluster/guardian.h"
#include "cluster/job_secret.h"
#include "cluster/launch_plan.h"
#include "cluster/peer_watch.h"
#include "cluster/remote.h"
#include "cluster/restart_ledger.h"
#include "cluster/supervisor.h"
#include "common/error.h"
#include "common/launch_env.h"
#include "common/sha256.h"
#include "net/ip_config.h"
#include "partition/config.h"
#include "store/row_cache.h"
#include "store/shm_partition.h"

namespace gnn {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Timings of a launch, besides the options'.
constexpr double kWaitNoteEveryS = 5;      // "waiting for machine m server s" this often
constexpr int kReadyPingMs = 200;          // a server is up when it answers a Ping this fast
constexpr double kLateFailureWindowS = 1;  // failures this soon after the first are reported too
constexpr double kPeerBlameWaitS =
    8;  // a peer-blamed failure waits this long for PeerWatch to name the peer
constexpr int kSuperviseTickMs = 100;  // the supervision loop's pace

// Per-node launchers of one job share its id without talking: derived from
// what they all read (ip_config, partition config) and the master port.
std::string PerNodeJobId(const LaunchOptions& o, const std::string& ip_path,
                         const std::string& part_path) {
  Sha256 h;
  for (const std::string& part :
       {Sha256File(ip_path), Sha256File(part_path), std::to_string(o.master_port)}) {
    h.Update(part.data(), part.size());
    h.Update("|", 1);
  }
  return "job-" + h.HexDigest().substr(0, 16);
}

std::string MakeJobId(const LaunchOptions& o, const std::string& ip_path,
                      const std::string& part_path) {
  if (!o.job_id.empty()) return o.job_id;
  if (o.machine_id >= 0) return PerNodeJobId(o, ip_path, part_path);
  const auto ms = std::chrono::system_clock::now().time_since_epoch().count() / 1000000;
  return "job-" + std::to_string(::getpid()) + "-" + std::to_string(ms);
}

// "was killed by signal 9 (remote)" etc. for a process of the job.
std::string HowItEnded(const Proc& f) {
  std::string how = DescribeWaitStatus(f.status);
  if (f.remote && WIFEXITED(f.status)) {
    const int code = WEXITSTATUS(f.status);
    if (code == 255) how += " (ssh: connection lost or refused)";
    if (code > 128 && code < 160)
      how = "was killed by signal " + std::to_string(code - 128) + " (remote)";
  }
  return how;
}

// A process that failed because another did (exit 6, peer; 5, timeout).
bool Victim(const Proc& f) {
  return WIFEXITED(f.status) &&
         (WEXITSTATUS(f.status) == kExitPeer || WEXITSTATUS(f.status) == kExitTimeout);
}

// " (error: ...)" when a process that exited non-zero said why.
std::string LastError(const Proc& p) {
  if (!WIFEXITED(p.status)) return "";
  for (auto it = p.tail.rbegin(); it != p.tail.rend(); ++it) {
    const size_t at = it->find("error: ");
    if (at != std::string::npos) return " (" + it->substr(at) + ")";
  }
  return "";
}

// How much a failure says about the cause: 2 for a process that died or
// failed on its own; 1 for one that lost a peer it named (its sampler, a
// server); 0 for a trainer that only saw the collective break (another
// trainer went first).
int Blame(const Proc& f) {
  if (!Victim(f)) return 2;
  return LastError(f).find("among trainers failed") != std::string::npos ? 0 : 1;
}

// The launcher's exit code for a job that `f` ended: f's own code when it
// is one of the error classes (2 configuration, 3 data, 4 protocol, 5
// timeout, 6 peer); 6 when f was killed by a signal, lost its ssh
// connection or, a server, ended while needed (a process of the job
// failed); 1 for anything else (f exited 1 or with a code of its own).
int FailureCode(const Proc& f) {
  if (!WIFEXITED(f.status)) return kExitPeer;
  const int code = WEXITSTATUS(f.status);
  if (code >= kExitConfig && code <= kExitPeer) return code;
  if (code == 0 || (f.remote && (code == 255 || (code > 128 && code < 160)))) return kExitPeer;
  return kExitError;
}

// Makes the job's log folder `dir` (with its parents) and checks that files
// can be made in it: DataError naming the folder otherwise, before
// anything starts (not a raw filesystem error).
void MakeLogDir(const std::string& dir, bool flag_given) {
  const std::string hint = flag_given ? " (--log_dir)" : " (choose another with --log_dir)";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw DataError("log folder " + dir + " cannot be made: " + ec.message() + hint);
  if (!fs::is_directory(dir, ec)) throw DataError("log folder " + dir + " is not a folder" + hint);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw DataError("log folder " + dir + " is not writable: " + std::strerror(errno) + hint);
}

// The exit codes of a failure that would happen again after a restart.
bool Recurs(const Proc& f) {
  return WIFEXITED(f.status) &&
         (WEXITSTATUS(f.status) == kExitConfig || WEXITSTATUS(f.status) == kExitData);
}

// A trainer's malloc setting unless the user gives one (--extra_envs or
// the launcher's environment): glibc's malloc unmaps a freed buffer above
// its mmap threshold (dynamic, 32 MB at most), so a trainer's buffers of
// tens of MB per batch (layer-wise inference's input rows, its products)
// were faulted in and zeroed again every batch: 2 machines' inference of
// a 300K-node graph took 0.86-0.94 s against 0.68-0.74 s with them kept.
constexpr char kTrainerMalloc[] = "MALLOC_MMAP_THRESHOLD_=1073741824";

// Whether `env` ("NAME=value" entries) sets the variable of `entry`.
bool HasEnv(const std::vector<std::string>& env, const std::string& entry) {
  const std::string name = entry.substr(0, entry.find('=') + 1);
  for (const auto& e : env) {
    if (e.compare(0, name.size(), name) == 0) return true;
  }
  return false;
}

// Sets `entry` ("NAME=value") in `env`, replacing the variable's earlier
// value: each name once (a local child would see the first of two, a
// remote `env` the last).
void SetEnv(std::vector<std::string>* env, const std::string& entry) {
  const std::string name = entry.substr(0, entry.find('=') + 1);
  env->erase(
      std::remove_if(env->begin(), env->end(),
                     [&](const std::string& e) { return e.compare(0, name.size(), name) == 0; }),
      env->end());
  env->push_back(entry);
}

// One launch, in phases: Prepare, then per run StartServers,
// WaitForServers, StartTrainers, Supervise, Succeed; every early end goes
// through End(), after which Restart() may start another run. Run g > 0
// is a job of its own (id JOB-rG: its own keys and shared memory), so no
// process of an earlier run can reach it; its trainers resume from rank
// 0's newest checkpoint.
// Members are declared in teardown order: the processes (job_) go first,
// then the files they read (secret_), then their shared memory, then the
// guardian.
class Launch {
 public:
  Launch(const LaunchOptions& o, const std::atomic<int>& signal) : o_(o), signal_(signal) {}

  int Run() {
    Prepare();
    while (true) {
      const int code = RunOnce();
      if (code == 0) return code;
      if (std::optional<int> ended = Restart(code)) return *ended;
    }
  }

 private:
  // One run of the job, to its exit code.
  int RunOnce() {
    run_id_ = RunId(run_);
    keys_ = secret_->KeysFor(run_id_);
    RegisterShm();
    StartServers();
    if (std::optional<int> ended = WaitForServers()) return *ended;
    // Per-node mode: a thread pings every other machine's server 0; a
    // machine that stops answering while our trainers still run has failed
    // (its launcher tore its job down) or is gone.
    PeerWatch peers(machines_, per_node_ ? o_.machine_id : -1, keys_);
    StartTrainers();
    if (std::optional<int> ended = Supervise(peers)) return *ended;
    peers.Stop();
    return Succeed();
  }

  std::string RunId(int run) const {
    return run == 0 ? job_id_ : job_id_ + "-r" + std::to_string(run);
  }

  // After a failed run: nullopt to run again (the restart said in one
  // line), or the launcher's exit code.
  std::optional<int> Restart(int code) {
    if (signal_.load() || run_ >= o_.max_restarts) return code;
    if (recurs_) {
      std::cerr << "gnn-launch: not restarting: a configuration or data error would recur\n";
      return code;
    }
    Account();
    guardian_->ForgetGroups();  // the run's groups are gone; their ids may be reused
    ++run_;
    if (!MoveOffLostMachines()) return code;
    std::ostringstream line;
    line << "gnn-launch: restart " << run_ << " of " << o_.max_restarts << " in "
         << o_.restart_backoff.count() << " s: " << cause_ << "; "
         << ledger_.ResumeText(Mine(0), HasCheckpointDir());
    std::cerr << line.str() << std::endl;
    const auto until = DeadlineAfter(o_.restart_backoff.count());
    while (Clock::now() < until) {
      if (signal_.load()) return 128 + signal_.load();
      std::this_thread::sleep_for(std::chrono::milliseconds(kSuperviseTickMs));
    }
    job_ = std::make_unique<Job>(guardian_.get(), !o_.quiet);
    return std::nullopt;
  }

  // One launcher for all machines: machines that no longer answer over
  // ssh are dropped, and the survivors take the partitions over: the run's
  // ip_config goes to each, and what a survivor lacks is copied from
  // --part_source. False (said why) when the job cannot go on.
  bool MoveOffLostMachines() {
    if (per_node_) return true;
    std::vector<std::string> why;
    const std::vector<int> lost = ProbeLost(o_.ssh, all_machines_, origin_, &why);
    if (lost.empty()) return true;
    for (const auto& w : why) std::cerr << "gnn-launch: " << w << "\n";
    if (std::find(lost.begin(), lost.end(), origin_[0]) != lost.end() &&
        ledger_.checkpoint_step() >= 0) {
      std::cerr << "gnn-launch: the checkpoint was on the lost machine " << origin_[0]
                << ": training starts over unless --checkpoint_dir is storage the next machine 0 "
                   "sees too\n";
      ledger_.ForgetCheckpoint();  // the restart line must not name it, the trainers not take it
    }
    std::vector<int> survivors;
    for (int m : origin_) {
      if (std::find(lost.begin(), lost.end(), m) == lost.end()) survivors.push_back(m);
    }
    try {
      const std::vector<int> order = Reassign(survivors, holds_, num_parts_);
      bool copies = false;
      for (size_t j = 0; j < order.size(); ++j) {
        copies = copies || !holds_[static_cast<size_t>(order[j])].count(
                               MachinePartition(static_cast<int>(j), num_parts_));
      }
      if (copies && o_.part_source.empty()) {
        std::cerr << "gnn-launch: not restarting: the machines left lack a partition, which "
                     "can move only with --part_source (the whole partitioned graph on this "
                     "host)\n";
        return false;
      }
      run_options_ = o_;
      run_options_.ip_config = "ip_config-" + RunId(run_) + ".txt";
      const std::string ip_path = log_dir_ + "/" + run_options_.ip_config;
      if (copies) {
        ShipRunLayout(o_, all_machines_, order, ip_path, o_.part_source);
      } else {
        ShipIpConfig(o_, all_machines_, order, ip_path);
      }
      origin_ = order;
    } catch (const std::exception& e) {
      std::cerr << "gnn-launch: not restarting: cannot move the job off the lost machines: "
                << e.what() << "\n";
      return false;
    }
    machines_.clear();
    std::ostringstream layout;
    for (size_t j = 0; j < origin_.size(); ++j) {
      machines_.push_back(all_machines_[static_cast<size_t>(origin_[j])]);
      holds_[static_cast<size_t>(origin_[j])].insert(
          MachinePartition(static_cast<int>(j), num_parts_));
      layout << (j ? ", " : "") << "machine " << j << " = " << machines_.back().host << " (was "
             << origin_[j] << ") partition " << MachinePartition(static_cast<int>(j), num_parts_);
    }
    plans_ = PlanMachines(run_options_, machines_, origin_);
    std::cerr << "gnn-launch: run " << run_ << " on " << machines_.size()
              << " machines: " << layout.str() << std::endl;
    return true;
  }

  // The ended run's trainers' reports into the ledger.
  void Account() {
    std::vector<const Proc*> trainers;
    for (const auto& p : job_->procs()) {
      if (p->role == "trainer") trainers.push_back(p.get());
    }
    ledger_.EndRun(run_, trainers, failed_at_);
  }

  bool HasCheckpointDir() const {
    return o_.command.find("--checkpoint_dir") != std::string::npos ||
           o_.command.find("--checkpoint-dir") != std::string::npos;
  }

  bool Mine(size_t m) const { return !per_node_ || static_cast<int>(m) == o_.machine_id; }

  // The shared memory this run's local servers create (named by run id and
  // current machine index): the guardian and every teardown remove it.
  void RegisterShm() {
    run_shm_names_.clear();
    for (size_t m = 0; m < plans_.size(); ++m) {
      if (!plans_[m].local || !Mine(m)) continue;
      try {
        const std::string name = JobShmName(graph_name_, Sha256File(plans_[m].part_config), run_id_,
                                            static_cast<int>(m));
        // The partition, and the machine's hot-row cache.
        const std::string cache = RowCacheName(graph_name_, Sha256File(plans_[m].part_config),
                                               run_id_, static_cast<int>(m));
        for (const std::string& n : {name, cache}) {
          run_shm_names_.push_back(n);
          shm_names_.push_back(n);
          guardian_->AddShm(n);
        }
      } catch (const std::exception&) {
      }
    }
  }

  // Ids, machines, plans, the log folder; then the guardian (before any
  // thread exists), the job's secret and the supervisor.
  void Prepare() {
    ip_path_ = LauncherPath(o_, o_.ip_config);
    part_path_ = LauncherPath(o_, o_.part_config);
    per_node_ = o_.machine_id >= 0;
    job_id_ = MakeJobId(o_, ip_path_, part_path_);
    machines_ = ReadIpConfig(ip_path_);
    all_machines_ = machines_;
    const PartitionConfig config = LoadPartitionConfig(part_path_);
    num_parts_ = config.num_parts;
    for (size_t m = 0; m < machines_.size(); ++m) {
      origin_.push_back(static_cast<int>(m));
      holds_.push_back({MachinePartition(static_cast<int>(m), num_parts_)});
    }
    plans_ = PlanMachines(o_, machines_);
    log_dir_ = LogDir();
    MakeLogDir(log_dir_, !o_.log_dir.empty());
    graph_name_ = config.graph_name;
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned grandchildren come to us to be reaped
    guardian_ = std::make_unique<Guardian>(o_.grace.count(), std::vector<std::string>{});
    std::vector<bool> mine(plans_.size());
    for (size_t m = 0; m < plans_.size(); ++m) mine[m] = Mine(m);
    secret_ = std::make_unique<JobSecret>(o_, plans_, mine, job_id_);
    job_ = std::make_unique<Job>(guardian_.get(), !o_.quiet);
    if (!o_.quiet) {
      std::cerr << "gnn-launch: job " << job_id_ << ", " << machines_.size()
                << " machines, logs in " << log_dir_ << "\n";
    }
  }

  std::string LogDir() const {
    std::error_code ec;
    const MachinePlan& home = plans_[static_cast<size_t>(std::max(o_.machine_id, 0))];
    const std::string base = home.local && fs::is_directory(home.workspace, ec)
                                 ? home.workspace
                                 : fs::current_path().string();
    // A derived per-node job id repeats across runs: keep each run's logs.
    const std::string run =
        per_node_ && o_.job_id.empty() ? job_id_ + "-" + std::to_string(::time(nullptr)) : job_id_;
    return o_.log_dir.empty() ? base + "/logs/" + run : InWorkspace(base, ExpandHome(o_.log_dir));
  }

  // Starts one process of machine m. Every process watches its stdin: EOF
  // means the launcher (or its ssh connection) is gone, and it stops.
  // The user's --extra_envs come first: the role's and ours override them.
  void Start(int m, const std::string& role, int rank, const std::string& local_cmd,
             const std::string& remote_cmd, const std::vector<std::string>& role_env) {
    const MachinePlan& p = plans_[static_cast<size_t>(m)];
    std::vector<std::string> env;
    for (const auto& e : o_.extra_envs) SetEnv(&env, e);
    for (const auto& e : role_env) SetEnv(&env, e);
    env.push_back(launch_env::Entry(launch_env::kWatchStdin, "1"));
    env.push_back(std::string(launch_env::kIpConfig) + "=" + p.ip_config);
    env.push_back(std::string(launch_env::kPartConfig) + "=" + p.part_config);
    env.push_back(std::string(launch_env::kMachineId) + "=" + std::to_string(m));
    env.push_back(std::string(launch_env::kJobId) + "=" + run_id_);
    env.push_back(secret_->EnvFor(static_cast<size_t>(origin_[static_cast<size_t>(m)])));
    if (p.local) {
      // WORKSPACE/bin first on PATH: ours, or the one --extra_envs gave.
      const char* ours = std::getenv("PATH");
      std::string path = ours ? ours : "";
      for (const auto& e : env) {
        if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
      }
      SetEnv(&env, "PATH=" + p.workspace + "/bin" + (path.empty() ? "" : ":" + path));
      job_->Start(m, role, rank, {"/bin/sh", "-c", "exec " + local_cmd}, env, p.workspace,
                  RunLogDir(), false);
    } else {
      for (const auto& v : NumericLibraryEnvironment()) {
        if (!HasEnv(env, v)) env.push_back(v);
      }
      job_->Start(m, role, rank,
                  SshArgv(o_.ssh, p.address.host, RemoteCommand(p.workspace, env, remote_cmd)), {},
                  "", RunLogDir(), true);
    }
  }

  // Run 0 logs into the job's log folder, run g into its restart-g/.
  std::string RunLogDir() const {
    if (run_ == 0) return log_dir_;
    const std::string dir = log_dir_ + "/restart-" + std::to_string(run_);
    MakeLogDir(dir, !o_.log_dir.empty());
    return dir;
  }

  void StartServers() {
    for (size_t m = 0; m < machines_.size(); ++m) {
      if (!Mine(m)) continue;
      for (int s = 0; s < o_.num_servers; ++s) {
        std::vector<std::string> env = {
            std::string(launch_env::kServerId) + "=" + std::to_string(s),
            std::string(launch_env::kNumServers) + "=" + std::to_string(o_.num_servers),
            std::string(launch_env::kRestart) + "=" + std::to_string(run_)};
        if (o_.num_server_threads > 0)
          env.push_back(std::string(launch_env::kNumServerThreads) + "=" +
                        std::to_string(o_.num_server_threads));
        Start(static_cast<int>(m), "server", s, ShellQuote(ServerBinary(o_)), "gnn-server", env);
      }
    }
  }

  // Servers are ready when each answers a Ping: this launcher's own within
  // --server_ready_timeout_s; in per-node mode the other machines' within
  // --peer_timeout_s (their launchers may start later), with progress
  // lines. An exit code if the job ended instead.
  std::optional<int> WaitForServers() {
    zmq::context_t ctx;
    const double peer_timeout_s = std::max(o_.server_ready_timeout, o_.peer_timeout).count();
    const auto own_deadline = DeadlineAfter(o_.server_ready_timeout.count());
    const auto peer_deadline = DeadlineAfter(peer_timeout_s);
    auto next_note = DeadlineAfter(kWaitNoteEveryS);
    std::vector<size_t> order;  // our own machines first
    for (size_t m = 0; m < machines_.size(); ++m) {
      if (Mine(m)) order.push_back(m);
    }
    for (size_t m = 0; m < machines_.size(); ++m) {
      if (!Mine(m)) order.push_back(m);
    }
    for (size_t m : order) {
      for (int s = 0; s < o_.num_servers; ++s) {
        while (!Ping(ctx, keys_, machines_[m], static_cast<int>(m), s, kReadyPingMs)) {
          if (std::optional<int> ended = EndedEarly(true)) return ended;
          if (Clock::now() > next_note && !o_.quiet) {
            std::cerr << "gnn-launch: waiting for machine " << m << " server " << s << " at "
                      << Endpoint(machines_[m], s) << " (" << std::lround(Elapsed()) << " s)\n";
            next_note = DeadlineAfter(kWaitNoteEveryS);
          }
          if (Clock::now() > (Mine(m) ? own_deadline : peer_deadline)) {
            std::ostringstream why;
            why << "machine " << m << " server " << s << " at " << Endpoint(machines_[m], s)
                << " did not answer within "
                << (Mine(m) ? o_.server_ready_timeout.count() : peer_timeout_s) << " s"
                << (Mine(m) ? "" : " (is gnn-launch running on that machine?)");
            return End(nullptr, why.str(), kExitTimeout);
          }
        }
      }
    }
    return std::nullopt;
  }

  // The job's machines whose ip_config address is machine m's.
  int MachinesOnHost(size_t m) const {
    return static_cast<int>(std::count_if(machines_.begin(), machines_.end(), [&](const auto& x) {
      return x.host == machines_[m].host;
    }));
  }

  void StartTrainers() {
    std::string rest;
    const std::string word = FirstWord(o_.command, &rest);
    for (size_t m = 0; m < machines_.size(); ++m) {
      if (!Mine(m)) continue;
      std::string local_trainer = plans_[m].local ? ResolveBinary(word, plans_[m].workspace) : "";
      if (local_trainer.empty()) local_trainer = word;  // let the shell say what is wrong
      for (int t = 0; t < o_.num_trainers; ++t) {
        std::vector<std::string> env = {
            std::string(launch_env::kTrainerId) + "=" + std::to_string(t),
            std::string(launch_env::kNumTrainers) + "=" + std::to_string(o_.num_trainers),
            std::string(launch_env::kNumServers) + "=" + std::to_string(o_.num_servers),
            std::string(launch_env::kNumSamplers) + "=" + std::to_string(o_.num_samplers),
            std::string(launch_env::kMasterAddr) + "=" + machines_[0].host,
            std::string(launch_env::kMasterPort) + "=" + std::to_string(o_.master_port),
            std::string(launch_env::kRestart) + "=" + std::to_string(run_),
            launch_env::Entry(launch_env::kReportProgress, "1"),
            launch_env::Entry(launch_env::kMachinesOnHost, std::to_string(MachinesOnHost(m))),
            std::string(launch_env::kResumeStep) + "=" + std::to_string(ledger_.checkpoint_step())};
        if (!HasEnv(o_.extra_envs, kTrainerMalloc) && !std::getenv("MALLOC_MMAP_THRESHOLD_")) {
          env.push_back(kTrainerMalloc);
        }
        if (o_.num_omp_threads > 0) {  // DGL's launcher sets OMP_NUM_THREADS so
          env.push_back("OMP_NUM_THREADS=" + std::to_string(o_.num_omp_threads));
          env.push_back(std::string(launch_env::kNumOmpThreads) + "=" +
                        std::to_string(o_.num_omp_threads));
        }
        Start(static_cast<int>(m), "trainer", t, ShellQuote(local_trainer) + rest, o_.command, env);
      }
    }
  }

  // Until every trainer has exited 0 (nullopt), or the job ends early.
  std::optional<int> Supervise(PeerWatch& peers) {
    while (true) {
      job_->Pump(kSuperviseTickMs);
      if (std::optional<int> ended = EndedEarly(false, &peers)) return ended;
      if (job_->TrainersDone()) return std::nullopt;
      // A peer silent for longer than the grace, while our trainers still
      // run: a trainer that finished normally would have ended by now.
      const std::string peer =
          job_->AnyTrainerSucceeded() ? "" : peers.Silent(o_.peer_grace.count());
      if (!peer.empty()) return End(nullptr, peer + "; stopping this machine's job", kExitPeer);
    }
  }

  // A signal, or a process that failed (while waiting for servers, any
  // process that ended; later, a trainer, or a server while trainers run):
  // the job's exit code after End(); nullopt while all is well.
  std::optional<int> EndedEarly(bool servers_must_run, PeerWatch* peers = nullptr) {
    if (signal_.load())
      return End(nullptr, "stopped by signal " + std::to_string(signal_.load()),
                 128 + signal_.load());
    if (servers_must_run) job_->Pump(0);
    Proc* f = job_->FirstFailure(servers_must_run || !job_->TrainersDone());
    if (!f || (!servers_must_run && f->role != "trainer" && job_->TrainersDone()))
      return std::nullopt;
    // A trainer that failed because of a peer (exit 6, peer; 5, timeout)
    // points at another machine: give the watch a few seconds to see which
    // one went silent, then say so. A machine whose own process died
    // tears down at once.
    std::string peer = peers ? peers->Silent(0) : "";
    const bool victim = Victim(*f);
    const auto until = DeadlineAfter(kPeerBlameWaitS);
    while (peers && per_node_ && victim && peer.empty() && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kSuperviseTickMs));
      peer = peers->Silent(0);
    }
    return End(f, peer.empty() ? "" : "before that, " + peer, kExitError);
  }

  // The one teardown of an early end: waits briefly for failures that
  // follow the first (a trainer whose peer died fails on the collective:
  // all are reported, in exit order, so the cause is there whichever exit
  // was seen first), stops every process, removes the shared memory, and
  // says what happened. Returns the cause's FailureCode when a process
  // failed, else `code`.
  int End(Proc* failed, const std::string& note, int code) {
    failed_at_ = Clock::now();
    std::vector<Proc*> failures;
    if (failed) {
      const auto until = DeadlineAfter(kLateFailureWindowS);
      while (Clock::now() < until) job_->Pump(50);
      for (const auto& p : job_->procs()) {
        if (p->Failed()) failures.push_back(p.get());
      }
      // A server that ended while it was needed counts even with status 0.
      if (std::find(failures.begin(), failures.end(), failed) == failures.end())
        failures.push_back(failed);
      std::sort(failures.begin(), failures.end(),
                [](Proc* a, Proc* b) { return a->exit_seq < b->exit_seq; });
    }
    // The cause: the failure that says most about it (Blame), the first
    // to exit among equals.
    Proc* cause = nullptr;
    for (Proc* f : failures) {
      if (!cause || Blame(*f) > Blame(*cause)) cause = f;
    }
    cause_ = cause ? cause->Name() + " " + HowItEnded(*cause) + LastError(*cause) : note;
    if (cause && Victim(*cause) && !note.empty()) cause_ += "; " + note;
    recurs_ = cause && Recurs(*cause);
    if (cause) code = FailureCode(*cause);
    StopAll();
    for (Proc* f : failures) {
      std::cerr << "gnn-launch: " << f->Name() << " (pid " << f->pid << (f->remote ? ", ssh" : "")
                << ") " << HowItEnded(*f) << "; log " << f->log_path << "; last lines:\n";
      for (const auto& line : f->tail) std::cerr << "  " << line << "\n";
    }
    if (!note.empty()) std::cerr << "gnn-launch: " << note << "\n";
    return code;
  }

  void StopAll() {
    job_->Stop(o_.grace.count());
    for (const auto& name : run_shm_names_) RemoveShmSegment(name);
  }

  // Every trainer exited 0: stop the servers, print rank 0's summary.
  int Succeed() {
    StopAll();
    std::string summary;
    for (const auto& p : job_->procs()) {
      if (p->role == "trainer" && p->machine == (per_node_ ? o_.machine_id : 0) && p->rank == 0) {
        summary = p->last_stdout;
      }
    }
    try {
      nlohmann::json j = nlohmann::json::parse(summary);
      if (!j.is_object()) throw std::runtime_error("not an object");
      j["wall_time_s"] = Elapsed();
      AddRecovery(&j);
      std::cout << j.dump() << std::endl;
    } catch (const std::exception&) {
      nlohmann::json j = {{"wall_time_s", Elapsed()}, {"trainer_output", summary}};
      if (per_node_) j["machine_id"] = o_.machine_id;
      AddRecovery(&j);
      std::cout << j.dump() << std::endl;
    }
    return 0;
  }

  void AddRecovery(nlohmann::json* j) {
    Account();
    ledger_.AddTo(run_, j);
  }

  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  const LaunchOptions& o_;
  const std::atomic<int>& signal_;
  const Clock::time_point t0_ = Clock::now();
  std::string ip_path_, part_path_, job_id_, log_dir_;
  // The current run: its number (0 = first), job id and keys.
  int run_ = 0;
  std::string run_id_;
  net::JobKeys keys_ = net::JobKeys::Insecure();
  // The last failure, and what the trainers reported (Account).
  std::string cause_;
  bool recurs_ = false;
  Clock::time_point failed_at_{};
  RestartLedger ledger_;  // progress across runs
  bool per_node_ = false;
  std::vector<MachineAddress> machines_;  // of the current run
  std::vector<MachinePlan> plans_;
  // Every machine of the ip_config; the current run's machine j is
  // all_machines_[origin_[j]]; the partitions each machine holds.
  std::vector<MachineAddress> all_machines_;
  std::vector<int> origin_;
  std::vector<std::set<int>> holds_;
  int num_parts_ = 0;
  LaunchOptions run_options_;  // o_ with the run's ip_config, once machines were lost
  std::string graph_name_;
  std::vector<std::string> shm_names_;      // of every run so far (removed at the end)
  std::vector<std::string> run_shm_names_;  // of the current run
  // Teardown order (reverse of declaration): processes, their secret
  // files, their shared memory (however Run ends, also by an exception),
  // the guardian.
  std::unique_ptr<Guardian> guardian_;
  struct ShmCleanup {
    const std::vector<std::string>& names;
    ~ShmCleanup() {
      for (const auto& name : names) RemoveShmSegment(name);
    }
  } shm_cleanup_{shm_names_};
  std::unique_ptr<JobSecret> secret_;
  std::unique_ptr<Job> job_;
};

}  // namespace

int RunLaunch(const LaunchOptions& o, const std::atomic<int>& signal) {
  return Launch(o, signal).Run();
}

}  // namespace gnn
