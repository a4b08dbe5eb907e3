#include "cluster/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cluster/ip_config.h"
#include "cluster/ports.h"
#include "cluster/remote.h"
#include "cluster/slurm.h"
#include "common/error.h"
#include "common/sha256.h"
#include "net/channel.h"
#include "partition/config.h"
#include "server/server.h"
#include "server/shm_partition.h"


namespace gnn {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string InWorkspace(const std::string& workspace, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return (fs::absolute(workspace) / path).lexically_normal().string();
}

std::string FirstWord(const std::string& command, std::string* rest) {
  size_t b = command.find_first_not_of(" \t\n");
  if (b == std::string::npos) {
    if (rest) rest->clear();
    return "";
  }
  size_t e = command.find_first_of(" \t\n", b);
  if (rest) *rest = e == std::string::npos ? "" : command.substr(e);
  return command.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// Absolute path of the trainer binary on this host, "" if not found.
std::string ResolveBinary(const std::string& word, const std::string& workspace) {
  if (word.empty()) return "";
  if (word.find('/') == std::string::npos) {
    // As the process's own PATH will find it: WORKSPACE/bin first.
    const std::string shipped = InWorkspace(workspace, "bin/" + word);
    if (IsExecutableFile(shipped)) return shipped;
    std::string p = FindOnPath(word);
    if (!p.empty()) return p;
  }
  std::string p = InWorkspace(workspace, word);
  return IsExecutableFile(p) ? p : "";
}

// The gnn-server local machines run.
std::string ServerBinary(const LaunchOptions& o) {
  return o.server_binary.empty() ? SelfDir() + "/gnn-server" : o.server_binary;
}

Clock::time_point After(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// A leading "~/" as the local shell would expand it.
std::string ExpandHome(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (home && (path == "~" || path.rfind("~/", 0) == 0)) return std::string(home) + path.substr(1);
  return path;
}

// "" if TCP `port` can be bound on this host, else why not.
std::string PortBusy(const std::string& host, int port) {
  const bool v6 = IsIpv6Literal(host);
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    if (::inet_pton(AF_INET6, host.c_str(), &a.sin6_addr) != 1) a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    // The machine's own address (two "machines" of one host may use the
    // same port on 127.0.0.1 and 127.0.0.2); a host name binds any.
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  int err = errno;
  ::close(fd);
  if (rc == 0) return "";
  std::string holder = DescribePortHolder(port);
  return std::string(std::strerror(err)) + (holder.empty() ? "" : ", held by " + holder);
}

// One started process: its pipes, log file and last lines.
struct Proc {
  int machine = 0;
  std::string role;
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr read ends
  std::string partial[2];
  std::ofstream log;
  std::string log_path;
  std::deque<std::string> tail;
  std::string last_stdout;
  int stdin_fd = -1;    // write end of its stdin; closing it tells it to stop
  bool remote = false;  // an ssh client standing for a remote process
  bool exited = false;
  int status = 0;
  int exit_seq = 0;  // order in which exits were seen

  std::string Name() const {
    return "[" + std::to_string(machine) + " " + role + " " + std::to_string(rank) + "]";
  }
  bool Failed() const { return exited && !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }
};

// A process that outlives a SIGKILLed launcher: it learns every process
// group the launcher starts through a pipe; if the pipe closes without the
// launcher's "done", it SIGTERMs the groups, SIGKILLs them after `grace_s`
// and removes the job's shared-memory segments (children killed by
// PR_SET_PDEATHSIG do not run their cleanup).
class Guardian {
 public:
  Guardian(double grace_s, const std::vector<std::string>& shm_names) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw Error("cannot create a pipe: " + std::string(std::strerror(errno)));
    pid_ = ::fork();
    if (pid_ < 0) throw Error("fork failed: " + std::string(std::strerror(errno)));
    if (pid_ == 0) {
      ::close(fds[1]);
      ::setpgid(0, 0);
      ::signal(SIGINT, SIG_IGN);
      ::signal(SIGTERM, SIG_IGN);
      ::signal(SIGHUP, SIG_IGN);
      int devnull = ::open("/dev/null", O_RDWR);
      if (devnull >= 0) {
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
        ::dup2(devnull, 2);
      }
      std::vector<pid_t> groups;
      std::string buf;
      bool done = false;
      char c;
      while (true) {
        ssize_t n = ::read(fds[0], &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n != 1) break;
        if (c == '\n') {
          if (buf == "D") done = true;
          if (!buf.empty() && buf[0] == 'P') groups.push_back(static_cast<pid_t>(std::atoi(buf.c_str() + 1)));
          buf.clear();
        } else {
          buf += c;
        }
      }
      if (!done) {
        for (pid_t g : groups) ::kill(-g, SIGTERM);
        auto deadline = After(grace_s);
        while (Clock::now() < deadline) {
          bool any = false;
          for (pid_t g : groups) any = any || ::kill(-g, 0) == 0;
          if (!any) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        for (pid_t g : groups) ::kill(-g, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        for (const auto& name : shm_names) RemoveShmSegment(name);
      }
      _exit(0);
    }
    ::close(fds[0]);
    fd_ = fds[1];
  }
  ~Guardian() {
    Send("D");
    ::close(fd_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  void Watch(pid_t group) { Send("P" + std::to_string(group)); }

 private:
  void Send(const std::string& line) {
    std::string l = line + "\n";
    ssize_t ignored = ::write(fd_, l.data(), l.size());
    (void)ignored;
  }
  pid_t pid_ = -1;
  int fd_ = -1;
};

class Job {
 public:
  explicit Job(Guardian* guardian) : guardian_(guardian) {}
  ~Job() { KillAll(); }

  // Starts argv in its own process group with `env` added (SpawnPiped).
  Proc* Start(int machine, const std::string& role, int rank, const std::vector<std::string>& argv,
              const std::vector<std::string>& env, const std::string& cwd,
              const std::string& log_dir, bool remote) {
    auto p = std::make_unique<Proc>();
    p->remote = remote;
    p->machine = machine;
    p->role = role;
    p->rank = rank;
    p->log_path = log_dir + "/" + role + "-" + std::to_string(machine) + "-" + std::to_string(rank) + ".log";
    p->log.open(p->log_path, std::ios::out | std::ios::trunc);
    // SIGTERM when the launcher dies; EOF on stdin tells it the same
    // (GNN_WATCH_STDIN), also through ssh.
    const PipedChild child = SpawnPiped(argv, env, cwd, SIGTERM);
    guardian_->Watch(child.pid);
    p->pid = child.pid;
    p->stdin_fd = child.in;
    p->fds[0] = child.out;
    p->fds[1] = child.err;
    procs_.push_back(std::move(p));
    return procs_.back().get();
  }

  // Forwards output for up to `timeout_ms`, then reaps exited children.
  void Pump(int timeout_ms) {
    std::vector<pollfd> pfds;
    std::vector<std::pair<Proc*, int>> who;
    for (auto& p : procs_) {
      for (int k = 0; k < 2; ++k) {
        if (p->fds[k] >= 0) {
          pfds.push_back({p->fds[k], POLLIN, 0});
          who.push_back({p.get(), k});
        }
      }
    }
    if (!pfds.empty()) {
      int n = ::poll(pfds.data(), pfds.size(), timeout_ms);
      if (n > 0) {
        for (size_t i = 0; i < pfds.size(); ++i) {
          if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) Read(who[i].first, who[i].second);
        }
      }
    } else if (timeout_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    }
    Reap();
  }

  // Reaps exited children, and the orphans of a failed trainer too (the
  // launcher is their subreaper).
  void Reap() {
    while (true) {
      int status = 0;
      pid_t r = ::waitpid(-1, &status, WNOHANG);
      if (r <= 0) break;
      for (auto& p : procs_) {
        if (p->pid == r && !p->exited) {
          p->exited = true;
          p->status = status;
          p->exit_seq = ++exits_;
        }
      }
    }
  }

  // The first process that failed (or a server that ended early), or null.
  Proc* FirstFailure(bool servers_must_run) {
    Proc* first = nullptr;
    for (auto& p : procs_) {
      if (p->Failed() || (servers_must_run && p->exited && p->role == "server")) {
        if (!first || p->exit_seq < first->exit_seq) first = p.get();
      }
    }
    return first;
  }

  // True once a trainer exited 0: it passed the job's last collective, so
  // every trainer everywhere is done with the servers.
  bool AnyTrainerSucceeded() {
    for (auto& p : procs_) {
      if (p->role == "trainer" && p->exited && !p->Failed()) return true;
    }
    return false;
  }

  bool TrainersDone() {
    for (auto& p : procs_) {
      if (p->role == "trainer" && !p->exited) return false;
    }
    return true;
  }

  // Closes every stdin (a remote process sees EOF through ssh and stops),
  // SIGTERMs every local process group, and after `grace` SIGTERMs the ssh
  // clients still running and SIGKILLs what is left.
  void Stop(double grace_s) {
    for (auto& p : procs_) {
      if (p->stdin_fd >= 0) ::close(p->stdin_fd);
      p->stdin_fd = -1;
      if (!p->exited && !p->remote) ::kill(-p->pid, SIGTERM);
    }
    auto deadline = After(grace_s);
    while (Clock::now() < deadline && !AllExited()) Pump(50);
    for (auto& p : procs_) {
      if (!p->exited) ::kill(-p->pid, SIGTERM);
    }
    deadline = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < deadline && !AllExited()) Pump(50);
    KillAll();
    // Orphaned grandchildren (samplers of a killed trainer) were SIGKILLed
    // with their group; reap them so no zombie is left.
    for (int i = 0; i < 15; ++i) {
      int status = 0;
      pid_t r = ::waitpid(-1, &status, WNOHANG);
      if (r < 0) break;
      if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Drain what the pipes still hold.
    for (int i = 0; i < 20 && AnyOpen(); ++i) Pump(10);
    for (auto& p : procs_) Flush(p.get());
  }

  const std::vector<std::unique_ptr<Proc>>& procs() const { return procs_; }

 private:
  bool AllExited() const {
    for (auto& p : procs_) {
      if (!p->exited) return false;
    }
    return true;
  }
  bool AnyOpen() const {
    for (auto& p : procs_) {
      if (p->fds[0] >= 0 || p->fds[1] >= 0) return true;
    }
    return false;
  }

  // SIGKILL every group (also children a leader left behind) and reap.
  void KillAll() {
    for (auto& p : procs_) {
      if (p->stdin_fd >= 0) ::close(p->stdin_fd);
      p->stdin_fd = -1;
      if (p->pid > 0) ::kill(-p->pid, SIGKILL);
      if (!p->exited && p->pid > 0) {
        int status = 0;
        if (::waitpid(p->pid, &status, 0) == p->pid) p->status = status;
        p->exited = true;
      }
    }
  }

  void Read(Proc* p, int k) {
    char buf[65536];
    ssize_t n = ::read(p->fds[k], buf, sizeof(buf));
    if (n <= 0) {
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
      ::close(p->fds[k]);
      p->fds[k] = -1;
      if (!p->partial[k].empty()) {
        Line(p, k, p->partial[k]);
        p->partial[k].clear();
      }
      return;
    }
    p->partial[k].append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = p->partial[k].find('\n', start)) != std::string::npos) {
      Line(p, k, p->partial[k].substr(start, nl - start));
      start = nl + 1;
    }
    p->partial[k].erase(0, start);
  }

  void Flush(Proc* p) {
    for (int k = 0; k < 2; ++k) {
      if (!p->partial[k].empty()) Line(p, k, p->partial[k]);
      p->partial[k].clear();
    }
    p->log.flush();
  }

  void Line(Proc* p, int k, const std::string& line) {
    std::string out = p->Name() + " " + line + "\n";
    ::fwrite(out.data(), 1, out.size(), stderr);
    p->log << line << '\n';
    p->log.flush();
    p->tail.push_back(line);
    if (p->tail.size() > 10) p->tail.pop_front();
    if (k == 0 && line.find_first_not_of(" \t\r") != std::string::npos) p->last_stdout = line;
  }

  Guardian* guardian_;
  std::vector<std::unique_ptr<Proc>> procs_;
  int exits_ = 0;
};

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

// Where machine m's processes run and which files they read.
struct MachinePlan {
  MachineAddress address;
  bool local = false;
  std::string workspace;    // absolute for local machines; as given (maybe "~/...") for remote
  std::string part_config;  // as the machine's processes see it
  std::string ip_config;
};

// The launcher's own copy of a workspace-relative file: in machine 0's
// workspace if it is there, else relative to the current directory.
std::string LauncherPath(const LaunchOptions& o, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::error_code ec;
  const std::string ws0 = ExpandHome(MachineWorkspace(o.workspace, std::max(o.machine_id, 0)));
  std::string in_ws = InWorkspace(ws0, path);
  if (fs::exists(in_ws, ec)) return in_ws;
  return fs::exists(path, ec) ? fs::absolute(path).lexically_normal().string() : in_ws;
}

std::vector<MachinePlan> PlanMachines(const LaunchOptions& o, const std::vector<MachineAddress>& machines) {
  std::vector<MachinePlan> plans;
  for (size_t m = 0; m < machines.size(); ++m) {
    MachinePlan p;
    p.address = machines[m];
    p.local = RunsLocally(o.ssh, machines[m].host);
    const std::string ws = MachineWorkspace(o.workspace, static_cast<int>(m));
    if (p.local) {
      p.workspace = fs::absolute(ExpandHome(ws)).lexically_normal().string();
      p.part_config = InWorkspace(p.workspace, o.part_config);
      p.ip_config = InWorkspace(p.workspace, o.ip_config);
    } else {
      p.workspace = ws;
      p.part_config = o.part_config;  // the remote process runs in its workspace
      p.ip_config = o.ip_config;
    }
    plans.push_back(p);
  }
  return plans;
}

// One shell script that prints one line per problem on a remote machine.
std::string RemoteCheckScript(const MachinePlan& p, const std::string& trainer_word, int num_servers,
                              int master_port, int machine) {
  const std::string ws = ShellPath(p.workspace);
  std::string s = "cd " + ws + " 2>/dev/null || { echo " + ShellQuote("workspace " + p.workspace + " does not exist") +
                  "; exit 0; }; PATH=\"$PWD/bin:$PATH\"; ";
  for (const auto& f : {p.part_config, p.ip_config}) {
    s += "test -r " + ShellQuote(f) + " || echo " + ShellQuote("file " + f + " not found in the workspace") + "; ";
  }
  for (const auto& b : {std::string("gnn-server"), trainer_word}) {
    s += "command -v " + ShellQuote(b) + " >/dev/null || echo " +
         ShellQuote("binary " + b + " not found (workspace bin/ or PATH)") + "; ";
  }
  // Ports a listener already holds (bash's /dev/tcp connects; plain sh
  // without bash skips this check and the server reports a busy port).
  std::vector<std::pair<int, std::string>> ports;
  for (int k = 0; k < num_servers; ++k) ports.push_back({p.address.port + k, "server " + std::to_string(k)});
  if (machine == 0) ports.push_back({master_port, "the trainers' rendezvous (--master_port)"});
  std::string probe;
  for (const auto& [port, what] : ports) {
    const std::string target = "/dev/tcp/" + p.address.host + "/" + std::to_string(port);
    probe += "if (exec 3<>" + target + ") 2>/dev/null; then echo \"port " + std::to_string(port) + " for " + what +
             " is busy: something listens there\"; fi; ";
  }
  s += "if command -v bash >/dev/null && command -v timeout >/dev/null; then timeout 5 bash -c " +
       ShellQuote(probe) + "; fi; ";
  return s + "exit 0";
}

// True if server `s` of machine `m` answers a Ping within `timeout_ms`.
bool Ping(zmq::context_t& ctx, const MachineAddress& machine, int m, int s, int timeout_ms) {
  net::Connection c(ctx, Endpoint(machine, s), "machine " + std::to_string(m) + " server " + std::to_string(s));
  try {
    c.Call(net::MakeMessage(net::MsgType::kPing, 0), net::Millis(timeout_ms));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Per-node launchers of one job share its id without talking: derived from
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
// been silent.
class PeerWatch {
 public:
  PeerWatch(const std::vector<MachineAddress>& machines, int self) : machines_(machines) {
    if (self < 0 || machines.size() < 2) return;
    silent_since_.assign(machines.size(), Clock::time_point{});
    thread_ = std::thread([this, self] {
      zmq::context_t ctx;
      std::vector<int> misses(machines_.size(), 0);
      while (!stop_.load()) {
        for (size_t m = 0; m < machines_.size() && !stop_.load(); ++m) {
          if (static_cast<int>(m) == self) continue;
          const bool ok = Ping(ctx, machines_[m], static_cast<int>(m), 0, 500);
          std::lock_guard<std::mutex> lock(mu_);
          if (ok) {
            misses[m] = 0;
            silent_since_[m] = Clock::time_point{};
          } else if (++misses[m] == 2) {  // one lost ping is not a failure
            silent_since_[m] = Clock::now();
          }
        }
        for (int i = 0; i < 3 && !stop_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~PeerWatch() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // "machine 1 (host:port) stopped answering N s ago" for the peer silent
  // longest, if for more than `for_s` seconds; "" otherwise.
  std::string Silent(double for_s) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    double longest = -1;
    for (size_t m = 0; m < silent_since_.size(); ++m) {
      if (silent_since_[m] == Clock::time_point{}) continue;
      const double age = std::chrono::duration<double>(Clock::now() - silent_since_[m]).count();
      if (age >= for_s && age > longest) {
        longest = age;
        out = "machine " + std::to_string(m) + " (" + machines_[m].host + ":" + std::to_string(machines_[m].port) +
              ") stopped answering " + std::to_string(std::lround(age)) +
              " s ago: its job failed or the machine is gone";
      }
    }
    return out;
  }

 private:
  std::vector<MachineAddress> machines_;
  std::vector<Clock::time_point> silent_since_;
  std::mutex mu_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

void ApplySlurm(bool machine_id_given, int port, LaunchOptions* o) {
  const SlurmNode node = ReadSlurm(ProcessEnvironment());
  if (!machine_id_given) o->machine_id = node.machine_id;
  if (o->job_id.empty() && !node.job_id.empty()) o->job_id = "slurm-" + node.job_id;
  // One file per allocation: a later job on other nodes never reads a
  // stale list from a shared home directory.
  if (o->ip_config.empty()) {
    o->ip_config = node.job_id.empty() ? "ip_config-slurm.txt" : "ip_config-slurm-" + node.job_id + ".txt";
  }
  const std::string path = LauncherPath(*o, o->ip_config);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    const size_t listed = ReadIpConfig(path).size();
    if (static_cast<int>(listed) != node.num_machines) {
      throw ConfigError("--slurm: " + path + " lists " + std::to_string(listed) + " machines but SLURM_NNODES is " +
                        std::to_string(node.num_machines) + " (remove it to have it written from the node list)");
    }
    return;
  }
  if (port < 1 || port + 1 > 65535) throw ConfigError("--slurm_port " + std::to_string(port) + " out of range");
  // Every node writes the same text; a rename keeps readers from ever
  // seeing half a file, also on a shared file system.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << SlurmIpConfig(node.hosts, port);
    if (!out.flush()) {
      ::unlink(tmp.c_str());
      throw ConfigError("--slurm: cannot write " + tmp + " (does the workspace exist?)");
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw ConfigError("--slurm: cannot write " + path + ": " + std::strerror(errno));
  }
  std::cerr << "gnn-launch: wrote " << path << " (" << node.hosts.size() << " machines) from SLURM_JOB_NODELIST\n";
}

std::vector<std::string> CheckLaunch(const LaunchOptions& o) {
  std::vector<std::string> problems;
  const std::string ip_path = LauncherPath(o, o.ip_config);
  const std::string part_path = LauncherPath(o, o.part_config);
  std::vector<MachineAddress> machines;
  bool have_machines = false, have_parts = false;
  PartitionConfig config;
  try {
    machines = ReadIpConfig(ip_path);
    have_machines = true;
  } catch (const std::exception& e) {
    problems.push_back(std::string("ip_config: ") + e.what());
  }
  try {
    config = LoadPartitionConfig(part_path);
    have_parts = true;
  } catch (const std::exception& e) {
    problems.push_back(std::string("part_config: ") + e.what());
  }
  if (have_machines && o.machine_id >= static_cast<int>(machines.size())) {
    problems.push_back("--machine_id " + std::to_string(o.machine_id) + " but ip_config " + ip_path + " lists " +
                       std::to_string(machines.size()) + " machines");
    return problems;
  }
  if (have_machines && have_parts && config.num_parts != static_cast<int>(machines.size())) {
    problems.push_back("partition config " + part_path + " has " + std::to_string(config.num_parts) +
                       " partitions but ip_config " + ip_path + " lists " +
                       std::to_string(machines.size()) + " machines (one partition per machine)");
  }
  const std::string word = FirstWord(o.command, nullptr);
  if (!have_machines) return problems;
  try {
    CheckServerPorts(machines, o.num_servers, ip_path);
  } catch (const std::exception& e) {
    problems.push_back(e.what());
  }
  const std::vector<MachinePlan> plans = PlanMachines(o, machines);
  bool any_local = false;
  std::vector<std::thread> remote_checks;
  std::vector<std::vector<std::string>> remote_problems(plans.size());
  for (size_t m = 0; m < plans.size(); ++m) {
    const MachinePlan& p = plans[m];
    const std::string who = "machine " + std::to_string(m) + " (" + p.address.host + ")";
    if (o.machine_id >= 0 && static_cast<int>(m) != o.machine_id) continue;  // its own launcher checks it
    if (o.machine_id >= 0 && !p.local) {
      problems.push_back(who + " (" + ip_path + ":" + std::to_string(p.address.line) +
                         ") is not an address of this host: run gnn-launch --machine_id " + std::to_string(m) +
                         " on that machine");
      continue;
    }
    if (!p.local) {
      remote_checks.emplace_back([&, m, who] {
        const std::string script =
            RemoteCheckScript(plans[m], word, o.num_servers, o.master_port, static_cast<int>(m));
        CommandResult r = RunCommand(SshArgv(o.ssh, plans[m].address.host, script), o.ssh.connect_timeout_s + 20);
        if (r.exit_code != 0) {
          remote_problems[m].push_back(who + ": ssh failed (" + r.Describe() + "): " + r.LastErrorLine());
          return;
        }
        std::istringstream lines(r.out);  // one problem per line
        for (std::string line; std::getline(lines, line);) {
          if (!line.empty()) remote_problems[m].push_back(who + ": " + line);
        }
      });
      continue;
    }
    any_local = true;
    std::error_code ec;
    if (!fs::is_directory(p.workspace, ec)) {
      problems.push_back(who + ": workspace " + p.workspace + " is not a directory");
    } else {
      for (const auto& f : {p.part_config, p.ip_config}) {
        const bool said = (f == part_path && !have_parts) || (f == ip_path && !have_machines);
        if (!said && ::access(f.c_str(), R_OK) != 0) problems.push_back(who + ": " + f + " not found");
      }
    }
    for (int s = 0; s < o.num_servers && p.address.port + s <= 65535; ++s) {
      std::string why = PortBusy(p.address.host, p.address.port + s);
      if (!why.empty()) {
        problems.push_back("port " + std::to_string(p.address.port + s) + " of machine " + std::to_string(m) +
                           " server " + std::to_string(s) + " (" + ip_path + ":" +
                           std::to_string(p.address.line) + ") is busy: " + why);
      }
    }
    if (m == 0) {
      if (o.master_port >= p.address.port && o.master_port < p.address.port + o.num_servers) {
        problems.push_back("--master_port " + std::to_string(o.master_port) +
                           " collides with machine 0's server ports");
      } else {
        std::string why = PortBusy(p.address.host, o.master_port);
        if (!why.empty()) {
          problems.push_back("master port " + std::to_string(o.master_port) + " on machine 0 is busy: " + why);
        }
      }
    }
  }
  for (auto& t : remote_checks) t.join();
  for (const auto& rp : remote_problems) problems.insert(problems.end(), rp.begin(), rp.end());
  if (any_local) {
    for (size_t m = 0; m < plans.size(); ++m) {
      if (!plans[m].local || (o.machine_id >= 0 && static_cast<int>(m) != o.machine_id)) continue;
      if (ResolveBinary(word, plans[m].workspace).empty()) {
        problems.push_back("machine " + std::to_string(m) + ": trainer binary '" + word +
                           "' not found (workspace bin/, PATH, or workspace " + plans[m].workspace + ")");
      }
    }
    const std::string server = ServerBinary(o);
    if (!IsExecutableFile(server)) problems.push_back("server binary " + server + " not found");
  }
  return problems;
}

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
    const auto own_deadline = After(o.server_ready_timeout_s);
    const auto peer_deadline = After(std::max(o.server_ready_timeout_s, o.peer_timeout_s));
    auto next_note = After(5);
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
          if (Ping(ctx, machines[m], static_cast<int>(m), s, 200)) break;
          if (Clock::now() > next_note) {
            std::cerr << "gnn-launch: waiting for machine " << m << " server " << s << " at "
                      << Endpoint(machines[m], s) << " ("
                      << std::lround(std::chrono::duration<double>(Clock::now() - t0).count()) << " s)\n";
            next_note = After(5);
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
  PeerWatch peers(machines, per_node ? o.machine_id : -1);

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
