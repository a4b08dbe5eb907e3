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

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cluster/ip_config.h"
#include "cluster/ports.h"
#include "common/error.h"
#include "common/sha256.h"
#include "net/channel.h"
#include "partition/config.h"
#include "server/server.h"
#include "server/shm_partition.h"

extern char** environ;

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

bool Executable(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Absolute path of the trainer binary on this host, "" if not found.
std::string ResolveBinary(const std::string& word, const std::string& workspace) {
  if (word.empty()) return "";
  if (word.find('/') != std::string::npos) {
    std::string p = InWorkspace(workspace, word);
    return Executable(p) ? p : "";
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && Executable(dir + "/" + word)) return dir + "/" + word;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  std::string p = InWorkspace(workspace, word);
  return Executable(p) ? p : "";
}

std::string SelfDir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
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
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  int err = errno;
  ::close(fd);
  if (rc == 0) return "";
  std::string holder = DescribePortHolder(port);
  return std::string(std::strerror(err)) + (holder.empty() ? "" : ", held by " + holder);
}

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
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
        auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(grace_s));
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

  // Starts argv (execvp) in its own process group with `env` added; it gets
  // SIGTERM when the launcher dies.
  Proc* Start(int machine, const std::string& role, int rank, const std::vector<std::string>& argv,
              const std::vector<std::string>& env, const std::string& cwd,
              const std::string& log_dir) {
    auto p = std::make_unique<Proc>();
    p->machine = machine;
    p->role = role;
    p->rank = rank;
    p->log_path = log_dir + "/" + role + "-" + std::to_string(machine) + "-" + std::to_string(rank) + ".log";
    p->log.open(p->log_path, std::ios::out | std::ios::trunc);
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      throw Error("cannot create pipes: " + std::string(std::strerror(errno)));
    }
    // Environment: ours, with `env` overriding same-named entries.
    std::set<std::string> names;
    for (const auto& e : env) names.insert(e.substr(0, e.find('=')));
    std::vector<std::string> envs;
    for (char** e = environ; *e; ++e) {
      std::string s = *e;
      if (!names.count(s.substr(0, s.find('=')))) envs.push_back(s);
    }
    envs.insert(envs.end(), env.begin(), env.end());
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : envs) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) throw Error("fork failed: " + std::string(std::strerror(errno)));
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) _exit(1);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::signal(SIGPIPE, SIG_DFL);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
      if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) _exit(127);
      environ = envp.data();
      ::execvp(args[0], args.data());
      const char msg[] = "gnn-launch: exec failed\n";
      ssize_t ignored = ::write(2, msg, sizeof(msg) - 1);
      (void)ignored;
      _exit(127);
    }
    ::setpgid(pid, pid);  // no race with the child's own call
    guardian_->Watch(pid);
    ::close(out[1]);
    ::close(err[1]);
    p->pid = pid;
    p->fds[0] = out[0];
    p->fds[1] = err[0];
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

  bool TrainersDone() {
    for (auto& p : procs_) {
      if (p->role == "trainer" && !p->exited) return false;
    }
    return true;
  }

  // SIGTERM to every process group, SIGKILL to what is left after `grace`.
  void Stop(double grace_s) {
    for (auto& p : procs_) {
      if (!p->exited) ::kill(-p->pid, SIGTERM);
    }
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(grace_s));
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
  if (ssh_port < 1 || ssh_port > 65535) throw ConfigError("--ssh_port out of range [1, 65535]");
  if (master_port < 1 || master_port > 65535) throw ConfigError("--master_port out of range [1, 65535]");
  if (grace_s < 0) throw ConfigError("--grace_s must be >= 0");
  if (FirstWord(command, nullptr).empty()) throw ConfigError("the trainer command is missing");
}

bool IsLocalHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0) return true;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0 && host == name) return true;
  ifaddrs* addrs = nullptr;
  if (::getifaddrs(&addrs) != 0) return false;
  bool found = false;
  for (ifaddrs* a = addrs; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof(buf));
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf, sizeof(buf));
    } else {
      continue;
    }
    found = host == buf;
  }
  ::freeifaddrs(addrs);
  return found;
}

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::vector<std::string> SshArgv(const std::string& host, int port, const std::string& user,
                                 const std::string& workspace,
                                 const std::vector<std::string>& env_vars,
                                 const std::string& command) {
  std::vector<std::string> argv = {"ssh", "-o", "BatchMode=yes", "-p", std::to_string(port)};
  if (!user.empty()) {
    argv.push_back("-l");
    argv.push_back(user);
  }
  argv.push_back(host);
  std::string remote = "cd " + ShellQuote(workspace) + " && env";
  for (const auto& e : env_vars) remote += " " + ShellQuote(e);
  remote += " " + command;
  argv.push_back(remote);
  return argv;
}

std::vector<std::string> CheckLaunch(const LaunchOptions& o) {
  std::vector<std::string> problems;
  std::error_code ec;
  if (!fs::is_directory(o.workspace, ec)) problems.push_back("workspace " + o.workspace + " is not a directory");
  const std::string ip_path = InWorkspace(o.workspace, o.ip_config);
  const std::string part_path = InWorkspace(o.workspace, o.part_config);
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
  if (have_machines && have_parts && config.num_parts != static_cast<int>(machines.size())) {
    problems.push_back("partition config " + part_path + " has " + std::to_string(config.num_parts) +
                       " partitions but ip_config " + ip_path + " lists " +
                       std::to_string(machines.size()) + " machines (one partition per machine)");
  }
  bool any_local = false;
  if (have_machines) {
    try {
      CheckServerPorts(machines, o.num_servers, ip_path);
    } catch (const std::exception& e) {
      problems.push_back(e.what());
    }
    for (size_t m = 0; m < machines.size(); ++m) {
      const auto& mc = machines[m];
      if (!IsLocalHost(mc.host)) continue;
      any_local = true;
      for (int s = 0; s < o.num_servers && mc.port + s <= 65535; ++s) {
        std::string why = PortBusy(mc.host, mc.port + s);
        if (!why.empty()) {
          problems.push_back("port " + std::to_string(mc.port + s) + " of machine " + std::to_string(m) +
                             " server " + std::to_string(s) + " (" + ip_path + ":" +
                             std::to_string(mc.line) + ") is busy: " + why);
        }
      }
      if (m == 0) {
        if (o.master_port >= mc.port && o.master_port < mc.port + o.num_servers) {
          problems.push_back("--master_port " + std::to_string(o.master_port) +
                             " collides with machine 0's server ports");
        } else {
          std::string why = PortBusy(mc.host, o.master_port);
          if (!why.empty()) {
            problems.push_back("master port " + std::to_string(o.master_port) + " on machine 0 is busy: " + why);
          }
        }
      }
    }
  }
  if (any_local || !have_machines) {
    const std::string word = FirstWord(o.command, nullptr);
    if (ResolveBinary(word, o.workspace).empty()) {
      problems.push_back("trainer binary '" + word + "' not found (PATH or workspace " + o.workspace + ")");
    }
    const std::string server = o.server_binary.empty() ? SelfDir() + "/gnn-server" : o.server_binary;
    if (!Executable(server)) problems.push_back("server binary " + server + " not found");
  }
  return problems;
}

int RunLaunch(const LaunchOptions& o, const std::atomic<int>& signal) {
  const auto t0 = Clock::now();
  const std::string workspace = fs::absolute(o.workspace).lexically_normal().string();
  const std::string ip_path = InWorkspace(workspace, o.ip_config);
  const std::string part_path = InWorkspace(workspace, o.part_config);
  const std::string job_id =
      !o.job_id.empty() ? o.job_id
                        : "job-" + std::to_string(::getpid()) + "-" +
                              std::to_string(std::chrono::system_clock::now().time_since_epoch().count() / 1000000);
  const std::string log_dir = o.log_dir.empty() ? workspace + "/logs/" + job_id : InWorkspace(workspace, o.log_dir);
  fs::create_directories(log_dir);
  const std::vector<MachineAddress> machines = ReadIpConfig(ip_path);
  const PartitionConfig config = LoadPartitionConfig(part_path);
  const std::string server_bin = o.server_binary.empty() ? SelfDir() + "/gnn-server" : o.server_binary;
  std::string rest;
  const std::string word = FirstWord(o.command, &rest);
  const std::string local_trainer = ResolveBinary(word, workspace);
  const std::string master_addr = machines[0].host;

  std::vector<bool> local(machines.size());
  for (size_t m = 0; m < machines.size(); ++m) local[m] = IsLocalHost(machines[m].host);
  std::vector<std::string> shm_names;
  try {
    const std::string sha = Sha256File(part_path);
    for (size_t m = 0; m < machines.size(); ++m) {
      if (local[m]) shm_names.push_back(JobShmName(config.graph_name, sha, job_id, static_cast<int>(m)));
    }
  } catch (const std::exception&) {
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned grandchildren come to us to be reaped
  Guardian guardian(o.grace_s, shm_names);  // before any thread exists
  Job job(&guardian);

  auto start = [&](int m, const std::string& role, int rank, const std::string& local_cmd,
                   const std::string& remote_cmd, const std::vector<std::string>& env) {
    if (local[m]) {
      job.Start(m, role, rank, {"/bin/sh", "-c", "exec " + local_cmd}, env, workspace, log_dir);
    } else {
      job.Start(m, role, rank,
                SshArgv(machines[m].host, o.ssh_port, o.ssh_username, workspace, env, remote_cmd), {},
                "", log_dir);
    }
  };

  // What happens when the job ends early; returns the exit code.
  auto fail = [&](Proc* failed) {
    job.Stop(o.grace_s);
    if (failed) {
      std::cerr << "gnn-launch: " << failed->Name() << " (pid " << failed->pid << ") "
                << Describe(failed->status) << "; log " << failed->log_path << "; last lines:\n";
      for (const auto& line : failed->tail) std::cerr << "  " << line << "\n";
      return 1;
    }
    std::cerr << "gnn-launch: stopped by signal " << signal.load() << "\n";
    return 128 + signal.load();
  };
  auto cleanup_shm = [&] {
    for (const auto& name : shm_names) RemoveShmSegment(name);
  };

  std::cerr << "gnn-launch: job " << job_id << ", " << machines.size() << " machines, logs in " << log_dir
            << "\n";
  for (size_t m = 0; m < machines.size(); ++m) {
    for (int s = 0; s < o.num_servers; ++s) {
      std::vector<std::string> env = {"GNN_IP_CONFIG=" + ip_path, "GNN_PART_CONFIG=" + part_path,
                                      "GNN_MACHINE_ID=" + std::to_string(m),
                                      "GNN_SERVER_ID=" + std::to_string(s),
                                      "GNN_NUM_SERVERS=" + std::to_string(o.num_servers),
                                      "GNN_JOB_ID=" + job_id};
      start(static_cast<int>(m), "server", s, ShellQuote(server_bin), ShellQuote(server_bin), env);
    }
  }

  // Servers are ready when each answers a Ping.
  {
    zmq::context_t ctx;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(o.server_ready_timeout_s));
    for (size_t m = 0; m < machines.size(); ++m) {
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
          net::Connection c(ctx, Endpoint(machines[m], s), "machine " + std::to_string(m) + " server " + std::to_string(s));
          try {
            c.Call(net::MakeMessage(net::MsgType::kPing, 0), net::Millis(200));
            break;
          } catch (const std::exception&) {
          }
          if (Clock::now() > deadline) {
            job.Stop(o.grace_s);
            cleanup_shm();
            std::cerr << "gnn-launch: machine " << m << " server " << s << " at " << Endpoint(machines[m], s)
                      << " did not answer within " << o.server_ready_timeout_s << " s\n";
            return kExitTimeout;
          }
        }
      }
    }
  }

  for (size_t m = 0; m < machines.size(); ++m) {
    for (int t = 0; t < o.num_trainers; ++t) {
      std::vector<std::string> env = {
          "GNN_IP_CONFIG=" + ip_path,           "GNN_PART_CONFIG=" + part_path,
          "GNN_MACHINE_ID=" + std::to_string(m), "GNN_TRAINER_ID=" + std::to_string(t),
          "GNN_NUM_TRAINERS=" + std::to_string(o.num_trainers),
          "GNN_NUM_SERVERS=" + std::to_string(o.num_servers),
          "GNN_NUM_SAMPLERS=" + std::to_string(o.num_samplers), "GNN_MASTER_ADDR=" + master_addr,
          "GNN_MASTER_PORT=" + std::to_string(o.master_port),    "GNN_JOB_ID=" + job_id};
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
        int rc = fail(f);
        cleanup_shm();
        return rc;
      }
    }
    if (job.TrainersDone()) break;
  }

  // Every trainer exited 0: stop the servers.
  job.Stop(o.grace_s);
  cleanup_shm();
  std::string summary;
  for (const auto& p : job.procs()) {
    if (p->role == "trainer" && p->machine == 0 && p->rank == 0) summary = p->last_stdout;
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  try {
    nlohmann::json j = nlohmann::json::parse(summary);
    if (!j.is_object()) throw std::runtime_error("not an object");
    j["wall_time_s"] = wall;
    std::cout << j.dump() << std::endl;
  } catch (const std::exception&) {
    nlohmann::json j = {{"wall_time_s", wall}, {"trainer_output", summary}};
    std::cout << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace gnn
