#include "process_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace gnn::test {

namespace {

// A socket bound to 127.0.0.1:port (0 = any), or -1.
int BindLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The widest window of ports [lo, hi] for `count`-port ranges that lies
// outside /proc/sys/net/ipv4/ip_local_port_range (32768-60999 by default):
// from 10000 to below it, or above it to 65535.
std::pair<int, int> NonEphemeralPortWindow(int count) {
  int lo = 32768, hi = 60999;
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int a = 0, b = 0;
  if (in >> a >> b && a > 0 && b >= a) {
    lo = a;
    hi = b;
  }
  const int below = lo - 1 - 10000, above = 65535 - (hi + 1);
  if (below >= above && below >= count) return {10000, lo - 1};
  if (above >= count) return {hi + 1, 65535};
  return {1024, 65535};  // the whole range is ephemeral: no better choice
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_prefix,
                           const std::vector<std::string>& env)
    : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
  if (argv.empty()) throw std::runtime_error("ChildProcess: empty argv");
  name_ = argv[0].substr(argv[0].rfind('/') == std::string::npos ? 0 : argv[0].rfind('/') + 1);
  // Everything the child needs is prepared before fork: only async-signal-
  // safe calls happen in between fork and exec.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  for (const auto& e : env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) {
    if (out >= 0) close(out);
    if (err >= 0) close(err);
    throw std::runtime_error("ChildProcess: cannot create " + log_prefix + ".{out,err}");
  }
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    close(out);
    close(err);
    throw std::runtime_error("ChildProcess: fork failed");
  }
  if (pid_ == 0) {
    setpgid(0, 0);
    // If the test process dies without running destructors (SIGKILL,
    // SIGPIPE, abort), the child gets SIGTERM, so servers still shut down
    // and remove their shared memory.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  // Also from the parent, so a kill(-pid) right after fork cannot miss.
  setpgid(pid_, pid_);
  close(out);
  close(err);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_code_) Kill();
}

bool ChildProcess::Running() {
  if (exit_code_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  } else {
    exit_code_ = -1000;  // not our child any more (should not happen)
  }
  return false;
}

void ChildProcess::Signal(int sig) {
  if (!exit_code_) kill(pid_, sig);
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exit_code_;
}

int ChildProcess::Kill() {
  if (!exit_code_) {
    kill(-pid_, SIGKILL);  // the group: anything it forked goes too
    kill(pid_, SIGKILL);
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    } else {
      exit_code_ = -1000;
    }
  }
  return *exit_code_;
}

std::string ChildProcess::Stdout() const { return ReadFileOrEmpty(out_path_); }
std::string ChildProcess::Stderr() const { return ReadFileOrEmpty(err_path_); }

std::string ChildProcess::Describe() {
  std::ostringstream s;
  s << name_ << " (pid " << pid_ << ") ";
  if (Running()) {
    s << "running";
  } else {
    s << "exit " << *exit_code_;
  }
  s << "; stderr:\n" << Stderr();
  return s.str();
}

std::vector<int> FreeLoopbackPortRanges(int machines, int count) {
  // Ports outside the kernel's ephemeral range: a port bind(0) hands out
  // is one the kernel also gives to outgoing connections, and the tests
  // running beside this one open thousands of them (ZeroMQ, ssh), so one
  // could take a chosen port before its server binds it ("is busy").
  const auto [lo, hi] = NonEphemeralPortWindow(count);
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> pick(lo, hi - count + 1);
  // All probe sockets stay bound until every range is chosen, so later
  // ranges cannot overlap earlier ones.
  std::vector<int> held;
  std::vector<int> bases;
  auto release = [&] {
    for (int fd : held) close(fd);
  };
  for (int m = 0; m < machines; ++m) {
    bool found = false;
    for (int attempt = 0; attempt < 200 && !found; ++attempt) {
      const int base = pick(rng);
      std::vector<int> fds;
      bool ok = true;
      for (int i = 0; ok && i < count; ++i) {
        int fd = BindLoopback(base + i);
        if (fd < 0)
          ok = false;
        else
          fds.push_back(fd);
      }
      held.insert(held.end(), fds.begin(), fds.end());  // even failures: not again
      if (ok) {
        bases.push_back(base);
        found = true;
      }
    }
    if (!found) {
      release();
      throw std::runtime_error("no " + std::to_string(count) +
                               " consecutive free loopback ports found");
    }
  }
  release();
  return bases;
}

int64_t ProcStatusBytes(pid_t pid, const std::string& field) {
  std::ifstream in(pid == 0 ? std::string("/proc/self/status")
                            : "/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string key = field + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    std::istringstream f(line.substr(key.size()));
    int64_t kb = -1;
    f >> kb;
    return kb < 0 ? -1 : kb * 1024;
  }
  return -1;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gnn::test
