// Reaching the machines of an ip_config: which are this host, how ssh is
// called, per-machine workspaces (running commands: common/process.h).
// Shared by gnn-launch and gnn-copy.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "common/process.h"

namespace gnn {

// How remote machines are reached.
struct SshOptions {
  int port = 22;
  std::string username;  // "" = ssh's default
  std::string config;    // ssh -F FILE ("" = the user's own ~/.ssh/config)
  bool force = false;    // reach every machine over ssh, this host too
  std::chrono::duration<double> connect_timeout{10};  // ssh -o ConnectTimeout

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
// --ship_binaries puts the gnn-* executables), also before a PATH given
// in `env_vars`.
std::string RemoteCommand(const std::string& workspace, const std::vector<std::string>& env_vars,
                          const std::string& command);

// Writes `text` to `rel_path` inside `workspace` on `host` over ssh's
// stdin (never on a command line), through a temporary renamed into place;
// the workspace and the file's folder are made when missing, and with
// `owner_only` the file is created mode 0600 (umask 077).
CommandResult WriteFileOverSsh(const SshOptions& ssh, const std::string& host,
                               const std::string& workspace, const std::string& rel_path,
                               const std::string& text, bool owner_only, double timeout_s);

// The numeric libraries' settings of this process's environment (OMP_*,
// GOMP_*, KMP_*, OPENBLAS_*, MKL_*, as "NAME=value"), to hand on to remote
// processes: sshd starts them with a fresh environment, and a BLAS that
// picks another kernel there computes (slightly) different numbers than
// the same job on local machines.
std::vector<std::string> NumericLibraryEnvironment();

}  // namespace gnn
