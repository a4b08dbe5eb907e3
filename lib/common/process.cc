#include "common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/error.h"

extern char** environ;

namespace gnn {
namespace {

using Clock = std::chrono::steady_clock;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string LastLine(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace

std::string CommandResult::Describe() const {
  if (timed_out) return "timed out";
  if (cancelled) return "cancelled";
  if (exit_code >= 0) return "exit " + std::to_string(exit_code);
  return "killed by signal " + std::to_string(-exit_code);
}

std::string CommandResult::LastErrorLine() const {
  std::string line = LastLine(err);
  return line.empty() ? LastLine(out) : line;
}

CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s,
                         const std::string& input, const std::atomic<int>* cancel) {
  if (argv.empty()) throw Error("RunCommand: empty argv");
  const PipedChild child = SpawnPiped(argv, {}, "", SIGKILL);
  const pid_t pid = child.pid;
  CommandResult r;
  size_t written = 0;
  int wfd = child.in;
  if (input.empty()) {
    ::close(wfd);
    wfd = -1;
  } else {
    ::fcntl(wfd, F_SETFL, O_NONBLOCK);
  }
  int fds[2] = {child.out, child.err};
  std::string* sinks[2] = {&r.out, &r.err};
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  while (fds[0] >= 0 || fds[1] >= 0) {
    pollfd p[3];
    int n = 0, idx[3];
    for (int k = 0; k < 2; ++k) {
      if (fds[k] >= 0) {
        p[n] = {fds[k], POLLIN, 0};
        idx[n++] = k;
      }
    }
    if (wfd >= 0) {
      p[n] = {wfd, POLLOUT, 0};
      idx[n++] = 2;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    if (cancel && cancel->load() != 0) {
      r.cancelled = true;
      break;
    }
    int rc = ::poll(p, static_cast<nfds_t>(n), static_cast<int>(std::min<long long>(left, 200)));
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < n && rc > 0; ++i) {
      if (!p[i].revents) continue;
      if (idx[i] == 2) {
        ssize_t w = ::write(wfd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) written = input.size();
        if (written >= input.size()) {
          ::close(wfd);
          wfd = -1;
        }
        continue;
      }
      const int k = idx[i];
      char buf[65536];
      ssize_t got = ::read(fds[k], buf, sizeof(buf));
      if (got > 0) {
        sinks[k]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fds[k]);
        fds[k] = -1;
      }
    }
  }
  if (wfd >= 0) ::close(wfd);
  for (int k = 0; k < 2; ++k) {
    if (fds[k] >= 0) ::close(fds[k]);
  }
  int status = 0;
  if (r.timed_out || r.cancelled) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    r.exit_code = r.timed_out ? -1000 : -SIGKILL;
    return r;
  }
  // The pipes closed; the process exits now (or was detached from them).
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (cancel && cancel->load() != 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.cancelled = true;
      r.exit_code = -SIGKILL;
      return r;
    }
    if (Clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      r.exit_code = -1000;
      return r;
    }
    ::usleep(5000);
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return r;
}

PipedChild SpawnPiped(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::string& cwd, int death_signal) {
  if (argv.empty()) throw Error("SpawnPiped: empty argv");
  int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};  // stdin, stdout, stderr
  auto close_all = [&] {
    for (auto& pair : fds) {
      for (int fd : pair) {
        if (fd >= 0) ::close(fd);
      }
    }
  };
  for (auto& pair : fds) {
    if (::pipe2(pair, O_CLOEXEC) != 0) {
      const std::string why = std::strerror(errno);
      close_all();
      throw Error("cannot create a pipe: " + why);
    }
  }
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::set<std::string> names;
  for (const auto& e : env) names.insert(e.substr(0, e.find('=')));
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (!names.count(v.substr(0, v.find('=')))) envs.push_back(v);
  }
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : envs) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string exec_failed = argv[0] + ": exec failed\n";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    close_all();
    throw Error("fork failed: " + why);
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, death_signal);
    if (::getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(fds[0][0], 0);
    ::dup2(fds[1][1], 1);
    ::dup2(fds[2][1], 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) _exit(127);
    environ = envp.data();
    ::execvp(args[0], args.data());
    ssize_t ignored = ::write(2, exec_failed.data(), exec_failed.size());
    (void)ignored;
    _exit(127);
  }
  ::setpgid(pid, pid);  // no race with the child's own call
  ::close(fds[0][0]);
  ::close(fds[1][1]);
  ::close(fds[2][1]);
  return PipedChild{pid, fds[0][1], fds[1][0], fds[2][0]};
}

pid_t SpawnChild(const std::vector<std::string>& argv, int death_signal) {
  if (argv.empty()) throw Error("SpawnChild: empty argv");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start " + argv[0] + ": fork failed: " + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, death_signal);
    if (::getppid() != parent) _exit(1);  // the parent is already gone
    ::execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir =
        dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && IsExecutableFile(dir + "/" + name)) return dir + "/" + name;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

std::string SelfDir() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

}  // namespace gnn
