#include "cluster/supervisor.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "cluster/guardian.h"
#include "cluster/launch_plan.h"
#include "cluster/remote.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/fs.h"

namespace gnn {

using Clock = std::chrono::steady_clock;

namespace {

// Writes `text` to a pipe whose reader may be gone: EPIPE, never a SIGPIPE
// that would end the launcher (the signal is blocked for the call and a
// pending one taken back). Best effort: a short or failed write is
// dropped. Not for a pipe that may be full (it would block).
void WriteNoSigpipe(int fd, const std::string& text) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  const ssize_t n = ::write(fd, text.data(), text.size());
  if (n < 0 && errno == EPIPE) {
    const timespec zero{0, 0};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
}

}  // namespace

// Starts argv in its own process group with `env` added (SpawnPiped).
Proc* Job::Start(int machine, const std::string& role, int rank,
                 const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 const std::string& cwd, const std::string& log_dir, bool remote) {
  auto p = std::make_unique<Proc>();
  p->remote = remote;
  p->machine = machine;
  p->role = role;
  p->rank = rank;
  p->log_path =
      log_dir + "/" + role + "-" + std::to_string(machine) + "-" + std::to_string(rank) + ".log";
  p->log.open(p->log_path, std::ios::out | std::ios::trunc);
  // errno is open(2)'s: libstdc++'s filebuf opens with it.
  if (!p->log) throw DataError(CannotMessage("write log", p->log_path, errno));
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
void Job::Pump(int timeout_ms) {
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
void Job::Reap() {
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
Proc* Job::FirstFailure(bool servers_must_run) {
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
bool Job::AnyTrainerSucceeded() const {
  for (auto& p : procs_) {
    if (p->role == "trainer" && p->exited && !p->Failed()) return true;
  }
  return false;
}

bool Job::TrainersDone() const {
  for (auto& p : procs_) {
    if (p->role == "trainer" && !p->exited) return false;
  }
  return true;
}

// Closes every stdin (a remote process sees EOF through ssh and stops),
// SIGTERMs every local process group, and after `grace` SIGTERMs the ssh
// clients still running and SIGKILLs what is left.
void Job::Stop(double grace_s) {
  for (auto& p : procs_) {
    // A normal stop, said as such: the process does not report its
    // launcher gone (WatchLauncherStdin).
    if (p->stdin_fd >= 0 && !p->exited) WriteNoSigpipe(p->stdin_fd, kLauncherStopLine);
    if (p->stdin_fd >= 0) ::close(p->stdin_fd);
    p->stdin_fd = -1;
    if (!p->exited && !p->remote) ::kill(-p->pid, SIGTERM);
  }
  auto deadline = DeadlineAfter(grace_s);
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
  stopped_ = true;
}

bool Job::AllExited() const {
  for (auto& p : procs_) {
    if (!p->exited) return false;
  }
  return true;
}
bool Job::AnyOpen() const {
  for (auto& p : procs_) {
    if (p->fds[0] >= 0 || p->fds[1] >= 0) return true;
  }
  return false;
}

// SIGKILL every group (also children a leader left behind) and reap.
void Job::KillAll() {
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

void Job::Read(Proc* p, int k) {
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

void Job::Flush(Proc* p) {
  for (int k = 0; k < 2; ++k) {
    if (!p->partial[k].empty()) Line(p, k, p->partial[k]);
    p->partial[k].clear();
  }
  p->log.flush();
}

bool Job::Progress(Proc* p, const std::string& line) {
  static const std::string kTag = "@gnn ";
  if (line.compare(0, kTag.size(), kTag) != 0) return false;
  std::istringstream in(line.substr(kTag.size()));
  std::string what;
  int64_t step = -1;
  if (!(in >> what >> step)) return true;  // malformed: dropped, like any noise
  if (what == "step") {
    if (p->first_step_at == Clock::time_point{}) p->first_step_at = Clock::now();
    p->step = step;
  } else if (what == "resumed") {
    p->resumed_step = step;
  } else if (what == "checkpoint") {
    p->checkpoint_step = step;
    std::getline(in >> std::ws, p->checkpoint_path);
  }
  return true;
}

void Job::Line(Proc* p, int k, const std::string& line) {
  if (k == 0 && Progress(p, line)) return;
  if (echo_) {
    std::string out = p->Name() + " " + line + "\n";
    ::fwrite(out.data(), 1, out.size(), stderr);
  }
  p->log << line << '\n';
  p->log.flush();
  p->tail.push_back(line);
  if (p->tail.size() > 10) p->tail.pop_front();
  if (k == 0 && line.find_first_not_of(" \t\r") != std::string::npos) p->last_stdout = line;
}

}  // namespace gnn
