// Reaching the machines of an ip_config: which are this host, how ssh is
// called, per-machine workspaces, and running a command with a deadline.
// Shared by gnn-launch and gnn-copy.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

namespace gnn {

// How remote machines are reached.
struct SshOptions {
  int port = 22;
  std::string username;  // "" = ssh's default
  std::string config;    // ssh -F FILE ("" = the user's own ~/.ssh/config)
  bool force = false;    // reach every machine over ssh, this host too
  double connect_timeout_s = 10;

  void Validate() const;  // ConfigError naming the bad flag
};

// True for 127.0.0.1, localhost, ::1, this host's name and the addresses
// of this host's interfaces.
bool IsLocalHost(const std::string& host);

// True if machine `host` is reached with a plain child process, not ssh.
inline bool RunsLocally(const SshOptions& ssh, const std::string& host) {
  return !ssh.force && IsLocalHost(host);
}

// `text` quoted for a POSIX shell.
std::string ShellQuote(const std::string& text);

// `path` as one shell word; a leading "~/" stays the (remote) home.
std::string ShellPath(const std::string& path);

// Machine `machine`'s workspace: `workspace` with every "{machine}"
// replaced by the machine's index (so two "machines" on one host can have
// two workspaces, e.g. /tmp/gnn/m{machine}).
std::string MachineWorkspace(const std::string& workspace, int machine);

// ssh argv that runs `remote_command` (a shell command line) on `host`:
// BatchMode, ConnectTimeout, port, optional -l user and -F config.
std::vector<std::string> SshArgv(const SshOptions& ssh, const std::string& host,
                                 const std::string& remote_command);

// The connection options of SshArgv (-F config, BatchMode, ConnectTimeout,
// port, user, keep-alives) as ssh `-o` options, which scp and rsync's
// `-e "ssh ..."` accept too (scp's -P/-l differ from ssh's -p/-l).
std::vector<std::string> SshClientOptions(const SshOptions& ssh);

// Remote command line that runs `command` in `workspace` with `env_vars`
// ("NAME=value") set and WORKSPACE/bin first on PATH (where gnn-copy
// --ship_binaries puts the gnn-* executables).
std::string RemoteCommand(const std::string& workspace, const std::vector<std::string>& env_vars,
                          const std::string& command);

// The numeric libraries' settings of this process's environment (OMP_*,
// GOMP_*, KMP_*, OPENBLAS_*, MKL_*, as "NAME=value"), to hand on to remote
// processes: sshd starts them with a fresh environment, and a BLAS that
// picks another kernel there computes (slightly) different numbers than
// the same job on local machines.
std::vector<std::string> NumericLibraryEnvironment();

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

// "exited with status 3", "was killed by signal 9" for a waitpid status.
std::string DescribeWaitStatus(int status);

// True if `path` is a regular file we may execute.
bool IsExecutableFile(const std::string& path);

// Absolute path of `name` found on PATH, "" if none.
std::string FindOnPath(const std::string& name);

// Folder of this executable (/proc/self/exe), "." if unknown.
std::string SelfDir();

}  // namespace gnn
