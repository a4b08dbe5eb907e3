#include "cluster/guardian.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "cluster/launch_plan.h"
#include "common/error.h"
#include "store/shm_partition.h"

namespace gnn {

namespace {

using Clock = std::chrono::steady_clock;

// The guardian's life: read the pipe until it closes; unless the launcher
// said "done", stop the groups it named and remove the shared memory.
[[noreturn]] void GuardianMain(int read_fd, double grace_s, std::vector<std::string> shm_names) {
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
    ssize_t n = ::read(read_fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) break;
    if (c == '\n') {
      if (buf == "D") done = true;
      if (buf == "F") groups.clear();
      if (!buf.empty() && buf[0] == 'P')
        groups.push_back(static_cast<pid_t>(std::atoi(buf.c_str() + 1)));
      if (!buf.empty() && buf[0] == 'S') shm_names.push_back(buf.substr(1));
      buf.clear();
    } else {
      buf += c;
    }
  }
  if (!done) {
    for (pid_t g : groups) ::kill(-g, SIGTERM);
    auto deadline = DeadlineAfter(grace_s);
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

}  // namespace

Guardian::Guardian(double grace_s, const std::vector<std::string>& shm_names) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error("cannot create a pipe: " + std::string(std::strerror(errno)));
  pid_ = ::fork();
  if (pid_ < 0) throw Error("fork failed: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    ::close(fds[1]);
    GuardianMain(fds[0], grace_s, shm_names);
  }
  ::close(fds[0]);
  fd_ = fds[1];
}

Guardian::~Guardian() {
  Send("D");
  ::close(fd_);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

void Guardian::Watch(pid_t group) { Send("P" + std::to_string(group)); }

void Guardian::ForgetGroups() { Send("F"); }

void Guardian::AddShm(const std::string& name) { Send("S" + name); }

void Guardian::Send(const std::string& line) {
  std::string l = line + "\n";
  ssize_t ignored = ::write(fd_, l.data(), l.size());
  (void)ignored;
}

}  // namespace gnn
