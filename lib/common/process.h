// Child processes: run a command with a deadline, spawn one with piped
// stdin/stdout/stderr, describe how one ended, find executables. Used by
// the launcher, gnn-copy and the trainer (its gnn-sampler children).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

namespace gnn {

struct CommandResult {
  int exit_code = -1;  // -signal if killed by a signal; -1000 on timeout
  bool timed_out = false;
  bool cancelled = false;  // stopped because *cancel became non-zero
  std::string out, err;
  // "exit 3", "killed by signal 9", "timed out after 30 s"
  std::string Describe() const;
  // The last non-empty line of stderr (or stdout), for one-line errors.
  std::string LastErrorLine() const;
};

// Runs argv (execvp) with stdin from `input`, capturing stdout and stderr,
// killing its process group if it runs past `timeout_s`. Throws Error only
// if the process cannot be started at all (an exec failure is exit 127).
// With `cancel`, the process group is also killed as soon as *cancel is
// non-zero (a caller's SIGINT flag; checked at least every 200 ms).
CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s,
                         const std::string& input = "", const std::atomic<int>* cancel = nullptr);

// A child process whose stdin, stdout and stderr are pipes to us.
struct PipedChild {
  pid_t pid = -1;
  int in = -1;   // write end of its stdin
  int out = -1;  // read end of its stdout
  int err = -1;  // read end of its stderr
};

// Forks and execs argv (execvp) in a new process group, with `env`
// ("NAME=value") overriding same-named variables, in `cwd` unless empty,
// default signal handling, and `death_signal` sent to it when this process
// dies (PR_SET_PDEATHSIG). Our pipe ends are close-on-exec. An exec failure
// is exit 127 with "<argv0>: exec failed" on its stderr. Throws Error (and
// closes what it opened) if the pipes or the fork fail.
PipedChild SpawnPiped(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::string& cwd, int death_signal);

// Forks and execs argv[0] (a path; execv) sharing this process's stdio and
// process group, with `death_signal` sent to it when this process dies
// (PR_SET_PDEATHSIG). Everything the child needs is built before fork(), so
// it is safe from a threaded process. Returns the child's pid; Error if the
// fork fails (an exec failure is exit 127).
pid_t SpawnChild(const std::vector<std::string>& argv, int death_signal);

// "exited with status 3", "was killed by signal 9" for a waitpid status.
std::string DescribeWaitStatus(int status);

// True if `path` is a regular file we may execute.
bool IsExecutableFile(const std::string& path);

// Absolute path of `name` found on PATH, "" if none.
std::string FindOnPath(const std::string& name);

// Folder of this executable (/proc/self/exe), "." if unknown.
std::string SelfDir();

}  // namespace gnn
