// Background processes and /proc readings for tests that run real binaries
// side by side (servers, samplers): start, signal, wait with a deadline, and
// kill whatever is still running when the test ends, even after a failed
// REQUIRE.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gnn::test {

// One child process (fork + execve) in its own process group, stdout and
// stderr redirected to files; it gets SIGTERM if the test process dies
// (PR_SET_PDEATHSIG, so the forking thread must outlive it). Not
// thread-safe.
class ChildProcess {
 public:
  // Starts argv (argv[0] is a path). `log_prefix` + ".out"/".err" receive
  // stdout/stderr. `env` entries ("NAME=value") are added to the child's
  // environment. Throws std::runtime_error if fork fails; an exec failure
  // shows up as exit code 127.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_prefix,
               const std::vector<std::string>& env = {});
  // SIGKILLs the process group if still running and reaps it. Never throws.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }  // basename of argv[0]

  // True while the process has not exited (reaps it if it has). Non-blocking.
  bool Running();
  // Sends `sig` to the process (not its group). No-op once reaped.
  void Signal(int sig);
  // Waits up to `timeout` for the exit; the exit code (-signal if killed by
  // a signal), or nullopt if it is still running. Polls every 5 ms.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGKILL + reap; returns the exit code as Wait does.
  int Kill();

  std::string Stdout() const;
  std::string Stderr() const;
  // "<name> (pid N) exit E; stderr: ..." for failure messages.
  std::string Describe();

 private:
  pid_t pid_ = -1;
  std::string name_;
  std::string out_path_, err_path_;
  std::optional<int> exit_code_;
};

// Base ports of `machines` disjoint ranges of `count` consecutive loopback
// TCP ports that can all be bound on 127.0.0.1 right now (machine m's
// server s will use base[m] + s). Drawn at random outside the kernel's
// ephemeral range, where outgoing connections cannot take them; a small
// race remains (another test may draw and bind a port before the server
// binds it). Throws std::runtime_error if none is found.
std::vector<int> FreeLoopbackPortRanges(int machines, int count);

// A "kB" field (VmRSS, VmHWM, RssAnon, RssShmem, ...) of /proc/<pid>/status
// in bytes; -1 if the process or field does not exist. pid 0 = this process.
int64_t ProcStatusBytes(pid_t pid, const std::string& field);

// Reads a whole file ("" if it cannot be read).
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace gnn::test
